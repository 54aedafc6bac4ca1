"""kstate: Kafka Streams' stateful operators for Spark Structured Streaming.

``import kstate`` adds the ``df.kstate`` accessor to PySpark DataFrames::

    import kstate
    from pyspark.sql import SparkSession

    spark = kstate.configure(SparkSession.builder.master("local[2]")).getOrCreate()
    deduped = events.kstate.deduplicate_by_key("10 minutes", key="user", timestamp="ts")

``kstate.read_state(spark, checkpoint, operator)`` reads a kstate operator's state from a
checkpoint; ``kstate.read_table(spark, checkpoint, name, as_of)`` a versioned table as of a time;
``kstate.replica_status(query)`` where a query's standby replicas are and how warm they are;
``kstate.repartition_state(spark, checkpoint, n)`` rescales a stopped query's state to n partitions.

All of them work on a Spark Connect session too, when the server runs kstate's relation plugin
(``--conf spark.connect.extensions.relation.classes=io.kstate.KStateConnectPlugin``; docs/connect.md).
"""

from __future__ import annotations

from pyspark.sql import DataFrame as _DataFrame

from ._durations import to_millis
from ._jvm import EXTENSION, SPARK_MINOR, __version__, jar_path
from ._query_errors import KStateStreamingQueryError
from ._query_errors import install as _install_query_errors
from .dataframe import KStateDataFrame, KStateWindowedStream
from .errors import KStateError
from .repartition import install as _install_repartition_check
from .repartition import repartition_state
from .replicas import replica_status
from .session import configure
from .state_reader import read_state
from .suppress import BufferConfig, EagerBufferConfig, StrictBufferConfig, Suppressed
from .table_reader import read_table
from .tables import KGroupedTable, KTable, VersionedTable
from .windows import SessionWindows, SlidingWindows, TimeWindows

__all__ = [
    "KStateDataFrame",
    "KStateWindowedStream",
    "KStateError",
    "KStateStreamingQueryError",
    "TimeWindows",
    "SessionWindows",
    "SlidingWindows",
    "configure",
    "jar_path",
    "to_millis",
    "read_state",
    "read_table",
    "replica_status",
    "repartition_state",
    "Suppressed",
    "BufferConfig",
    "StrictBufferConfig",
    "EagerBufferConfig",
    "KTable",
    "KGroupedTable",
    "VersionedTable",
    "EXTENSION",
    "SPARK_MINOR",
    "__version__",
]


def _accessor(self: _DataFrame) -> KStateDataFrame:
    return KStateDataFrame(self)


def _install() -> None:
    _DataFrame.kstate = property(_accessor)  # type: ignore[attr-defined]
    _install_query_errors()  # a running query's kstate errors are KStateErrors too
    _install_repartition_check()  # Spark's repartition refuses kstate checkpoints before writing
    # Spark Connect DataFrames get the accessor too: their calls go to the server's kstate plugin
    # (docs/connect.md). Connect needs grpc; without it there is nothing to patch (and importing
    # pyspark.sql.connect without it can end the interpreter).
    import importlib.util

    if importlib.util.find_spec("grpc") is None:
        return
    try:
        from pyspark.sql.connect.dataframe import DataFrame as _ConnectDataFrame

        _ConnectDataFrame.kstate = property(_accessor)  # type: ignore[attr-defined]
    except ImportError:  # other Connect extras missing
        pass


_install()
