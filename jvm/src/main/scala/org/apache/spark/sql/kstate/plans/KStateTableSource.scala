package org.apache.spark.sql.kstate.plans

import io.kstate.ProcessingOrder
import io.kstate.tables.VersionedTable

import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeReference, AttributeSet, Expression}
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, UnaryNode}
import org.apache.spark.sql.types.{BooleanType, StructField, StructType}

/**
 * A table's source (`df.kstate.to_table`, Kafka's `KStream#toTable` / `builder.table` with a
 * materialization): the child's rows are the table's updates, keyed by `key`, timed by
 * `timestamp`, valued by `values` (a row whose value columns are all null is a tombstone). Each
 * state partition materializes its keys (latest by processing order, or versioned) and passes on
 * every update it stores as a change row: the child's columns (the new value) followed by
 * [[TableChangeColumns.OldValue]], the key's previous value as a struct of the value columns (null
 * when it had none), and [[TableChangeColumns.Latest]] (false only for an out-of-order update of a
 * versioned table). A versioned table drops updates older than its stream time − grace.
 */
case class KStateTableSource(
    key: Attribute,
    timestamp: Attribute,
    values: Seq[Attribute],
    versioned: Option[VersionedTable],
    operatorName: Option[String],
    processingOrder: Option[ProcessingOrder],
    oldValue: Attribute,
    latest: Attribute,
    child: LogicalPlan
) extends UnaryNode with KStateStatefulNode {

  override def output: Seq[Attribute] = child.output :+ oldValue :+ latest
  override def producedAttributes: AttributeSet = AttributeSet(Seq(oldValue, latest))
  override def kind: String = if (versioned.isDefined) "versioned_table" else "table"
  def partitionBy: Seq[Expression] = Seq(key)

  override def fingerprint: Map[String, String] = Map(
    "kind" -> kind,
    "keyType" -> key.dataType.catalogString,
    "valueType" -> TableChangeColumns.valueType(values).catalogString,
    "timestampType" -> timestamp.dataType.catalogString,
    // the column names, for kstate.read_table (the value columns' are in valueType)
    "keyColumn" -> key.name,
    "timestampColumn" -> timestamp.name
  ) ++
    versioned.toSeq.flatMap(v =>
      Seq(
        "historyRetentionMs" -> v.historyRetentionMs.toString,
        "graceMs" -> v.graceMs.toString
      )
    )

  override protected def withNewChildInternal(newChild: LogicalPlan): KStateTableSource = copy(child = newChild)
}

/** The two columns a table's change rows carry after the table's own columns. */
object TableChangeColumns {
  val OldValue = "__kstate_old"
  val Latest = "__kstate_latest"

  def valueType(values: Seq[Attribute]): StructType =
    StructType(values.map(a => StructField(a.name, a.dataType, a.nullable)))

  def oldValueAttribute(values: Seq[Attribute]): Attribute =
    AttributeReference(OldValue, valueType(values), nullable = true)()
  def latestAttribute(): Attribute = AttributeReference(Latest, BooleanType, nullable = false)()

  def isChangeColumn(name: String): Boolean = name == OldValue || name == Latest
}
