package org.apache.spark.sql.kstate.execution

import io.kstate.suppress.UntilWindowCloses

import org.apache.spark.sql.execution.streaming.state.StateStore
import org.apache.spark.sql.kstate.processor.suppress.BufferLimits
import org.apache.spark.sql.kstate.provider.KStateStore

/**
 * The buffer limits of `suppress(untilWindowCloses)` fused into a windowed aggregation, whose
 * open windows are the buffer: they bound the store's heap (spill to disk) or fail the batch
 * before it commits (shut down). Emit early does not exist for final results.
 */
private[execution] object FinalResultsBuffer {

  /**
   * With spill to disk and a bound, bounds `store`'s heap like the time-ordered buffer's: the store
   * spills past it. `entriesPerRecord`: store entries per buffered window.
   */
  def boundHeap(finalResults: Option[UntilWindowCloses], store: Option[StateStore], entriesPerRecord: Int): Unit =
    for (f <- finalResults; s <- store) {
      val limits = BufferLimits.of(f.bufferConfig)
      s match {
        case k: KStateStore if limits.spills =>
          k.limitHeap(
            limits.maxBytes,
            if (limits.maxRecords == Long.MaxValue) Long.MaxValue else entriesPerRecord * limits.maxRecords
          )
        case _ =>
      }
    }

  /** Whether changed windows should go to the store as the batch runs (a bounded, spilling buffer). */
  def spills(finalResults: Option[UntilWindowCloses]): Boolean =
    finalResults.exists(f => BufferLimits.of(f.bufferConfig).spills)

  /** With shut down when full: `KSTATE_BUFFER_FULL` when the open windows exceed the limits. */
  def checkFull(finalResults: Option[UntilWindowCloses], operatorName: String, records: Long, bytes: Long): Unit =
    finalResults.foreach(f => BufferLimits.of(f.bufferConfig).shutDownIfExceeded(operatorName, records, bytes))
}
