"""``df.kstate``: kstate's operations as DataFrame methods (thin wrappers over the JVM)."""

from __future__ import annotations

from typing import Optional, Sequence, Union

from pyspark.sql import Column, DataFrame

from ._connect import functions
from ._durations import DurationLike, to_millis
from ._jvm import check_jvm, checked, jcol, jdf, jseq, to_df, translate_errors
from .errors import KStateError
from .suppress import Suppressed
from .tables import KTable, VersionedTable
from .windows import SessionWindows, SlidingWindows, TimeWindows

__all__ = ["KStateDataFrame", "KStateWindowedStream", "ColumnOrName"]

ColumnOrName = Union[Column, str]


def _col(value: Union[ColumnOrName, Sequence[ColumnOrName]], role: str, df: DataFrame) -> Column:
    """A Column (of ``df``'s kind: classic or Connect) from a name, a Column, or a list of them
    (combined into a struct)."""
    F = functions(df.sparkSession)
    if isinstance(value, Column):
        return value
    if isinstance(value, str):
        return F.col(value)
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, (str, Column)) for v in value):
        return F.struct(*[F.col(v) if isinstance(v, str) else v for v in value])
    raise KStateError(
        "KSTATE_MISSING_COLUMN",
        {"role": role, "reason": f"expected a column name, a Column or a list of them, got {type(value).__name__}"},
    )


def _name(name: Optional[str]) -> Optional[str]:
    if name is not None and not isinstance(name, str):
        raise KStateError("KSTATE_INVALID_OPERATOR_NAME", {"name": repr(name), "reason": "name= must be a string"})
    return name


def _order(order: object) -> str:
    if not isinstance(order, str):
        raise KStateError("KSTATE_INVALID_PROCESSING_ORDER", {"what": "order=", "value": repr(order)})
    return order


class KStateDataFrame:
    """kstate's operations on one DataFrame, reached as ``df.kstate``.

    Every method that builds a stateful operator takes ``order=``: the order in which the
    operator processes each micro-batch's records (``"auto"``, ``"task"`` or ``"event_time"``;
    default: the session's ``spark.kstate.processingOrder``, itself ``"auto"``). See
    ``docs/operators.md``, "Processing order".

    Arguments are validated when the DataFrame is built: an unknown column, a wrong type, a
    non-deterministic expression or a bad duration raises :class:`kstate.KStateError` at once.
    """

    def __init__(self, df: DataFrame):
        self._df = df

    def _jkstate(self, order: Optional[str] = None):
        jvm = check_jvm(self._df.sparkSession)
        jkstate = jvm.io.kstate.KStateDataFrame.apply(jdf(self._df))
        return jkstate if order is None else jkstate.withProcessingOrder(_order(order))

    def _wrap(self, jresult) -> DataFrame:
        return to_df(jresult, self._df.sparkSession)

    def _jcol(self, value: Union[ColumnOrName, Sequence[ColumnOrName]], role: str):
        return jcol(_col(value, role, self._df))

    def _duration(self, interval: DurationLike):
        jvm = check_jvm(self._df.sparkSession)
        return jvm.java.time.Duration.ofMillis(to_millis(interval, "interval"))

    @translate_errors
    def deduplicate_by_key(
        self,
        interval: DurationLike,
        key: Union[ColumnOrName, Sequence[ColumnOrName]],
        timestamp: ColumnOrName,
        name: Optional[str] = None,
        order: Optional[str] = None,
    ) -> DataFrame:
        """Drops records whose key was already forwarded within ``interval`` (KIP-655).

        A record is a duplicate when a record with the same key was forwarded and its timestamp
        is within ``interval`` of this one (both ends inclusive); the first record wins and
        duplicates do not refresh it. Records with a null key are always forwarded. A record
        older than stream time − interval is forwarded if no duplicate is stored, and not stored.

        Parameters
        ----------
        interval : str, datetime.timedelta or int
            Deduplication interval: ``"10 seconds"``, ``"PT10S"``, ``timedelta(seconds=10)`` or
            milliseconds.
        key : str, Column or list of them
            The record key; records meet in the state partition of their key. A list becomes a
            struct key (null only if the struct is null).
        timestamp : str or Column
            Event time: TIMESTAMP, TIMESTAMP_NTZ, or epoch milliseconds (integral).
        name : str, optional
            Stable operator name in the checkpoint (letters, digits, ``_ - .``).
        order : str, optional
            Processing order of each micro-batch's records: ``"auto"`` (Kafka task order when
            the input is an ordered log such as a Kafka topic, event-time order otherwise; a
            static DataFrame's own order), ``"task"`` or ``"event_time"``. Default: the
            session's ``spark.kstate.processingOrder``.

        Returns
        -------
        DataFrame
            The input rows that are not duplicates, unchanged.

        Examples
        --------
        >>> deduped = events.kstate.deduplicate_by_key("10 minutes", key="user", timestamp="ts")
        """
        return self._wrap(
            self._jkstate(order).deduplicateByKey(
                self._duration(interval), self._jcol(key, "key"), self._jcol(timestamp, "timestamp"), _name(name)
            )
        )

    @translate_errors
    def deduplicate_by_key_value(
        self,
        id: ColumnOrName,
        interval: DurationLike,
        key: Union[ColumnOrName, Sequence[ColumnOrName]],
        timestamp: ColumnOrName,
        name: Optional[str] = None,
        order: Optional[str] = None,
    ) -> DataFrame:
        """Like :meth:`deduplicate_by_key`, but duplicates must share key *and* ``id`` (KIP-655).

        Records with a null key or a null id are always forwarded.

        Parameters
        ----------
        id : str or Column
            Deduplication id, a deterministic expression over the record (Kafka's idSelector).
        interval, key, timestamp, name, order
            As for :meth:`deduplicate_by_key`.

        Examples
        --------
        >>> deduped = events.kstate.deduplicate_by_key_value(
        ...     F.col("payload.event_id"), "1 hour", key="device", timestamp="ts")
        """
        return self._wrap(
            self._jkstate(order).deduplicateByKeyValue(
                self._jcol(id, "id"),
                self._duration(interval),
                self._jcol(key, "key"),
                self._jcol(timestamp, "timestamp"),
                _name(name),
            )
        )

    @translate_errors
    def deduplicate(
        self,
        id: ColumnOrName,
        interval: DurationLike,
        timestamp: ColumnOrName,
        name: Optional[str] = None,
        order: Optional[str] = None,
    ) -> DataFrame:
        """Drops records whose ``id`` was already forwarded within ``interval``, across all
        input partitions: records are repartitioned by ``id`` (KIP-655 ``deduplicate``).

        Records with a null id are always forwarded. ``order`` as for :meth:`deduplicate_by_key`.

        Examples
        --------
        >>> deduped = events.kstate.deduplicate("event_id", "1 hour", timestamp="ts")
        """
        return self._wrap(
            self._jkstate(order).deduplicate(
                self._jcol(id, "id"), self._duration(interval), self._jcol(timestamp, "timestamp"), _name(name)
            )
        )

    @translate_errors
    def suppress(
        self,
        suppressed: Suppressed,
        key: Optional[Union[ColumnOrName, Sequence[ColumnOrName]]] = None,
        timestamp: Optional[ColumnOrName] = None,
        name: Optional[str] = None,
        window_end: Optional[ColumnOrName] = None,
        grace: Optional[DurationLike] = None,
        order: Optional[str] = None,
    ) -> DataFrame:
        """KIP-328 ``suppress``: hold back updates of this table.

        ``Suppressed.until_window_closes(...)`` applied directly to
        ``df.kstate.windowed_by(...).count()`` or ``.agg(...)`` fuses into that operator (one
        stateful operator, no second buffer): exactly one row per key and window, when the
        window closes (stream time >= window end + grace), in window-end order.

        On any other streaming windowed table (e.g. Spark's own windowed aggregation in update
        mode) ``until_window_closes`` needs ``key`` (identifying a window's row: key columns and
        the window), ``window_end``, ``timestamp`` (the update's event time) and ``grace`` (Spark:
        the watermark delay): each window's latest row is emitted once, when stream time >=
        window end + grace; updates for a window already closed are dropped.

        ``Suppressed.until_time_limit(limit, buffer_config)`` rate-limits each key: its first
        update starts a timer, later updates replace the buffered row without restarting it,
        and the latest row is emitted, unchanged, once the partition's stream time (largest
        ``timestamp`` seen) >= first buffered time + ``limit``. Streaming DataFrames only.

        Parameters
        ----------
        suppressed : Suppressed
        key, timestamp : str, Column or list of them, optional
            The table's key and event time, for ``until_time_limit``. Not needed directly after
            a kstate windowed aggregation (key = its key and ``window_start``, timestamp = its
            ``timestamp``).
        name : str, optional
            The operator's name in the checkpoint.
        window_end, grace : optional
            For ``until_window_closes`` on a table kstate did not window.
        order : str, optional
            As for :meth:`deduplicate_by_key`.

        Examples
        --------
        >>> final = (events.kstate.windowed_by(TimeWindows.of_size("1 hour").grace("10 minutes"),
        ...                                    key="user", timestamp="ts").count()
        ...          .kstate.suppress(Suppressed.until_window_closes(BufferConfig.unbounded())))
        >>> limited = updates.kstate.suppress(
        ...     Suppressed.until_time_limit("30 seconds", BufferConfig.max_records(1000)),
        ...     key="id", timestamp="ts")
        """
        if not isinstance(suppressed, Suppressed):
            raise TypeError(f"suppress takes a Suppressed, got {type(suppressed).__name__}")
        jvm = check_jvm(self._df.sparkSession)
        jkey = None if key is None else self._jcol(key, "key")
        jts = None if timestamp is None else self._jcol(timestamp, "timestamp")
        jend = None if window_end is None else self._jcol(window_end, "window_end")
        jgrace = None if grace is None else str(to_millis(grace, "grace"))
        return self._wrap(
            self._jkstate(order).suppressTable(suppressed._to_jvm(jvm), jkey, jts, jend, jgrace, _name(name))
        )

    @translate_errors
    def to_table(
        self,
        key: ColumnOrName,
        timestamp: ColumnOrName,
        versioned: Optional[VersionedTable] = None,
        name: Optional[str] = None,
        order: Optional[str] = None,
    ) -> KTable:
        """This DataFrame as a table's changelog (Kafka's ``KStream#toTable``).

        Each row updates the key in column ``key`` at the event time in column ``timestamp``;
        its other columns are the key's new value. A row whose value columns are all null is a
        tombstone: the key is deleted (to keep an all-null value, pack the columns into a
        struct). ``key`` and ``timestamp`` must be columns of this DataFrame (``withColumn``
        first for an expression).

        Each state partition keeps its keys' latest values, by processing order; with
        ``versioned`` it keeps their history by timestamp instead (KIP-889/914), and drops
        updates older than the table's stream time minus the grace period.

        Parameters
        ----------
        key, timestamp : str or Column
        versioned : VersionedTable, optional
        name : str, optional
            The operator's name in the checkpoint.
        order : str, optional
            As for :meth:`deduplicate_by_key`.

        Examples
        --------
        >>> profiles = updates.kstate.to_table(key="user", timestamp="ts",
        ...                                    versioned=VersionedTable("1 day"))
        >>> profiles.is_versioned
        True
        """
        if versioned is not None and not isinstance(versioned, VersionedTable):
            raise TypeError(f"versioned takes a VersionedTable, got {type(versioned).__name__}")
        jvm = check_jvm(self._df.sparkSession)
        jversioned = None if versioned is None else versioned._to_jvm(jvm)
        jtable = checked(
            self._jkstate(order).toTable(
                self._jcol(key, "key"), self._jcol(timestamp, "timestamp"), jversioned, _name(name)
            )
        )
        return KTable(jtable, self._df)

    @translate_errors
    def join(
        self,
        table: KTable,
        key: Union[ColumnOrName, Sequence[ColumnOrName]],
        timestamp: ColumnOrName,
        how: str = "inner",
        grace: Optional[DurationLike] = None,
        name: Optional[str] = None,
        order: Optional[str] = None,
    ) -> DataFrame:
        """Kafka's stream–table join: each row of this DataFrame (the stream) joins ``table``.

        A row is joined with the table's value for its ``key``: on a versioned table the value
        as of the row's ``timestamp`` (KIP-914), on an unversioned table the latest value in
        processing order. On equal timestamps a stream row is processed before a table update.
        ``how="inner"`` drops rows without a table value (also rows with a null key or null
        timestamp); ``how="left"`` emits them with null table values. With ``grace`` (KIP-923;
        versioned tables only, at most the history retention) each row waits until the
        partition's stream time reaches its timestamp + grace, so that a table update that
        arrives later but is older than the row still counts.

        Parameters
        ----------
        table : KTable
            From ``df.kstate.to_table(...)``; its key type and timestamp type must equal the
            stream's (``KSTATE_MISMATCHED_INPUTS``).
        key, timestamp : str, Column or list of them
            The stream's join key and event time.
        how : "inner" or "left"
        grace : str, timedelta or int (milliseconds), optional
            ``KSTATE_JOIN_GRACE_ON_UNVERSIONED_TABLE`` on an unversioned table,
            ``KSTATE_JOIN_GRACE_EXCEEDS_RETENTION`` above the history retention.
        name : str, optional
            The operator's name in the checkpoint.
        order : str, optional
            As for :meth:`deduplicate_by_key`.

        Returns
        -------
        DataFrame
            This DataFrame's columns followed by the table's value columns (a table value column
            named like a stream column is ``KSTATE_DUPLICATE_COLUMN``: rename one). Each result
            carries its stream row's timestamp.

        Examples
        --------
        >>> profiles = updates.kstate.to_table(key="user", timestamp="ts",
        ...                                    versioned=VersionedTable("1 day"))
        >>> enriched = clicks.kstate.join(profiles, key="user", timestamp="ts", how="left",
        ...                               grace="10 seconds")
        """
        if not isinstance(table, KTable):
            raise TypeError(f"join takes a KTable (df.kstate.to_table(...)), got {type(table).__name__}")
        if not isinstance(how, str):
            raise KStateError("KSTATE_INVALID_JOIN_TYPE.STREAM_TABLE", {"how": str(how)})
        jgrace = None if grace is None else str(to_millis(grace, "grace"))
        return self._wrap(
            self._jkstate(order).join(
                table._jtable, self._jcol(key, "key"), self._jcol(timestamp, "timestamp"), how, jgrace, _name(name)
            )
        )

    @translate_errors
    def windowed_by(
        self,
        windows: Union[TimeWindows, SessionWindows, SlidingWindows],
        key: Union[ColumnOrName, Sequence[ColumnOrName]],
        timestamp: ColumnOrName,
        order: Optional[str] = None,
    ) -> "KStateWindowedStream":
        """Groups records by ``key`` into ``windows`` by event time (Kafka's ``windowedBy``).

        Parameters
        ----------
        windows : TimeWindows, SessionWindows or SlidingWindows
        key : str, Column or list of them
        timestamp : str or Column
            Event time: TIMESTAMP, TIMESTAMP_NTZ, or epoch milliseconds (integral).
        order : str, optional
            Processing order of the windowed operator built from this stream, as for
            :meth:`deduplicate_by_key`.

        Examples
        --------
        >>> firsts = events.kstate.windowed_by(
        ...     TimeWindows.of_size("1 hour"), key="user", timestamp="ts").distinct()
        """
        if not isinstance(windows, (TimeWindows, SessionWindows, SlidingWindows)):
            raise KStateError(
                "KSTATE_INVALID_WINDOW",
                {"reason": f"expected TimeWindows, SessionWindows or SlidingWindows, got {type(windows).__name__}"},
            )
        jvm = check_jvm(self._df.sparkSession)
        jstream = checked(
            self._jkstate(order).windowedBy(
                windows._to_jvm(jvm), self._jcol(key, "key"), self._jcol(timestamp, "timestamp")
            )
        )
        return KStateWindowedStream(jstream, self._df)


class KStateWindowedStream:
    """A keyed stream grouped into windows; see :meth:`KStateDataFrame.windowed_by`."""

    def __init__(self, jstream, df: DataFrame):
        self._jstream = jstream
        self._df = df

    @translate_errors
    def distinct(self, name: Optional[str] = None) -> DataFrame:
        """KIP-655's windowed ``distinct()``: per key, only the first record of each window.

        Adds columns ``window_start`` and ``window_end`` (TIMESTAMP for timestamp columns,
        epoch milliseconds otherwise); session windows report ``[ts, ts]``, the session as it
        was when the record opened it. Tumbling or session windows only. Records for a window
        that has closed (window end + grace <= stream time) are dropped as late.

        Examples
        --------
        >>> events.kstate.windowed_by(SessionWindows.with_inactivity_gap("10s"),
        ...                           key="k", timestamp="ts").distinct()
        """
        return to_df(self._jstream.distinct(_name(name)), self._df.sparkSession)

    @translate_errors
    def count(self, name: Optional[str] = None) -> DataFrame:
        """The number of records per key and window (Kafka's ``count()``), in a column ``count``.

        Output columns as for :meth:`agg`.

        Examples
        --------
        >>> counts = events.kstate.windowed_by(
        ...     TimeWindows.of_size("1 hour").grace("10 minutes"), key="user", timestamp="ts").count()
        """
        return to_df(self._jstream.count(_name(name)), self._df.sparkSession)

    @translate_errors
    def agg(self, *columns: Column, name: Optional[str] = None) -> DataFrame:
        """Aggregates each key's records per window with Spark aggregate functions (Kafka's
        ``aggregate``/``reduce``).

        Parameters
        ----------
        *columns : Column
            Spark's built-in aggregate functions and expressions over them, e.g.
            ``F.sum("amount")``, ``F.max("x").alias("largest")``. DISTINCT, FILTER and
            aggregates without a declarative buffer (``collect_list``, ``percentile``) raise
            ``KSTATE_UNSUPPORTED_AGGREGATE``.
        name : str, optional
            The operator's name in the checkpoint.

        Returns
        -------
        DataFrame
            The key (named as the key column, else ``key``), ``window_start``, ``window_end``,
            one column per aggregate, and ``timestamp`` (the largest record timestamp in the
            window). Window bounds and ``timestamp`` are TIMESTAMP for timestamp columns, else
            epoch milliseconds. By default each (key, window) a micro-batch changed is emitted
            once per micro-batch with its current value (use output mode ``update``); suppress
            with ``Suppressed.until_window_closes(...)`` for exactly one final row per window.
            A record is dropped for a window once stream time >= window end + grace.

            Session windows (Kafka 4.3's rules): a record within the inactivity gap of a key's
            open sessions merges them into one; a session closes, for good, once its end <=
            stream time - grace - gap, and a record that joins no open session is late when its
            timestamp is below that. Their output has a last column ``tombstone``: ``True`` on a
            row naming a session (key, start, end) an earlier micro-batch emitted that no longer
            exists (it was merged into a larger one), with null aggregates; suppressed output
            has only final rows.

        Examples
        --------
        >>> totals = events.kstate.windowed_by(TimeWindows.of_size("1 minute"), key="user",
        ...                                    timestamp="ts").agg(F.sum("amount").alias("total"))
        >>> visits = events.kstate.windowed_by(SessionWindows.with_inactivity_gap("30 minutes"),
        ...                                    key="user", timestamp="ts").count()
        """
        if not columns or not all(isinstance(c, Column) for c in columns):
            raise KStateError(
                "KSTATE_UNSUPPORTED_AGGREGATE",
                {
                    "expression": ", ".join(type(c).__name__ for c in columns) or "nothing",
                    "reason": "agg(...) takes one or more Columns of aggregate functions",
                },
            )
        jcols = jseq(check_jvm(self._df.sparkSession), [jcol(c) for c in columns])
        return to_df(self._jstream.aggregate(jcols, _name(name)), self._df.sparkSession)

    def sum(self, column: ColumnOrName, name: Optional[str] = None) -> DataFrame:
        """Shorthand for ``agg(F.sum(column))``."""
        return self.agg(functions(self._df.sparkSession).sum(column), name=name)

    def min(self, column: ColumnOrName, name: Optional[str] = None) -> DataFrame:
        """Shorthand for ``agg(F.min(column))``."""
        return self.agg(functions(self._df.sparkSession).min(column), name=name)

    def max(self, column: ColumnOrName, name: Optional[str] = None) -> DataFrame:
        """Shorthand for ``agg(F.max(column))``."""
        return self.agg(functions(self._df.sparkSession).max(column), name=name)
