package org.apache.spark.sql.kstate.evolution

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{
  BoundReference,
  Cast,
  CreateNamedStruct,
  Expression,
  GetStructField,
  If,
  IsNull,
  Literal,
  UnsafeProjection,
  UnsafeRow
}
import org.apache.spark.sql.types._

/**
 * Which changes of a stored row type kstate converts state across, and the conversion.
 *
 * The compatible changes (decided with Spark's `transformWithState` schema evolution and Flink's
 * POJO and Avro rules as anchors; docs/operators.md, "Evolving schemas"):
 *  - **add a column**: rows stored before hold null there;
 *  - **remove a column**: its stored values are dropped;
 *  - **reorder columns**: columns are matched by name;
 *  - **widen a number** without losing a value: byte -> short -> int -> long, byte/short/int ->
 *    double, byte/short -> float, float -> double, decimal(p, s) -> decimal(p', s') with
 *    s' >= s and p' - s' >= p - s;
 *  - the same, recursively, inside a struct column.
 * Everything else is incompatible and named by column: another type (int -> string, a number
 * narrowed, long -> double, which loses precision), a change inside an array or map. Names are
 * compared exactly (a renamed column is a removed and an added one). Nullability is not part of
 * what kstate records: a stored row keeps its nulls.
 */
object RowEvolution {

  /** An incompatible change: the column (a dotted path) and what happened to it. */
  final case class Incompatible(column: String, change: String)

  /** None when rows of `old` convert to `now`, else the first incompatible change. */
  def incompatibility(old: StructType, now: StructType): Option[Incompatible] = structChange(old, now, "")

  private def structChange(old: StructType, now: StructType, prefix: String): Option[Incompatible] =
    now.fields.iterator.flatMap { f =>
      old.fields.find(_.name == f.name).flatMap(o => typeChange(o.dataType, f.dataType, prefix + f.name))
    }.toSeq.headOption

  private def typeChange(old: DataType, now: DataType, column: String): Option[Incompatible] = (old, now) match {
    case (a, b) if a == b => None
    case (a: StructType, b: StructType) => structChange(a, b, column + ".")
    case (a, b) if widens(a, b) => None
    case (a, b) => Some(Incompatible(column, s"${a.catalogString} -> ${b.catalogString}"))
  }

  /** Whether every value of `from` is exactly a value of `to`. */
  def widens(from: DataType, to: DataType): Boolean = (from, to) match {
    case (ByteType, ShortType | IntegerType | LongType | FloatType | DoubleType) => true
    case (ShortType, IntegerType | LongType | FloatType | DoubleType) => true
    case (IntegerType, LongType | DoubleType) => true
    case (FloatType, DoubleType) => true
    case (a: DecimalType, b: DecimalType) => b.scale >= a.scale && b.precision - b.scale >= a.precision - a.scale
    case _ => false
  }

  /** The expression giving `now` from a value `in` of type `old` (compatible, see above). */
  private def convert(in: Expression, old: DataType, now: DataType): Expression = (old, now) match {
    case (a, b) if a == b => in
    case (a: StructType, b: StructType) =>
      val struct = CreateNamedStruct(b.fields.toSeq.flatMap { f =>
        val value = a.getFieldIndex(f.name) match {
          case Some(i) => convert(GetStructField(in, i, Some(f.name)), a(i).dataType, f.dataType)
          case None => Literal(null, f.dataType)
        }
        Seq(Literal(f.name), value)
      })
      If(IsNull(in), Literal(null, b), struct)
    case (_, b) => Cast(in, b)
  }

  /**
   * Converts UnsafeRows of `old` to UnsafeRows of `now` (compatible): an UnsafeProjection per
   * instance, so not thread-safe; the row returned is reused by the next call.
   */
  final class Converter(old: StructType, now: StructType) {
    require(incompatibility(old, now).isEmpty, s"$old does not convert to $now")
    private val projection = UnsafeProjection.create(now.fields.toSeq.map { f =>
      old.getFieldIndex(f.name) match {
        case Some(i) => convert(BoundReference(i, old(i).dataType, nullable = true), old(i).dataType, f.dataType)
        case None => Literal(null, f.dataType)
      }
    })
    private val in = new UnsafeRow(old.length)

    def apply(row: InternalRow): UnsafeRow = projection(row)

    /**
     * The bytes of a row of `old` converted to bytes of a row of `now`: a fresh array (the
     * projection reuses its row, whose `getBytes` may hand out that row's own buffer), so that a
     * caller may keep several results.
     */
    def bytes(oldBytes: Array[Byte]): Array[Byte] = {
      in.pointTo(oldBytes, oldBytes.length)
      projection(in).copy().getBytes
    }
  }

  /** The struct types of a recorded type list (`a,b,...` of catalog strings; the windowed aggregations' buffers). */
  def typeList(recorded: String): StructType =
    StructType(splitTopLevel(recorded).zipWithIndex.map { case (t, i) =>
      StructField(s"_$i", org.apache.spark.sql.catalyst.parser.CatalystSqlParser.parseDataType(t))
    })

  /** `recorded` split at commas outside `<...>` and `(...)`. */
  private[evolution] def splitTopLevel(recorded: String): Seq[String] = {
    if (recorded.isEmpty) return Nil
    val parts = Seq.newBuilder[String]
    var depth = 0
    var start = 0
    recorded.indices.foreach { i =>
      recorded(i) match {
        case '<' | '(' => depth += 1
        case '>' | ')' => depth -= 1
        case ',' if depth == 0 => parts += recorded.substring(start, i); start = i + 1
        case _ =>
      }
    }
    parts += recorded.substring(start)
    parts.result()
  }
}
