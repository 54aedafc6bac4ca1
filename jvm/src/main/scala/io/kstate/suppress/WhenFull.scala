package io.kstate.suppress

/** What a suppression buffer does when it holds more than its limits allow (KIP-328). */
sealed trait WhenFull {

  /** Strict: never emits a record early or drops one. */
  def isStrict: Boolean
}

object WhenFull {

  /** Emit the oldest records (by buffer time) early until back within the limits. */
  case object EmitEarly extends WhenFull { val isStrict = false }

  /** Fail the micro-batch with `KSTATE_BUFFER_FULL`; nothing is committed. */
  case object ShutDown extends WhenFull { val isStrict = true }

  /**
   * Keep everything: the limits bound the buffer's heap, not its size. Changes past the heap
   * limit are spilled to the store's local disk (kstate's state store provider only).
   */
  case object SpillToDisk extends WhenFull { val isStrict = true }
}
