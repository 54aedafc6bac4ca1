package org.apache.spark.sql.kstate.operatorstate

import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.execution.streaming.state.StateStore
import org.apache.spark.sql.kstate.processor.window.StoredSession
import org.apache.spark.sql.kstate.provider.{ProviderFixture, ProviderMetrics}
import org.apache.spark.sql.types.{LongType, StringType, StructField, StructType}
import org.apache.spark.unsafe.types.UTF8String

/**
 * [[StoreSessionAggState]] on kstate's store: what a key's write-back puts in the version. A key
 * whose sessions all opened and closed within one micro-batch is written back with no sessions
 * and none before; that writes nothing (no delete of a key the store never held).
 */
class StoreSessionAggStateSuite extends AnyFunSuite {
  private val keySchema = SessionAggState.keySchema(StringType)
  private val bufferSchema = StructType(Seq(StructField("count", LongType)))
  private val keyProj = UnsafeProjection.create(keySchema)
  private val bufferProj = UnsafeProjection.create(bufferSchema)
  private def key(s: String): UnsafeRow = keyProj(InternalRow(UTF8String.fromString(s))).copy()
  private def span(start: Long, end: Long, n: Long): StoredSession[UnsafeRow] =
    StoredSession(start, end, end, bufferProj(InternalRow(n)).copy())

  private def changelogRecords(s: StateStore): Long =
    s.metrics.customMetrics.collectFirst { case (m, v) if m.name == ProviderMetrics.ChangelogRecords.name => v }.get

  test("no sessions for a key that had none writes nothing; removing a stored key's sessions writes its delete") {
    val p = ProviderFixture.open(ProviderFixture.tmp(), keySchema, SessionAggState.valueSchema(bufferSchema))
    val s0 = p.getStore(0)
    val st0 = new StoreSessionAggState(s0, keySchema, bufferSchema)
    st0.put(key("b"), Seq(span(1L, 5L, 2L)), Nil) // stored: b's session and its index entry
    st0.finish(5L) // persists the counts
    s0.commit()
    val written = changelogRecords(s0)
    assert(written > 0)

    val s1 = p.getStore(1)
    val st1 = new StoreSessionAggState(s1, keySchema, bufferSchema)
    st1.put(key("a"), Nil, Nil) // a: opened and closed within the batch, never stored
    assert(st1.records === 1L)
    assert(st1.get(key("a")).isEmpty)
    s1.commit()
    assert(changelogRecords(s1) === 0L)

    val s2 = p.getStore(2)
    val st2 = new StoreSessionAggState(s2, keySchema, bufferSchema)
    val old = st2.get(key("b"))
    assert(old.map(s => (s.start, s.end, s.agg.getLong(0))).toSeq === Seq((1L, 5L, 2L)))
    st2.put(key("b"), Nil, old.toSeq)
    assert(st2.records === 0L)
    s2.commit()
    assert(changelogRecords(s2) === 1L) // b's delete (its index entry stays until drained)

    val s3 = p.getStore(3)
    assert(new StoreSessionAggState(s3, keySchema, bufferSchema).get(key("b")).isEmpty)
    s3.abort()
    p.close()
  }
}
