package org.apache.spark.sql.kstate.plans

import io.kstate.ProcessingOrder
import org.apache.spark.sql.kstate.errors.KStateErrors
import io.kstate.tables.VersionedTable

import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeReference, AttributeSet, Expression}
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, UnaryNode}
import org.apache.spark.sql.types.StructType

/**
 * Where one side's columns are in its struct of a [[TwoInputs]] envelope (ordinals into
 * `schema`, the side's rows as a struct), and how that side's table is versioned. Plain data, no
 * expressions: the side's attributes are not the node's input.
 *
 * Either the side's rows are its table's change rows (`oldOrdinal` and `latestOrdinal` point at
 * the change columns; the table was materialized upstream), or, when `fromSource`, they are the
 * table's raw updates and the join materializes the table itself
 * ([[org.apache.spark.sql.kstate.planning.TableJoinSources]]; both change ordinals are then -1).
 */
final case class TableJoinSide(
    schema: StructType,
    keyOrdinal: Int,
    valueOrdinals: Seq[Int],
    oldOrdinal: Int,
    latestOrdinal: Int,
    versioning: Option[VersionedTable]
) {
  def valueTypes: StructType = StructType(valueOrdinals.map(schema(_)))

  /** Whether the side's rows are raw table updates, materialized by the join. */
  def fromSource: Boolean = oldOrdinal < 0
}

object TableJoinSide {

  /** The side of a table read straight from its source `s`: the rows are `s.child`'s, raw updates. */
  def ofSource(s: KStateTableSource): TableJoinSide = {
    val out = s.child.output
    def ordinal(a: Attribute): Int = out.indexWhere(_.exprId == a.exprId)
    TableJoinSide(
      StructType(out.map(a => org.apache.spark.sql.types.StructField(a.name, a.dataType, a.nullable))),
      ordinal(s.key),
      s.values.map(ordinal),
      -1,
      -1,
      s.versioned
    )
  }

  /** The side of a table whose change rows are `c`. */
  def of(c: TableTransforms.Changes, versioning: Option[VersionedTable]): TableJoinSide = {
    val out = c.plan.output
    def ordinal(a: Attribute): Int = out.indexWhere(_.exprId == a.exprId)
    TableJoinSide(
      StructType(out.map(a => org.apache.spark.sql.types.StructField(a.name, a.dataType, a.nullable))),
      ordinal(c.attr(c.key)),
      c.valueAttrs.map(ordinal),
      ordinal(c.oldValue),
      ordinal(c.latest),
      versioning
    )
  }
}

/**
 * The primary-key table–table join (`left.join(right, how)`, Kafka's `KTable#join`, `leftJoin`,
 * `outerJoin`) over a [[TwoInputs]] envelope of both tables' change rows, keyed by the key.
 * Output: the change rows of an unversioned table keyed like the left table: `key`, the left
 * value columns, the right value columns, `timestamp` (the result's: max of both sides'), then
 * [[TableChangeColumns.OldValue]] (the previous join value as a struct of the value columns) and
 * [[TableChangeColumns.Latest]] (always true). Rules: `TableTableJoinProcessor`.
 * `envelopeColumns` are all the envelope's columns: the exec reads each side's struct, so they
 * are the node's references (column pruning keeps them).
 */
case class KStateTableJoin(
    how: String,
    left: TableJoinSide,
    right: TableJoinSide,
    envelopeKey: Attribute,
    envelopeTimestamp: Attribute,
    envelopeColumns: Seq[Attribute],
    operatorName: Option[String],
    output: Seq[Attribute],
    child: LogicalPlan
) extends UnaryNode with KStateStatefulNode {

  override def kind: String = "table_join"
  override def producedAttributes: AttributeSet = outputSet

  /** The join reads each side's change rows in the order their tables passed them on. */
  override def processingOrder: Option[ProcessingOrder] = Some(ProcessingOrder.Task)
  def partitionBy: Seq[Expression] = Seq(envelopeKey)

  override def fingerprint: Map[String, String] = Map(
    "kind" -> kind,
    "how" -> how,
    "keyType" -> envelopeKey.dataType.catalogString,
    "timestampType" -> envelopeTimestamp.dataType.catalogString,
    "leftValueType" -> left.valueTypes.catalogString,
    "rightValueType" -> right.valueTypes.catalogString,
    "leftVersioning" -> KStateTableJoin.describe(left.versioning),
    "rightVersioning" -> KStateTableJoin.describe(right.versioning)
  )

  override protected def withNewChildInternal(newChild: LogicalPlan): KStateTableJoin = copy(child = newChild)
}

object KStateTableJoin {
  val Hows: Seq[String] = Seq("inner", "left", "outer")

  /**
   * The join of the tables whose change rows are `left` and `right` (checked: `how`, equal key and
   * timestamp types, distinct output column names); its value columns' names are the result's.
   */
  def of(
      left: TableTransforms.Changes,
      leftVersioning: Option[VersionedTable],
      right: TableTransforms.Changes,
      rightVersioning: Option[VersionedTable],
      how: String,
      name: Option[String]
  ): KStateTableJoin = {
    val kind = Option(how).map(_.trim.toLowerCase(java.util.Locale.ROOT)).orNull
    if (!Hows.contains(kind)) throw KStateErrors.invalidTableJoinType(String.valueOf(how), Hows)
    checkTables(left, right)
    val env = TwoInputs(
      left.plan,
      left.attr(left.key),
      left.attr(left.timestamp),
      right.plan,
      right.attr(right.key),
      right.attr(right.timestamp)
    )
    def fresh(a: Attribute, nullable: Boolean): Attribute = AttributeReference(a.name, a.dataType, nullable)()
    val values = (left.valueAttrs ++ right.valueAttrs).map(fresh(_, nullable = true))
    val output = Seq(fresh(left.attr(left.key), nullable = false)) ++ values ++
      Seq(
        fresh(left.attr(left.timestamp), nullable = false),
        TableChangeColumns.oldValueAttribute(values),
        TableChangeColumns.latestAttribute()
      )
    KStateTableJoin(
      kind,
      TableJoinSide.of(left, leftVersioning),
      TableJoinSide.of(right, rightVersioning),
      env.key,
      env.timestamp,
      env.plan.output,
      name,
      output,
      env.plan
    )
  }

  /**
   * What every table–table join (primary- or foreign-key) needs of its tables: distinct result
   * column names (left key, left timestamp, both sides' values) and both streaming or both batch.
   */
  private[plans] def checkTables(left: TableTransforms.Changes, right: TableTransforms.Changes): Unit = {
    val names = Seq(left.key, left.timestamp) ++ left.values ++ right.values
    names.groupBy(_.toLowerCase(java.util.Locale.ROOT)).collectFirst { case (_, ns) if ns.size > 1 => ns.head }
      .foreach(n => throw KStateErrors.joinColumnClash(n, left.key, left.timestamp, left.values, right.values))
    if (left.plan.isStreaming != right.plan.isStreaming) {
      throw KStateErrors.streamStaticJoin(tableJoin = true, leftStreaming = left.plan.isStreaming)
    }
  }

  private[plans] def describe(v: Option[VersionedTable]): String =
    v.map(t => s"historyRetentionMs=${t.historyRetentionMs},graceMs=${t.graceMs}").getOrElse("unversioned")
}
