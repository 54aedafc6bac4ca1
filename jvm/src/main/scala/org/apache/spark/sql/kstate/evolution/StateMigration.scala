package org.apache.spark.sql.kstate.evolution

import org.apache.spark.sql.kstate.errors.KStateErrors

import org.apache.spark.sql.catalyst.expressions.{GenericInternalRow, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.catalyst.util.GenericArrayData
import org.apache.spark.sql.execution.streaming.state.StateStore
import org.apache.spark.sql.kstate.provider.KStateStore
import org.apache.spark.sql.kstate.execution.KStateTableJoinExec
import org.apache.spark.sql.kstate.operatorstate.{
  SessionAggState,
  StateMeta,
  StoreForeignKeySubscriptionState,
  StoreStreamTableJoinBuffer,
  StoreTableState
}
import org.apache.spark.sql.kstate.operatorstate.TimeOrderedBuffer
import org.apache.spark.sql.kstate.operatorstate.VersionedKeyValueStore
import org.apache.spark.sql.types.{LongType, StructField, StructType}

/**
 * Converts the rows an operator keeps in one state store from the types before a
 * [[StateEvolution]] to the types after it, in the task of the first micro-batch that runs with
 * the new schema, before it processes anything: every stored row of a changed type is rewritten
 * in the store's version, and commits with it (docs/operators.md, "Evolving schemas").
 *
 * Where each kind keeps rows of each recorded type:
 * {{{
 *   suppress            rowType           the time-ordered buffer's values (kstate_buf_<operator>_*)
 *   table, versioned_table  valueType     kstate_table values; the versioned store `table`'s values
 *   stream_table_join   streamType        the grace buffer's stream rows (kstate_stj_join_buffer)
 *                       tableValueType    kstate_table values; the versioned store `stj_table`'s
 *   table_join          left/rightValueType   kstate_tj_left / kstate_tj_right values; the versioned
 *                                         stores `tj_left` / `tj_right`'s (a join reading its sources)
 *   fk_join_subscriptions  subscriptionType   the subscriptions' left values; rightValueType: kstate_fk_right
 *   fk_join             left/rightValueType   kstate_fk_result values (left columns, then right)
 *   table_aggregate     aggregateType     kstate_table values (the aggregates)
 *   windowed_aggregate  buffer            the default family's values (time windows: buffer, max_ts;
 *                                         sessions and sliding windows: each span's buffer)
 * }}}
 * Other changed keys (`valueType` and `resultType` of an aggregation, `results`) describe rows
 * that pass through and are not stored.
 */
object StateMigration {
  def apply(evolution: StateEvolution, operatorName: String, store: StateStore, windowsDescribe: String): Unit = {
    val k = store match {
      case k: KStateStore => k
      case other => throw KStateErrors.incompatibleStateSchema(
          operatorName,
          evolution.changes.keys.mkString(", "),
          "(all)",
          s"in state kept by ${other.getClass.getName}, which kstate converts rows in only on its own provider"
        )
    }
    def conv(key: String): Option[Array[Byte] => Array[Byte]] = evolution.change(key).map { case (before, now) =>
      val c = new RowEvolution.Converter(before, now)
      c.bytes _
    }
    def tables(key: String, family: String, versionedName: Option[String]): Unit = conv(key).foreach { f =>
      StoreTableState.mapValues(k, family, f)
      versionedName.foreach(VersionedKeyValueStore.mapValues(k, _, f))
    }
    evolution.kind match {
      case "suppress" => conv("rowType").foreach(TimeOrderedBuffer.mapValues(k, operatorName, _))
      case "table" | "versioned_table" => tables("valueType", StoreTableState.Cf, Some("table"))
      case "stream_table_join" =>
        conv("streamType").foreach(StoreStreamTableJoinBuffer.mapRows(k, "join", _))
        tables("tableValueType", StoreTableState.Cf, Some("stj_table"))
      case "table_join" =>
        tables("leftValueType", KStateTableJoinExec.LeftFamily, Some(KStateTableJoinExec.LeftVersionedName))
        tables("rightValueType", KStateTableJoinExec.RightFamily, Some(KStateTableJoinExec.RightVersionedName))
      case "fk_join_subscriptions" =>
        evolution.change("subscriptionType").foreach { case (before, now) =>
          val c = new RowEvolution.Converter(valueStruct(before), valueStruct(now))
          StoreForeignKeySubscriptionState.mapLeftValues(k, c.bytes)
        }
        tables("rightValueType", "kstate_fk_right", None)
      case "fk_join" =>
        val left = evolution.change("leftValueType")
        val right = evolution.change("rightValueType")
        if (left.isDefined || right.isDefined) {
          def sides(l: StructType, r: StructType) =
            StructType(l.fields.map(f => f.copy(name = "l." + f.name)) ++ r.fields.map(f =>
              f.copy(name = "r." + f.name)
            ))
          val (lb, ln) = evolution.types("leftValueType").get
          val (rb, rn) = evolution.types("rightValueType").get
          StoreTableState.mapValues(
            k,
            "kstate_fk_result",
            new RowEvolution.Converter(sides(lb, rb), sides(ln, rn)).bytes
          )
        }
      case "table_aggregate" => tables("aggregateType", StoreTableState.Cf, None)
      case "windowed_aggregate" => evolution.change("buffer").foreach { case (before, now) =>
          if (windowsDescribe.startsWith("TimeWindows")) timeWindows(k, before, now) else spans(k, before, now)
        }
      case _ =>
    }
  }

  /** The subscription row's value struct (its field 3, `plans.KStateFkSubscribe`'s output). */
  private def valueStruct(subscription: StructType): StructType = subscription(3).dataType match {
    case s: StructType => s
    case other => throw new IllegalStateException(s"unexpected subscription value type $other")
  }

  /** Time windows: each value is (buffer..., max_ts); the state bytes counted in `kstate_meta` follow. */
  private def timeWindows(store: KStateStore, before: StructType, now: StructType): Unit = {
    val maxTs = StructField("max_ts", LongType, nullable = false)
    val c = new RowEvolution.Converter(StructType(before.fields :+ maxTs), StructType(now.fields :+ maxTs))
    var delta = 0L
    for (windows <- store.existingFamily(StateStore.DEFAULT_COL_FAMILY_NAME)) {
      val it = windows.scan(Array.emptyByteArray, None)
      try it.foreach { case (key, v) =>
          val converted = c.bytes(v)
          delta += converted.length - v.length
          windows.put(key, converted)
        }
      finally it.close()
    }
    adjustBytes(store, delta)
  }

  /** Session and sliding windows: each value is the key's spans, each with its buffer. */
  private def spans(store: KStateStore, before: StructType, now: StructType): Unit = {
    val c = new RowEvolution.Converter(before, now)
    val toValue = UnsafeProjection.create(SessionAggState.valueSchema(now))
    val in = new UnsafeRow(1)
    var delta = 0L
    for (family <- store.existingFamily(StateStore.DEFAULT_COL_FAMILY_NAME)) {
      val it = family.scan(Array.emptyByteArray, None)
      try it.foreach { case (key, v) =>
          in.pointTo(v, v.length)
          val a = in.getArray(0)
          val converted = Array.tabulate[Any](a.numElements()) { i =>
            val s = a.getStruct(i, 4)
            val buffer = s.getStruct(3, before.length)
            val nb = c(buffer).copy()
            delta += nb.getSizeInBytes - buffer.getSizeInBytes
            new GenericInternalRow(Array[Any](s.getLong(0), s.getLong(1), s.getLong(2), nb))
          }
          // copy(): getBytes alone may hand out the projection's own buffer, which the next row overwrites
          family.put(key, toValue(new GenericInternalRow(Array[Any](new GenericArrayData(converted)))).copy().getBytes)
        }
      finally it.close()
    }
    adjustBytes(store, delta)
  }

  /** Adds `delta` to the state bytes `kstate_meta` counts (windowed aggregations). */
  private def adjustBytes(store: KStateStore, delta: Long): Unit = if (delta != 0) {
    val meta = new StateMeta(store)
    meta.put(StateMeta.Bytes, meta.get(StateMeta.Bytes, 0L) + delta)
  }
}
