package io.kstate.suppress

/**
 * How much a suppression buffer may hold and what happens when it is full (KIP-328's
 * `BufferConfig`). Limits count records (keys, or windows per key) and bytes (serialized key and
 * value); `Long.MaxValue` is unbounded. The type says whether the config is strict (never emits
 * early), so `Suppressed.untilWindowCloses` only compiles with a [[StrictBufferConfig]].
 */
sealed abstract class BufferConfig[BC <: BufferConfig[BC]] extends Serializable {
  def maxRecords: Long
  def maxBytes: Long
  def whenFull: WhenFull

  def withMaxRecords(recordLimit: Long): BC
  def withMaxBytes(byteLimit: Long): BC

  /** No limits: strict (the buffer grows as needed). */
  def withNoBound: StrictBufferConfig = StrictBufferConfig(Long.MaxValue, Long.MaxValue, WhenFull.ShutDown)

  /** Strict: fail the micro-batch with `KSTATE_BUFFER_FULL` when a limit is passed. */
  def shutDownWhenFull: StrictBufferConfig = StrictBufferConfig(maxRecords, maxBytes, WhenFull.ShutDown)

  /** Strict: keep everything; past the limits, the buffer's contents go to local disk. */
  def spillToDiskWhenFull: StrictBufferConfig = StrictBufferConfig(maxRecords, maxBytes, WhenFull.SpillToDisk)

  /** Not strict: emit the oldest records early when a limit is passed. */
  def emitEarlyWhenFull: EagerBufferConfig = EagerBufferConfig(maxRecords, maxBytes)

  def isStrict: Boolean = whenFull.isStrict
  def describe: String = s"maxRecords=$maxRecords,maxBytes=$maxBytes,whenFull=$whenFull"

  protected def checked(what: String, v: Long): Long = {
    if (v <= 0) throw io.kstate.ArgumentErrors.invalidBufferConfig(s"$what must be > 0, got $v")
    v
  }
}

/** A buffer config that may emit early when full (`emitEarlyWhenFull`, Kafka's default). */
final case class EagerBufferConfig private[suppress] (maxRecords: Long, maxBytes: Long)
    extends BufferConfig[EagerBufferConfig] {
  override def whenFull: WhenFull = WhenFull.EmitEarly
  override def withMaxRecords(recordLimit: Long): EagerBufferConfig =
    copy(maxRecords = checked("max_records", recordLimit))
  override def withMaxBytes(byteLimit: Long): EagerBufferConfig = copy(maxBytes = checked("max_bytes", byteLimit))
}

/** A buffer config that never emits early: unbounded, shut down when full, or spill to disk. */
final case class StrictBufferConfig private[suppress] (maxRecords: Long, maxBytes: Long, whenFull: WhenFull)
    extends BufferConfig[StrictBufferConfig] {
  override def withMaxRecords(recordLimit: Long): StrictBufferConfig =
    copy(maxRecords = checked("max_records", recordLimit))
  override def withMaxBytes(byteLimit: Long): StrictBufferConfig = copy(maxBytes = checked("max_bytes", byteLimit))
}

object BufferConfig {

  /** At most `recordLimit` records; emits early when full unless made strict. */
  def maxRecords(recordLimit: Long): EagerBufferConfig =
    EagerBufferConfig(Long.MaxValue, Long.MaxValue).withMaxRecords(recordLimit)

  /** At most `byteLimit` bytes; emits early when full unless made strict. */
  def maxBytes(byteLimit: Long): EagerBufferConfig =
    EagerBufferConfig(Long.MaxValue, Long.MaxValue).withMaxBytes(byteLimit)

  /** No limits: strict. */
  def unbounded: StrictBufferConfig = StrictBufferConfig(Long.MaxValue, Long.MaxValue, WhenFull.ShutDown)
}
