package org.apache.spark.sql.kstate.provider

/**
 * The life cycle of a [[org.apache.spark.sql.kstate.provider.KStateStoreProvider]] (one state
 * partition and store name). The state carries what exists in it: a working copy only while
 * LOADED or SPILLED, a pending changelog only while SPILLED, so no field can be read in a state
 * where it means nothing.
 *
 * {{{
 *   CREATED --init--> EMPTY
 *   EMPTY --restore of v--> LOADED(v)
 *   LOADED(v) --commit--> LOADED(v + 1)
 *   LOADED(v) --catch-up to w > v--> LOADED(w)        getStore(w): the changelogs v + 1 .. w replayed
 *   LOADED(v) --first spill of a store opened at v--> SPILLED(v, s)
 *   SPILLED(v, s) --commit of s--> LOADED(v + 1)
 *   LOADED(v) | SPILLED(v, s) --discard--> EMPTY     another version wanted, abort of a spilled
 *                                                    store, a failed spill, commit or apply
 *   any but CLOSED --close--> CLOSED
 * }}}
 * Reusing LOADED(v) for another store at v, further spills in SPILLED(v, s) and moving the
 * working copy from the heap to RocksDB are not transitions: the state stays the same. Every
 * other pair is illegal ([[ProviderState.allows]]); [[ProviderLifecycle.moveTo]] throws
 * `IllegalStateException` naming both states.
 */
private[kstate] sealed trait ProviderState {

  /** The committed version the working copy holds, if any. */
  def version: Option[Long] = None

  /** The working copy, in LOADED and SPILLED. */
  def workingCopy: Option[WorkingCopy] = None
}

private[kstate] object ProviderState {

  /** Constructed, `init` not called yet. */
  case object Created extends ProviderState { override def toString: String = "CREATED" }

  /** No working copy: the next `getStore` restores from the checkpoint. */
  case object Empty extends ProviderState { override def toString: String = "EMPTY" }

  /** The working copy holds committed version `v`. */
  final case class Loaded(v: Long, working: WorkingCopy) extends ProviderState {
    override def version: Option[Long] = Some(v)
    override def workingCopy: Option[WorkingCopy] = Some(working)
    override def toString: String = s"LOADED($v)"
  }

  /**
   * The working copy holds committed version `v` plus the spilled, uncommitted changes of
   * `spill.store`; other stores at `v` read `spill.baseView`.
   */
  final case class Spilled(v: Long, working: WorkingCopy, spill: PendingVersion) extends ProviderState {
    override def version: Option[Long] = Some(v)
    override def workingCopy: Option[WorkingCopy] = Some(working)
    override def toString: String = s"SPILLED($v, ${spill.store})"
  }
  case object Closed extends ProviderState { override def toString: String = "CLOSED" }

  /** Whether `from -> to` is a transition of the life cycle above. */
  def allows(from: ProviderState, to: ProviderState): Boolean = (from, to) match {
    case (Created, Empty) => true
    case (Empty, Loaded(_, _)) => true
    case (Loaded(v, _), Loaded(w, _)) => w > v
    case (Loaded(v, _), Spilled(w, _, _)) => w == v
    case (Spilled(v, _, _), Loaded(w, _)) => w == v + 1
    case (Loaded(_, _) | Spilled(_, _, _), Empty) => true
    case (Closed, _) => false
    case (_, Closed) => true
    case _ => false
  }
}
