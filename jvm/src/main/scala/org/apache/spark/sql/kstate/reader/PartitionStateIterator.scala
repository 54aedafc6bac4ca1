package org.apache.spark.sql.kstate.reader

import scala.util.control.NonFatal

import org.apache.hadoop.conf.Configuration

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow
import org.apache.spark.sql.execution.streaming.state._

/**
 * The default column family of one state partition at one version, as rows
 * `(key, value, partition_id)`, read through a provider of its own.
 *
 * Contract:
 *  - Owns a provider, a read store and the store's iterator; `close` releases all three (store
 *    released, never committed: nothing is written), is idempotent, and runs by itself when the
 *    rows are exhausted. Callers close it when they stop early (task completion).
 *  - Every row returned is a fresh object holding copies of the store's key and value, so it
 *    stays valid after `next` (providers may reuse their rows).
 */
final class PartitionStateIterator private (
    provider: StateStoreProvider,
    store: ReadStateStore,
    pairs: StateStoreIterator[UnsafeRowPair],
    partitionId: Int
) extends Iterator[InternalRow] with AutoCloseable {

  private var closed = false

  override def hasNext: Boolean = !closed && {
    val more = pairs.hasNext
    if (!more) close()
    more
  }

  override def next(): InternalRow = {
    if (!hasNext) throw new NoSuchElementException
    val pair = pairs.next()
    new GenericInternalRow(Array[Any](pair.key.copy(), pair.value.copy(), partitionId))
  }

  override def close(): Unit = if (!closed) {
    closed = true
    PartitionStateIterator.closeAll(Seq(
      () => pairs.close(),
      () => store.release(),
      () => provider.close()
    ))
  }
}

object PartitionStateIterator {

  /** Opens `partition` of `target` read-only; on failure, releases what was opened. */
  def open(target: StateReadTarget, partition: Int, hadoopConf: Configuration)
      : PartitionStateIterator = {
    val provider = providerOf(target, partition, hadoopConf)
    var store: ReadStateStore = null
    try {
      store = provider.getReadStore(target.version, target.idOf(partition))
      new PartitionStateIterator(
        provider,
        store,
        store.iterator(StateStore.DEFAULT_COL_FAMILY_NAME),
        partition
      )
    } catch {
      case NonFatal(e) =>
        val s = store
        closeAll(Seq(() => if (s != null) s.release(), () => provider.close()), Some(e))
        throw e
    }
  }

  /**
   * A provider of its own (not Spark's executor-wide cache) for `partition` of `target`, with the
   * default column family's schemas; the caller closes it.
   */
  def providerOf(target: StateReadTarget, partition: Int, hadoopConf: Configuration): StateStoreProvider =
    StateStoreProvider.createAndInit(
      StateStoreProviderId(target.storeId(partition), java.util.UUID.randomUUID()),
      target.keySchema,
      target.valueSchema,
      NoPrefixKeyStateEncoderSpec(target.keySchema),
      true,
      target.storeConf,
      hadoopConf,
      false,
      None
    )

  /** Runs every step even if some fail; the first failure is thrown (or added to `primary`). */
  private def closeAll(steps: Seq[() => Unit], primary: Option[Throwable] = None): Unit = {
    var failure = primary
    steps.foreach { step =>
      try step()
      catch {
        case NonFatal(e) => failure match {
            case Some(f) => f.addSuppressed(e)
            case None => failure = Some(e)
          }
      }
    }
    if (primary.isEmpty) failure.foreach(throw _)
  }
}
