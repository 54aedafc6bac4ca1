package org.apache.spark.sql.kstate.processor.dedup

import java.util.PriorityQueue

import scala.collection.mutable

import org.apache.spark.sql.kstate.processor.StreamTime

/**
 * Heap-only [[DedupState]]: batch DataFrames (one batch, state discarded) and unit tests.
 * `copyKey` makes a caller-owned key safe to keep.
 */
final class InMemoryDedupState[K](copyKey: K => K) extends DedupState[K] {
  private val entries = mutable.HashMap.empty[K, Long]
  private val byTime = new PriorityQueue[InMemoryDedupState.Expiry[K]](
    (a: InMemoryDedupState.Expiry[K], b: InMemoryDedupState.Expiry[K]) => java.lang.Long.compare(a.ts, b.ts)
  )

  override var streamTime: Long = StreamTime.Unknown

  override def get(identity: K): Long = entries.getOrElse(identity, DedupState.NoEntry)

  override def put(identity: K, ts: Long, replaces: Boolean): Unit = {
    val k = copyKey(identity)
    entries.update(k, ts)
    byTime.add(InMemoryDedupState.Expiry(ts, k))
  }

  override def purgeOlderThan(bound: Long): Long = {
    var removed = 0L
    while (!byTime.isEmpty && byTime.peek().ts < bound) {
      val e = byTime.poll()
      if (entries.get(e.key).contains(e.ts)) {
        entries.remove(e.key)
        removed += 1
      }
    }
    removed
  }

  override def numEntries: Long = entries.size.toLong
}

object InMemoryDedupState {
  private final case class Expiry[K](ts: Long, key: K)
}
