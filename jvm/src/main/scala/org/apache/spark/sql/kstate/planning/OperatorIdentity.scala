package org.apache.spark.sql.kstate.planning

import java.nio.charset.StandardCharsets
import java.util.Properties

import scala.jdk.CollectionConverters._
import scala.util.hashing.MurmurHash3

import org.apache.spark.sql.kstate.errors.KStateErrors
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path

import org.apache.spark.sql.kstate.evolution.StateEvolution
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager
import org.apache.spark.sql.kstate.plans.KStateStatefulNode

/**
 * A kstate operator's stable identity in a checkpoint.
 *
 * Name: the user's `name=`, or `<kind>-<n>` where n counts kstate stateful operators in the
 * query plan in pre-order (so an unnamed operator keeps its identity as long as the kstate
 * operators before it stay). Operator id: derived from the name alone, in a range Spark's own
 * operators (numbered 0, 1, 2, ...) never reach, so kstate and Spark operators share the
 * query's `state/` directory without colliding and Spark's metadata checks see both.
 */
object OperatorIdentity {
  val IdBase: Long = 1000000000L
  private val ValidName = "[A-Za-z0-9_.\\-]{1,100}".r

  def validateName(name: String): String = name match {
    case ValidName() => name
    case _ => throw KStateErrors.invalidName(name)
  }

  def operatorId(name: String): Long =
    IdBase + (MurmurHash3.stringHash(name, 0x6b737461) & 0x7fffffffL) % IdBase

  /** Whether `id` is in kstate's operator id range (Spark numbers its own operators from 0). */
  def isKStateOperatorId(id: Long): Boolean = id >= IdBase && id < 2 * IdBase

  /** Names of all kstate stateful operators in `plan`, in pre-order; must be distinct. */
  def namesIn(plan: LogicalPlan): Seq[(KStateStatefulNode, String)] = {
    val nodes = plan.collect { case n: KStateStatefulNode => n }
    val named = nodes.zipWithIndex.map { case (n, i) =>
      n -> n.operatorName.getOrElse(s"${n.kind}-$i")
    }
    named.groupBy(_._2).collectFirst { case (name, xs) if xs.size > 1 => name }
      .foreach(n => throw KStateErrors.duplicateOperatorName(n))
    named
  }

  /**
   * Fails when two kstate operators in `plan` were given the same `name=`. Run when a kstate
   * DataFrame is built, on its plan: a clash involving an unnamed operator's `<kind>-<n>`, or
   * between DataFrames combined later (e.g. a union of two built separately), depends on the
   * whole query and is found by [[namesIn]] when the query is planned.
   */
  def checkExplicitNames(plan: LogicalPlan): Unit =
    plan.collect { case n: KStateStatefulNode => n.operatorName }.flatten
      .groupBy(identity).collectFirst { case (name, xs) if xs.size > 1 => name }
      .foreach(n => throw KStateErrors.duplicateOperatorNameInInput(n))

  def nameOf(node: KStateStatefulNode, plan: LogicalPlan): String =
    namesIn(plan).collectFirst { case (n, name) if n == node => name }
      .orElse(node.operatorName)
      .getOrElse(throw KStateErrors.internal(s"kstate node not found in its query plan: $node"))

  /** Key of the state store provider class in an operator's recorded configuration. */
  val ProviderKey: String = "stateStoreProvider"

  /** Key of the operator's name in its recorded configuration. */
  val NameKey: String = "name"

  /** kstate's own directory under an operator's state directory (not state: [[CommittedState]]). */
  val ConfigDir: String = "_kstate"

  /** Where an operator's configuration is recorded, under its state directory. */
  def configFile(stateDir: Path): Path = new Path(new Path(stateDir, ConfigDir), "operator.properties")

  /**
   * The format of the configuration record (docs/upgrades.md). Format 1: Java properties, one
   * key per fingerprint entry plus [[NameKey]]. The format is in a comment line
   * `#kstate-format=<n>`, not in a key: keys are the configuration, compared as a whole on
   * restart, and a comment is ignored by the releases before the marker (which read format 1
   * and would see a new key as a changed configuration). A record without the line (written
   * before the marker existed) is format 1. A kstate that changes the record's keys or their
   * meaning, or the layout of an operator's state that nothing else versions, writes a higher
   * format; a record of a format above this one fails with `KSTATE_CHECKPOINT_FROM_NEWER_KSTATE`.
   */
  val RecordFormat: Int = 1
  private val FormatMarker = "kstate-format="

  /**
   * The configuration recorded for the operator whose state lives in `stateDir` (fingerprint
   * plus [[NameKey]]), or None when nothing was recorded there (not a kstate operator, or no
   * batch has run yet). Reads only. A record of a newer format is
   * `KSTATE_CHECKPOINT_FROM_NEWER_KSTATE`.
   */
  def readConfig(stateDir: Path, conf: Configuration): Option[Map[String, String]] = {
    val file = configFile(stateDir)
    val fm = CheckpointFileManager.create(file.getParent, conf)
    if (!fm.exists(file)) None
    else {
      val in = fm.open(file)
      val text =
        try new String(in.readAllBytes(), StandardCharsets.UTF_8)
        finally in.close()
      checkRecordFormat(text, file.toString)
      val props = new Properties()
      props.load(new java.io.StringReader(text))
      Some(props.asScala.toMap)
    }
  }

  /** Fails unless the record's format (its marker line; none: 1) is one this kstate reads. */
  private def checkRecordFormat(text: String, file: String): Unit =
    text.linesIterator.map(_.trim).collectFirst {
      case line if line.startsWith("#" + FormatMarker) => line.stripPrefix("#" + FormatMarker).trim
    }.foreach { found =>
      if (!found.toIntOption.exists(f => f >= 1 && f <= RecordFormat)) {
        throw KStateErrors.checkpointFromNewerKstate(
          "Operator configuration record",
          file,
          found,
          1 to RecordFormat
        )
      }
    }

  /**
   * Records the operator's configuration next to its state on first run and checks it on every
   * restart, before any state is read: a changed configuration fails here
   * (`KSTATE_OPERATOR_CONFIG_CHANGED`), except a compatible change of the row types the operator
   * keeps (docs/operators.md, "Evolving schemas"), which is recorded as a [[StateEvolution]] from
   * the version this micro-batch commits (`version + 1`) and returned: the micro-batch's tasks
   * convert the stored rows. An incompatible change of those types is
   * `KSTATE_INCOMPATIBLE_STATE_SCHEMA`. A first run is one without state ([[CommittedState]]):
   * state without its record fails with `KSTATE_OPERATOR_CONFIG_MISSING` and records nothing,
   * since the configuration the state was written with can no longer be checked.
   *
   * @param version the state version this micro-batch loads (its batch id)
   * @return the evolution whose rows this micro-batch's tasks convert, if any
   */
  def checkOrRecordConfig(
      stateDir: Path,
      name: String,
      fingerprint: Map[String, String],
      conf: Configuration,
      version: Long
  ): Option[StateEvolution] = {
    val file = configFile(stateDir)
    val current = fingerprint + (NameKey -> name)
    readConfig(stateDir, conf) match {
      case Some(recorded) =>
        val stored = StateEvolution.effectiveAt(recorded, version)
        if (stored == current) {
          // the types the state holds at `version`; a record with newer types than that was
          // written by a micro-batch that never committed (the query was reverted): drop it
          if (recorded.filterNot(_._1.startsWith("evolution.")) != current) record(file, current, conf)
          StateEvolution.pendingAt(recorded, version).filter(_ =>
            recorded.filterNot(_._1.startsWith("evolution.")) == current
          )
        } else StateEvolution.classify(name, stored, current) match {
          case Left(()) =>
            def show(m: Map[String, String]) = m.toSeq.sorted.map { case (k, v) => s"$k=$v" }.mkString(", ")
            throw KStateErrors.configChanged(name, show(stored), show(current), file.toString)
          case Right(types) =>
            val evolution = StateEvolution(current.getOrElse("kind", ""), version + 1, types)
            record(
              file,
              current ++ Map(StateEvolution.FromVersionKey -> evolution.fromVersion.toString) ++
                types.map { case (k, (before, _)) => StateEvolution.BeforePrefix + k -> before },
              conf
            )
            Some(evolution)
        }
      case None =>
        CommittedState.find(stateDir, conf).foreach { state =>
          throw KStateErrors.configMissing(name, file.toString, state.toString)
        }
        record(file, current, conf)
        None
    }
  }

  private def record(file: Path, config: Map[String, String], conf: Configuration): Unit = {
    val fm = CheckpointFileManager.create(file.getParent, conf)
    fm.mkdirs(file.getParent)
    val props = new Properties()
    config.foreach { case (k, v) => props.setProperty(k, v) }
    val out = fm.createAtomic(file, true)
    try {
      val w = new java.io.OutputStreamWriter(out, StandardCharsets.UTF_8)
      // The comment's second line is the format marker: `#kstate-format=1`.
      props.store(w, s"kstate operator configuration; do not edit\n$FormatMarker$RecordFormat")
      w.flush()
      out.close()
    } catch { case e: Throwable => out.cancel(); throw e }
  }
}
