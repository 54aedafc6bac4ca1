package org.apache.spark.sql.kstate.provider

import java.util.concurrent.{ExecutorService, Executors, ThreadFactory}

import scala.collection.mutable.ArrayBuffer
import scala.util.control.NonFatal

import org.apache.spark.internal.Logging
import org.apache.spark.sql.kstate.engine._

/**
 * A heap working copy built on a background thread from a frozen scan of a store's local
 * RocksDB copy, so that a cold restore can land in RocksDB (a table snapshot ingested whole, in
 * tens of milliseconds whatever its size) and the store still runs on the heap soon after,
 * without decoding every key on the micro-batch's critical path.
 *
 * Contract:
 *  - The scan is taken by the owner ([[WorkingCopy]]) under the provider's lock, at the version
 *    the database holds then; every version the owner applies to the database after it is
 *    [[log]]ged here, in order, by the task thread under the same lock.
 *  - The built heap reserves what it grows by from the executor's [[HeapStateBudget]] as it is
 *    read (every [[StateLoader.CheckEvery]] entries) and stops (NO_ROOM) when the budget or the
 *    store's bound (`admits`) does not hold it: the store then stays in RocksDB.
 *  - [[take]] hands over the heap and its reservation once READY; the owner applies the log to
 *    it ([[replayLog]]) and switches to it under the lock. Nothing else reads the heap before.
 *  - [[cancel]] (any thread) stops the build; the heap and its reservation are released by
 *    whichever of the builder and the canceller comes second. A cancelled or failed build
 *    changes nothing the store serves.
 *
 * Life cycle: QUEUED -> RUNNING -> READY -> TAKEN, or -> NO_ROOM | FAILED | CANCELLED.
 *
 * Threading: one daemon thread per JVM builds ([[HeapRebuild.start]]), one build at a time, so
 * that restoring executors keep a core for their tasks.
 */
private[kstate] final class HeapRebuild(scan: StateScan, limit: Long, admits: Long => Boolean, owner: String)
    extends Runnable with Logging {
  import HeapRebuild._

  private val heap = new FamilyHeaps
  private var reserved = 0L // guarded by this once the build is over
  private var state: State = Queued // guarded by this
  @volatile private var cancelled = false

  // the task thread's log of versions applied to the database since the scan (dropped family
  // prefixes, sorted changes), under the provider's lock
  private val logged = ArrayBuffer.empty[(Seq[Array[Byte]], Array[WriteSet.Entry])]
  private var loggedEntries = 0L

  /** Entries read from the scan (for logs and tests). */
  @volatile private[kstate] var entriesRead = 0L

  /** Milliseconds the build took, once it is over. */
  @volatile private[kstate] var buildMillis = 0L

  def current: State = synchronized(state)

  /** Whether the build is over (READY, TAKEN, NO_ROOM, FAILED or CANCELLED). */
  def over: Boolean = synchronized(state != Queued && state != Running)

  override def run(): Unit = {
    val started = System.nanoTime()
    val go = synchronized {
      if (state == Queued && !cancelled) { state = Running; true }
      else false
    }
    if (!go) { scan.close(); end(Cancelled); return }
    var outcome: State = Failed
    try {
      // cancellation and the budget are checked after every run of entries
      val (read, held) = heap.applyScan(scan, () => !cancelled && grow())
      entriesRead = read
      var ok = held
      if (ok && !cancelled) {
        heap.buildHashIndexes()
        ok = grow()
      }
      outcome = if (cancelled) Cancelled else if (ok) Ready else NoRoom
    } catch {
      case NonFatal(e) => logWarning(s"$owner: building the heap copy in the background failed; it stays in RocksDB", e)
    } finally {
      scan.close()
      buildMillis = (System.nanoTime() - started) / 1000000
      end(outcome)
    }
    if (outcome == NoRoom) {
      logInfo(s"$owner: the state does not fit the heap state budget; it stays in local RocksDB")
    }
  }

  /** Reserves what the heap grew by; false when the budget or the store's bound does not hold it. */
  private def grow(): Boolean = {
    val want = heap.heapBytes
    if (want <= reserved) true
    else if (admits(want) && HeapStateBudget.tryReserve(want - reserved, limit)) {
      synchronized { reserved = want }
      true
    } else false
  }

  private def end(outcome: State): Unit = synchronized {
    state = if (cancelled) Cancelled else outcome
    if (state != Ready) drop()
  }

  private def drop(): Unit = {
    heap.clear()
    HeapStateBudget.release(reserved)
    reserved = 0L
  }

  /** Stops the build (any thread); a READY heap is dropped. Idempotent. */
  def cancel(): Unit = synchronized {
    cancelled = true
    state match {
      case Ready => state = Cancelled; drop()
      case Queued => state = Cancelled // run() closes the scan when the thread reaches it
      case _ => // RUNNING: the builder drops it; over: nothing held
    }
  }

  /**
   * Notes a version the owner applied to the database after the scan (task thread, under the
   * provider's lock): `changes` sorted, copied here. Past [[MaxLoggedEntries]] the build is
   * cancelled (a state changing that fast is rebuilt on a later restore, not chased).
   */
  def log(dropped: Seq[Array[Byte]], changes: Array[WriteSet.Entry]): Unit = if (!cancelled) {
    loggedEntries += changes.length
    if (loggedEntries > MaxLoggedEntries) {
      logInfo(s"$owner: over $MaxLoggedEntries changes committed while its heap copy was built; it stays in RocksDB")
      cancel()
      logged.clear()
    } else logged += ((dropped, changes.map(e => new WriteSet.Entry(e.key, e.hash, e.value, e.existed))))
  }

  /**
   * The built heap and the budget it reserved, once READY (then TAKEN: the caller owns both and
   * applies [[replayLog]]); None otherwise.
   */
  def take(): Option[(FamilyHeaps, Long)] = synchronized {
    if (state != Ready) None
    else {
      state = Taken
      val r = reserved
      reserved = 0L
      Some((heap, r))
    }
  }

  /** Applies the logged versions to `built` (from [[take]]), in order. */
  def replayLog(built: FamilyHeaps): Unit = {
    logged.foreach { case (dropped, changes) =>
      dropped.foreach(p => built.deleteRange(p, Bytes.prefixEnd(p)))
      built.applySorted(changes, changes.length)
    }
    logged.clear()
  }

  override def toString: String = s"HeapRebuild[$owner, ${current.name}, $entriesRead entries read]"
}

private[kstate] object HeapRebuild {

  sealed abstract class State(val name: String)
  case object Queued extends State("QUEUED")
  case object Running extends State("RUNNING")
  case object Ready extends State("READY")
  case object Taken extends State("TAKEN")
  case object NoRoom extends State("NO_ROOM")
  case object Failed extends State("FAILED")
  case object Cancelled extends State("CANCELLED")

  /** Changes committed during one build past which it is given up. */
  val MaxLoggedEntries: Long = 4000000L

  private lazy val builder: ExecutorService = Executors.newSingleThreadExecutor(new ThreadFactory {
    override def newThread(r: Runnable): Thread = {
      val t = new Thread(r, "kstate-heap-rebuild")
      t.setDaemon(true)
      t
    }
  })

  /** Runs `r` on the builder thread before the builds queued after it (tests hold builds back with it). */
  private[kstate] def onBuilderThread(r: Runnable): Unit = builder.execute(r)

  /** Queues `b` on the JVM's builder thread. */
  def start(b: HeapRebuild): HeapRebuild = {
    builder.execute(b)
    b
  }
}
