package org.apache.spark.sql.kstate.processor.join

/**
 * Where a [[StreamTableJoinProcessor]] sends its join results: the stream record's value, the
 * table value it joined with (null: no match, left join only) and the stream record's timestamp
 * (Kafka's output timestamp; for a buffered record its own, not the time it left the buffer).
 * A trait rather than a function so that the timestamp is never boxed.
 */
trait StreamTableJoinEmitter[S, T] {
  def emit(stream: S, table: T, ts: Long): Unit
}
