package org.apache.spark.sql.kstate.processor.table

import org.scalacheck.Gen
import org.scalatest.funsuite.AnyFunSuite
import org.scalatestplus.scalacheck.ScalaCheckPropertyChecks

import org.apache.spark.sql.kstate.provider.{KStateStore, KStateStoreProvider, ProviderFixture}
import org.apache.spark.sql.kstate.operatorstate.{VersionedKeyValueStore, VersionedRecord}
import org.apache.spark.sql.types.{BinaryType, StructField, StructType}

/**
 * The heap [[InMemoryTableState.versioned]] against kstate's store implementation,
 * `VersionedKeyValueStore` (bytes, in a `KStateStore`), on random programs of puts (tombstones,
 * out-of-order and late ones), gets and gets as of a time, with commits, reopenings and
 * cleanups of the store in between: identical put results, values, timestamps and stream time.
 */
class TableStateStorePropertySuite extends AnyFunSuite with ScalaCheckPropertyChecks {
  import TableStateStorePropertySuite._

  private val schema = StructType(Seq(StructField("b", BinaryType)))
  private def b(s: String): Array[Byte] = s.getBytes("UTF-8")
  private def fromStore(r: VersionedRecord): Option[(String, Long)] =
    Option(r).map(x => (new String(x.value, "UTF-8"), x.timestamp))
  private def fromHeap(r: TableState.Versioned[String]): Option[(String, Long)] =
    Option(r).map(x => (x.value, x.timestamp))

  private val ops: Gen[Op] = {
    val key = Gen.oneOf("a", "b", "c")
    val ts = Gen.choose(0L, 120L)
    Gen.frequency(
      8 -> (for (k <- key; v <- Gen.option(Gen.alphaLowerStr.map(_.take(3))); t <- ts) yield Put(k, v.orNull, t)),
      3 -> key.map(Get),
      6 -> (for (k <- key; t <- Gen.choose(-5L, 130L)) yield GetAsOf(k, t)),
      1 -> Gen.const(Commit),
      1 -> Gen.const(Cleanup)
    )
  }

  test("property: InMemoryTableState.versioned behaves as VersionedKeyValueStore") {
    forAll(
      Gen.listOfN(80, ops),
      Gen.choose(0L, 40L),
      Gen.choose(0L, 40L),
      Gen.choose(1L, 30L),
      minSuccessful(60)
    ) { (program, g, extra, segment) =>
      val (retention, grace) = (g + extra, g)
      val heap = InMemoryTableState.versioned[String, String](retention, grace)
      val p: KStateStoreProvider = ProviderFixture.open(ProviderFixture.tmp(), schema, schema)
      try {
        var store: KStateStore = p.getStore(0)
        var vs = new VersionedKeyValueStore(store, "t", retention, grace, segment)
        program.zipWithIndex.foreach { case (op, i) =>
          val ctx = s"op $i $op; retention $retention grace $grace; program $program"
          op match {
            case Put(k, v, ts) =>
              assert(heap.put(k, v, ts) == vs.put(b(k), Option(v).map(b).orNull, ts), ctx)
            case Get(k) => assert(fromHeap(heap.get(k)) == fromStore(vs.get(b(k))), ctx)
            case GetAsOf(k, t) => assert(fromHeap(heap.getAsOf(k, t)) == fromStore(vs.get(b(k), t)), ctx)
            case Cleanup => vs.cleanup()
            case Commit =>
              store = p.getStore(store.commit())
              vs = new VersionedKeyValueStore(store, "t", retention, grace, segment)
          }
          assert(heap.streamTime == vs.observedStreamTime, ctx)
        }
      } finally p.close()
    }
  }
}

object TableStateStorePropertySuite {
  sealed trait Op
  final case class Put(k: String, v: String, ts: Long) extends Op
  final case class Get(k: String) extends Op
  final case class GetAsOf(k: String, asOf: Long) extends Op
  case object Commit extends Op
  case object Cleanup extends Op
}
