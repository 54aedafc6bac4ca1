package org.apache.spark.sql.kstate.config

import org.apache.spark.sql.kstate.errors.KStateErrors
import io.kstate.ProcessingOrder

import org.apache.spark.SparkConf
import org.apache.spark.sql.internal.SQLConf

/**
 * The config hub: every kstate setting, its default and its meaning, and the defaults kstate
 * gives Spark's store settings for its own stores. Read through [[KStateConf.Entry.get]] so the
 * default lives in one place.
 *
 * Every entry ([[KStateConf.entries]]) is registered with Spark's SQL configuration when
 * kstate's extension is loaded, so `spark.conf.get(key)` returns its default (as
 * [[KStateConf.Entry.defaultString]]) and `SET -v` lists it with its doc. Values are kept as
 * strings there: kstate parses them where it reads them, so a bad value is kstate's named error.
 */
object KStateConf {
  final case class Entry[T](key: String, default: T, doc: String)(val parse: String => T) {
    def get(conf: SQLConf): T = Option(conf.getConfString(key, null)).map(parse).getOrElse(default)

    /** For settings read at application start (the plugin's), from the Spark configuration. */
    def get(conf: SparkConf): T = conf.getOption(key).map(parse).getOrElse(default)

    /** The default as a setting's string (what `spark.conf.get(key)` shows); parses to `default`. */
    def defaultString: String = default.toString
  }

  val StateStoreProvider: Entry[String] = Entry(
    "spark.kstate.stateStore.providerClass",
    "io.kstate.KStateStoreProvider",
    "State store provider behind every kstate operator, independent of Spark's own " +
      "spark.sql.streaming.stateStore.providerClass (which keeps serving Spark's operators). " +
      "Default: kstate's own provider, the only one with every feature. Spark's " +
      "RocksDBStateStoreProvider also runs deduplication, windowed distinct and unsuppressed or " +
      "unbounded / shut-down-when-full suppressed windowed aggregations, but not suppress on a " +
      "table (until_time_limit, or until_window_closes on another table) nor " +
      "spill_to_disk_when_full; Spark's HDFS provider runs none."
  )(
    identity
  )

  val StreamTimeFollowsWatermark: Entry[Boolean] = Entry(
    "spark.kstate.streamTime.followWatermark",
    false,
    "When true, each kstate operator raises its per-partition stream time to the query's " +
      "event-time watermark at the start of each micro-batch, so idle partitions make progress. " +
      "Default false: stream time is the largest event timestamp the partition has seen, as " +
      "in Kafka Streams."
  )(_.trim.toBoolean)

  val ProcessingOrderPolicy: Entry[ProcessingOrder] = Entry[ProcessingOrder](
    "spark.kstate.processingOrder",
    ProcessingOrder.Auto,
    "Order in which kstate operators process the records of one state partition's micro-batch, " +
      "unless an operator sets its own: 'auto' (Kafka task order where every source of the " +
      "operator's input is an ordered log such as Kafka, event-time order otherwise; a static " +
      "DataFrame's own order), 'task' or 'event_time'. Default auto."
  )(
    ProcessingOrder.parse("spark.kstate.processingOrder", _)
  )

  val TableJoinReadsSources: Entry[Boolean] = Entry(
    "spark.kstate.tableJoin.readsSources",
    true,
    "When true, a streaming table-table join whose two tables come straight from their sources " +
      "(to_table, no filter or map_values between) with the same processing order materializes " +
      "both tables itself: one stateful operator instead of three, each table stored once. Read " +
      "when a query starts from a new checkpoint; a checkpoint keeps the layout it was started " +
      "with (one written with the sources as operators of their own restarts that way). Default true."
  )(s =>
    s.trim.toBooleanOption.getOrElse(throw KStateErrors.invalidStateStoreSetting(
      "spark.kstate.tableJoin.readsSources",
      s,
      "true or false",
      "true"
    ))
  )

  val OrderSpillThreshold: Entry[Long] = Entry(
    "spark.kstate.processingOrder.spillThreshold",
    Long.MaxValue,
    "Most bytes of input rows one task holds in memory while it orders a state partition's " +
      "micro-batch; past it sorted runs are written to local disk and merged as they are read " +
      "(Spark's external sorter). Independently of it, the sort spills whenever Spark's task " +
      "memory manager cannot grant more execution memory. Accepts sizes such as '64m'. " +
      "Default: no limit of its own."
  )(parseBytes)

  /**
   * Read by kstate's state store provider from the store's configuration, hence the
   * `spark.sql.streaming.stateStore.` prefix (Spark hands those to providers).
   */
  val MaxWriteSetBytes: Entry[Long] = Entry(
    "spark.sql.streaming.stateStore.kstate.maxWriteSetBytes",
    64L << 20,
    "Most heap bytes (estimated) one state store version of kstate's provider holds in " +
      "uncommitted changes; past it they are spilled to the store's local RocksDB and its " +
      "pending changelog, so a large micro-batch does not need a large heap. Accepts sizes such " +
      "as '64m'. Default 64m."
  )(storeBytes("spark.sql.streaming.stateStore.kstate.maxWriteSetBytes", "64m"))

  /** Read by kstate's state store provider, like [[MaxWriteSetBytes]]. */
  val HeapStateBytes: Entry[Long] = Entry(
    "spark.sql.streaming.stateStore.kstate.heapStateBytes",
    -1L,
    "Heap bytes (estimated) all of an executor's kstate state stores may use together to keep " +
      "their committed state on the heap, where reads and commits are fastest. A store whose " +
      "state does not fit moves it to its local RocksDB (it returns to the heap when it is next " +
      "restored and fits). 0 keeps every store in RocksDB. Accepts sizes such as '512m'. " +
      "Default (-1): an eighth of the executor's maximum heap."
  )(s =>
    if (s.trim == "-1") -1L
    else storeBytes("spark.sql.streaming.stateStore.kstate.heapStateBytes", "512m")(s)
  )

  /** Read by kstate's state store provider, like [[MaxWriteSetBytes]]. */
  val BackgroundHeapRestoreAbove: Entry[Long] = Entry(
    "spark.sql.streaming.stateStore.kstate.backgroundHeapRestoreAbove",
    200000L,
    "Entries above which a state store restored from the checkpoint onto the heap lands in its " +
      "local RocksDB first (its snapshot, a RocksDB table file, added whole) and serves " +
      "micro-batches from there while its heap copy is built on a background thread; it moves " +
      "to the heap at the first micro-batch after that copy is ready. Snapshots of heap copies " +
      "this large are written as table files for it. -1: restore onto the heap directly, " +
      "whatever the size. Default 200000."
  )(s =>
    s.trim.toLongOption.filter(_ >= -1).getOrElse(throw KStateErrors.invalidStateStoreSetting(
      "spark.sql.streaming.stateStore.kstate.backgroundHeapRestoreAbove",
      s,
      "a whole number of entries, or -1 (restore onto the heap directly)",
      "200000"
    ))
  )

  /** Read by kstate's state store provider, like [[MaxWriteSetBytes]]. */
  val TableSnapshots: Entry[Boolean] = Entry(
    "spark.sql.streaming.stateStore.kstate.tableSnapshots",
    true,
    "When true, the snapshot of a state in RocksDB (or of a heap state too large to be restored " +
      "on the heap) is one RocksDB table file, which a restore adds to RocksDB whole (state file " +
      "formats 4 and 5). false writes every snapshot as records (formats 2 and 3), which the " +
      "previous kstate release reads: set it before going back to that release. Default true."
  )(s =>
    s.trim.toBooleanOption.getOrElse(throw KStateErrors.invalidStateStoreSetting(
      "spark.sql.streaming.stateStore.kstate.tableSnapshots",
      s,
      "true or false",
      "true"
    ))
  )

  val StandbyReplicas: Entry[Int] = Entry(
    "spark.kstate.standbyReplicas",
    0,
    "Standby copies of each state partition of kstate's provider, each on another executor " +
      "than the partition's active one (another host when there is one), kept current from the " +
      "checkpoint's changelogs: after the active executor is lost, the partition's next task " +
      "runs where a standby is and replays only the versions it lacks (Kafka Streams' " +
      "num.standby.replicas). Needs kstate's plugin (spark.plugins=io.kstate.KStatePlugin). " +
      "Read when a micro-batch is planned. Default 0: none."
  )(s => s.trim.toIntOption.filter(_ >= 0).getOrElse(throw KStateErrors.invalidStandbyReplicas(s)))

  val MaxWarmupReplicas: Entry[Int] = Entry(
    "spark.kstate.maxWarmupReplicas",
    2,
    "Warm-up copies a query keeps at once (Kafka Streams' max.warmup.replicas). When an " +
      "operator's state partitions are unbalanced over the executors (an executor was added, or " +
      "failovers piled partitions onto one), kstate moves partitions to the emptier executors, " +
      "each only after a warm-up copy there caught up; at most this many warm at once, so balance " +
      "comes over several micro-batches. Needs kstate's plugin (without it Spark's placement is kept). " +
      "0: partitions move only to an executor holding their standby. Read when a micro-batch is planned. Default 2."
  )(s =>
    s.trim.toIntOption.filter(_ >= 0).getOrElse(throw KStateErrors.invalidReplicaSetting(
      "spark.kstate.maxWarmupReplicas",
      s
    ))
  )

  val AcceptableRecoveryLag: Entry[Long] = Entry(
    "spark.kstate.acceptableRecoveryLag",
    1L,
    "How many versions (micro-batches) a warm-up or standby copy may lag behind the newest " +
      "committed version for its partition to move there (Kafka Streams' acceptable.recovery.lag, " +
      "counted in micro-batches, not records): the batch that moves it replays at most this many " +
      "versions' changelogs. Read when a micro-batch is planned. Default 1."
  )(s =>
    s.trim.toLongOption.filter(_ >= 0).getOrElse(throw KStateErrors.invalidReplicaSetting(
      "spark.kstate.acceptableRecoveryLag",
      s
    ))
  )

  val ReplicaPollInterval: Entry[Long] = Entry(
    "spark.kstate.replicas.pollInterval",
    1000L,
    "How often (milliseconds, or a duration such as '1s') each executor's standby follower asks " +
      "the driver which standbys to hold and the newest committed version, and replays the " +
      "changelogs after its own. A Spark setting read at application start. Default 1s."
  )(s => org.apache.spark.network.util.JavaUtils.timeStringAsMs(s.trim))

  /**
   * Spark store settings kstate sets for its own stores unless the user set them: changelog
   * checkpointing (a commit writes a changelog, snapshots are taken in the background), and no
   * row counting by the store (kstate counts its entries itself; counting makes RocksDB look up
   * every key before each put and remove). Applied by the operators and by kstate's state reader.
   */
  val StoreDefaults: Map[String, String] = Map(
    "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled" -> "true",
    "spark.sql.streaming.stateStore.rocksdb.trackTotalNumberOfRows" -> "false"
  )

  /** Every entry, for registration with Spark's SQL configuration. */
  val entries: Seq[Entry[_]] = Seq(
    StateStoreProvider,
    StreamTimeFollowsWatermark,
    ProcessingOrderPolicy,
    TableJoinReadsSources,
    OrderSpillThreshold,
    MaxWriteSetBytes,
    HeapStateBytes,
    StandbyReplicas,
    MaxWarmupReplicas,
    AcceptableRecoveryLag,
    ReplicaPollInterval
  )

  private def parseBytes(s: String): Long = org.apache.spark.network.util.JavaUtils.byteStringAsBytes(s.trim)

  /** A state store provider's size setting: `KSTATE_INVALID_STATE_STORE_SETTING` unless a size of 0 or more. */
  private def storeBytes(key: String, example: String)(s: String): Long =
    scala.util.Try(parseBytes(s)).toOption.filter(_ >= 0).getOrElse(throw KStateErrors.invalidStateStoreSetting(
      key,
      s,
      "a size of 0 or more, such as '64m' or '512m'",
      example
    ))
}
