package org.apache.spark.sql.kstate.provider

import java.io.File
import java.util.concurrent.ConcurrentLinkedQueue
import java.util.concurrent.atomic.{AtomicBoolean, AtomicInteger}

import scala.jdk.CollectionConverters._
import scala.util.Random

import org.apache.spark.sql.kstate.config.KStateConf
import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.sql.kstate.provider.LongRows._
import org.apache.spark.sql.kstate.provider.ProviderFixture.{conf, tmp}

/**
 * The threading model under load: Spark's maintenance thread (snapshots, deletes) runs against
 * a task thread that commits, aborts, spills and reloads. Nothing may fail on either thread, and
 * afterwards every retained version restores, in a new provider, to exactly what was committed.
 */
class KStateStoreConcurrencySuite extends AnyFunSuite {
  private val variants = Seq(
    "heap working copy" -> Map.empty[String, String],
    "RocksDB working copy" -> Map(KStateConf.HeapStateBytes.key -> "0"),
    "versions that spill" -> Map(KStateConf.MaxWriteSetBytes.key -> "16k")
  )

  for ((name, extra) <- variants) {
    test(
      s"maintenance and forced snapshots concurrent with commits ($name): every retained version restores as committed"
    ) {
      val root = tmp()
      val retain = 10
      val c = conf(snapshotEvery = 2, retain = retain, extra = extra)
      val p = ProviderFixture.open(root, keySchema, valueSchema, c, useColumnFamilies = false)
      val stop = new AtomicBoolean(false)
      val errors = new ConcurrentLinkedQueue[Throwable]()
      val runs = new AtomicInteger(0)
      val maintenance = new Thread(
        () => {
          while (!stop.get) {
            try p.doMaintenance()
            catch { case t: Throwable => errors.add(t) }
            runs.incrementAndGet()
            Thread.`yield`()
          }
        },
        "test-maintenance"
      )
      maintenance.start()
      val rnd = new Random(name.hashCode)
      var models = Vector(Map.empty[Long, Long])
      var snapshotsSeen = Set.empty[String]
      try {
        while (models.size <= 150) {
          val v = models.size - 1
          if (v > 0 && rnd.nextInt(10) == 0) {
            // a reader of an older retained version: the provider reloads (a restore)
            val old = v - rnd.nextInt(math.min(v, retain - 1))
            val r = p.getStore(old)
            assert(contents(r) == models(old), s"reading version $old")
            r.abort()
          }
          // now and then Spark asks the commit for a snapshot: kstate's writer thread writes it
          // (ForcedSnapshots) while maintenance and reloads go on
          val s = p.getStore(v, None, forceSnapshotOnCommit = rnd.nextInt(6) == 0, loadEmpty = false)
          val next = randomChanges(s, models.last, rnd, 20 + rnd.nextInt(if (rnd.nextInt(5) == 0) 800 else 100), 2000)
          if (rnd.nextInt(8) == 0) s.abort() // the batch fails and is re-run
          else {
            assert(s.commit() == v + 1)
            models :+= next
          }
          snapshotsSeen ++= new File(s"$root/0/0").list().filter(_.endsWith(".kstate.snapshot"))
        }
      } finally {
        stop.set(true)
        maintenance.join()
      }
      assert(errors.isEmpty, errors.asScala.map(_.toString).mkString("\n"))
      assert(runs.get > 0 && snapshotsSeen.nonEmpty, s"maintenance ran ${runs.get} times, snapshots $snapshotsSeen")
      ForcedSnapshots.awaitQueued()
      p.doMaintenance()
      p.close()
      val latest = models.size - 1
      for (v <- latest - retain + 1 to latest) {
        val q = ProviderFixture.open(root, keySchema, valueSchema, c, useColumnFamilies = false)
        assert(contents(q.getStore(v)) == models(v), s"version $v")
        q.close()
      }
    }
  }
}
