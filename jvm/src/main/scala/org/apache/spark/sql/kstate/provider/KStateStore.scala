package org.apache.spark.sql.kstate.provider

import org.apache.spark.sql.kstate.errors.KStateErrors

import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.kstate.engine._
import org.apache.spark.sql.types.StructType

/**
 * One version of a kstate state store, opened by [[KStateStoreProvider.getStore]].
 *
 * Contract (Spark's StateStore, as kstate implements it):
 *  - Life cycle: UPDATING -> COMMITTED (commit) or ABORTED (abort / release). Writes are
 *    collected in a [[WriteSet]] on the heap. When its estimated heap use passes the store's
 *    heap limit (`spark.sql.streaming.stateStore.kstate.maxWriteSetBytes`, or
 *    [[KStateStore.limitHeap]]) it is spilled: appended to the version's pending changelog and
 *    written to the local database. The changelog becomes durable only at commit, so an abort
 *    (or a failed spill) leaves the checkpoint at the previous version; a spilled store's
 *    local copy is then discarded and rebuilt from the checkpoint on next use.
 *  - Reads see the committed version this store was opened at plus this store's own writes.
 *  - Null: keys and values must not be null; `get` of an absent key returns null.
 *  - Reuse: every row returned (by `get`, iterators and scans) is a fresh object the caller may
 *    keep; rows passed in are copied, so callers may reuse theirs.
 *  - Iterators and scans are in key byte order (for range-scan key specs: the ordering columns'
 *    order) and reflect the store as it was when the iterator was created. One exception:
 *    `iterator()` of a plain-key family (NoPrefixKeyStateEncoderSpec) on a heap working copy is
 *    in no particular order, as on Spark's HDFS provider, so that it needs no sort.
 *  - Thread-safety: a store is used by one task thread.
 */
final class KStateStore private[kstate] (
    provider: KStateStoreProvider,
    override val version: Long,
    private[kstate] val startRegistry: FamilyRegistry
) extends StateStore {
  import KStateStore._

  private var state: State = Updating
  // sized like the last committed version's, so a steady workload does not grow it from empty
  private[kstate] val changes = new WriteSet(provider.writeSetSizeHint)
  private[kstate] var registry: FamilyRegistry = startRegistry

  /** Column families created and dropped by this version, in order. */
  private[kstate] var familyLog: Vector[FamilyChange] = Vector.empty

  /** How much of `familyLog` a spill already wrote. */
  private[kstate] var familiesFlushed: Int = 0

  /** Whether part of this version was spilled to the provider's local database. */
  private[kstate] var spilled: Boolean = false

  /** Spark's `forceSnapshotOnCommit` for this version: the commit also writes its snapshot. */
  private[kstate] var forceSnapshotOnCommit: Boolean = false

  /**
   * Opened with Spark's `loadEmpty`: an empty store at its version, whose commit writes the new
   * version as a snapshot only (KStateStoreProvider.commitFromEmpty).
   */
  private[kstate] var fromEmpty: Boolean = false

  /** Checkpoint format v2: the id of the version this store was opened at (None: version 0). */
  private[kstate] var baseId: Option[String] = None

  /** Checkpoint format v2: the id its commit gave the new version. */
  private[kstate] var committedId: Option[String] = None
  private[kstate] val counters = new StoreCounters
  private var heapLimitBytes: Long = provider.maxWriteSetBytes
  private var heapLimitEntries: Long = Long.MaxValue
  private var commitHooks: Vector[() => Unit] = Vector.empty

  override def id: StateStoreId = provider.stateStoreId

  // ---- column families ---------------------------------------------------------------------

  override def createColFamilyIfAbsent(
      colFamilyName: String,
      keySchema: StructType,
      valueSchema: StructType,
      keyStateEncoderSpec: KeyStateEncoderSpec,
      useMultipleValuesPerKey: Boolean,
      isInternal: Boolean
  ): Unit = {
    if (
      colFamilyName == null || colFamilyName.trim.isEmpty ||
      colFamilyName == StateStore.DEFAULT_COL_FAMILY_NAME ||
      (!isInternal && colFamilyName.startsWith("$"))
    ) {
      throw KStateErrors.invalidColumnFamilyName(colFamilyName)
    }
    val (next, id) = registry.create(colFamilyName)
    if (next ne registry) {
      registry = next
      familyLog :+= FamilyChange.Created(colFamilyName, id)
    }
    provider.registerCodec(new FamilyCodec(
      id,
      colFamilyName,
      keySchema,
      valueSchema,
      keyStateEncoderSpec,
      useMultipleValuesPerKey
    ))
    lastName = null // the family's codec may have been replaced
  }

  override def removeColFamilyIfExists(colFamilyName: String): Boolean = {
    checkWritable("removeColFamilyIfExists")
    registry.ids.get(colFamilyName) match {
      case None => false
      case Some(id) =>
        registry = registry.drop(colFamilyName)
        familyLog :+= FamilyChange.Dropped(id)
        val prefix = FamilyCodec.prefixOf(id)
        changes.clearRange(prefix, Bytes.prefixEnd(prefix))
        true
    }
  }

  override def allColumnFamilyNames: Set[String] = registry.ids.keySet

  // The last family looked up, valid while the registry is the same object (callers name the
  // same family row after row).
  private var lastName: String = _
  private var lastRegistry: FamilyRegistry = _
  private var lastFamily: FamilyCodec = _

  private def family(name: String): FamilyCodec =
    if ((name eq lastName) && (registry eq lastRegistry)) lastFamily
    else {
      val f = registry.ids.get(name) match {
        case Some(id) => provider.codec(name, id)
        case None => throw KStateErrors.unknownColumnFamily(name, registry.ids.keys)
      }
      lastName = name; lastRegistry = registry; lastFamily = f
      f
    }

  // ---- reads -------------------------------------------------------------------------------

  /** The current bytes of `key`: this version's change if any, else the committed value. */
  private def current(bytes: Array[Byte]): Array[Byte] = current(new HashedKey(bytes))

  private def current(key: HashedKey): Array[Byte] = {
    val e = changes.lookup(key)
    if (e != null && e.value != null) {
      if (e.isDelete) null else e.value
    } else {
      checkReadable()
      counters.dbGets += 1
      val v = provider.dbGet(this, key)
      if (e == null && provider.notesReads) { changes.noteRead(key, v != null); spillIfFull() }
      v
    }
  }

  override def get(key: UnsafeRow, colFamilyName: String): UnsafeRow = {
    requireKey(key)
    val fam = family(colFamilyName)
    fam.decodeValue(current(fam.encodeKey(key)))
  }

  /**
   * `key` encoded for column family `colFamilyName` and hashed: for a read and then a write of
   * one key ([[getEncoded]], [[putEncoded]], [[removeEncoded]]) that encode and hash it once.
   * `last` (may be null), a key this returned before, is returned again when it is `key`'s
   * encoding ([[FamilyCodec.isEncodingOf]]). The family must exist; the same as
   * `get`/`put`/`remove` with `key`, which it was encoded from.
   */
  private[kstate] def encodedKey(key: UnsafeRow, colFamilyName: String, last: HashedKey = null): HashedKey = {
    requireKey(key)
    val fam = family(colFamilyName)
    if (last != null && fam.isEncodingOf(last.bytes, key)) last else new HashedKey(fam.encodeKey(key))
  }

  /**
   * The value bytes stored under an [[encodedKey]] (null: none), as this version sees them. The
   * array may be the write set's own: the caller must not modify it (it is never modified in
   * place, so a row pointing into it stays valid).
   */
  private[kstate] def getEncoded(key: HashedKey): Array[Byte] = current(key)

  /** `put` of a value's bytes (a single-value family's encoding: the value row's bytes) under an [[encodedKey]]. */
  private[kstate] def putEncoded(key: HashedKey, value: Array[Byte]): Unit = {
    checkWritable("put")
    write(key, value)
  }

  /** `remove` of an [[encodedKey]]. */
  private[kstate] def removeEncoded(key: HashedKey): Unit = {
    checkWritable("remove")
    write(key, WriteSet.Deleted)
  }

  override def multiGet(keys: Array[UnsafeRow], colFamilyName: String): Iterator[UnsafeRow] = {
    val fam = family(colFamilyName)
    keys.map { k => requireKey(k); fam.decodeValue(current(fam.encodeKey(k))) }.iterator
  }

  override def valuesIterator(key: UnsafeRow, colFamilyName: String): Iterator[UnsafeRow] = {
    requireKey(key)
    val fam = family(colFamilyName)
    fam.decodeValues(current(fam.encodeKey(key)))
  }

  override def iterator(colFamilyName: String): StateStoreIterator[UnsafeRowPair] =
    familyPairs(colFamilyName, multi = false)

  override def iteratorWithMultiValues(colFamilyName: String): StateStoreIterator[UnsafeRowPair] =
    familyPairs(colFamilyName, multi = true)

  override def prefixScan(prefixKey: UnsafeRow, colFamilyName: String)
      : StateStoreIterator[UnsafeRowPair] = prefixPairs(prefixKey, colFamilyName, multi = false)

  override def prefixScanWithMultiValues(prefixKey: UnsafeRow, colFamilyName: String)
      : StateStoreIterator[UnsafeRowPair] = prefixPairs(prefixKey, colFamilyName, multi = true)

  override def rangeScan(
      startKey: Option[UnsafeRow],
      endKey: Option[UnsafeRow],
      colFamilyName: String
  ): StateStoreIterator[UnsafeRowPair] =
    rangePairs(startKey, endKey, colFamilyName, multi = false)

  override def rangeScanWithMultiValues(
      startKey: Option[UnsafeRow],
      endKey: Option[UnsafeRow],
      colFamilyName: String
  ): StateStoreIterator[UnsafeRowPair] =
    rangePairs(startKey, endKey, colFamilyName, multi = true)

  /**
   * Spark's `iterator()`: in key order for prefix- and range-scan families (timers and
   * kstate's time indexes rely on it, as on Spark's RocksDB provider); in no particular order
   * for plain-key families when the working copy can give that without a sort (Spark's contract
   * leaves it open there, and its HDFS provider iterates a hash map).
   */
  private def familyPairs(cf: String, multi: Boolean): StateStoreIterator[UnsafeRowPair] = {
    val fam = family(cf)
    pairs(fam, familyScan(fam), multi)
  }

  /**
   * Every current entry of `fam`, as `iterator()` reads them: unordered from a heap working copy
   * for plain keys, else in key order. Keys are the write set's own arrays or fresh copies
   * ([[StateScan]]), never modified, so a caller may keep them.
   */
  private def familyScan(fam: FamilyCodec): Iterator[(Array[Byte], Array[Byte])] with AutoCloseable = {
    val unordered = if (fam.plainKeys) { checkReadable(); provider.unorderedScan(this, fam.prefix) }
    else None
    unordered.getOrElse(scan(fam.prefix, Bytes.prefixEnd(fam.prefix)))
  }

  private def prefixPairs(prefixKey: UnsafeRow, cf: String, multi: Boolean)
      : StateStoreIterator[UnsafeRowPair] = {
    requireKey(prefixKey)
    val fam = family(cf)
    val p = fam.encodePrefix(prefixKey)
    pairs(fam, scan(p, Bytes.prefixEnd(p)), multi)
  }

  private def rangePairs(
      startKey: Option[UnsafeRow],
      endKey: Option[UnsafeRow],
      cf: String,
      multi: Boolean
  ): StateStoreIterator[UnsafeRowPair] = {
    val fam = family(cf)
    val (from, until) = rangeBounds(fam, startKey, endKey)
    pairs(fam, scan(from, until), multi)
  }

  /** [start, end) in encoded key order; a missing bound is the family's first/last key. */
  private def rangeBounds(
      fam: FamilyCodec,
      startKey: Option[UnsafeRow],
      endKey: Option[UnsafeRow]
  ): (Array[Byte], Option[Array[Byte]]) = {
    if (!fam.supportsRangeScan) {
      throw KStateErrors.unsupportedStoreOperation(
        "rangeScan",
        s"column family '${fam.name}' was not registered with a range-scan key encoder spec"
      )
    }
    (
      startKey.map(fam.encodeKey).getOrElse(fam.prefix),
      endKey.map(fam.encodeKey).orElse(Bytes.prefixEnd(fam.prefix))
    )
  }

  private def scan(from: Array[Byte], until: Option[Array[Byte]]): MergedScan = {
    checkReadable()
    new MergedScan(changes.changesIn(from, until), provider.dbScan(this, from, until))
  }

  /** A scan of [from, until) within one key group `group` (see [[WriteSet.changesInGroup]]). */
  private def groupScan(
      group: Array[Byte],
      groups: KeyGroups,
      prefixLength: Int,
      from: Array[Byte],
      until: Option[Array[Byte]]
  ): MergedScan = {
    checkReadable()
    new MergedScan(changes.changesInGroup(group, groups, prefixLength, from, until), provider.dbScan(this, from, until))
  }

  /** A scan that copies this version's changes in chunks as it goes (see [[ChunkedScan]]). */
  private def chunkedScan(from: Array[Byte], until: Option[Array[Byte]]): ChunkedScan =
    new ChunkedScan(
      from,
      until,
      (f, limit) => { checkReadable(); changes.changesIn(f, until, limit) },
      (f, bound) => provider.dbScan(this, f, bound)
    )

  private def pairs(
      fam: FamilyCodec,
      scan: Iterator[(Array[Byte], Array[Byte])] with AutoCloseable,
      multi: Boolean
  )
      : StateStoreIterator[UnsafeRowPair] = {
    val it: Iterator[UnsafeRowPair] =
      if (!multi) scan.map { case (k, v) => new UnsafeRowPair(fam.decodeKey(k), fam.decodeValue(v)) }
      else scan.flatMap { case (k, v) =>
        val key = fam.decodeKey(k)
        fam.decodeValues(v).map(value => new UnsafeRowPair(key, value))
      }
    new StateStoreIterator(it, () => scan.close())
  }

  // ---- writes ------------------------------------------------------------------------------

  override def put(key: UnsafeRow, value: UnsafeRow, colFamilyName: String): Unit = {
    checkWritable("put"); requireKey(key); requireValue(value)
    val fam = family(colFamilyName)
    write(fam.encodeKey(key), fam.encodeValue(value))
  }

  override def putList(key: UnsafeRow, values: Array[UnsafeRow], colFamilyName: String): Unit = {
    checkWritable("putList"); requireKey(key); values.foreach(requireValue)
    val fam = family(colFamilyName)
    write(
      fam.encodeKey(key),
      if (values.isEmpty) WriteSet.Deleted else fam.encodeValues(values)
    )
  }

  override def merge(key: UnsafeRow, value: UnsafeRow, colFamilyName: String): Unit =
    mergeList(key, Array(value), colFamilyName)

  override def mergeList(key: UnsafeRow, values: Array[UnsafeRow], colFamilyName: String): Unit = {
    checkWritable("merge"); requireKey(key); values.foreach(requireValue)
    val fam = family(colFamilyName)
    val k = fam.encodeKey(key)
    write(k, fam.appendValues(current(k), values))
  }

  override def remove(key: UnsafeRow, colFamilyName: String): Unit = {
    checkWritable("remove"); requireKey(key)
    write(family(colFamilyName).encodeKey(key), WriteSet.Deleted)
  }

  /**
   * Removes the entries of plain-key, single-value column family `colFamilyName` whose value
   * `expired` accepts, and returns how many: the same as removing the key of each pair of
   * `iterator(colFamilyName)` whose value it accepts, without decoding, copying and encoding
   * every key again (deduplication's purge). `expired` is called once per entry, on a value row
   * whose bytes are reused for the next entry, so it must not keep it.
   */
  private[kstate] def removeWhere(colFamilyName: String)(expired: UnsafeRow => Boolean): Long = {
    checkWritable("remove")
    val fam = family(colFamilyName)
    require(fam.plainKeys && !fam.multipleValues, s"removeWhere needs a plain-key, single-value family: ${fam.name}")
    val value = new UnsafeRow(fam.valueSchema.length)
    val isExpired: Array[Byte] => Boolean = v => { value.pointTo(v, v.length); expired(value) }
    checkReadable()
    // on a heap working copy: its entries this version has not changed, then this version's own
    // entries, deleted where they are (most of a purge's keys were written in it); else a scan
    // of the family, the version's changes included
    val heap = provider.committedOnHeap(fam.prefix)
    val entries: Iterator[(Array[Byte], Array[Byte])] = heap match {
      case Some(committed) => committed(changes.keysWithPrefix(fam.prefix).contains)
      case None => familyScan(fam)
    }
    val keys = scala.collection.mutable.ArrayBuffer.empty[Array[Byte]]
    try {
      while (entries.hasNext) {
        val (k, v) = entries.next()
        if (isExpired(v)) keys += k
      }
    } finally entries match { case c: AutoCloseable => c.close(); case _ => () }
    val own = if (heap.isDefined) changes.deleteWhere(fam.prefix)(isExpired) else 0
    keys.foreach(k => write(k, WriteSet.Deleted))
    own + keys.length.toLong
  }

  override def deleteRange(beginKey: UnsafeRow, endKey: UnsafeRow, colFamilyName: String): Unit = {
    checkWritable("deleteRange")
    val fam = family(colFamilyName)
    val (from, until) = rangeBounds(fam, Option(beginKey), Option(endKey))
    val it = scan(from, until)
    try it.foreach { case (k, _) => write(k, WriteSet.Deleted) }
    finally it.close()
  }

  private def write(key: Array[Byte], value: Array[Byte]): Unit = write(new HashedKey(key), value)

  private def write(key: HashedKey, value: Array[Byte]): Unit = {
    changes.write(key, value)
    spillIfFull()
  }

  // ---- heap bound --------------------------------------------------------------------------

  /**
   * Bounds the heap this version's uncommitted changes may hold: at most `maxBytes` estimated
   * heap bytes and `maxEntries` changed keys (read-only existence notes included); past either,
   * the changes are spilled to the local database. kstate's bounded structures (the
   * time-ordered buffer) call this with their own bound, which then covers the committed working
   * copy too: it stays on the heap while it takes at most half the bound, and counts against
   * the write set's share (see [[KStateStoreProvider.boundHeap]]).
   */
  private[kstate] def limitHeap(maxBytes: Long, maxEntries: Long = Long.MaxValue): Unit = {
    require(maxBytes > 0 && maxEntries > 0, s"heap limits must be positive: $maxBytes, $maxEntries")
    heapLimitBytes = maxBytes
    heapLimitEntries = maxEntries
    // A bounded structure's committed contents count against the bound too.
    checkReadable()
    provider.boundHeap(this, maxBytes)
    spillIfFull()
  }

  private def spillIfFull(): Unit =
    if (changes.heapBytes > heapLimitBytes - provider.heapCopyBytesWithin || changes.numEntries > heapLimitEntries) {
      provider.spill(this)
    }

  /** Runs `hook` at commit, before the changes are written (to store final counters). */
  private[kstate] def beforeCommit(hook: () => Unit): Unit = commitHooks :+= hook

  // ---- byte-level access for kstate's own structures ---------------------------------------

  /**
   * Raw byte access to column family `colFamilyName` (created if absent), for kstate's own
   * structures that define their own key layout (the versioned store). Keys exclude the family
   * prefix; scans are in unsigned byte order and merge this version's changes.
   */
  private[kstate] def bytes(colFamilyName: String): RawFamily = {
    createColFamilyIfAbsent(
      colFamilyName,
      RawSchema,
      RawSchema,
      NoPrefixKeyStateEncoderSpec(RawSchema),
      useMultipleValuesPerKey = false,
      isInternal = true
    )
    new RawFamily(family(colFamilyName).prefix)
  }

  /**
   * Raw byte access to an existing column family (the default one included), without changing
   * its codec: for moving a store's entries as they are stored (repartitioning state). None when
   * the store has no such family.
   */
  private[kstate] def existingFamily(colFamilyName: String): Option[RawFamily] =
    registry.ids.get(colFamilyName).map(id => new RawFamily(FamilyCodec.prefixOf(id)))

  private[kstate] final class RawFamily(prefix: Array[Byte]) {
    def get(key: Array[Byte]): Array[Byte] = current(Bytes.concat(prefix, key))

    /** `key` with this family's prefix, hashed once: for reading and then writing one key. */
    def hashed(key: Array[Byte]): HashedKey = new HashedKey(Bytes.concat(prefix, key))
    def get(key: HashedKey): Array[Byte] = current(key)
    def put(key: HashedKey, value: Array[Byte]): Unit = { checkWritable("put"); write(key, value) }

    /** A buffer for a key of `length` bytes with this family's prefix already written. */
    def keyBuffer(length: Int): java.nio.ByteBuffer =
      java.nio.ByteBuffer.allocate(prefix.length + length).put(prefix)

    /** Writes under a key that already starts with this family's prefix (from [[keyBuffer]]). */
    def putPrefixed(key: Array[Byte], value: Array[Byte]): Unit = { checkWritable("put"); write(key, value) }
    def put(key: Array[Byte], value: Array[Byte]): Unit = {
      checkWritable("put"); write(Bytes.concat(prefix, key), value)
    }
    def delete(key: Array[Byte]): Unit = {
      checkWritable("remove"); write(Bytes.concat(prefix, key), WriteSet.Deleted)
    }

    /**
     * Entries with keys in [from, until) (until None: to the family's end), keys unprefixed,
     * frozen when opened. `chunked`: for reading a few entries of a large range; writes made
     * while it is open may show through (see [[ChunkedScan]]).
     */
    def scan(from: Array[Byte], until: Option[Array[Byte]], chunked: Boolean = false)
        : Iterator[(Array[Byte], Array[Byte])] with AutoCloseable = {
      val f = Bytes.concat(prefix, from)
      val u = until.map(Bytes.concat(prefix, _)).orElse(Bytes.prefixEnd(prefix))
      unprefixed(if (chunked) chunkedScan(f, u) else KStateStore.this.scan(f, u))
    }

    /**
     * Entries with keys in [from, until) where every such key starts with `group`, one whole group
     * of this family's keys under `groups` (one family, one `groups`); keys unprefixed, frozen when
     * opened. Same entries as [[scan]], found without a sorted view of the family's changes.
     */
    def scanGroup(groups: KeyGroups, group: Array[Byte], from: Array[Byte], until: Option[Array[Byte]])
        : Iterator[(Array[Byte], Array[Byte])] with AutoCloseable = {
      val u = until.map(Bytes.concat(prefix, _)).orElse(Bytes.prefixEnd(prefix))
      unprefixed(groupScan(Bytes.concat(prefix, group), groups, prefix.length, Bytes.concat(prefix, from), u))
    }

    private def unprefixed(s: Iterator[(Array[Byte], Array[Byte])] with AutoCloseable)
        : Iterator[(Array[Byte], Array[Byte])] with AutoCloseable = {
      new Iterator[(Array[Byte], Array[Byte])] with AutoCloseable {
        override def hasNext: Boolean = s.hasNext
        override def next(): (Array[Byte], Array[Byte]) = {
          val (k, v) = s.next()
          (java.util.Arrays.copyOfRange(k, prefix.length, k.length), v)
        }
        override def close(): Unit = s.close()
      }
    }
  }

  // ---- life cycle --------------------------------------------------------------------------

  override def commit(): Long = {
    checkWritable("commit")
    commitHooks.foreach(_.apply())
    val v = provider.commit(this)
    state = Committed
    if (forceSnapshotOnCommit) provider.snapshotOnCommit(v)
    // Spark validates at the end of the batch that every partition's store committed (only
    // stores opened by a query's task have a coordinator to report to).
    if (org.apache.spark.TaskContext.get() != null) {
      StateStore.reportCommitToCoordinator(v, id, provider.hadoopConfiguration)
    }
    v
  }

  override def abort(): Unit = if (state == Updating) {
    state = Aborted
    if (spilled || fromEmpty) provider.abandon(this)
  }

  override def release(): Unit = abort()

  override def hasCommitted: Boolean = state == Committed

  override def metrics: StateStoreMetrics = provider.metricsOf(this)

  /**
   * What the commit made, for Spark's checkpoint format v2: (partition, the committed version,
   * its new checkpoint id, the id of the version it was opened at). Format v1: no ids. Before a
   * commit: the version opened at and its id, no new id.
   */
  override def getStateStoreCheckpointInfo(): StateStoreCheckpointInfo =
    if (hasCommitted) StateStoreCheckpointInfo(id.partitionId, version + 1, committedId, baseId)
    else StateStoreCheckpointInfo(id.partitionId, version, None, baseId)

  override def toString: String = s"KStateStore[$id, version $version, $state]"

  private def checkWritable(op: String): Unit =
    if (state != Updating) throw new IllegalStateException(s"$op on $this: it is no longer updating")

  /** The working copy must still hold this store's base version. */
  private def checkReadable(): Unit =
    if (state == Updating && !provider.holds(this)) {
      throw new IllegalStateException(s"$this is stale: the provider's working copy is no " +
        s"longer its version (the provider is ${provider.state}). Two stores of one partition " +
        "were used at once.")
    }
}

private[kstate] object KStateStore {
  sealed trait State
  case object Updating extends State
  case object Committed extends State
  case object Aborted extends State

  private val RawSchema = StructType(Seq(org.apache.spark.sql.types.StructField(
    "bytes",
    org.apache.spark.sql.types.BinaryType
  )))

  private def requireKey(key: UnsafeRow): Unit =
    if (key == null) throw new IllegalArgumentException("state store keys cannot be null")
  private def requireValue(value: UnsafeRow): Unit =
    if (value == null) throw new IllegalArgumentException("Cannot put a null value: state store values cannot be null")
}

/** What one store version did, reported through its metrics. */
private[kstate] final class StoreCounters {
  var dbGets: Long = 0
  var commitNanos: Long = 0
  var changelogBytes: Long = 0
  var changelogRecords: Long = 0
  var spills: Long = 0
  var spilledRecords: Long = 0
}

/** A column family created or dropped within one store version. */
private[kstate] sealed trait FamilyChange
private[kstate] object FamilyChange {
  final case class Created(name: String, id: Short) extends FamilyChange
  final case class Dropped(id: Short) extends FamilyChange
}
