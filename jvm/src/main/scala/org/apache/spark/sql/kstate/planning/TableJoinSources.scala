package org.apache.spark.sql.kstate.planning

import java.util.UUID
import java.util.concurrent.ConcurrentHashMap

import io.kstate.ProcessingOrder
import org.apache.hadoop.fs.Path

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, Project, Union}
import org.apache.spark.sql.kstate.config.KStateConf
import org.apache.spark.sql.kstate.plans.{KStateTableJoin, KStateTableSource, TableJoinSide, TwoInputs}
import org.apache.spark.sql.kstate.shim.{OrderedLog, RunningQuery}

/**
 * When a streaming primary-key table–table join does its two table sources' work itself: both
 * tables come straight from their sources (`to_table`, no `filter` / `map_values` between) and
 * the sources process their updates in the same order (the same policy; for `auto`, the same
 * resolution). The join then reads both tables' raw updates
 * (one envelope of the sources' inputs, one shuffle, one sort) and materializes each table in its
 * own state, as Kafka's join reads its source tables' stores; the plan has one stateful operator
 * where it had three (two table sources, each storing its table, and a join keeping a copy of
 * each table's latest values). docs/tables.md, "One materialization per joined table".
 *
 * Same results: each source's decisions (null keys, null timestamps, a versioned table's updates
 * older than its stream time − grace, which update is a key's latest) depend only on its own
 * table's updates in its processing order, and the join's order of both tables' updates,
 * restricted to one table, is that table's order (in event-time order a sort; in Kafka task
 * order, a merge of the table's partitions alone). The one difference is the stream–table join's:
 * in Kafka task order a table update with a null key takes part in the merge before it is
 * dropped, as in a Kafka task.
 *
 * Decided when a micro-batch is planned, from the checkpoint, so that a checkpoint keeps its
 * layout: a checkpoint whose table sources hold state (written with them as operators of their
 * own, by this kstate with the setting off or by a release before it) goes on that way; one whose
 * join holds state and whose sources hold none goes on with the join reading the sources; a new
 * checkpoint follows `spark.kstate.tableJoin.readsSources`. The decision is kept per query run.
 */
private[kstate] object TableJoinSources {

  /** The two sources a join reads directly, with the envelope of their inputs. */
  final case class Read(
      left: KStateTableSource,
      right: KStateTableSource,
      leftName: String,
      rightName: String,
      envelope: TwoInputs.Envelope
  ) {
    def leftSide: TableJoinSide = TableJoinSide.ofSource(left)
    def rightSide: TableJoinSide = TableJoinSide.ofSource(right)

    /**
     * Configuration the join records for its tables, each source's own entries under
     * [[LeftPrefix]] / [[RightPrefix]] with its name: what `kstate.read_table` reads, and what
     * makes a change of the layout on restart a configuration change. Not the key and value
     * types, which the join records already (`keyType`, `leftValueType`, `rightValueType`: a
     * value type may evolve, [[org.apache.spark.sql.kstate.evolution.StateEvolution]]).
     */
    def fingerprint: Map[String, String] =
      prefixed(LeftPrefix, left, leftName) ++ prefixed(RightPrefix, right, rightName)

    private def prefixed(prefix: String, s: KStateTableSource, name: String): Map[String, String] =
      (s.fingerprint -- Seq("keyType", "valueType") + ("name" -> name)).map { case (k, v) => (prefix + k) -> v }
  }

  /** Where the join's configuration records its left table's entries. */
  val LeftPrefix = "left.table."

  /** Where the join's configuration records its right table's entries. */
  val RightPrefix = "right.table."

  /** Decisions of the runs planned so far: (run id, join's operator id) -> read the sources. */
  private val decided = new ConcurrentHashMap[(UUID, Long), java.lang.Boolean]()
  private val MaxDecisions = 10000

  /** The two sources `join` reads directly, or None when it keeps the three-operator plan. */
  def of(
      join: KStateTableJoin,
      session: SparkSession,
      orderOf: KStateTableSource => ProcessingOrder
  ): Option[Read] = if (!join.isStreaming) None
  else
    sourcesOf(join.child).filter { case (l, r) => sameOrder(l, r, orderOf) }.flatMap { case (l, r) =>
      RunningQuery.current(session).filter(q => readsSources(q, join, l, r, session)).map { q =>
        val plan = q.optimizedPlan
        Read(
          l,
          r,
          OperatorIdentity.nameOf(l, plan),
          OperatorIdentity.nameOf(r, plan),
          TwoInputs(l.child, l.key, l.timestamp, r.child, r.key, r.timestamp)
        )
      }
    }

  /**
   * Whether both sources process their updates in the same order, as the join would process
   * both: the same policy, and for `auto` the same resolution (task order where all of a
   * source's input is an ordered log, event time otherwise: the join's input is both sources'
   * inputs, so a Kafka table joined with a file table would otherwise take the file table's
   * event-time order for the Kafka table's updates too).
   */
  private def sameOrder(
      l: KStateTableSource,
      r: KStateTableSource,
      orderOf: KStateTableSource => ProcessingOrder
  ): Boolean = orderOf(l) == orderOf(r) &&
    (orderOf(l) != ProcessingOrder.Auto || OrderedLog.plannedFrom(l.child) == OrderedLog.plannedFrom(r.child))

  /** The join's two table sources when its envelope reads them with nothing between. */
  private def sourcesOf(envelope: LogicalPlan): Option[(KStateTableSource, KStateTableSource)] = {
    def source(p: LogicalPlan): Option[KStateTableSource] = p match {
      case Project(_, s: KStateTableSource) => Some(s)
      case _ => None
    }
    envelope match {
      case u: Union if u.children.length == 2 =>
        for (l <- source(u.children.head); r <- source(u.children(1))) yield (l, r)
      case _ => None
    }
  }

  private def readsSources(
      q: RunningQuery,
      join: KStateTableJoin,
      left: KStateTableSource,
      right: KStateTableSource,
      session: SparkSession
  ): Boolean = {
    val plan = q.optimizedPlan
    def id(n: org.apache.spark.sql.kstate.plans.KStateStatefulNode) =
      OperatorIdentity.operatorId(OperatorIdentity.nameOf(n, plan))
    val joinId = id(join)
    val key = (q.runId, joinId)
    val known = decided.get(key)
    if (known != null) return known.booleanValue
    val conf = session.sessionState.newHadoopConf()
    def hasState(opId: Long) = CommittedState.find(new Path(q.checkpointLocation, opId.toString), conf).isDefined
    val answer =
      if (hasState(id(left)) || hasState(id(right))) false
      else hasState(joinId) || KStateConf.TableJoinReadsSources.get(session.sessionState.conf)
    if (decided.size >= MaxDecisions) decided.clear()
    decided.put(key, answer)
    answer
  }
}
