package org.apache.spark.sql.kstate.provider

import scala.util.control.NonFatal

import org.apache.hadoop.fs.Path

import org.apache.spark.sql.kstate.provider.KStateStore
import org.apache.spark.sql.kstate.engine.{DbView, StateFile, StateFiles}

/**
 * The changelog of a version being written in pieces by `store`'s spills (SPILLED), and the
 * frozen view of the version below it that the partition's other stores read meanwhile.
 * The changelog becomes durable only when `store` commits; [[cancel]] leaves no file.
 *
 * @param taskAttempt the task that opened it (a store of another task finds it abandoned)
 * @param baseView    the working copy as it was before the first spill, or null when the
 *                    version never spilled (a commit's changelog)
 * @param checkpointId checkpoint format v2: the id the version gets if it commits (its file's)
 */
private[kstate] final case class PendingVersion(
    store: KStateStore,
    taskAttempt: Option[Long],
    file: Path,
    out: StateFiles.AtomicOutput,
    writer: StateFile.Writer,
    baseView: DbView,
    checkpointId: Option[String] = None
) {

  private var viewClosed = baseView == null

  /** Releases the base view (before the working copy's database closes); idempotent. */
  def closeView(): Unit = if (!viewClosed) { viewClosed = true; baseView.close() }

  /** Gives the version up: no changelog file appears; returns a failure to log, if any. */
  def cancel(): Option[Throwable] = {
    closeView()
    try { out.cancel(); None }
    catch { case NonFatal(e) => Some(e) }
  }
}
