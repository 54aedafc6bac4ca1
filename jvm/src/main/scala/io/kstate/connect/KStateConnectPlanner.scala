package io.kstate.connect

import java.time.{Duration => JDuration}

import scala.jdk.CollectionConverters._

import io.kstate.{
  KStateDataFrame,
  KStateStateReader,
  KStateTableReader,
  KStateWindowedStream,
  ReplicaStatus => PublicReplicaStatus
}
import org.apache.spark.sql.kstate.errors.KStateErrors
import io.kstate.suppress.{
  BufferConfig => PublicBufferConfig,
  StrictBufferConfig,
  Suppressed => PublicSuppressed,
  UntilTimeLimit,
  UntilWindowCloses
}
import io.kstate.tables.{KGroupedTable, KTable, VersionedTable => PublicVersionedTable}
import io.kstate.windows.{
  SessionWindows => PublicSessionWindows,
  SlidingWindows => PublicSlidingWindows,
  TimeWindows => PublicTimeWindows,
  Windows => PublicWindows
}

import org.apache.spark.sql.{Column => SparkColumn, DataFrame}
import org.apache.spark.sql.connect.planner.SparkConnectPlanner
import org.apache.spark.sql.kstate.connect.proto._
import org.apache.spark.sql.kstate.shim.ConnectPlannerShim

/**
 * Makes the kstate call a [[KStateRelation]] describes: each message is one method of kstate's
 * public API (`io.kstate`), called here by name, so a Connect DataFrame goes through the very
 * methods (and argument checks) a classic one does, and nothing else can be called.
 *
 * Results: a DataFrame for [[Stream]], [[ReadState]], [[ReadTable]]; a value otherwise (a table,
 * a grouped table, a windowed stream: checked, described; a table's property; the replica table's
 * JSON), which [[KStateRelationPlugin]] turns into a one-column relation.
 */
private[connect] final class KStateConnectPlanner(planner: SparkConnectPlanner) {
  private def session = ConnectPlannerShim.session(planner)

  def plan(r: KStateRelation): Any = r.getCallCase match {
    case KStateRelation.CallCase.STREAM => stream(r.getStream)
    case KStateRelation.CallCase.TABLE => table(r.getTable)
    case KStateRelation.CallCase.TABLE_INFO =>
      val t = table(r.getTableInfo.getTable)
      r.getTableInfo.getProperty match {
        case TableInfo.Property.IS_VERSIONED => t.isVersioned
        case TableInfo.Property.KEY_COLUMN => t.keyColumn
        case TableInfo.Property.TIMESTAMP_COLUMN => t.timestampColumn
        case TableInfo.Property.VALUE_COLUMNS => t.valueColumns
        case TableInfo.Property.DESCRIPTION => t.toString
        case other => throw unknown(s"TableInfo.Property $other")
      }
    case KStateRelation.CallCase.GROUPED_TABLE => grouped(r.getGroupedTable)
    case KStateRelation.CallCase.WINDOWED_STREAM => windowed(r.getWindowedStream); Seq.empty[String]
    case KStateRelation.CallCase.READ_STATE =>
      val s = r.getReadState
      val batch = if (s.hasBatchId) Some(s.getBatchId) else None
      s.getOperatorCase match {
        case ReadState.OperatorCase.OPERATOR_NAME =>
          KStateStateReader.readState(session, s.getCheckpoint, s.getOperatorName, batch, s.getStoreName)
        case ReadState.OperatorCase.OPERATOR_ID =>
          KStateStateReader.readStateById(session, s.getCheckpoint, s.getOperatorId, batch, s.getStoreName)
        case _ => throw notSet(s, "ReadState.operator")
      }
    case KStateRelation.CallCase.READ_TABLE =>
      val t = r.getReadTable
      t.getAsOfCase match {
        case ReadTable.AsOfCase.AS_OF_MS =>
          KStateTableReader.readTable(session, t.getCheckpoint, t.getName, Some(t.getAsOfMs))
        case ReadTable.AsOfCase.AS_OF_TEXT =>
          KStateTableReader.readTableAt(session, t.getCheckpoint, t.getName, t.getAsOfText)
        case ReadTable.AsOfCase.ASOF_NOT_SET => KStateTableReader.readTable(session, t.getCheckpoint, t.getName, None)
        case _ => throw notSet(t, "ReadTable.as_of")
      }
    case KStateRelation.CallCase.REPLICA_STATUS => PublicReplicaStatus.json(r.getReplicaStatus.getQueryId)
    case _ => throw notSet(r, "KStateRelation.call")
  }

  /**
   * A oneof with no case this server knows: a field it does not know (a newer client's operation)
   * is refused by its number; no field at all is a malformed call.
   */
  private def notSet(m: org.sparkproject.connect.protobuf.Message, what: String): Throwable = {
    val fields = m.getUnknownFields.asMap.keySet.asScala.toSeq.sorted
    if (fields.nonEmpty) {
      KStateErrors.connectUnknownOperation(
        s"$what: field ${fields.mkString(", ")} of ${m.getDescriptorForType.getName}"
      )
    } else KStateErrors.connectInvalidCall(s"$what: the message sets none of its cases")
  }

  private def stream(s: Stream): DataFrame = s.getOpCase match {
    case Stream.OpCase.DEDUPLICATE_BY_KEY =>
      val d = s.getDeduplicateByKey
      input(d.getInput).deduplicateByKey(
        ms(d.getIntervalMs),
        column(d.getKey),
        column(d.getTimestamp),
        name(d.hasName, d.getName)
      )
    case Stream.OpCase.DEDUPLICATE_BY_KEY_VALUE =>
      val d = s.getDeduplicateByKeyValue
      input(d.getInput).deduplicateByKeyValue(
        column(d.getId),
        ms(d.getIntervalMs),
        column(d.getKey),
        column(d.getTimestamp),
        name(d.hasName, d.getName)
      )
    case Stream.OpCase.DEDUPLICATE =>
      val d = s.getDeduplicate
      input(d.getInput).deduplicate(
        column(d.getId),
        ms(d.getIntervalMs),
        column(d.getTimestamp),
        name(d.hasName, d.getName)
      )
    case Stream.OpCase.SUPPRESS =>
      val p = s.getSuppress
      input(p.getInput).suppressTable(
        suppressed(p.getSuppressed),
        optColumn(p.hasKey, p.getKey),
        optColumn(p.hasTimestamp, p.getTimestamp),
        optColumn(p.hasWindowEnd, p.getWindowEnd),
        if (p.hasGraceMs) p.getGraceMs.toString else null,
        name(p.hasName, p.getName)
      )
    case Stream.OpCase.JOIN =>
      val j = s.getJoin
      input(j.getInput).join(
        table(j.getTable),
        column(j.getKey),
        column(j.getTimestamp),
        j.getHow,
        if (j.hasGraceMs) j.getGraceMs.toString else null: String,
        name(j.hasName, j.getName)
      )
    case Stream.OpCase.WINDOWED =>
      val w = s.getWindowed
      val ws = windowed(w.getStream)
      val n = name(w.hasName, w.getName)
      w.getOpCase match {
        case WindowedResult.OpCase.DISTINCT => ws.distinct(n)
        case WindowedResult.OpCase.COUNT => ws.count(n)
        case WindowedResult.OpCase.AGGREGATE => ws.aggregate(columns(w.getAggregate), n)
        case _ => throw notSet(w, "WindowedResult.op")
      }
    case Stream.OpCase.TO_STREAM => table(s.getToStream).toStream()
    case Stream.OpCase.TABLE_SUPPRESS =>
      table(s.getTableSuppress.getTable).suppress(suppressed(s.getTableSuppress.getSuppressed))
    case _ => throw notSet(s, "Stream.op")
  }

  private def table(t: Table): KTable = t.getOpCase match {
    case Table.OpCase.TO_TABLE =>
      val tt = t.getToTable
      input(tt.getInput).toTable(
        column(tt.getKey),
        column(tt.getTimestamp),
        if (tt.hasVersioned) versioned(tt.getVersioned) else null,
        name(tt.hasName, tt.getName)
      )
    case Table.OpCase.FILTER => table(t.getFilter.getTable).filter(column(t.getFilter.getCondition))
    case Table.OpCase.FILTER_NOT => table(t.getFilterNot.getTable).filterNot(column(t.getFilterNot.getCondition))
    case Table.OpCase.MAP_VALUES =>
      table(t.getMapValues.getTable).mapValues(t.getMapValues.getValuesList.asScala.toSeq.map(column))
    case Table.OpCase.JOIN =>
      val j = t.getJoin
      table(j.getLeft).join(table(j.getRight), j.getHow, name(j.hasName, j.getName))
    case Table.OpCase.FOREIGN_KEY_JOIN =>
      val j = t.getForeignKeyJoin
      table(j.getLeft).join(table(j.getRight), column(j.getForeignKey), j.getHow, name(j.hasName, j.getName))
    case Table.OpCase.AGGREGATION =>
      val a = t.getAggregation
      val g = grouped(a.getGrouped)
      val n = name(a.hasName, a.getName)
      a.getOpCase match {
        case TableAggregation.OpCase.COUNT => g.count(n)
        case TableAggregation.OpCase.SUM => g.sum(column(a.getSum), n)
        case TableAggregation.OpCase.REDUCE =>
          g.reduceColumns(column(a.getReduce.getAdded), column(a.getReduce.getSubtracted), n)
        case TableAggregation.OpCase.AGG => g.aggColumns(columns(a.getAgg), n)
        case TableAggregation.OpCase.AGGREGATE =>
          val x = a.getAggregate
          g.aggregateColumns(column(x.getInit), column(x.getAdded), column(x.getSubtracted), n)
        case _ => throw notSet(a, "TableAggregation.op")
      }
    case _ => throw notSet(t, "Table.op")
  }

  private def grouped(g: GroupedTable): KGroupedTable =
    table(g.getTable).groupBy(column(g.getKey), g.getValuesList.asScala.toSeq.map(column))

  private def windowed(w: WindowedStream): KStateWindowedStream =
    input(w.getInput).windowedBy(windows(w.getWindows), column(w.getKey), column(w.getTimestamp))

  private def windows(w: Windows): PublicWindows = w.getKindCase match {
    case Windows.KindCase.TIME =>
      val t = w.getTime
      val base = PublicTimeWindows.ofSize(t.getSizeMs)
      (if (t.getAdvanceMs != t.getSizeMs) base.advanceBy(t.getAdvanceMs) else base).grace(t.getGraceMs)
    case Windows.KindCase.SESSION =>
      PublicSessionWindows.withInactivityGap(w.getSession.getGapMs).grace(w.getSession.getGraceMs)
    case Windows.KindCase.SLIDING =>
      PublicSlidingWindows.ofTimeDifference(w.getSliding.getTimeDifferenceMs).grace(w.getSliding.getGraceMs)
    case _ => throw notSet(w, "Windows.kind")
  }

  private def suppressed(s: Suppressed): PublicSuppressed = {
    val b = s.getBuffer
    // as Python builds it: unbounded, then each limit given, then what happens when full
    val bounded: StrictBufferConfig = {
      val u = PublicBufferConfig.unbounded
      val r = if (b.hasMaxRecords) u.withMaxRecords(b.getMaxRecords) else u
      if (b.hasMaxBytes) r.withMaxBytes(b.getMaxBytes) else r
    }
    val buffer: PublicBufferConfig[_] = b.getWhenFull match {
      case BufferConfig.WhenFull.SHUT_DOWN => bounded.shutDownWhenFull
      case BufferConfig.WhenFull.SPILL_TO_DISK => bounded.spillToDiskWhenFull
      case BufferConfig.WhenFull.EMIT_EARLY => bounded.emitEarlyWhenFull
      case other => throw unknown(s"BufferConfig.WhenFull $other")
    }
    s.getModeCase match {
      case Suppressed.ModeCase.UNTIL_TIME_LIMIT_MS => UntilTimeLimit(s.getUntilTimeLimitMs, buffer)
      case Suppressed.ModeCase.UNTIL_WINDOW_CLOSES => buffer match {
          case strict: StrictBufferConfig => UntilWindowCloses(strict)
          case _ => throw KStateErrors.connectInvalidCall(
              "until_window_closes takes a strict buffer (shut down or spill to disk)"
            )
        }
      case _ => throw notSet(s, "Suppressed.mode")
    }
  }

  private def versioned(v: VersionedTable): PublicVersionedTable =
    PublicVersionedTable.ofMillis(v.getHistoryRetentionMs).withGraceMillis(v.getGraceMs)

  private def input(i: Input): KStateDataFrame = {
    val k = KStateDataFrame.apply(ConnectPlannerShim.dataFrame(planner, i.getRelation.toByteArray))
    if (i.hasOrder) k.withProcessingOrder(i.getOrder) else k
  }

  private def column(c: Column): SparkColumn = ConnectPlannerShim.column(planner, c.getExpression.toByteArray)
  private def optColumn(present: Boolean, c: => Column): SparkColumn = if (present) column(c) else null
  private def columns(c: Columns): Seq[SparkColumn] = c.getColumnsList.asScala.toSeq.map(column)
  private def name(present: Boolean, n: => String): String = if (present) n else null
  private def ms(v: Long): JDuration = JDuration.ofMillis(v)

  /** A oneof case or enum value this server's schema does not have (a newer client). */
  private def unknown(what: String) = KStateErrors.connectUnknownOperation(what)
}
