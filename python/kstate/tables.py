"""Tables (Kafka's ``KTable``): changelogs of keyed updates, versioned or not (KIP-889/914).

Build one with ``df.kstate.to_table(key=, timestamp=, versioned=None)``; see :class:`KTable`.
"""

from __future__ import annotations

from typing import Any, Callable, List, Optional, Sequence, Union

from pyspark.sql import Column, DataFrame

from ._connect import Remote, functions
from ._durations import DurationLike, to_millis
from ._jvm import check_jvm, checked, jcol, jseq, jvalue, to_df, translate_errors
from .errors import KStateError
from .suppress import Suppressed

__all__ = ["KTable", "KGroupedTable", "VersionedTable"]


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
                {
                    "store": "Versioned table",
                    "historyRetentionMs": self.history_retention_ms,
                    "graceMs": self.grace_ms,
                    "reason": "the grace period exceeds the history retention",
                },
            )

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
        return jvalue(self._jtable.isVersioned()) in (True, "true")

    @property
    def key_column(self) -> str:
        return str(jvalue(self._jtable.keyColumn()))

    @property
    def timestamp_column(self) -> str:
        return str(jvalue(self._jtable.timestampColumn()))

    @property
    def value_columns(self) -> List[str]:
        columns = self._jtable.valueColumns()
        if isinstance(columns, Remote):  # Spark Connect: the server's list
            return columns._values()
        jvm = check_jvm(self._df.sparkSession)
        return [str(c) for c in jvm.scala.jdk.javaapi.CollectionConverters.asJava(columns)]

    def _wrap(self, jtable: Any) -> "KTable":
        return KTable(checked(jtable), self._df)

    @translate_errors
    def to_stream(self) -> DataFrame:
        """The table's updates as a DataFrame: key, value and timestamp columns, one row per update.

        A tombstone's value columns are null. Each update is emitted once: the DataFrame works
        with any sink in append or update output mode.

        Examples
        --------
        >>> table.to_stream().writeStream.outputMode("append").format("console").start()
        """
        return to_df(self._jtable.toStream(), self._df.sparkSession)

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
        return self._wrap(self._jtable.filter(jcol(condition)))

    @translate_errors
    def filter_not(self, condition: Column) -> "KTable":
        """:meth:`filter` with the condition negated (null counts as not holding)."""
        if not isinstance(condition, Column):
            raise TypeError(f"filter_not takes a Column, got {type(condition).__name__}")
        return self._wrap(self._jtable.filterNot(jcol(condition)))

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
        jcols = jseq(check_jvm(self._df.sparkSession), [jcol(c) for c in columns])
        return self._wrap(self._jtable.mapValues(jcols))

    @translate_errors
    def suppress(self, suppressed: Suppressed) -> DataFrame:
        """KIP-328 ``suppress`` on this table's updates, by its key and timestamp.

        A versioned table cannot be suppressed: ``KSTATE_SUPPRESS_ON_VERSIONED_TABLE`` (KIP-914).
        """
        if not isinstance(suppressed, Suppressed):
            raise TypeError(f"suppress takes a Suppressed, got {type(suppressed).__name__}")
        jvm = check_jvm(self._df.sparkSession)
        return to_df(self._jtable.suppress(suppressed._to_jvm(jvm)), self._df.sparkSession)

    @translate_errors
    def join(
        self,
        other: "KTable",
        how: str = "inner",
        name: Optional[str] = None,
        foreign_key: Union[None, str, Column] = None,
    ) -> "KTable":
        """Kafka's table–table joins: by primary key (``KTable#join``, ``leftJoin``, ``outerJoin``)
        or, with ``foreign_key``, by foreign key (KIP-213).

        **Foreign-key join** (``foreign_key=`` a Column or column name over this table's key and
        value columns, e.g. ``F.col("customer_id")``): each row of this table joins the row of
        ``other`` whose key is its foreign key; ``how`` is ``"inner"`` (no result without a
        match) or ``"left"`` (null right columns). The foreign key must have ``other``'s key type
        (a narrower numeric type is widened; ``KSTATE_FOREIGN_KEY_TYPE_MISMATCH`` otherwise) and
        be deterministic. The result is an unversioned table keyed like this one, with the same
        columns as a primary-key join; when a row's foreign key changes no result of its old
        foreign key survives. Rules: docs/tables.md, "Foreign-key joins".

        >>> enriched = orders.join(customers, foreign_key="customer_id", how="left")

        **Primary-key join** (no ``foreign_key``):

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
        if foreign_key is not None:
            fk = jcol(_column(foreign_key, "foreign_key", self._df))
            return self._wrap(self._jtable.join(other._jtable, fk, how, name))
        return self._wrap(self._jtable.join(other._jtable, how, name))

    @translate_errors
    def group_by(
        self, key: Union[str, Column], value: Union[None, str, Column, Sequence[Union[str, Column]]] = None
    ) -> "KGroupedTable":
        """Groups the table's rows by a new key (Kafka's ``KTable#groupBy``) for an aggregation.

        Parameters
        ----------
        key : str or Column
            The group of a row: an expression over the table's key, value and timestamp
            columns. A row whose group is null belongs to no group.
        value : str, Column or list of them, optional
            The grouped value each row contributes (default: the table's value columns). A row
            whose grouped value columns are all null contributes nothing.

        Returns
        -------
        KGroupedTable
            ``count()``, ``sum(column)``, ``reduce(adder, subtractor)``, ``agg(*columns)`` or
            ``aggregate(initializer, adder, subtractor)`` give an unversioned
            table keyed by the group: a changed row leaves its old group and joins its new one;
            on a versioned table an out-of-order update is ignored (KIP-914).

        Examples
        --------
        >>> per_region = users.group_by("region").count()
        >>> totals = users.group_by("region", value="amount").sum("amount")
        """
        jvm = check_jvm(self._df.sparkSession)
        values = [] if value is None else (list(value) if isinstance(value, (list, tuple)) else [value])
        jvalues = jseq(jvm, [jcol(_column(v, "group_by value", self._df)) for v in values])
        return KGroupedTable(
            checked(self._jtable.groupBy(jcol(_column(key, "group_by key", self._df)), jvalues)), self._df
        )

    def __repr__(self) -> str:
        return str(jvalue(self._jtable.toString()))


def _column(c: Union[str, Column], role: str, df: DataFrame) -> Column:
    if isinstance(c, Column):
        return c
    if isinstance(c, str):
        return functions(df.sparkSession).col(c)
    raise TypeError(f"{role} takes a column name or a Column, got {type(c).__name__}")


class KGroupedTable:
    """A table grouped by a new key (Kafka's ``KGroupedTable``), from :meth:`KTable.group_by`.

    Each aggregation returns an unversioned :class:`KTable` keyed by the group, whose updates
    are each group's aggregate after each change: the group key column (named as the
    ``group_by`` key), the aggregate column(s), and the table's timestamp column (the latest
    time of the group's contributing updates). Kafka's rules: a row that changes subtracts its
    old value from its old group and adds its new value to its new group (one update when the
    group is the same, KIP-904); a tombstone only subtracts; on a versioned table an update
    older than its key's latest version is ignored (KIP-914). See docs/tables.md.
    """

    def __init__(self, jgrouped: Any, df: DataFrame):
        self._jgrouped = jgrouped
        self._df = df

    def _table(self, jtable: Any) -> KTable:
        return KTable(checked(jtable), self._df)

    @translate_errors
    def count(self, name: Optional[str] = None) -> KTable:
        """Kafka's ``count()``: the rows in each group, in a column ``count`` (BIGINT).

        A group whose rows all left it counts 0 and stays (Kafka's rule).

        Examples
        --------
        >>> users.group_by("region").count().to_stream()
        """
        return self._table(self._jgrouped.count(name))

    @translate_errors
    def sum(self, column: Union[str, Column], name: Optional[str] = None) -> KTable:
        """The sum of ``column`` per group, in a column ``sum``.

        ``column`` is a numeric expression over the grouped value columns; the sum is BIGINT
        for integral input, DOUBLE for floating point, DECIMAL(p + 10, s) for DECIMAL(p, s). A
        row whose ``column`` is null contributes nothing; a group emptied by subtraction sums to
        0 and stays. kstate's (Kafka has ``reduce(+, -)``, which gives the same values).

        Examples
        --------
        >>> totals = orders.group_by("region", value="amount").sum("amount")
        """
        return self._table(self._jgrouped.sum(jcol(_column(column, "sum", self._df)), name))

    @translate_errors
    def reduce(
        self,
        adder: Callable[[Column, Column], Column],
        subtractor: Callable[[Column, Column], Column],
        name: Optional[str] = None,
    ) -> KTable:
        """Kafka's ``reduce(adder, subtractor)``: the aggregate has the grouped value's columns.

        A group's first value is its aggregate; each value added is ``adder(agg, value)``, each
        value subtracted ``subtractor(agg, value)``. The functions are called once, with two
        placeholder Columns (``F.col("__kstate_agg")`` and ``F.col("__kstate_value")``), and
        must return a Column of the grouped value's type (its one column's type, else a struct
        of its columns). A result that is null deletes the group's aggregate (a tombstone).

        Examples
        --------
        >>> totals = orders.group_by("region", value="amount").reduce(
        ...     lambda agg, v: agg + v, lambda agg, v: agg - v)
        """
        if not callable(adder) or not callable(subtractor):
            raise TypeError("reduce takes two functions of (aggregate, value) Columns")
        F = functions(self._df.sparkSession)
        agg, value = F.col("__kstate_agg"), F.col("__kstate_value")
        added, subtracted = adder(agg, value), subtractor(agg, value)
        if not isinstance(added, Column) or not isinstance(subtracted, Column):
            raise TypeError("reduce's adder and subtractor must return Columns")
        return self._table(self._jgrouped.reduceColumns(jcol(added), jcol(subtracted), name))

    @translate_errors
    def agg(self, *columns: Column, name: Optional[str] = None) -> KTable:
        """Spark's declarative aggregates that can take a value out again, several at once.

        Each column is ``F.count("*")``, ``F.count(col)`` (non-null values), ``F.sum(col)``,
        ``F.avg(col)`` / ``F.mean(col)`` over the grouped value columns, or an expression over
        them (``(F.sum("v") / F.count("v")).alias("r")``), named as Spark names it (``avg(v)``)
        or by its alias, in Spark's type. Spark's null rules: nulls are ignored and a sum or
        average of no value is null. A group whose last row leaves it is deleted (a tombstone), so
        the table holds the groups and values Spark's batch ``groupBy(...).agg(...)`` of the
        current table gives.

        An aggregate without a subtractor (``min``, ``max``, ``first``, ``collect_list``, ...,
        DISTINCT or FILTER) is ``KSTATE_TABLE_AGGREGATE_WITHOUT_SUBTRACTOR``: write it with
        :meth:`reduce` or :meth:`aggregate`.

        Examples
        --------
        >>> stats = orders.group_by("region", value="amount").agg(
        ...     F.count("*").alias("orders"), F.sum("amount"), F.avg("amount"))
        """
        if not columns or not all(isinstance(c, Column) for c in columns):
            raise TypeError("agg takes one or more Columns, e.g. F.count('*'), F.sum('v'), F.avg('v')")
        jcols = jseq(check_jvm(self._df.sparkSession), [jcol(c) for c in columns])
        return self._table(self._jgrouped.aggColumns(jcols, name))

    @translate_errors
    def aggregate(
        self,
        initializer: Any,
        adder: Callable[[Column, Column], Column],
        subtractor: Callable[[Column, Column], Column],
        name: Optional[str] = None,
    ) -> KTable:
        """Kafka's ``aggregate(initializer, adder, subtractor)``: an aggregate of a type of its own.

        ``initializer`` is a Column over no column (``F.lit(0.0)``, ``F.struct(...)`` of
        literals; a Python int becomes a BIGINT literal, another Python value ``F.lit`` of it):
        the aggregate a group starts from, whose type is the aggregate's type. ``adder(agg,
        value)`` and ``subtractor(agg, value)`` are called once with the placeholder Columns
        ``F.col("__kstate_agg")`` (the aggregate's type) and ``F.col("__kstate_value")`` (as in
        :meth:`reduce`) and must return the aggregate's type (``KSTATE_INVALID_TABLE_AGGREGATE``
        otherwise: cast). The aggregate column is named as the initializer's alias (default
        ``aggregate``); a struct initializer gives one column per field. A result that is null
        deletes the group (a tombstone); its next value starts again from the initializer.

        Examples
        --------
        >>> n_and_total = orders.group_by("region", value="amount").aggregate(
        ...     F.struct(F.lit(0).cast("bigint").alias("n"), F.lit(0.0).alias("total")),
        ...     lambda agg, v: F.struct((agg.n + 1).alias("n"), (agg.total + v).alias("total")),
        ...     lambda agg, v: F.struct((agg.n - 1).alias("n"), (agg.total - v).alias("total")))
        """
        if not callable(adder) or not callable(subtractor):
            raise TypeError("aggregate takes an initializer and two functions of (aggregate, value) Columns")
        F = functions(self._df.sparkSession)
        if isinstance(initializer, bool) or not isinstance(initializer, (Column, int)):
            init = F.lit(initializer)
        elif isinstance(initializer, int):
            init = F.lit(initializer).cast("bigint")
        else:
            init = initializer
        F = functions(self._df.sparkSession)
        agg, value = F.col("__kstate_agg"), F.col("__kstate_value")
        added, subtracted = adder(agg, value), subtractor(agg, value)
        if not isinstance(added, Column) or not isinstance(subtracted, Column):
            raise TypeError("aggregate's adder and subtractor must return Columns")
        return self._table(self._jgrouped.aggregateColumns(jcol(init), jcol(added), jcol(subtracted), name))

    def __repr__(self) -> str:
        return str(self._jgrouped.toString())
