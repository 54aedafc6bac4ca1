package org.apache.spark.sql.kstate.engine

import java.nio.file.Files

import scala.collection.mutable

import org.scalacheck.Gen
import org.scalatest.funsuite.AnyFunSuite
import org.scalatestplus.scalacheck.ScalaCheckPropertyChecks

import org.apache.spark.network.util.JavaUtils
import org.apache.spark.sql.kstate.engine.UnsignedKeys._

class DbWriterSuite extends AnyFunSuite with ScalaCheckPropertyChecks {
  implicit override val generatorDrivenConfig: PropertyCheckConfiguration =
    PropertyCheckConfiguration(minSuccessful = 60)

  private sealed trait Op
  private case class Put(k: List[Int], v: Int) extends Op
  private case class Del(k: List[Int]) extends Op
  private case class DelRange(from: List[Int], until: List[Int]) extends Op
  private case object Flush extends Op

  // never empty (a store key always has its family prefix); 0x00, 0x7F, 0x80, 0xFF: sign matters
  private val keyGen: Gen[List[Int]] =
    Gen.choose(1, 3).flatMap(n => Gen.listOfN(n, Gen.oneOf(0, 1, 0x7f, 0x80, 0xff)))
  private val opGen: Gen[Op] = Gen.frequency(
    8 -> (for (k <- keyGen; v <- Gen.choose(0, 9)) yield Put(k, v)),
    1 -> keyGen.map(Del),
    1 -> (for (a <- keyGen; b <- keyGen) yield if (less(b, a)) DelRange(b, a) else DelRange(a, b)),
    1 -> Gen.const(Flush)
  )

  /** Mostly increasing puts first (a snapshot's start), then anything. */
  private val opsGen: Gen[List[Op]] = for {
    keys <- Gen.listOf(keyGen)
    rest <- Gen.listOf(opGen)
  } yield keys.distinct.sortWith(less).zipWithIndex.map { case (k, i) => Put(k, i % 10) } ++ rest

  private def withDb[T](f: LocalDb => T): T = {
    val root = Files.createTempDirectory("kstate-dbwriter").toFile
    val db = new LocalDb(root)
    try f(db)
    finally { db.close(); JavaUtils.deleteRecursively(root) }
  }

  private def contents(db: LocalDb): List[(List[Int], Int)] = {
    val s = db.scan(Array.emptyByteArray, None)
    val out = mutable.ListBuffer.empty[(List[Int], Int)]
    try while (s.valid) { out += ints(s.key) -> s.value(0).toInt; s.next() }
    finally s.close()
    out.toList
  }

  private def files(db: LocalDb): Set[String] = db.directory.list().toSet

  test("property: in key order or not, the database ends as if every record were written in a batch") {
    forAll(opsGen, Gen.oneOf(true, false)) { (ops, inOrder) =>
      withDb { db =>
        val model = mutable.Map.empty[List[Int], Int]
        val w = new DbWriter(db, inOrder)
        try {
          ops.foreach {
            case Put(k, v) => w.put(bytes(k), Array(v.toByte)); model(k) = v
            case Del(k) => w.delete(bytes(k)); model.remove(k)
            case DelRange(a, b) =>
              w.deleteRange(bytes(a), bytes(b)); model.keys.filter(inRange(_, a, Some(b))).toList.foreach(model.remove)
            case Flush => w.flush()
          }
          w.finish()
          // the leading increasing puts went into a table file when the writer was told so
          val leading = ops.takeWhile(_.isInstanceOf[Put]).size
          if (!inOrder) assert(w.recordsIngested == 0)
          else assert(w.recordsIngested >= math.min(leading, 1) && w.recordsIngested <= ops.count(_.isInstanceOf[Put]))
        } finally w.close()
        assert(contents(db) == model.toList.sortWith((a, b) => less(a._1, b._1)))
        assert(!files(db).exists(_.startsWith("load-")), files(db))
      }
    }
  }

  test("a snapshot's keys go into one table file; the first key out of order switches to batches") {
    withDb { db =>
      val w = new DbWriter(db, inOrder = true)
      try {
        (0 until 1000).foreach(i => w.put(bytes(List(0, i >> 8, i & 0xff)), Array(1)))
        w.flush() // batches only: the table file stays open
        assert(contents(db).isEmpty)
        w.put(bytes(List(0, 0, 5)), Array(2)) // out of order: an update of an ingested key
        w.finish()
        assert(w.recordsIngested == 1000)
      } finally w.close()
      val all = contents(db)
      assert(all.size == 1000 && all.count(_._2 == 2) == 1 && all.find(_._1 == List(0, 0, 5)).get._2 == 2)
    }
  }

  test("closed before finish: nothing written as a table file is visible, no file is left") {
    withDb { db =>
      val before = files(db)
      val w = new DbWriter(db, inOrder = true)
      (0 until 100).foreach(i => w.put(bytes(List(1, i)), Array(1)))
      w.close()
      assert(contents(db).isEmpty)
      assert(files(db) == before)
    }
  }
}
