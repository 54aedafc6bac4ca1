package org.apache.spark.sql.kstate.reader

/** Which kstate operator of a checkpoint to read: by its kstate name or its Spark operator id. */
sealed trait OperatorSelector {
  def matches(op: RecordedOperator): Boolean

  /** For messages, e.g. `named 'dedup'`. */
  def describe: String
}

object OperatorSelector {

  /** The operator's kstate name: its `name=`, or `<kind>-<n>` for an unnamed operator. */
  final case class ByName(name: String) extends OperatorSelector {
    override def matches(op: RecordedOperator): Boolean = op.name.contains(name)
    override def describe: String = s"named '$name'"
  }

  /** The operator id Spark's `state-metadata` source lists. */
  final case class ById(id: Long) extends OperatorSelector {
    override def matches(op: RecordedOperator): Boolean = op.id == id
    override def describe: String = s"with operator id $id"
  }
}
