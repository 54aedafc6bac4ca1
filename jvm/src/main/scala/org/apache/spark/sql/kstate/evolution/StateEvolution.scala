package org.apache.spark.sql.kstate.evolution

import org.apache.spark.sql.kstate.errors.KStateErrors

import org.apache.spark.sql.catalyst.parser.CatalystSqlParser
import org.apache.spark.sql.types.StructType

/**
 * A compatible change of the row types an operator keeps in state, accepted when a query
 * restarted with it (docs/operators.md, "Evolving schemas"): state versions before `fromVersion`
 * hold rows of the `before` types, versions from it on rows of the operator's current recorded
 * configuration. The first micro-batch after the change (it loads version `fromVersion - 1`)
 * converts every stored row in its task ([[StateMigration]]) and commits them with its version,
 * so a re-run of that micro-batch converts again from the same old version, and every later
 * version (on any executor, standby copies included) holds the new rows.
 *
 * @param changes each recorded configuration key of a row type -> (type before, type now), catalog
 *   strings (equal for a key that did not change)
 */
final case class StateEvolution(kind: String, fromVersion: Long, changes: Map[String, (String, String)]) {

  /** The change of `key`, parsed: (before, now); None when `key` did not change. */
  def change(key: String): Option[(StructType, StructType)] = changes.get(key).filter { case (b, n) => b != n }.map {
    case (b, n) => (StateEvolution.structOf(key, b), StateEvolution.structOf(key, n))
  }

  /** `key`'s types, parsed, changed or not: (before, now). */
  def types(key: String): Option[(StructType, StructType)] = changes.get(key).map { case (b, n) =>
    (StateEvolution.structOf(key, b), StateEvolution.structOf(key, n))
  }
}

object StateEvolution {

  /** A recorded type list split into its types (for tests and messages). */
  def typeListOf(recorded: String): Seq[String] = RowEvolution.splitTopLevel(recorded)

  /** The recorded configuration's keys for an evolution (beside the operator's own). */
  val FromVersionKey = "evolution.fromVersion"
  val BeforePrefix = "evolution.before."

  /**
   * The keys of each operator kind's recorded configuration that hold row types, and whether the
   * rows are stored (converted) or only pass through (any compatible change is accepted as is).
   * Every other key (kinds, key types, windows, intervals, names) must stay equal:
   * `KSTATE_OPERATOR_CONFIG_CHANGED` as before.
   */
  private val Evolvable: Map[String, Set[String]] = Map(
    "suppress" -> Set("rowType"),
    "table" -> Set("valueType"),
    "versioned_table" -> Set("valueType"),
    "stream_table_join" -> Set("streamType", "tableValueType"),
    "table_join" -> Set("leftValueType", "rightValueType"),
    "fk_join_subscriptions" -> Set("subscriptionType", "rightValueType"),
    "fk_join" -> Set("leftValueType", "rightValueType"),
    "table_aggregate" -> Set("valueType", "aggregateType", "resultType"),
    "windowed_aggregate" -> Set("buffer", "results")
  )

  /** Keys whose types are positional lists, not structs: their arity may not change. */
  private val Positional = Set("buffer", "results")

  /** Parsed as a struct: a struct catalog string, or a positional list (`buffer`, `results`). */
  def structOf(key: String, recorded: String): StructType =
    if (key == "results") {
      RowEvolution.typeList(RowEvolution.splitTopLevel(recorded).map(_.split(":", 2).last).mkString(","))
    } else if (Positional(key)) RowEvolution.typeList(recorded)
    else CatalystSqlParser.parseDataType(recorded) match {
      case s: StructType => s
      case other => StructType(Seq(org.apache.spark.sql.types.StructField("value", other)))
    }

  /** The state's recorded configuration at `version`: `recorded` with the `before` types of an evolution from a later version. */
  def effectiveAt(recorded: Map[String, String], version: Long): Map[String, String] = {
    val own = recorded.filterNot(_._1.startsWith("evolution."))
    recorded.get(FromVersionKey).flatMap(_.toLongOption) match {
      case Some(from) if version < from =>
        own ++ recorded.collect { case (k, v) if k.startsWith(BeforePrefix) => k.stripPrefix(BeforePrefix) -> v }
      case _ => own
    }
  }

  /** The evolution `recorded` describes for a store at `version`, if its rows must be converted. */
  def pendingAt(recorded: Map[String, String], version: Long): Option[StateEvolution] =
    recorded.get(FromVersionKey).flatMap(_.toLongOption).filter(version < _).map { from =>
      val changes = recorded.collect {
        case (k, before) if k.startsWith(BeforePrefix) =>
          val key = k.stripPrefix(BeforePrefix)
          key -> (before, recorded.getOrElse(key, before))
      }
      StateEvolution(recorded.getOrElse("kind", ""), from, changes)
    }

  /**
   * How the operator's configuration changed from `stored` (effective at the version the next
   * micro-batch loads) to `current`: the evolvable keys that changed, each (before, now), or a
   * named error. `Left(())` when a key that may not change changed (the caller raises
   * `KSTATE_OPERATOR_CONFIG_CHANGED`).
   */
  def classify(operator: String, stored: Map[String, String], current: Map[String, String])
      : Either[Unit, Map[String, (String, String)]] = {
    val kind = current.getOrElse("kind", "")
    val changed = (stored.keySet ++ current.keySet).filter(k => stored.get(k) != current.get(k))
    val evolvable = Evolvable.getOrElse(kind, Set.empty)
    // a key, timestamp or identity type: the state is found by it, so no conversion can carry it
    changed.find(k =>
      !evolvable(k) && (k.endsWith("Type") || k.endsWith("Types")) && stored.contains(k) &&
        current.contains(k)
    ).foreach { k =>
      throw KStateErrors.incompatibleStateSchema(
        operator,
        k,
        k,
        s"${stored(k)} -> ${current(k)}, which the state is " +
          "keyed or timed by"
      )
    }
    if (changed.exists(k => !evolvable(k) || stored.get(k).isEmpty || current.get(k).isEmpty)) Left(())
    else Right(evolvable.toSeq.filter(k => stored.contains(k) && current.contains(k)).map { k =>
      val (before, now) = (structOf(k, stored(k)), structOf(k, current(k)))
      if (Positional(k) && before.length != now.length) {
        throw KStateErrors.incompatibleStateSchema(
          operator,
          k,
          "(all)",
          s"${before.length} values -> ${now.length}: the aggregations changed, not their types"
        )
      }
      RowEvolution.incompatibility(before, now).foreach { i =>
        throw KStateErrors.incompatibleStateSchema(operator, k, i.column, i.change)
      }
      if (k == "subscriptionType") { // only the left value (field 3) may change, not the keys
        before.fields.zip(now.fields).zipWithIndex.find { case ((b, n), i) => i != 3 && b != n }.foreach {
          case ((b, n), _) => throw KStateErrors.incompatibleStateSchema(
              operator,
              k,
              b.name,
              s"${b.dataType.catalogString} -> ${n.dataType.catalogString}, which the subscriptions are keyed by"
            )
        }
      }
      k -> (stored(k), current(k))
    }.toMap)
  }
}
