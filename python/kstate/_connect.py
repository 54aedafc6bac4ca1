"""Spark Connect plumbing: kstate's JVM calls recorded on the client, made by the server's plugin.

On a classic session kstate calls its JVM API through py4j. On a Spark Connect session there is
no JVM in this process: :func:`kstate._jvm.check_jvm` returns a :class:`RemoteJvm` instead, and
the same Python code records each call (``jvm.io.kstate.KStateDataFrame.apply(df)
.deduplicateByKey(...)``) as a :class:`Remote` value. A DataFrame result becomes a Connect
relation whose ``extension`` holds the recorded call; the server's
``io.kstate.KStateConnectPlugin`` makes the call on the same ``io.kstate`` methods
(docs/connect.md). The message is protobuf's wire format, written here by hand; its schema is in
the plugin's scaladoc (``org.apache.spark.sql.kstate.connect.KStateCall``).
"""
from __future__ import annotations

from typing import Any, List, Optional, Sequence

from .errors import KStateError

__all__ = ["is_connect", "RemoteJvm", "Remote", "ColumnArg", "RelationArg", "SESSION", "PLUGIN_CLASS"]

TYPE_URL = "type.googleapis.com/kstate.connect.Request"
PLUGIN_CLASS = "io.kstate.KStateConnectPlugin"
PLUGIN_SETTING = "spark.connect.extensions.relation.classes"


def is_connect(value: Any) -> bool:
    """Whether ``value`` (a session, a Column) belongs to Spark Connect."""
    return type(value).__module__.startswith("pyspark.sql.connect")


def functions(spark: Any) -> Any:
    """``pyspark.sql.functions`` for a classic session, its Connect twin for a Connect one (a
    process may hold both: ``F.col`` builds the kind of Column the environment says)."""
    if is_connect(spark):
        from pyspark.sql.connect import functions as CF

        return CF
    from pyspark.sql import functions as F

    return F


class ColumnArg:
    """A Connect Column passed to a recorded call."""

    def __init__(self, column: Any):
        self.column = column


class RelationArg:
    """A Connect DataFrame passed to a recorded call."""

    def __init__(self, df: Any):
        self.df = df


class _Session:
    """The server's SparkSession (``spark._jsparkSession`` of a classic session)."""


SESSION = _Session()


class Remote:
    """A JVM value the Connect server computes: the result of a recorded call.

    Calling one of its methods records a call on it; :meth:`_dataframe` and :meth:`_values` send
    it to the server.
    """

    def __init__(self, spark: Any, target: Optional["Remote"], method: str, args: Sequence[Any]):
        self._k_spark = spark
        self._k_target = target
        self._k_method = method
        self._k_args = list(args)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)

        def call(*args: Any) -> Remote:
            return Remote(self._k_spark, self, name, args)

        return call

    def _dataframe(self) -> Any:
        """The DataFrame this call gives, analyzed at once so that a bad argument raises here,
        as on a classic session."""
        from pyspark.sql.connect.dataframe import DataFrame as ConnectDataFrame

        df = ConnectDataFrame(_KStatePlan(self), self._k_spark)
        df.schema  # the server makes the call and checks its arguments
        return df

    def _checked(self) -> "Remote":
        """This value, after the server made the call and checked its arguments."""
        self._dataframe()
        return self

    def _values(self) -> List[str]:
        """The call's result as text (one string per element of a list)."""
        return [r[0] for r in self._dataframe().collect()]

    def __repr__(self) -> str:
        return f"<kstate call {self._k_method} for the Spark Connect server>"


class RemoteJvm:
    """Stands for the JVM of a Connect session: ``jvm.io.kstate.X.m(args)`` records a static call."""

    def __init__(self, spark: Any, name: str = ""):
        self._k_spark = spark
        self._k_name = name

    def __getattr__(self, name: str) -> "RemoteJvm":
        if name.startswith("_"):
            raise AttributeError(name)
        return RemoteJvm(self._k_spark, f"{self._k_name}.{name}" if self._k_name else name)

    def __call__(self, *args: Any) -> Remote:
        return Remote(self._k_spark, None, self._k_name, args)


def _plan_class() -> Any:
    from pyspark.sql.connect.plan import LogicalPlan

    class KStatePlan(LogicalPlan):
        def __init__(self, remote: Remote):
            super().__init__(None)
            self._remote = remote

        def plan(self, session: Any) -> Any:
            from ._jvm import __version__

            rel = self._create_proto_relation()
            request = _field(1, _call(self._remote, session)) + _field(2, __version__.encode())
            rel.extension.type_url = TYPE_URL
            rel.extension.value = request
            return rel

    return KStatePlan


def _KStatePlan(remote: Remote) -> Any:
    global _PLAN
    if _PLAN is None:
        _PLAN = _plan_class()
    return _PLAN(remote)


_PLAN: Any = None


# --- protobuf wire format (schema: KStateCall.scala) -----------------------------------------

def _varint(n: int) -> bytes:
    n &= (1 << 64) - 1  # int64: negative numbers as two's complement
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited field."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _flag(number: int, value: int) -> bytes:
    """A varint field."""
    return _varint(number << 3) + _varint(value)


def _call(remote: Remote, session: Any) -> bytes:
    out = b""
    if remote._k_target is not None:
        out += _field(1, _value(remote._k_target, session))
    out += _field(2, remote._k_method.encode())
    for a in remote._k_args:
        out += _field(3, _value(a, session))
    return out


def _value(v: Any, session: Any) -> bytes:
    if isinstance(v, ColumnArg):
        return _field(1, v.column._expr.to_plan(session).SerializeToString())
    if isinstance(v, str):
        return _field(2, v.encode())
    if isinstance(v, bool):
        raise KStateError("KSTATE_CONNECT_INVALID_CALL", f"cannot send a bool ({v!r}) to the server")
    if isinstance(v, int):
        return _flag(3, v)
    if v is None:
        return _flag(4, 1)
    if isinstance(v, Remote):
        return _field(5, _call(v, session))
    if isinstance(v, RelationArg):
        return _field(6, v.df._plan.plan(session).SerializeToString())
    if isinstance(v, (list, tuple)):
        return _field(7, b"".join(_field(1, _value(x, session)) for x in v))
    if v is SESSION:
        return _flag(8, 1)
    raise KStateError("KSTATE_CONNECT_INVALID_CALL",
                      f"cannot send a {type(v).__name__} to the kstate Spark Connect plugin")


def plugin_missing(e: BaseException) -> Optional[KStateError]:
    """The named error for a Connect server that has no kstate plugin, if ``e`` is that."""
    if "No handler found for extension" not in str(e):
        return None
    return KStateError(
        "KSTATE_CONNECT_PLUGIN_MISSING",
        f"the Spark Connect server has no kstate plugin. Start it with the kstate jar "
        f"(--jars <kstate.jar_path()>) and --conf {PLUGIN_SETTING}={PLUGIN_CLASS} "
        "--conf spark.sql.extensions=io.kstate.KStateExtensions (docs/connect.md).")
