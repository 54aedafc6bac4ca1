package org.apache.spark.sql.kstate.execution

import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{GenericInternalRow, UnsafeRow}
import org.apache.spark.sql.types.{DataType, LongType}

/**
 * [[SentRows]]: every row `process` sends, in order, across input rows that send none, one or
 * two; the rows sent for one input row keep their values together (their own buffers) though the
 * caller reuses the row it sends; more than `max` per input row is refused.
 */
class SentRowsSuite extends AnyFunSuite {
  private val types: Array[DataType] = Array(LongType, LongType)
  private def in(n: Long): InternalRow = new GenericInternalRow(Array[Any](n))

  test("each input row's sends in order, none to two per row; the rows of one input row stay as sent") {
    val sent = new SentRows(types, 2)
    val reused = new GenericInternalRow(2) // the caller reuses its row, as the execs do
    val out = sent.over(Iterator(0L, 1L, 2L, 0L, 2L).map(in)) { row =>
      val n = row.getLong(0)
      for (i <- 0L until n) { reused.setLong(0, n); reused.setLong(1, i); sent.send(reused) }
    }
    val seen = scala.collection.mutable.ArrayBuffer.empty[(Long, Long)]
    var pair = List.empty[UnsafeRow]
    while (out.hasNext) {
      val r = out.next().asInstanceOf[UnsafeRow]
      seen += ((r.getLong(0), r.getLong(1)))
      pair = r :: pair
      if (r.getLong(0) == 2L && r.getLong(1) == 1L) // both rows of an input row sending two
        assert(pair.take(2).map(p => (p.getLong(0), p.getLong(1))) === List((2L, 1L), (2L, 0L)))
    }
    assert(seen === Seq((1L, 0L), (2L, 0L), (2L, 1L), (2L, 0L), (2L, 1L)))
    assertThrows[NoSuchElementException](out.next())
  }

  test("more rows than the maximum for one input row: refused") {
    val sent = new SentRows(types, 2)
    val row = new GenericInternalRow(Array[Any](1L, 2L))
    val out = sent.over(Iterator(in(0L))) { _ => (1 to 3).foreach(_ => sent.send(row)) }
    val e = intercept[IllegalStateException](out.hasNext)
    assert(e.getMessage.contains("more than 2 rows"))
  }
}
