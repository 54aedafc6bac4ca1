package org.apache.spark.sql.kstate.repartition

import java.nio.ByteBuffer

import org.apache.spark.sql.kstate.errors.KStateErrors

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.catalyst.parser.CatalystSqlParser
import org.apache.spark.sql.execution.streaming.state.{
  PrefixKeyScanStateEncoderSpec,
  RangeKeyScanStateEncoderSpec,
  StateStore
}
import org.apache.spark.sql.kstate.execution.{KStateFkJoinExec, KStateFkJoinSubscriptionsExec, KStateTableJoinExec}
import org.apache.spark.sql.kstate.reader.RecordedOperator
import org.apache.spark.sql.kstate.operatorstate.{
  ExpiryIndex,
  StateMeta,
  StoreForeignKeySubscriptionState,
  StoreTableState
}
import org.apache.spark.sql.kstate.engine.FamilyCodec
import org.apache.spark.sql.types.{DataType, LongType, StructField, StructType}

/**
 * A kstate operator's state store as repartitioning sees it: for every column family, where an
 * entry's **operator key** is (the value the operator's shuffle hashes to choose the state
 * partition: the `key` of every kstate operator, the identity of `deduplicate`), or that the
 * family holds the partition's own scalars (stream time, counters), which are merged instead.
 *
 * Built from what the checkpoint records, so it needs no query plan: the operator's recorded
 * configuration (its `kind`) and the default column family's key and value schemas from its state
 * schema file, whose first key field is the operator key in every kstate operator.
 *
 * Families and where their key is (`K` the operator key's 1-field UnsafeRow bytes):
 * {{{
 *   default                        UnsafeRow(keySchema), field 0
 *   kstate_expiry                  (time, keySchema...) range-encoded, field 1
 *   kstate_table, kstate_tj_left, kstate_tj_right, kstate_fk_right, kstate_fk_result
 *                                  K
 *   kstate_fk_subscriptions        (foreign key, left key) prefix-encoded, field 0
 *   kstate_buf_<n>_time            flip(buffer time):8 K        kstate_buf_<n>_key   K
 *   kstate_vs_<n>_latest           K                            kstate_vs_<n>_history  klen:4 K from:8
 *   kstate_vs_<n>_expiry           flip(segment):8 kind:1 K
 *   kstate_stj_<n>_buffer          value: klen:4 K value
 *   kstate_meta, kstate_buf_<n>_meta, kstate_vs_<n>_meta, kstate_stj_<n>_meta   per partition
 * }}}
 * A family not listed here is one this kstate does not know how to move:
 * `KSTATE_REPARTITION_UNSUPPORTED_STATE`, before anything is written.
 */
final case class OperatorLayout(operator: RecordedOperator, keySchema: StructType, valueSchema: StructType) {
  import OperatorLayout._

  require(keySchema.nonEmpty, s"operator ${operator.describe} has an empty state key schema")

  def kind: String = operator.config.getOrElse("kind", "")

  /** The operator key's type: the default family's first key field. */
  def keyType: DataType = keySchema.head.dataType

  /** How entries of `family` move, or the named error for a family this layout does not know. */
  def route(family: String): FamilyRoute = family match {
    case StateStore.DEFAULT_COL_FAMILY_NAME => FamilyRoute.ByKey(rowOf(keySchema.length), 0)
    case StateMeta.Cf => FamilyRoute.PerPartition(MetaKind.OperatorMeta)
    case ExpiryIndex.Cf =>
      val schema = StructType(StructField("time", LongType, nullable = false) +: keySchema.fields)
      FamilyRoute.ByKey(decoded(family, schema, RangeKeyScanStateEncoderSpec(schema, Seq(0))), 1)
    case StoreTableState.Cf | KStateTableJoinExec.LeftFamily | KStateTableJoinExec.RightFamily |
        KStateFkJoinSubscriptionsExec.RightFamily | KStateFkJoinExec.ResultFamily =>
      FamilyRoute.ByKey(rowOf(1), 0)
    case StoreForeignKeySubscriptionState.Cf =>
      val schema = StructType(Seq(StructField("foreignKey", keyType), StructField("key", leftKeyType)))
      FamilyRoute.ByKey(decoded(family, schema, PrefixKeyScanStateEncoderSpec(schema, 1)), 0)
    case Structure("buf", _, "time") => FamilyRoute.ByKey(sliced(8, 0), 0)
    case Structure("buf", _, "key") => FamilyRoute.ByKey(rowOf(1), 0)
    case Structure("buf", _, "meta") => FamilyRoute.PerPartition(MetaKind.BufferMeta)
    case Structure("vs", _, "latest") => FamilyRoute.ByKey(rowOf(1), 0)
    case Structure("vs", _, "history") => FamilyRoute.ByKey(lengthPrefixed, 0)
    case Structure("vs", _, "expiry") => FamilyRoute.ByKey(sliced(9, 0), 0)
    case Structure("vs", _, "meta") => FamilyRoute.PerPartition(MetaKind.VersionedMeta)
    case Structure("stj", _, "buffer") => FamilyRoute.ByKey(keyInValue, 0)
    case Structure("stj", _, "meta") => FamilyRoute.PerPartition(MetaKind.JoinBufferMeta)
    case other => throw KStateErrors.repartitionUnsupportedState(
        operator.describe,
        s"its state has a column family '$other' this kstate version does not know how to move"
      )
  }

  /**
   * How the operator's `kstate_meta` entry and byte counters are recomputed from the entries a
   * new partition receives (they count the operator's own entries; see [[EntryTally]]).
   */
  def counting: Counting = kind match {
    case "deduplicate_by_key" | "deduplicate_by_key_value" | "deduplicate" => Counting.DefaultEntries
    case "distinct" if hasSessions => Counting.SessionDistinct
    case "distinct" => Counting.DefaultEntries
    case "windowed_aggregate" if hasSessions => Counting.SpanAggregate
    case "windowed_aggregate" => Counting.WindowAggregate
    case "fk_join_subscriptions" => Counting.Subscriptions
    case _ => Counting.None
  }

  private def hasSessions: Boolean = valueSchema.fieldNames.headOption.contains("sessions")

  /** The foreign-key join's left key type, from the recorded subscription row type (its field 1). */
  private def leftKeyType: DataType = {
    val recorded = operator.config.getOrElse(
      "subscriptionType",
      throw KStateErrors.repartitionUnsupportedState(
        operator.describe,
        "its recorded configuration has no subscription row type"
      )
    )
    CatalystSqlParser.parseDataType(recorded) match {
      case s: StructType if s.length > 1 => s(1).dataType
      case other => throw KStateErrors.repartitionUnsupportedState(
          operator.describe,
          s"its recorded subscription row type '${other.catalogString}' is not the one this kstate writes"
        )
    }
  }
}

/** Where one column family's entries go. */
sealed trait FamilyRoute

object FamilyRoute {

  /**
   * With the operator key: `rowOf(key, value)` is a row whose field `ordinal` is the operator key
   * (keys are family keys without the family prefix).
   */
  final case class ByKey(rowOf: (Array[Byte], Array[Byte]) => InternalRow, ordinal: Int) extends FamilyRoute

  /** The partition's own scalars: every new partition merges the old partitions' (see [[MetaMerge]]). */
  final case class PerPartition(kind: MetaKind) extends FamilyRoute
}

/** The kinds of per-partition scalars a kstate store keeps, each merged by its own rule. */
sealed trait MetaKind
object MetaKind {

  /** `kstate_meta`: [[StateMeta]] slots. */
  case object OperatorMeta extends MetaKind

  /** `kstate_buf_<n>_meta`: the time-ordered buffer's record and byte counts. */
  case object BufferMeta extends MetaKind

  /** `kstate_vs_<n>_meta`: the versioned store's stream time, segments, version count, layout. */
  case object VersionedMeta extends MetaKind

  /** `kstate_stj_<n>_meta`: the join buffer's stream time, arrival counter and record count. */
  case object JoinBufferMeta extends MetaKind
}

/** What the operator's `kstate_meta` counts (`Entries`, `Bytes`), by operator. */
sealed trait Counting
object Counting {

  /** Nothing: the operator keeps only stream time there. */
  case object None extends Counting

  /** Entries = the default family's entries (deduplication, time-window distinct). */
  case object DefaultEntries extends Counting

  /** Entries = sessions (two longs each) in the default family's values (session distinct). */
  case object SessionDistinct extends Counting

  /** Entries = windows, Bytes = state key + value bytes (time-window aggregation). */
  case object WindowAggregate extends Counting

  /** Entries = sessions or sliding spans, Bytes = key + 24 + buffer bytes per span. */
  case object SpanAggregate extends Counting

  /** Entries = the foreign-key join's subscriptions. */
  case object Subscriptions extends Counting
}

private[repartition] object OperatorLayout {

  /** `kstate_<structure>_<name>_<part>`: the families of kstate's own structures. */
  object Structure {
    private val Pattern = "kstate_(buf|vs|stj)_(.+)_([a-z]+)".r
    def unapply(family: String): Option[(String, String, String)] = family match {
      case Pattern(structure, name, part) => Some((structure, name, part))
      case _ => scala.None
    }
  }

  /** The key bytes are an UnsafeRow of `fields` fields. */
  def rowOf(fields: Int): (Array[Byte], Array[Byte]) => InternalRow = (key, _) => {
    val row = new UnsafeRow(fields)
    row.pointTo(key, key.length)
    row
  }

  /** The key bytes hold a 1-field key row from `from`, `trailing` bytes before the end. */
  def sliced(from: Int, trailing: Int): (Array[Byte], Array[Byte]) => InternalRow = (key, _) => {
    val row = new UnsafeRow(1)
    row.pointTo(java.util.Arrays.copyOfRange(key, from, key.length - trailing), key.length - from - trailing)
    row
  }

  /** `klen:4 key from:8` (the versioned store's history). */
  val lengthPrefixed: (Array[Byte], Array[Byte]) => InternalRow = (key, _) => {
    val n = ByteBuffer.wrap(key).getInt
    val row = new UnsafeRow(1)
    row.pointTo(java.util.Arrays.copyOfRange(key, 4, 4 + n), n)
    row
  }

  /** The join buffer's value: `klen:4 key value`. */
  val keyInValue: (Array[Byte], Array[Byte]) => InternalRow = (_, value) => {
    val n = ByteBuffer.wrap(value).getInt
    val row = new UnsafeRow(1)
    row.pointTo(java.util.Arrays.copyOfRange(value, 4, 4 + n), n)
    row
  }

  /** Keys encoded by Spark's key encoder for `spec`, decoded with the same encoder. */
  def decoded(
      family: String,
      schema: StructType,
      spec: org.apache.spark.sql.execution.streaming.state.KeyStateEncoderSpec
  )
      : (Array[Byte], Array[Byte]) => InternalRow = {
    val codec = new FamilyCodec(0, family, schema, StructType(Nil), spec, false)
    (key, _) => codec.decodeKey(FamilyCodec.prefixOf(0) ++ key)
  }
}
