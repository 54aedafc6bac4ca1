package org.apache.spark.sql.kstate.plans

/**
 * A table source whose work a stream–table join does itself: the table's updates go straight
 * into the join, which drops what the source would drop (null keys, null timestamps, a versioned
 * table's updates older than its stream time − its grace) and keeps the table's one
 * materialization. Without this the same versions were stored twice, once by the source and
 * once by the join (docs/tables.md, "One materialization per joined table").
 *
 * Chosen by [[KStateStreamTableJoin]] when the join reads a streaming [[KStateTableSource]]
 * directly with the same processing order: then the join's order of the table's updates is the
 * source's order (a Kafka task's merge restricted to the table's partitions is the merge of those
 * partitions alone), so the source's drops are the same decisions. Recorded in the join's
 * configuration so that `kstate.read_table` finds the table's versions in the join's state.
 *
 * @param name            the table's name (`to_table(name=...)`), if it has one
 * @param keyColumn       the table's key column
 * @param timestampColumn the table's timestamp column
 * @param timestampType   its type (SQL)
 * @param graceMs         a versioned table's own grace period (None: unversioned)
 */
final case class JoinedTableSource(
    name: Option[String],
    keyColumn: String,
    timestampColumn: String,
    timestampType: String,
    graceMs: Option[Long]
) {

  import JoinedTableSource.Prefix

  /**
   * The join's configuration entries for its table: the table source's own keys (`keyColumn`,
   * `timestampColumn`, `timestampType`, `graceMs`, as [[KStateTableSource]] records them) under
   * [[JoinedTableSource.Prefix]], with the table's kind and name.
   */
  def fingerprint: Map[String, String] = Map(
    JoinedTableSource.Kind -> (if (graceMs.isDefined) "versioned_table" else "table"),
    Prefix + "keyColumn" -> keyColumn,
    Prefix + "timestampColumn" -> timestampColumn,
    Prefix + "timestampType" -> timestampType
  ) ++
    name.map(JoinedTableSource.Name -> _) ++
    graceMs.map(g => Prefix + "graceMs" -> g.toString)
}

object JoinedTableSource {

  /** What the join's configuration puts before the table's entries. */
  val Prefix = "table."

  /** Configuration key: the kind of the table the join materializes ("table" or "versioned_table"). */
  val Kind: String = Prefix + "kind"

  /** Configuration key: the table's name. */
  val Name: String = Prefix + "name"

  def of(s: KStateTableSource): JoinedTableSource = JoinedTableSource(
    s.operatorName,
    s.key.name,
    s.timestamp.name,
    s.timestamp.dataType.catalogString,
    s.versioned.map(_.graceMs)
  )
}
