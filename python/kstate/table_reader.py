"""``kstate.read_table``: a versioned table as of a time, from its query's checkpoint
(wraps ``io.kstate.KStateTableReader``)."""

from __future__ import annotations

import datetime as _dt
from typing import Union

from pyspark.sql import DataFrame, SparkSession

from ._jvm import check_jvm, jsession, to_df, translate_errors
from .errors import KStateError
from .state_reader import _is_int, _out_of_long, _scala_option_long

__all__ = ["read_table"]

_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
AsOf = Union[None, int, str, _dt.datetime]


def _invalid(why: str) -> KStateError:
    return KStateError("KSTATE_INVALID_STATE_READ", {"reason": why})


@translate_errors
def read_table(spark: SparkSession, checkpoint_location: str, name: str, as_of: AsOf = None) -> DataFrame:
    """A versioned table's rows as they were at ``as_of`` (Kafka's versioned key queries), read
    from the checkpoint of the streaming query that materialized it with
    ``df.kstate.to_table(..., versioned=VersionedTable(...), name=name)``, while the query runs or
    after it stopped.

    Parameters
    ----------
    spark : SparkSession
        A classic session with kstate (see :func:`kstate.configure`), or a Spark Connect session
        whose server runs kstate's plugin (docs/connect.md).
    checkpoint_location : str
        The query's ``checkpointLocation``.
    name : str
        The table's ``name=`` (``"versioned_table-<n>"`` for an unnamed one: the error for an
        unknown name lists the tables in the checkpoint). A table that a stream–table join reads
        straight from its source is stored by the join and found by its ``name=`` only (name it).
    as_of : None, int, str or datetime.datetime
        ``None``: each key's latest value. ``int``: an event time in epoch milliseconds (the
        table's own unit for integral timestamps; for a TIMESTAMP_NTZ table, its wall clock read
        as UTC). ``datetime`` with a ``tzinfo``: that instant. ``str`` or a naive ``datetime``: a
        timestamp as Spark SQL reads one (``"2026-11-24 10:00:00"``, ``"2026-11-24T10:00:00Z"``):
        in its own zone if it has one, else the session time zone
        (``spark.sql.session.timeZone``); for a TIMESTAMP_NTZ table, its wall clock.
        Sub-millisecond parts are dropped (versions are valid from whole milliseconds).

    Returns
    -------
    DataFrame
        A batch DataFrame with the table's key column, value columns and timestamp column (named
        and typed as in the query): one row per key whose value as of ``as_of`` is not absent,
        the version with the largest timestamp at or before ``as_of``; its timestamp is the time
        the version is valid from. Past the history retention (``as_of`` earlier than the key's
        state partition's stream time minus the retention) a key answers only with its latest
        version, if that version's timestamp is at or before ``as_of`` (Kafka's rule).

    Raises
    ------
    KStateError
        At call time: ``KSTATE_CHECKPOINT_NOT_FOUND`` (no such directory),
        ``KSTATE_STATE_NOT_FOUND`` (no committed micro-batch yet), ``KSTATE_TABLE_NOT_FOUND`` (no
        table of that name: the message lists the tables there), ``KSTATE_TABLE_NOT_VERSIONED``,
        ``KSTATE_INVALID_STATE_READ`` (an argument of the wrong type, a string that is not a
        timestamp).

    Examples
    --------
    >>> profiles = updates.kstate.to_table("user", "ts", versioned=VersionedTable("1 day"),
    ...                                    name="profiles")
    >>> q = profiles.to_stream().writeStream.option("checkpointLocation", "/chk/p").start(...)
    >>> kstate.read_table(spark, "/chk/p", "profiles", as_of="2026-11-24 09:00:00").show()
    """
    if not isinstance(checkpoint_location, str):
        raise _invalid(f"checkpoint_location must be a string, got {type(checkpoint_location).__name__}")
    if not isinstance(name, str):
        raise _invalid(f"name must be a string, got {type(name).__name__}")
    if _out_of_long(as_of):
        raise _invalid(
            f"as_of must be an event time in epoch milliseconds within a 64-bit long (-2**63 to 2**63 - 1), got {as_of}"
        )
    jvm = check_jvm(spark)
    reader = jvm.io.kstate.KStateTableReader
    js = jsession(spark)
    if as_of is None or _is_int(as_of):
        jdf = reader.readTable(js, checkpoint_location, name, _scala_option_long(jvm, as_of))
    elif isinstance(as_of, _dt.datetime) and as_of.tzinfo is not None:
        ms = (as_of - _EPOCH) // _dt.timedelta(milliseconds=1)
        jdf = reader.readTable(js, checkpoint_location, name, _scala_option_long(jvm, ms))
    elif isinstance(as_of, _dt.datetime):
        jdf = reader.readTableAt(js, checkpoint_location, name, as_of.isoformat(sep=" "))
    elif isinstance(as_of, str):
        jdf = reader.readTableAt(js, checkpoint_location, name, as_of)
    else:
        raise _invalid(f"as_of must be None, an int (epoch ms), a str or a datetime, got {type(as_of).__name__}")
    return to_df(jdf, spark)
