"""Tables (Kafka's ``KTable``): changelogs of keyed updates, versioned or not (KIP-889/914).

Build one with ``df.kstate.to_table(key=, timestamp=, versioned=None)``; see :class:`KTable`.
"""
from __future__ import annotations

from typing import Any, List, Optional, Sequence

from pyspark.sql import Column, DataFrame

from ._durations import DurationLike, to_millis
from ._jvm import translate_errors
from .errors import KStateError
from .suppress import Suppressed

__all__ = ["KTable", "VersionedTable"]


class VersionedTable:
    """How a table is materialized as a versioned table (KIP-889/914).

    Every key keeps its values by timestamp for ``history_retention``, so that a stream–table
    join looks the key up as of the stream record's time. ``grace`` is how far behind the
    table's stream time (its largest update timestamp) an update may be and still be stored;
    older updates are dropped. Kafka ties the grace period to the history retention; kstate keeps
    them apart, and the grace defaults to the history retention. The grace may not exceed the
    history retention (``KSTATE_INVALID_VERSIONED_STORE``).

    Parameters
    ----------
    history_retention : str, timedelta or int (milliseconds)
    grace : str, timedelta or int (milliseconds), optional

    Examples
    --------
    >>> profiles = updates.kstate.to_table(key="user", timestamp="ts",
    ...                                    versioned=VersionedTable("1 day", grace="1 hour"))
    """

    def __init__(self, history_retention: DurationLike, grace: Optional[DurationLike] = None):
        self.history_retention_ms = to_millis(history_retention, "history_retention")
        self.grace_ms = self.history_retention_ms if grace is None else to_millis(grace, "grace")
        if self.grace_ms > self.history_retention_ms:
            raise KStateError(
                "KSTATE_INVALID_VERSIONED_STORE",
                f"Versioned table: grace period {self.grace_ms}ms exceeds the history retention "
                f"{self.history_retention_ms}ms (a record accepted within the grace period must "
                "stay queryable). Lower the grace period or raise the history retention.")

    def _to_jvm(self, jvm: Any) -> Any:
        return jvm.io.kstate.tables.VersionedTable.ofMillis(self.history_retention_ms).withGraceMillis(self.grace_ms)

    def __repr__(self) -> str:
        return f"VersionedTable(history_retention={self.history_retention_ms}ms, grace={self.grace_ms}ms)"


class KTable:
    """A table: a changelog of keyed updates, materialized per state partition (Kafka's ``KTable``).

    A table's updates are its rows in processing order, each holding the key's value after the
    update (its value columns; all null: a tombstone, the key is deleted).

    A table is versioned iff it was built with ``to_table(..., versioned=VersionedTable(...))``
    and no unversioned materialization, aggregation or join lies in between (KIP-914);
    :meth:`filter` and :meth:`map_values` keep it, :meth:`to_stream` loses it.
    """

    def __init__(self, jtable: Any, df: DataFrame):
        self._jtable = jtable
        self._df = df

    @property
    def is_versioned(self) -> bool:
        """Whether this table is versioned (KIP-914's definition)."""
        return bool(self._jtable.isVersioned())

    @property
    def key_column(self) -> str:
        return str(self._jtable.keyColumn())

    @property
    def timestamp_column(self) -> str:
        return str(self._jtable.timestampColumn())

    @property
    def value_columns(self) -> List[str]:
        jvm = self._df.sparkSession.sparkContext._jvm
        return [str(c) for c in jvm.scala.jdk.javaapi.CollectionConverters.asJava(self._jtable.valueColumns())]

    def _wrap(self, jtable: Any) -> "KTable":
        return KTable(jtable, self._df)

    @translate_errors
    def to_stream(self) -> DataFrame:
        """The table's updates as a DataFrame: key, value and timestamp columns, one row per update.

        A tombstone's value columns are null. Each update is emitted once: the DataFrame works
        with any sink in append or update output mode.

        Examples
        --------
        >>> table.to_stream().writeStream.outputMode("append").format("console").start()
        """
        return DataFrame(self._jtable.toStream(), self._df.sparkSession)

    @translate_errors
    def filter(self, condition: Column) -> "KTable":
        """Keeps the values ``condition`` holds for (Kafka's ``KTable#filter``).

        A value the condition does not hold for (false or null) becomes a tombstone. On an
        unversioned table a tombstone that follows a tombstone of the same key is not passed on;
        on a versioned table it is (KIP-914: downstream, the newer tombstone is a version).

        Examples
        --------
        >>> adults = users.filter(F.col("age") >= 18)
        """
        if not isinstance(condition, Column):
            raise TypeError(f"filter takes a Column, got {type(condition).__name__}")
        return self._wrap(self._jtable.filter(condition._jc))

    @translate_errors
    def filter_not(self, condition: Column) -> "KTable":
        """:meth:`filter` with the condition negated (null counts as not holding)."""
        if not isinstance(condition, Column):
            raise TypeError(f"filter_not takes a Column, got {type(condition).__name__}")
        return self._wrap(self._jtable.filterNot(condition._jc))

    @translate_errors
    def map_values(self, *columns: Column) -> "KTable":
        """New value columns computed from each value (Kafka's ``KTable#mapValues``).

        The key and timestamp columns stay; a tombstone stays a tombstone, and a value mapped
        to all nulls becomes one.

        Examples
        --------
        >>> names = users.map_values(F.upper("name").alias("name"))
        """
        if not columns or not all(isinstance(c, Column) for c in columns):
            raise TypeError("map_values takes one or more Columns")
        jvm = self._df.sparkSession.sparkContext._jvm
        jcols = jvm.scala.jdk.javaapi.CollectionConverters.asScala([c._jc for c in columns]).toSeq()
        return self._wrap(self._jtable.mapValues(jcols))

    @translate_errors
    def suppress(self, suppressed: Suppressed) -> DataFrame:
        """KIP-328 ``suppress`` on this table's updates, by its key and timestamp.

        A versioned table cannot be suppressed: ``KSTATE_SUPPRESS_ON_VERSIONED_TABLE`` (KIP-914).
        """
        if not isinstance(suppressed, Suppressed):
            raise TypeError(f"suppress takes a Suppressed, got {type(suppressed).__name__}")
        jvm = self._df.sparkSession.sparkContext._jvm
        return DataFrame(self._jtable.suppress(suppressed._to_jvm(jvm)), self._df.sparkSession)

    @translate_errors
    def join(self, other: "KTable", how: str = "inner", name: Optional[str] = None) -> "KTable":
        """Kafka's primary-key table–table join (``KTable#join``, ``leftJoin``, ``outerJoin``).

        ``how`` is ``"inner"``, ``"left"`` or ``"outer"``. Both tables need the same key type and
        timestamp type (``KSTATE_MISMATCHED_INPUTS``), and their value columns, with this table's
        key and timestamp columns, distinct names (``KSTATE_JOIN_COLUMN_CLASH``: rename one side's
        with :meth:`map_values`).

        The result is an unversioned table keyed like this one: this table's key column, its value
        columns, ``other``'s value columns, this table's timestamp column (max of both sides'); a
        side without a value has null columns. On a versioned side an out-of-order update makes no
        result (KIP-914). Rules: docs/tables.md, "Table–table joins".

        Examples
        --------
        >>> enriched = users.join(profiles.map_values(F.col("city")), how="left")
        >>> enriched.to_stream().writeStream.outputMode("append").format("console").start()
        """
        if not isinstance(other, KTable):
            raise TypeError(f"join takes a KTable, got {type(other).__name__}")
        if not isinstance(how, str):
            raise TypeError(f"how must be a str, got {type(how).__name__}")
        return self._wrap(self._jtable.join(other._jtable, how, name))

    def __repr__(self) -> str:
        return str(self._jtable.toString())
