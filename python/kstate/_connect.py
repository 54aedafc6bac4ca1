"""Spark Connect plumbing: kstate's JVM calls recorded on the client, made by the server's plugin.

On a classic session kstate calls its JVM API through py4j. On a Spark Connect session there is
no JVM in this process: :func:`kstate._jvm.check_jvm` returns a :class:`RemoteJvm` instead, and
the same Python code records each call (``jvm.io.kstate.KStateDataFrame.apply(df)
.deduplicateByKey(...)``) as a :class:`Remote` value. A DataFrame result becomes a Connect
relation whose ``extension`` holds the call as kstate's typed Connect message
(``kstate.proto.connect_pb2``, generated from ``jvm/src/main/protobuf/kstate/proto/connect.proto``):
one message per kstate operation; the server's ``io.kstate.KStateConnectPlugin`` maps it to the
one ``io.kstate`` method it names (docs/connect.md).
"""

from __future__ import annotations

from typing import Any, List, Optional, Sequence

from .errors import KStateError

__all__ = ["is_connect", "RemoteJvm", "Remote", "ColumnArg", "RelationArg", "SESSION", "PLUGIN_CLASS"]

TYPE_URL = "type.googleapis.com/kstate.connect.KStateRelation"
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
        _ = df.schema  # the server makes the call and checks its arguments
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
            rel = self._create_proto_relation()
            rel.extension.type_url = TYPE_URL
            rel.extension.value = message(self._remote, session).SerializeToString()
            return rel

    return KStatePlan


def _KStatePlan(remote: Remote) -> Any:
    global _PLAN
    if _PLAN is None:
        _PLAN = _plan_class()
    return _PLAN(remote)


_PLAN: Any = None


# --- kstate's Connect protocol (jvm/src/main/protobuf/kstate/proto/connect.proto) -----------
#
# The kstate methods record their JVM calls (``Remote``); :func:`message` turns a recorded call
# into the one typed message that names it. A call it does not know is a client-side bug:
# KSTATE_CONNECT_INVALID_CALL.


def message(remote: Remote, session: Any) -> Any:
    """The ``KStateRelation`` for a recorded call."""
    from ._jvm import __version__
    from .proto import connect_pb2 as pb

    return _Translator(session, pb).relation(remote, __version__)


class _Translator:
    TABLE_INFO = {
        "isVersioned": "IS_VERSIONED",
        "keyColumn": "KEY_COLUMN",
        "timestampColumn": "TIMESTAMP_COLUMN",
        "valueColumns": "VALUE_COLUMNS",
        "toString": "DESCRIPTION",
    }
    TABLE_METHODS = {
        "toTable",
        "filter",
        "filterNot",
        "mapValues",
        "count",
        "sum",
        "reduceColumns",
        "aggColumns",
        "aggregateColumns",
    }

    def __init__(self, session: Any, pb: Any) -> None:
        self.session, self.pb = session, pb

    @staticmethod
    def bad(why: str) -> KStateError:
        return KStateError("KSTATE_CONNECT_INVALID_CALL", {"side": "client", "reason": why})

    # -- the call as a whole ---------------------------------------------------------------

    def relation(self, r: Remote, version: str) -> Any:
        pb, m = self.pb, r._k_method
        out = pb.KStateRelation(client_version=version)
        if r._k_target is None:
            a = r._k_args
            if m in ("io.kstate.KStateStateReader.readState", "io.kstate.KStateStateReader.readStateById"):
                rs = pb.ReadState(checkpoint=a[1], store_name=a[4])
                if m.endswith("ById"):
                    rs.operator_id = a[2]
                else:
                    rs.operator_name = a[2]
                if a[3] is not None:
                    rs.batch_id = a[3]
                out.read_state.CopyFrom(rs)
            elif m == "io.kstate.KStateTableReader.readTable":
                rt = pb.ReadTable(checkpoint=a[1], name=a[2])
                if a[3] is not None:
                    rt.as_of_ms = a[3]
                out.read_table.CopyFrom(rt)
            elif m == "io.kstate.KStateTableReader.readTableAt":
                out.read_table.CopyFrom(pb.ReadTable(checkpoint=a[1], name=a[2], as_of_text=a[3]))
            elif m == "io.kstate.ReplicaStatus.json":
                out.replica_status.query_id = a[0]
            else:
                raise self.bad(f"{m} is not a kstate call")
        elif m in self.TABLE_INFO:
            if m == "toString" and r._k_target._k_method == "groupBy":
                out.grouped_table.CopyFrom(self.grouped(r._k_target))
            else:
                out.table_info.CopyFrom(
                    pb.TableInfo(table=self.table(r._k_target), property=getattr(pb.TableInfo, self.TABLE_INFO[m]))
                )
        elif m == "groupBy":
            out.grouped_table.CopyFrom(self.grouped(r))
        elif m == "windowedBy":
            out.windowed_stream.CopyFrom(self.windowed(r))
        elif self.is_table(r):
            out.table.CopyFrom(self.table(r))
        else:
            out.stream.CopyFrom(self.stream(r))
        return out

    def is_table(self, r: Remote) -> bool:
        if r._k_method == "join":
            return not self.is_input(r._k_target)
        return r._k_method in self.TABLE_METHODS and not (
            r._k_method == "count" and r._k_target._k_method == "windowedBy"
        )

    @staticmethod
    def is_input(r: Any) -> bool:
        return isinstance(r, Remote) and r._k_method in ("io.kstate.KStateDataFrame.apply", "withProcessingOrder")

    # -- values ------------------------------------------------------------------------------

    def column(self, c: Any) -> Any:
        if not isinstance(c, ColumnArg):
            raise self.bad(f"expected a Column, got {type(c).__name__}")
        return self.pb.Column(expression=c.column._expr.to_plan(self.session).SerializeToString())

    def columns(self, cs: Any) -> List[Any]:
        return [self.column(c) for c in cs]

    def ms(self, v: Any) -> int:
        if isinstance(v, Remote) and v._k_method == "java.time.Duration.ofMillis":
            return int(v._k_args[0])
        if isinstance(v, (int, str)) and not isinstance(v, bool):
            return int(v)
        raise self.bad(f"expected a duration, got {v!r}")

    def input(self, r: Any) -> Any:
        if not self.is_input(r):
            raise self.bad(f"expected a DataFrame's kstate operations, got {getattr(r, '_k_method', r)!r}")
        if r._k_method == "withProcessingOrder":
            i = self.input(r._k_target)
            i.order = r._k_args[0]
            return i
        rel = r._k_args[0]
        if not isinstance(rel, RelationArg):
            raise self.bad("expected a DataFrame")
        return self.pb.Input(relation=rel.df._plan.plan(self.session).SerializeToString())

    def windows(self, r: Remote) -> Any:
        pb, m, a = self.pb, r._k_method, r._k_args
        if m == "io.kstate.windows.TimeWindows.ofSize":
            return pb.Windows(time=pb.TimeWindows(size_ms=a[0], advance_ms=a[0]))
        if m == "io.kstate.windows.SessionWindows.withInactivityGap":
            return pb.Windows(session=pb.SessionWindows(gap_ms=a[0]))
        if m == "io.kstate.windows.SlidingWindows.ofTimeDifference":
            return pb.Windows(sliding=pb.SlidingWindows(time_difference_ms=a[0]))
        w = self.windows(r._k_target)
        kind = getattr(w, w.WhichOneof("kind"))
        if m == "advanceBy":
            kind.advance_ms = a[0]
        elif m == "grace":
            kind.grace_ms = a[0]
        else:
            raise self.bad(f"windows.{m}")
        return w

    def buffer(self, r: Remote) -> Any:
        pb, m = self.pb, r._k_method
        if m == "io.kstate.suppress.BufferConfig.unbounded":
            return pb.BufferConfig()
        b = self.buffer(r._k_target)
        if m == "withMaxRecords":
            b.max_records = r._k_args[0]
        elif m == "withMaxBytes":
            b.max_bytes = r._k_args[0]
        elif m in ("shutDownWhenFull", "spillToDiskWhenFull", "emitEarlyWhenFull"):
            b.when_full = {
                "shutDownWhenFull": pb.BufferConfig.SHUT_DOWN,
                "spillToDiskWhenFull": pb.BufferConfig.SPILL_TO_DISK,
                "emitEarlyWhenFull": pb.BufferConfig.EMIT_EARLY,
            }[m]
        else:
            raise self.bad(f"BufferConfig.{m}")
        return b

    def suppressed(self, r: Remote) -> Any:
        pb, m, a = self.pb, r._k_method, r._k_args
        if m == "io.kstate.suppress.UntilTimeLimit":
            return pb.Suppressed(until_time_limit_ms=a[0], buffer=self.buffer(a[1]))
        if m == "io.kstate.suppress.UntilWindowCloses":
            return pb.Suppressed(until_window_closes=True, buffer=self.buffer(a[0]))
        raise self.bad(f"Suppressed {m}")

    def versioned(self, r: Remote) -> Any:
        if r._k_method == "io.kstate.tables.VersionedTable.ofMillis":
            return self.pb.VersionedTable(history_retention_ms=r._k_args[0])
        if r._k_method == "withGraceMillis":
            v = self.versioned(r._k_target)
            v.grace_ms = r._k_args[0]
            return v
        raise self.bad(f"VersionedTable {r._k_method}")

    @staticmethod
    def named(msg: Any, name: Optional[str]) -> Any:
        if name is not None:
            msg.name = name
        return msg

    # -- windowed streams, tables, grouped tables, streams ------------------------------------

    def windowed(self, r: Remote) -> Any:
        a = r._k_args
        return self.pb.WindowedStream(
            input=self.input(r._k_target),
            windows=self.windows(a[0]),
            key=self.column(a[1]),
            timestamp=self.column(a[2]),
        )

    def grouped(self, r: Remote) -> Any:
        if r._k_method != "groupBy":
            raise self.bad(f"expected a grouped table, got {r._k_method}")
        return self.pb.GroupedTable(
            table=self.table(r._k_target), key=self.column(r._k_args[0]), values=self.columns(r._k_args[1])
        )

    def table(self, r: Any) -> Any:
        pb = self.pb
        if not isinstance(r, Remote):
            raise self.bad(f"expected a table, got {type(r).__name__}")
        m, a, t = r._k_method, r._k_args, r._k_target
        if m == "toTable":
            tt = pb.ToTable(input=self.input(t), key=self.column(a[0]), timestamp=self.column(a[1]))
            if a[2] is not None:
                tt.versioned.CopyFrom(self.versioned(a[2]))
            return pb.Table(to_table=self.named(tt, a[3]))
        if m in ("filter", "filterNot"):
            f = pb.TableFilter(table=self.table(t), condition=self.column(a[0]))
            return pb.Table(filter=f) if m == "filter" else pb.Table(filter_not=f)
        if m == "mapValues":
            return pb.Table(map_values=pb.TableMapValues(table=self.table(t), values=self.columns(a[0])))
        if m == "join" and len(a) == 3:
            return pb.Table(join=self.named(pb.TableJoin(left=self.table(t), right=self.table(a[0]), how=a[1]), a[2]))
        if m == "join" and len(a) == 4:
            return pb.Table(
                foreign_key_join=self.named(
                    pb.ForeignKeyJoin(
                        left=self.table(t), right=self.table(a[0]), foreign_key=self.column(a[1]), how=a[2]
                    ),
                    a[3],
                )
            )
        agg = pb.TableAggregation(grouped=self.grouped(t))
        if m == "count":
            agg.count = True
        elif m == "sum":
            agg.sum.CopyFrom(self.column(a[0]))
        elif m == "reduceColumns":
            agg.reduce.CopyFrom(pb.Reduce(added=self.column(a[0]), subtracted=self.column(a[1])))
        elif m == "aggColumns":
            agg.agg.CopyFrom(pb.Columns(columns=self.columns(a[0])))
        elif m == "aggregateColumns":
            agg.aggregate.CopyFrom(
                pb.Aggregate(init=self.column(a[0]), added=self.column(a[1]), subtracted=self.column(a[2]))
            )
        else:
            raise self.bad(f"KTable.{m}")
        return pb.Table(aggregation=self.named(agg, a[-1]))

    def stream(self, r: Remote) -> Any:
        pb, m, a, t = self.pb, r._k_method, r._k_args, r._k_target
        if m == "deduplicateByKey":
            return pb.Stream(
                deduplicate_by_key=self.named(
                    pb.DeduplicateByKey(
                        input=self.input(t),
                        interval_ms=self.ms(a[0]),
                        key=self.column(a[1]),
                        timestamp=self.column(a[2]),
                    ),
                    a[3],
                )
            )
        if m == "deduplicateByKeyValue":
            return pb.Stream(
                deduplicate_by_key_value=self.named(
                    pb.DeduplicateByKeyValue(
                        input=self.input(t),
                        id=self.column(a[0]),
                        interval_ms=self.ms(a[1]),
                        key=self.column(a[2]),
                        timestamp=self.column(a[3]),
                    ),
                    a[4],
                )
            )
        if m == "deduplicate":
            return pb.Stream(
                deduplicate=self.named(
                    pb.Deduplicate(
                        input=self.input(t),
                        id=self.column(a[0]),
                        interval_ms=self.ms(a[1]),
                        timestamp=self.column(a[2]),
                    ),
                    a[3],
                )
            )
        if m == "suppressTable":
            s = pb.SuppressStream(input=self.input(t), suppressed=self.suppressed(a[0]))
            for field, v in (("key", a[1]), ("timestamp", a[2]), ("window_end", a[3])):
                if v is not None:
                    getattr(s, field).CopyFrom(self.column(v))
            if a[4] is not None:
                s.grace_ms = self.ms(a[4])
            return pb.Stream(suppress=self.named(s, a[5]))
        if m == "join" and self.is_input(t):
            j = pb.StreamTableJoin(
                input=self.input(t),
                table=self.table(a[0]),
                key=self.column(a[1]),
                timestamp=self.column(a[2]),
                how=a[3],
            )
            if a[4] is not None:
                j.grace_ms = self.ms(a[4])
            return pb.Stream(join=self.named(j, a[5]))
        if m in ("distinct", "count", "aggregate") and isinstance(t, Remote) and t._k_method == "windowedBy":
            w = pb.WindowedResult(stream=self.windowed(t))
            if m == "distinct":
                w.distinct = True
            elif m == "count":
                w.count = True
            else:
                w.aggregate.CopyFrom(pb.Columns(columns=self.columns(a[0])))
            return pb.Stream(windowed=self.named(w, a[-1]))
        if m == "toStream":
            return pb.Stream(to_stream=self.table(t))
        if m == "suppress":
            return pb.Stream(table_suppress=pb.TableSuppress(table=self.table(t), suppressed=self.suppressed(a[0])))
        raise self.bad(f"{m} is not a kstate operation")


def plugin_missing(e: BaseException) -> Optional[KStateError]:
    """The named error for a Connect server that has no kstate plugin, if ``e`` is that."""
    if "No handler found for extension" not in str(e):
        return None
    return KStateError("KSTATE_CONNECT_PLUGIN_MISSING", {"pluginSetting": PLUGIN_SETTING, "pluginClass": PLUGIN_CLASS})
