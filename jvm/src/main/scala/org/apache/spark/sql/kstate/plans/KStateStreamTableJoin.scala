package org.apache.spark.sql.kstate.plans

import io.kstate.ProcessingOrder
import org.apache.spark.sql.kstate.errors.KStateErrors
import io.kstate.tables.VersionedTable

import org.apache.spark.sql.catalyst.expressions.{Alias, Attribute, AttributeReference, AttributeSet, Expression}
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, Project, UnaryNode}
import org.apache.spark.sql.kstate.processor.join.StreamTableJoinSpec
import org.apache.spark.sql.types.StructType

/**
 * A stream–table join (`stream.kstate.join(table, ...)`, Kafka's `KStream#join` / `leftJoin`
 * with a `KTable`, KIP-914's as-of lookups and KIP-923's grace). Its child is a [[TwoInputs]]
 * envelope: left = the stream, each row's struct being the stream's columns followed by its join
 * key; right = the table's change rows, each row's struct being the table's value columns followed
 * by its key and timestamp. On equal timestamps a stream record is processed before a table update (the left
 * side first).
 *
 * Output: the stream's columns, then the table's value columns (null when nothing matched: left
 * join), as new attributes. `graceMs` is the join's grace period; `versioned` the table's
 * versioned materialization (None: unversioned).
 *
 * `tableSource`: set when the join does its table source's work itself ([[JoinedTableSource]]):
 * the right side is then the table's raw updates, not a [[KStateTableSource]]'s change rows.
 */
case class KStateStreamTableJoin(
    leftJoin: Boolean,
    graceMs: Option[Long],
    versioned: Option[VersionedTable],
    operatorName: Option[String],
    processingOrder: Option[ProcessingOrder],
    streamColumns: Seq[Attribute],
    tableValues: Seq[Attribute],
    tableSource: Option[JoinedTableSource],
    child: LogicalPlan
) extends UnaryNode with KStateStatefulNode {

  override def output: Seq[Attribute] = streamColumns ++ tableValues
  override def producedAttributes: AttributeSet = outputSet

  /**
   * The exec reads the whole envelope (side, key, timestamp and both sides' structs), found by
   * name: all of it is referenced, so column pruning under a projection keeps it.
   */
  override def references: AttributeSet = child.outputSet
  override def kind: String = "stream_table_join"

  private def envelope(name: String): Attribute = child.output.find(_.name == name).get
  def key: Attribute = envelope(TwoInputs.KeyColumn)
  def timestamp: Attribute = envelope(TwoInputs.TimestampColumn)
  def partitionBy: Seq[Expression] = Seq(key)

  override def fingerprint: Map[String, String] = Map(
    "kind" -> kind,
    "how" -> (if (leftJoin) "left" else "inner"),
    "graceMs" -> graceMs.fold("none")(_.toString),
    "historyRetentionMs" -> versioned.fold("unversioned")(_.historyRetentionMs.toString),
    "keyType" -> key.dataType.catalogString,
    "timestampType" -> timestamp.dataType.catalogString,
    "streamType" -> TableChangeColumns.valueType(streamColumns).catalogString,
    "tableValueType" -> TableChangeColumns.valueType(tableValues).catalogString
  ) ++
    tableSource.fold(Map.empty[String, String])(_.fingerprint)

  override protected def withNewChildInternal(newChild: LogicalPlan): KStateStreamTableJoin = copy(child = newChild)
}

object KStateStreamTableJoin {

  /** The name of the join key appended to each side's struct. */
  val JoinKeyField = "__kstate_join_key"

  /**
   * The join of `stream` (keyed and timed by `streamKey` / `streamTs`, resolved over it) with
   * `table`'s change rows. Checked here, when the DataFrame is built: a table value column named
   * like a stream column (`KSTATE_DUPLICATE_COLUMN`), a streaming and a batch input
   * (`KSTATE_STREAM_STATIC_JOIN`: Spark's stream–static join is the tool there), key and timestamp types
   * (`KSTATE_MISMATCHED_INPUTS`, by [[TwoInputs]]), the grace period ([[StreamTableJoinSpec]]:
   * negative, on an unversioned table, above the history retention).
   *
   * A streaming table read straight from its source (no filter or mapping between them) with the
   * join's processing order is joined from its raw updates ([[JoinedTableSource]]).
   */
  def apply(
      leftJoin: Boolean,
      graceMs: Option[Long],
      versioned: Option[VersionedTable],
      operatorName: Option[String],
      processingOrder: Option[ProcessingOrder],
      stream: LogicalPlan,
      streamKey: Expression,
      streamTs: Expression,
      table: TableTransforms.Changes
  ): KStateStreamTableJoin = {
    StreamTableJoinSpec(leftJoin, versioned.map(_.historyRetentionMs), graceMs) // grace: named errors
    if (stream.isStreaming != table.plan.isStreaming) {
      throw KStateErrors.streamStaticJoin(tableJoin = false, leftStreaming = stream.isStreaming)
    }
    val streamNames = stream.output.map(_.name.toLowerCase).toSet
    table.values.find(v => streamNames.contains(v.toLowerCase)).foreach { n =>
      throw KStateErrors.joinColumnClash(n, stream.output.map(_.name), table.values)
    }
    val left = Project(stream.output :+ Alias(streamKey, JoinKeyField)(), stream)
    val joinedSource = table.plan match {
      case s: KStateTableSource if stream.isStreaming && s.processingOrder == processingOrder => Some(s)
      case _ => None
    }
    val right = joinedSource match {
      case Some(s) => Project(s.values :+ Alias(s.key, JoinKeyField)() :+ s.timestamp, s.child)
      case None => Project(
          table.valueAttrs :+ Alias(table.attr(table.key), JoinKeyField)() :+
            table.attr(table.timestamp),
          table.plan
        )
    }
    val env = TwoInputs(
      left,
      left.output.last,
      streamTs,
      right,
      right.output(table.values.length),
      right.output.last
    )
    KStateStreamTableJoin(
      leftJoin,
      graceMs,
      versioned,
      operatorName,
      processingOrder,
      stream.output.map(a => AttributeReference(a.name, a.dataType, a.nullable, a.metadata)()),
      table.valueAttrs.map(a => AttributeReference(a.name, a.dataType, nullable = true, a.metadata)()),
      joinedSource.map(JoinedTableSource.of),
      env.plan
    )
  }

  /** Fields of the stream side's struct: its columns, then the join key. */
  def streamStructFields(envelope: Seq[Attribute]): Int =
    structOf(envelope, TwoInputs.LeftColumn).length

  /** Fields of the table side's struct: its value columns, then the key, then the timestamp. */
  def tableStructFields(envelope: Seq[Attribute]): Int =
    structOf(envelope, TwoInputs.RightColumn).length

  private def structOf(envelope: Seq[Attribute], name: String): StructType =
    envelope.find(_.name == name).get.dataType.asInstanceOf[StructType]
}
