"""``kstate.read_state``: kstate's state reader (wraps ``io.kstate.KStateStateReader``)."""

from __future__ import annotations

from typing import Any, Optional, Union

from pyspark.sql import DataFrame, SparkSession

from ._connect import RemoteJvm
from ._jvm import check_jvm, jsession, to_df, translate_errors
from .errors import KStateError

__all__ = ["read_state", "DEFAULT_STORE_NAME"]

DEFAULT_STORE_NAME = "default"


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1


def _out_of_long(value: Any) -> bool:
    """An int the JVM cannot take as a ``long`` (py4j would fail with a raw ``Py4JError``)."""
    return _is_int(value) and not _LONG_MIN <= value <= _LONG_MAX


def _scala_option_long(jvm: Any, value: Optional[int]) -> Any:
    """A Scala ``Option[Long]`` built in the JVM (py4j would hand a plain int over as an Integer,
    which a Scala ``Option[Long]`` cannot unbox). On Spark Connect the number itself: the server
    makes the ``Option`` for the parameter that wants one."""
    if isinstance(jvm, RemoteJvm):
        return value
    if value is None:
        return jvm.scala.Option.empty()
    return jvm.scala.jdk.javaapi.OptionConverters.toScala(jvm.java.util.OptionalLong.of(value))


@translate_errors
def read_state(
    spark: SparkSession,
    checkpoint_location: str,
    operator: Union[str, int],
    batch_id: Optional[int] = None,
    store_name: str = DEFAULT_STORE_NAME,
) -> DataFrame:
    """The state a kstate operator kept in a streaming query's checkpoint, as a batch DataFrame.

    Works whatever ``spark.sql.streaming.stateStore.providerClass`` the query ran with: the
    operator's state is opened with the provider that wrote it (recorded in the checkpoint).
    Spark's ``spark.read.format("statestore")`` reads kstate operators' state only when the
    query ran with kstate's provider query-wide.

    Parameters
    ----------
    spark : SparkSession
        A classic session with kstate (see :func:`kstate.configure`), or a Spark Connect session
        whose server runs kstate's plugin (docs/connect.md).
    checkpoint_location : str
        The query's ``checkpointLocation``.
    operator : str or int
        The kstate operator: its name (``name=``, or ``<kind>-<n>`` such as
        ``"deduplicate_by_key-0"`` for an unnamed operator) or its Spark operator id, as
        ``spark.read.format("state-metadata")`` lists it.
    batch_id : int, optional
        Read the state as this micro-batch committed it; default the latest committed batch.
    store_name : str, optional
        The state store; kstate operators keep their state in ``"default"``.

    Returns
    -------
    DataFrame
        One row per entry of the operator's state on every state partition, with the schema of
        Spark's ``statestore`` source: ``key STRUCT<...>, value STRUCT<...>, partition_id INT``.
        For deduplication, ``key`` holds the identity (``identity_0``, ...) and ``value.ts`` the
        stored record's event time in epoch milliseconds.

    Raises
    ------
    KStateError
        At call time: ``KSTATE_STATE_NOT_FOUND`` when there is no committed batch, ``batch_id``
        is not committed, or the checkpoint has no kstate operator with that name or id (the
        message lists those it has); ``KSTATE_INVALID_STATE_READ`` for a bad argument.

    Examples
    --------
    >>> state = kstate.read_state(spark, "/chk/dedup", "deduplicate_by_key-0")
    >>> state.select("partition_id", "key.identity_0", "value.ts").show()
    >>> before = kstate.read_state(spark, "/chk/dedup", 1942335271, batch_id=3)
    """
    if not isinstance(checkpoint_location, str):
        raise KStateError(
            "KSTATE_INVALID_STATE_READ",
            {"reason": f"checkpoint_location must be a string, got {type(checkpoint_location).__name__}"},
        )
    if not isinstance(operator, str) and not _is_int(operator):
        raise KStateError(
            "KSTATE_INVALID_STATE_READ",
            {
                "reason": f"operator must be an operator name (str) or an operator id (int), got {type(operator).__name__}"
            },
        )
    if batch_id is not None and not _is_int(batch_id):
        raise KStateError(
            "KSTATE_INVALID_STATE_READ", {"reason": f"batch_id must be an int or None, got {type(batch_id).__name__}"}
        )
    if not isinstance(store_name, str):
        raise KStateError(
            "KSTATE_INVALID_STATE_READ", {"reason": f"store_name must be a string, got {type(store_name).__name__}"}
        )
    for what, value in (("operator", operator), ("batch_id", batch_id)):
        if _out_of_long(value):
            raise KStateError(
                "KSTATE_INVALID_STATE_READ",
                {"reason": f"{what} must be within a 64-bit long (-2**63 to 2**63 - 1), got {value}"},
            )
    jvm = check_jvm(spark)
    jbatch = _scala_option_long(jvm, batch_id)
    reader = jvm.io.kstate.KStateStateReader
    if isinstance(operator, str):
        jdf = reader.readState(jsession(spark), checkpoint_location, operator, jbatch, store_name)
    else:
        jdf = reader.readStateById(jsession(spark), checkpoint_location, operator, jbatch, store_name)
    return to_df(jdf, spark)
