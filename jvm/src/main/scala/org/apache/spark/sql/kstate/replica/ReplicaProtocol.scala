package org.apache.spark.sql.kstate.replica

import org.json4s._
import org.json4s.JsonDSL._
import org.json4s.jackson.JsonMethods.{compact, parse, render}

/**
 * The messages between an executor's [[ReplicaFollower]] and the driver's
 * [[ReplicaCoordinator]], sent through Spark's plugin channel (`PluginContext.ask`).
 * Executors ask; the driver only answers: it holds no reference to executors.
 *
 * On the wire a message is a JSON string ([[encode]] / [[decodePoll]] / [[decodeAssignments]]),
 * never one of these classes: an executor's RPC layer deserializes replies with Spark's own
 * class loader, which does not see kstate's jar (it arrives with `spark.jars`), so a kstate class
 * in a reply fails the executor's connection to the driver.
 */
object ReplicaProtocol {

  /**
   * An executor's follower asks what to follow, and says what it holds.
   *
   * @param holdings the committed version each standby or warm-up copy on the executor holds
   * @param loaded   the version each provider loaded on the executor holds (stores without a copy
   *                 there): a task reuses it only at exactly that version
   */
  final case class Poll(
      executorId: String,
      host: String,
      holdings: Map[ReplicaStore, Long],
      loaded: Map[ReplicaStore, Long] = Map.empty
  )

  /** What an executor should hold: a standby copy of each store, at its committed version. */
  final case class Assignments(standbys: Seq[Standby])

  /**
   * Keep a standby copy of `store` at `committedVersion`, the version the query's latest planned
   * micro-batch started from (so committed), or the next one once that batch's commit log entry
   * exists ([[CommitLogView]]). A changelog beyond the committed version may still be rewritten
   * by a re-run, so it is never applied.
   */
  final case class Standby(store: ReplicaStore, committedVersion: Long)

  def encode(p: Poll): String = compact(render(
    ("executor" -> p.executorId) ~ ("host" -> p.host) ~
      ("holdings" -> versions(p.holdings)) ~ ("loaded" -> versions(p.loaded))
  ))

  def encode(a: Assignments): String = compact(render(
    "standbys" -> a.standbys.map(s => ("store" -> store(s.store)) ~ ("committed" -> s.committedVersion))
  ))

  def decodePoll(json: String): Poll = {
    val j = parse(json)
    Poll(
      str(j \ "executor"),
      str(j \ "host"),
      versions(j \ "holdings"),
      versions(j \ "loaded")
    )
  }

  def decodeAssignments(json: String): Assignments =
    Assignments(arr(parse(json) \ "standbys").map(s => Standby(store(s \ "store"), long(s \ "committed"))))

  private def versions(m: Map[ReplicaStore, Long]): JArray =
    JArray(m.toList.map { case (s, v) => ("store" -> store(s)) ~ ("version" -> v) })

  private def versions(j: JValue): Map[ReplicaStore, Long] =
    arr(j).map(h => store(h \ "store") -> long(h \ "version")).toMap

  private def store(s: ReplicaStore): JObject =
    ("query" -> s.queryId) ~ ("root" -> s.stateRoot) ~ ("operator" -> s.operatorId) ~
      ("partition" -> s.partition) ~ ("name" -> s.storeName)

  private def store(j: JValue): ReplicaStore =
    ReplicaStore(str(j \ "query"), str(j \ "root"), long(j \ "operator"), long(j \ "partition").toInt, str(j \ "name"))

  private def str(j: JValue): String = j match {
    case JString(s) => s
    case other => throw new IllegalArgumentException(s"replica message: expected a string, got $other")
  }

  private def long(j: JValue): Long = j match {
    case JInt(i) => i.toLong
    case JLong(l) => l
    case other => throw new IllegalArgumentException(s"replica message: expected a number, got $other")
  }

  private def arr(j: JValue): List[JValue] = j match {
    case JArray(a) => a
    case JNothing => Nil
    case other => throw new IllegalArgumentException(s"replica message: expected an array, got $other")
  }
}
