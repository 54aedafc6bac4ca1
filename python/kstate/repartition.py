"""``kstate.repartition_state``: rescale a stopped query's state (wraps
``io.kstate.KStateRepartition``; docs/operators.md, "Rescaling state")."""

from __future__ import annotations

from typing import Any

from pyspark.sql import SparkSession

from . import _connect
from ._jvm import check_jvm, jsession, translate_errors
from .errors import KStateError

__all__ = ["repartition_state"]


@translate_errors
def repartition_state(spark: SparkSession, checkpoint_location: str, num_partitions: int) -> int:
    """Moves the state of every stateful operator in a stopped query's checkpoint to
    ``num_partitions`` state partitions; the query then restarts with that many.

    A checkpoint fixes a query's number of state partitions (``spark.sql.shuffle.partitions``);
    this changes it, up or down. Kafka Streams cannot: a topology's partition count is its input
    topics'. Spark's own ``StreamingCheckpointManager.repartition`` moves only Spark's operators;
    this moves kstate's, and Spark's own in the same checkpoint (on Spark's HDFS and RocksDB
    providers, and on kstate's).

    Parameters
    ----------
    spark : SparkSession
        A classic session with kstate (see :func:`kstate.configure`).
    checkpoint_location : str
        The stopped query's ``checkpointLocation``.
    num_partitions : int
        The new number of state partitions (> 0, not the current one).

    Returns
    -------
    int
        The id of the micro-batch that records the repartition (it reads no input).

    Raises
    ------
    KStateError
        Before anything is written: ``KSTATE_INVALID_REPARTITION`` (a bad argument, no
        committed micro-batch), ``KSTATE_REPARTITION_NOT_NEEDED`` (already that many),
        ``KSTATE_REPARTITION_UNCOMMITTED_BATCH`` (the query stopped inside a micro-batch: run it
        until it commits), ``KSTATE_REPARTITION_UNFINISHED`` (an unfinished repartition to another
        number), ``KSTATE_REPARTITION_UNSUPPORTED_STATE`` (state this kstate cannot move, e.g.
        Spark's own operators on a provider this kstate cannot move), or a state file's own error.

    Notes
    -----
    Keys move with their state; each new partition's stream time is the largest of the old
    partitions', so nothing that was closed, emitted or cleaned up comes back; see the docs for
    what that means for late records.

    Examples
    --------
    >>> q.stop()
    >>> kstate.repartition_state(spark, "/chk/dedup", 8)
    12
    >>> events.kstate.deduplicate_by_key(...).writeStream.option("checkpointLocation", "/chk/dedup").start()
    """
    if not isinstance(checkpoint_location, str):
        raise KStateError(
            "KSTATE_INVALID_REPARTITION",
            {"reason": f"checkpoint_location must be a string, got {type(checkpoint_location).__name__}"},
        )
    if not isinstance(num_partitions, int) or isinstance(num_partitions, bool) or not 0 < num_partitions < 2**31:
        raise KStateError(
            "KSTATE_INVALID_REPARTITION", {"reason": f"num_partitions must be a positive int, got {num_partitions!r}"}
        )
    if _connect.is_connect(spark):
        raise KStateError(
            "KSTATE_INVALID_REPARTITION",
            {
                "reason": "it cannot be done from a Spark Connect session: it runs offline jobs on the session's own "
                "cluster. Use a classic session (kstate.configure)"
            },
        )
    jvm: Any = check_jvm(spark)
    return int(jvm.io.kstate.KStateRepartition.repartitionState(jsession(spark), checkpoint_location, num_partitions))


def _checked_spark_repartition(method: Any) -> Any:
    """Spark's ``StreamingCheckpointManager.repartition``, refusing (before it writes anything) a
    checkpoint that holds kstate operators: Spark's writes its offset log entry, then fails on
    their state."""
    import functools

    @functools.wraps(method)
    def repartition(self: Any, checkpoint_location: str, num_partitions: int, *args: Any, **kwargs: Any) -> Any:
        spark = SparkSession.getActiveSession() or SparkSession._instantiatedSession
        if spark is not None and isinstance(checkpoint_location, str):
            translate_errors(
                lambda: check_jvm(spark).io.kstate.KStateRepartition.checkSparkRepartition(
                    jsession(spark), checkpoint_location
                )
            )()
        return method(self, checkpoint_location, num_partitions, *args, **kwargs)

    repartition._kstate_wrapped = True  # type: ignore[attr-defined]
    return repartition


def install() -> None:
    """Wraps Spark's checkpoint repartition (pyspark 4.2+, classic sessions) once."""
    try:
        from pyspark.sql.streaming.query import StreamingCheckpointManager
    except ImportError:  # a pyspark without it
        return
    method = StreamingCheckpointManager.repartition
    if not getattr(method, "_kstate_wrapped", False):
        StreamingCheckpointManager.repartition = _checked_spark_repartition(method)  # type: ignore[method-assign]
