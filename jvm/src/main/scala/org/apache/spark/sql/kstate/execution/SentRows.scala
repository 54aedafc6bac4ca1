package org.apache.spark.sql.kstate.execution

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection
import org.apache.spark.sql.types.DataType

/**
 * The rows a [[RekeyingMapExec]] sends for each of its input rows, at most `max` per input row,
 * handed on without copies. Each row sent for one input row is projected into a projection of
 * its own, so they never share a buffer; each stays valid until the map reads its next input row.
 * Spark's contract between operators allows it (a consumer that keeps a row copies it), and the
 * exchange that follows a rekeying map serializes each row as it comes.
 *
 * Life cycle: [[over]] wraps the map's input once; the `process` it is given calls [[send]] for
 * each row to send, zero to `max` times per input row. Per task; not thread-safe.
 */
private[execution] final class SentRows(types: Array[DataType], max: Int) {
  private val projections = Array.fill(max)(UnsafeProjection.create(types))
  private val rows = new Array[InternalRow](max)
  private var sent = 0
  private var handedOn = 0

  /** Sends `row`, of `types`: its values are projected now, so the caller may reuse it after. */
  def send(row: InternalRow): Unit = {
    if (sent == max) throw new IllegalStateException(s"more than $max rows sent for one input row")
    rows(sent) = projections(sent)(row)
    sent += 1
  }

  /** The rows `process` sends for each row of `input`, in order. */
  def over(input: Iterator[InternalRow])(process: InternalRow => Unit): Iterator[InternalRow] =
    new Iterator[InternalRow] {
      override def hasNext: Boolean = {
        while (handedOn == sent && input.hasNext) {
          sent = 0
          handedOn = 0
          process(input.next())
        }
        handedOn < sent
      }

      override def next(): InternalRow = {
        if (!hasNext) throw new NoSuchElementException("no more rows sent")
        handedOn += 1
        rows(handedOn - 1)
      }
    }
}
