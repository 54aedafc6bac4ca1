package org.apache.spark.sql.kstate.provider

import java.io.{File, RandomAccessFile}

import scala.util.Random

import io.kstate.KStateException
import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.sql.kstate.provider.LongRows._
import org.apache.spark.sql.kstate.provider.ProviderFixture.{conf, tmp}

/**
 * The retention rule (docs/state-store.md, "Retention"), property-style: random commit
 * sequences with random maintenance runs, restarts, and snapshots that are present, absent
 * (maintenance skipped, or a snapshot file lost before anything relied on it) or damaged (a
 * byte flipped before anything relied on it). Afterwards every retained version
 * (`minBatchesToRetain` back from the latest) restores to exactly what was committed, except
 * where the newest snapshot at or below it is damaged: that is `KSTATE_STATE_FILE_CORRUPT` naming
 * it (never wrong state), and once the damaged snapshots are deleted every retained version
 * restores exactly (maintenance never deleted the changelogs behind a snapshot it could not
 * read).
 */
class KStateStoreRetentionSuite extends AnyFunSuite {
  private def dir(root: String) = new File(s"$root/0/0")
  private def versionsOf(root: String, suffix: String): Set[Long] =
    dir(root).list().filter(_.endsWith(suffix)).map(_.takeWhile(_ != '.').toLong).toSet

  private def flipByte(f: File, rnd: Random): Unit = {
    val raf = new RandomAccessFile(f, "rw")
    try {
      val at = rnd.nextInt(raf.length().toInt)
      raf.seek(at); val b = raf.read(); raf.seek(at); raf.write(b ^ 0x20)
    } finally raf.close()
  }

  test("maintenance never deletes a file that restoring a retained version needs") {
    var damagedCases = 0
    var basesSkipped = 0
    for (seed <- 1 to 60) {
      val rnd = new Random(seed)
      val root = tmp()
      val snapshotEvery = 1 + rnd.nextInt(4)
      val retain = 1 + rnd.nextInt(8)
      val c = conf(snapshotEvery = snapshotEvery, retain = retain)
      def open() = ProviderFixture.open(root, keySchema, valueSchema, c, useColumnFamilies = false)
      val maintainEvery = 1 + rnd.nextInt(3)
      var p = open()
      var models = Vector(Map.empty[Long, Long])
      var damaged = Set.empty[Long]
      val versions = 15 + rnd.nextInt(25)
      val what = s"seed $seed (snapshot every $snapshotEvery, retain $retain)"
      for (v <- 1 to versions) {
        val s = p.getStore(v - 1)
        models :+= randomChanges(s, models.last, rnd, 1 + rnd.nextInt(30), 60)
        assert(s.commit() == v)
        if (rnd.nextInt(maintainEvery) == 0) p.doMaintenance()
        // Only snapshots nothing relied on yet (their changelog still exists) are lost or
        // damaged, and then the executor restarts (a new provider trusts no snapshot it did not
        // read). A damaged one is never the one the restart restores from.
        val snapshots = versionsOf(root, ".kstate.snapshot")
        val changelogs = versionsOf(root, ".kstate.changelog")
        val unrelied = (snapshots -- damaged).filter(changelogs.contains).toSeq.sorted
        if (unrelied.nonEmpty && rnd.nextInt(3) == 0) {
          val victim = unrelied(rnd.nextInt(unrelied.size))
          val f = new File(dir(root), s"$victim.kstate.snapshot")
          val damage = rnd.nextBoolean()
          val left = if (damage) snapshots else snapshots - victim
          val damagedAfter = if (damage) damaged + victim else damaged
          if (left.isEmpty || !damagedAfter(left.max)) {
            if (damage) flipByte(f, rnd) else assert(f.delete())
            damaged = damagedAfter
            p.close()
            p = open()
          }
        }
      }
      p.doMaintenance()
      p.close()
      damaged = damaged.filter(versionsOf(root, ".kstate.snapshot").contains)
      val latest = versions.toLong
      val retained = math.max(1L, latest - retain + 1) to latest
      for (v <- retained) {
        val q = open()
        try {
          val got =
            try Right(contents(q.getStore(v)))
            catch { case e: KStateException => Left(e) }
          got match {
            case Right(state) => assert(state == models(v.toInt), s"$what: version $v")
            case Left(e) =>
              val base = versionsOf(root, ".kstate.snapshot").filter(_ <= v).max
              assert(
                e.errorClass == "KSTATE_STATE_FILE_CORRUPT" && damaged(base) &&
                  e.getMessage.contains(s"$base.kstate.snapshot"),
                s"$what: version $v: $e"
              )
              damagedCases += 1
          }
        } finally q.close()
      }
      // the repair: delete the damaged snapshots; every retained version restores exactly
      damaged.foreach(s => assert(new File(dir(root), s"$s.kstate.snapshot").delete()))
      basesSkipped += damaged.size
      for (v <- retained) {
        val q = open()
        try assert(contents(q.getStore(v)) == models(v.toInt), s"$what, damaged snapshots deleted: version $v")
        finally q.close()
      }
    }
    // the property was exercised where it matters
    assert(damagedCases > 0 && basesSkipped > 0, s"damaged restores $damagedCases, damaged snapshots $basesSkipped")
  }
}
