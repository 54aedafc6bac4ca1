package org.apache.spark.sql.kstate.shim

import java.util.function.Supplier

import org.apache.spark.{SparkEnv, TaskContext}
import org.apache.spark.internal.config
import org.apache.spark.util.collection.unsafe.sort.{PrefixComparator, RecordComparator, UnsafeExternalSorter}

/**
 * Creates Spark's external sorter for the running task. Its factory's parameter list changes
 * between Spark versions (4.3: spill thresholds by count and by size, and a merge factor), so
 * the call lives here. Must be called on an executor inside a task.
 */
object SorterShim {

  /**
   * @param spillBytes the sorter spills its in-memory records once they take more than this
   *                   (besides spilling whenever the task memory manager denies it memory).
   *                   The sorter counts whole pages and its pointer array, so both are made no
   *                   larger than an eighth of it (a threshold below one page or the array's
   *                   initial size would spill after every record).
   */
  def newSorter(
      recordComparator: Supplier[RecordComparator],
      prefixComparator: PrefixComparator,
      spillBytes: Long
  ): UnsafeExternalSorter = {
    val task = TaskContext.get()
    require(task != null, "Spark's external sorter needs a running task")
    val env = SparkEnv.get
    val tmm = task.taskMemoryManager()
    UnsafeExternalSorter.create(
      tmm,
      env.blockManager,
      env.serializerManager,
      task,
      recordComparator,
      prefixComparator,
      math.min(env.conf.get(config.SHUFFLE_SORT_INIT_BUFFER_SIZE), math.max(spillBytes / 8 / 8, 64L)).toInt,
      math.min(math.min(tmm.pageSizeBytes(), MaxPageBytes), math.max(spillBytes / 8, MinPageBytes)),
      env.conf.get(config.SHUFFLE_SPILL_NUM_ELEMENTS_FORCE_SPILL_THRESHOLD),
      math.min(spillBytes, env.conf.get(config.SHUFFLE_SPILL_MAX_SIZE_FORCE_SPILL_THRESHOLD)),
      env.conf.get(config.UNSAFE_SORTER_SPILL_MERGE_FACTOR),
      false
    )
  }

  private val MinPageBytes = 4096L

  /**
   * Pages are at most 4 MB (Spark's default is up to 64 MB): most micro-batches of a state
   * partition are far smaller than one such page, which each task would allocate and clear.
   */
  private val MaxPageBytes = 4L << 20
}
