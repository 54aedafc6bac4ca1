package org.apache.spark.sql.kstate.processor.join

/**
 * KIP-923's grace buffer of a stream–table join, for one state partition: stream records
 * (key `K`, value `S`) waiting until the buffer's stream time passes their timestamp + grace
 * (Kafka's `RocksDBTimeOrderedKeyValueBuffer` as `KStreamKTableJoinProcessor` uses it).
 *
 * Contract:
 *  - `put(key, value, ts)` keeps the record; every record is kept, also several with the same
 *    key and timestamp (unlike suppress's buffer, nothing is replaced).
 *  - `evictUpTo(time)(f)` removes every record with `ts <= time` and calls `f(key, value, ts)`
 *    for each, oldest first: by timestamp, then by key in the implementation's key order (a
 *    store orders serialized keys by their bytes, as Kafka does), then by arrival (put order,
 *    also across micro-batches and restarts). `f` must not modify the buffer.
 *  - `streamTime` is the buffer's stream time (Kafka's buffer store's observed stream time): the
 *    [[StreamTableJoinProcessor]] reads it once when it starts and writes it once in `finish`;
 *    [[org.apache.spark.sql.kstate.processor.StreamTime.Unknown]] before any record was put.
 *  - `numRecords` is exact.
 *  - Keys and values passed in are kept: the caller does not reuse them.
 * Unbounded, as Kafka's: its size is bounded by the grace period times the stream's rate.
 */
trait StreamTableJoinBuffer[K, S] {
  def put(key: K, value: S, ts: Long): Unit
  def evictUpTo(time: Long)(f: StreamTableJoinBuffer.Evicted[K, S]): Unit
  def numRecords: Long
  def streamTime: Long
  def streamTime_=(t: Long): Unit
}

object StreamTableJoinBuffer {

  /** A record leaving the buffer (a trait so that the timestamp is never boxed). */
  trait Evicted[K, S] {
    def apply(key: K, value: S, ts: Long): Unit
  }
}
