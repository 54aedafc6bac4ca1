"""``kstate.testing``: a test driver for streaming pipelines, kstate's ``TopologyTestDriver``.

A :class:`PipelineTestDriver` runs a pipeline (a function from input DataFrames to an output
DataFrame) as a real Structured Streaming query in the test's SparkSession. Each call to
:meth:`~PipelineTestDriver.pipe` or :meth:`~PipelineTestDriver.add_batch` is one micro-batch,
run to completion before the call returns, and returns that micro-batch's output rows::

    import kstate
    from kstate.testing import PipelineTestDriver

    def pipeline(events):
        return events.kstate.deduplicate_by_key("10 seconds", key="k", timestamp="ts")

    with PipelineTestDriver(spark, "k STRING, ts LONG, v STRING", pipeline) as driver:
        assert [r.v for r in driver.pipe([("a", 100_000, "first")])] == ["first"]
        assert driver.pipe([("a", 108_000, "dup")]) == []

Decisions (micro-batch boundaries, stream time, restart, determinism, differences from Kafka
Streams' ``TopologyTestDriver``) are in ``docs/testing.md``.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import glob
import os
import shutil
import tempfile
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Union

from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql.streaming import StreamingQuery
from pyspark.sql.streaming.listener import StreamingQueryProgress
from pyspark.sql.types import (
    BinaryType,
    BooleanType,
    ByteType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
    StructType,
    TimestampNTZType,
    TimestampType,
    _make_type_verifier,
)

from ._connect import is_connect
from ._jvm import check_jvm
from .errors import KStateError
from .state_reader import DEFAULT_STORE_NAME, read_state
from .table_reader import AsOf, read_table

__all__ = ["PipelineTestDriver", "Record", "Schema", "DEFAULT_INPUT", "session_conf"]

Schema = Union[str, StructType]
"""An input's schema: a DDL string (``"k STRING, ts LONG"``) or a ``StructType``."""
Record = Union[Mapping[str, Any], Sequence[Any]]
"""A record: a dict of field names, or a tuple (or ``Row``) of the fields in schema order."""

DEFAULT_INPUT = "input"
"""The name of the one input of a driver built from a single schema."""

_ORDERS = ("auto", "task", "event_time")
_OUTPUT_MODES = ("append", "update", "complete")
_EPOCH_UTC = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
_EPOCH_NAIVE = _dt.datetime(1970, 1, 1)


@contextlib.contextmanager
def session_conf(spark: SparkSession, settings: Mapping[str, Any]) -> Iterator[None]:
    """Sets session settings for the duration of a ``with`` block, then restores them (unset
    if they were unset before). A query reads most settings when it starts.

    Examples
    --------
    >>> with session_conf(spark, {"spark.sql.shuffle.partitions": 1}):
    ...     query = df.writeStream.format("memory").queryName("out").start()
    """
    saved = {key: spark.conf.get(key, None) for key in settings}
    for key, value in settings.items():
        spark.conf.set(key, str(value))
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


def _hub_error(spark: SparkSession, method: str, *args: str) -> KStateError:
    """The named error built by the JVM's error hub (``org.apache.spark.sql.kstate.errors.KStateErrors.<method>``)."""
    exc = getattr(spark.sparkContext._jvm.org.apache.spark.sql.kstate.errors.KStateErrors, method)(*args)
    err = KStateError.from_java(exc)
    assert err is not None, f"KStateErrors.{method} did not build a kstate error"
    return err


class _Input:
    """One input of the driver: a schema and the directory its micro-batches' files go to.

    A micro-batch of an input is one Parquet file, moved into the directory when complete, which
    Spark's file source reads one file per trigger. Flat schemas are written with pyarrow (fast);
    others by Spark itself, so every Spark type arrives exactly as given.
    """

    def __init__(self, spark: SparkSession, name: str, schema: StructType, directory: str, staging: str) -> None:
        self.spark, self.name, self.schema = spark, name, schema
        self.directory, self.staging = directory, staging
        self.files = 0
        self._verify = _make_type_verifier(schema)
        os.makedirs(directory, exist_ok=True)

    def source(self) -> DataFrame:
        return self.spark.readStream.schema(self.schema).option("maxFilesPerTrigger", 1).parquet(self.directory)

    def rows(self, records: Sequence[Record]) -> List[tuple]:
        """``records`` as tuples in schema order, checked against the schema (index in errors)."""
        if isinstance(records, (str, bytes, Mapping)) or not isinstance(records, Sequence):
            raise self._invalid(f"records must be a list of records, got {type(records).__name__}")
        return [self._row(i, r) for i, r in enumerate(records)]

    def _row(self, index: int, record: Record) -> tuple:
        names = self.schema.fieldNames()
        if isinstance(record, Row) and hasattr(record, "__fields__"):
            record = record.asDict(recursive=False)
        if isinstance(record, Mapping):
            unknown = [k for k in record if k not in names]
            if unknown:
                raise self._invalid(
                    f"record {index} has fields {unknown} that the schema ({', '.join(names)}) does not have"
                )
            values = [record.get(n) for n in names]
        elif isinstance(record, (tuple, list)):
            if len(record) != len(names):
                raise self._invalid(
                    f"record {index} has {len(record)} values but the schema has "
                    f"{len(names)} fields ({', '.join(names)})"
                )
            values = list(record)
        else:
            raise self._invalid(f"record {index} is a {type(record).__name__}, not a dict or tuple")
        row = tuple(_epoch_millis_as_time(f.dataType, v) for f, v in zip(self.schema.fields, values))
        try:
            self._verify(row)
        except (TypeError, ValueError) as e:
            raise self._invalid(f"record {index} {record!r}: {e}") from None
        return row

    def _invalid(self, why: str) -> KStateError:
        return _hub_error(self.spark, "testDriverInvalidRecord", self.name, why)

    def write(self, rows: List[tuple]) -> None:
        """Writes ``rows`` as this input's next file: the next micro-batch's records, in order."""
        staged = os.path.join(self.staging, f"{self.name}-{self.files:06d}")
        os.makedirs(self.staging, exist_ok=True)
        if _arrow_types(self.schema) is not None:
            staged_file = staged + ".parquet"
            _write_with_arrow(self.schema, rows, staged_file)
        else:
            (self.spark.createDataFrame(rows, self.schema, verifySchema=False).coalesce(1).write.parquet(staged))
            parts = glob.glob(os.path.join(staged, "part-*.parquet"))
            assert len(parts) == 1, f"expected one Parquet file in {staged}, found {parts}"
            staged_file = parts[0]
        os.rename(staged_file, os.path.join(self.directory, f"batch-{self.files:06d}.parquet"))
        shutil.rmtree(staged, ignore_errors=True)
        self.files += 1


def _arrow_types(schema: StructType) -> Optional[List[Any]]:
    """Arrow types for a schema of flat fields, or None when a field is nested or another type
    (then Spark itself writes the file: slower, about a second per micro-batch, but exact)."""
    import pyarrow as pa

    simple = {
        StringType: pa.string(),
        LongType: pa.int64(),
        IntegerType: pa.int32(),
        ShortType: pa.int16(),
        ByteType: pa.int8(),
        BooleanType: pa.bool_(),
        DoubleType: pa.float64(),
        FloatType: pa.float32(),
        BinaryType: pa.binary(),
        DateType: pa.date32(),
        TimestampType: pa.timestamp("us", tz="UTC"),
        TimestampNTZType: pa.timestamp("us"),
    }
    types = []
    for f in schema.fields:
        if isinstance(f.dataType, DecimalType):
            types.append(pa.decimal128(f.dataType.precision, f.dataType.scale))
        elif type(f.dataType) in simple:
            types.append(simple[type(f.dataType)])
        else:
            return None
    return types


def _write_with_arrow(schema: StructType, rows: List[tuple], path: str) -> None:
    """One Parquet file of ``rows`` (flat schema), as Spark would read them back.

    A naive ``datetime`` for a TIMESTAMP field is local time, as in ``spark.createDataFrame``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    columns = []
    for i, (field, arrow_type) in enumerate(zip(schema.fields, _arrow_types(schema))):
        values = [r[i] for r in rows]
        if isinstance(field.dataType, TimestampType):
            values = [v.astimezone() if v is not None and v.tzinfo is None else v for v in values]
        columns.append(pa.array(values, type=arrow_type))
    pq.write_table(pa.Table.from_arrays(columns, names=schema.fieldNames()), path)


def _epoch_millis_as_time(data_type: DataType, value: Any) -> Any:
    """An int for a TIMESTAMP (NTZ) field is epoch milliseconds (UTC wall clock for NTZ)."""
    if isinstance(value, int) and not isinstance(value, bool):
        delta = _dt.timedelta(milliseconds=value)
        if isinstance(data_type, TimestampType):
            return _EPOCH_UTC + delta
        if isinstance(data_type, TimestampNTZType):
            return _EPOCH_NAIVE + delta
    return value


class PipelineTestDriver:
    """Runs a streaming pipeline one explicit micro-batch at a time, synchronously, in-process.

    The driver owns a temporary directory (inputs and checkpoint), removed by :meth:`close` or at
    the end of its ``with`` block; the query runs in ``spark`` with ``partitions`` state
    partitions, the records of a micro-batch processed in ``order``.

    Parameters
    ----------
    spark : SparkSession
        A classic session with kstate (:func:`kstate.configure`); shared with the test.
    inputs : str, StructType or dict of name to schema
        One schema (the pipeline gets one DataFrame, the input is named ``"input"``), or a dict
        of input names to schemas (the pipeline gets one keyword argument per input).
    pipeline : callable
        ``pipeline(df)`` or ``pipeline(**dfs)`` returning the streaming DataFrame to test: any
        mix of kstate operators and Spark's own.
    output_mode : str, optional
        The query's output mode, ``"append"`` (default), ``"update"`` or ``"complete"``: as for
        ``writeStream.outputMode`` (e.g. ``"update"`` for an unsuppressed windowed count or
        Spark's ``groupBy().count()``).
    partitions : int, optional
        State partitions (``spark.sql.shuffle.partitions`` of the query), default 1: one Kafka
        task, so stream time is one clock for all keys, as in ``TopologyTestDriver``.
    order : str, optional
        kstate's processing order (``spark.kstate.processingOrder``) for the query, default
        ``"task"``: a micro-batch's records are processed in the order given.
    conf : dict, optional
        More session settings while the query starts (e.g.
        ``{"spark.kstate.streamTime.followWatermark": "true"}``).

    Raises
    ------
    KStateError
        ``KSTATE_TEST_DRIVER_INVALID_PIPELINE`` when the arguments or the pipeline's result are
        unusable (checked when the driver starts); ``KSTATE_TEST_DRIVER_INVALID_RECORD`` and
        ``KSTATE_TEST_DRIVER_UNKNOWN_INPUT`` when records are piped, before anything runs;
        ``KSTATE_TEST_DRIVER_NOT_RUNNING`` when used outside its ``with`` block (before
        :meth:`start` or after :meth:`close`). A query stopped by a kstate error
        raises it as a :class:`kstate.KStateStreamingQueryError`.

    Examples
    --------
    >>> def pipeline(events):
    ...     return (events.kstate.windowed_by(TimeWindows.of_size("10 seconds").grace("0 seconds"),
    ...                                       key="k", timestamp="ts").count()
    ...             .kstate.suppress(Suppressed.until_window_closes(BufferConfig.unbounded())))
    >>> with PipelineTestDriver(spark, "k STRING, ts LONG", pipeline) as driver:
    ...     driver.pipe([("a", 1_000), ("a", 2_000)])   # window [0, 10s) still open: []
    ...     driver.pipe([("z", 10_000)])                 # stream time 10 s closes it
    [Row(k='a', window_start=0, window_end=10000, count=2, timestamp=2000)]
    """

    def __init__(
        self,
        spark: SparkSession,
        inputs: Union[Schema, Mapping[str, Schema]],
        pipeline: Callable[..., DataFrame],
        *,
        output_mode: str = "append",
        partitions: int = 1,
        order: str = "task",
        conf: Optional[Mapping[str, Any]] = None,
    ) -> None:
        if is_connect(spark):
            raise KStateError("KSTATE_TEST_DRIVER_NEEDS_CLASSIC_SESSION")
        check_jvm(spark)
        self._spark = spark
        self._single = not isinstance(inputs, Mapping)
        self._schemas = {DEFAULT_INPUT: inputs} if self._single else dict(inputs)
        self._pipeline = pipeline
        self._check_arguments(output_mode, partitions, order)
        self._output_mode, self._order = output_mode, order
        self._conf = {
            "spark.sql.shuffle.partitions": str(partitions),
            "spark.kstate.processingOrder": order,
            **{k: str(v) for k, v in (conf or {}).items()},
        }
        self._root: Optional[str] = None
        self._inputs: Dict[str, _Input] = {}
        self._query: Optional[StreamingQuery] = None
        self._batches: Dict[int, List[Row]] = {}
        self._written: List[int] = []  # batch ids in the order the sink wrote them
        self._progress: Dict[int, StreamingQueryProgress] = {}
        self._closed = False

    # --- life cycle ------------------------------------------------------------------------

    def start(self) -> "PipelineTestDriver":
        """Creates the temporary directories and starts the query (``with`` calls it)."""
        if self._closed or self._query is not None:
            raise _hub_error(self._spark, "testDriverNotRunning", "closed" if self._closed else "already started")
        self._root = tempfile.mkdtemp(prefix="kstate-test-driver-")
        try:
            staging = os.path.join(self._root, "staging")
            self._inputs = {
                name: _Input(
                    self._spark, name, self._struct(name, schema), os.path.join(self._root, "inputs", name), staging
                )
                for name, schema in self._schemas.items()
            }
            self._start_query()
        except BaseException:
            self.close()
            raise
        return self

    def restart(self, pipeline: Optional[Callable[..., DataFrame]] = None) -> List[Row]:
        """Stops the query and starts it again from its checkpoint, as after a failure or a
        deployment: state, stream time and the inputs' progress come from the checkpoint, and
        the pipeline function (or ``pipeline``, e.g. the same one with a larger buffer) is called
        again to build the query's DataFrame.

        Returns
        -------
        list of Row
            The rows of the micro-batches the restarted query ran before returning: none after
            micro-batches that completed; a micro-batch that failed (e.g. ``KSTATE_BUFFER_FULL``)
            runs again, and its rows are returned.
        """
        self._check_started()
        self._query.stop()
        self._query = None
        if pipeline is not None:
            self._pipeline = pipeline
        self._start_query()
        return self._run_available()

    def close(self) -> None:
        """Stops the query and removes the temporary directory (``with`` calls it)."""
        self._closed = True
        try:
            if self._query is not None:
                self._query.stop()
        finally:
            self._query = None
            if self._root is not None:
                shutil.rmtree(self._root, ignore_errors=True)
                self._root = None

    def __enter__(self) -> "PipelineTestDriver":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # --- feeding records -------------------------------------------------------------------

    def pipe(self, records: Sequence[Record], input: Optional[str] = None) -> List[Row]:
        """Feeds ``records`` to one input as ONE micro-batch and runs it to completion.

        Parameters
        ----------
        records : list of dict or tuple
            The micro-batch's records, processed in this order (with ``order="task"``). Dicts
            name fields (missing fields are null); tuples give every field in schema order. An
            int for a TIMESTAMP or TIMESTAMP_NTZ field is epoch milliseconds.
        input : str, optional
            The input to feed; may be left out when the driver has one input.

        Returns
        -------
        list of Row
            The rows the query wrote in this call: the micro-batch's, then those of any
            no-data micro-batch Spark ran after it (e.g. to apply a moved watermark).
        """
        return self.add_batch({self._input_name(input): records})

    def add_batch(self, records_by_input: Mapping[str, Sequence[Record]]) -> List[Row]:
        """Feeds records to several inputs in ONE micro-batch (see :meth:`pipe`).

        Examples
        --------
        >>> driver.add_batch({"orders": [("o1", "c1", 5)], "customers": [("c1", "Ann", 1)]})
        """
        self._check_started()
        if not isinstance(records_by_input, Mapping):
            raise self._pipeline_error(
                f"add_batch takes a dict of input names to records, got "
                f"{type(records_by_input).__name__}; use pipe(records) for one input"
            )
        rows = {
            self._input_name(name): self._inputs[self._input_name(name)].rows(records)
            for name, records in records_by_input.items()
        }
        for name, input_rows in rows.items():
            self._inputs[name].write(input_rows)
        return self._run_available()

    # --- reading results -------------------------------------------------------------------

    def outputs(self) -> List[Row]:
        """Every output row so far, in micro-batch order."""
        return [r for b in sorted(self._batches) for r in self._batches[b]]

    @property
    def batches(self) -> Dict[int, List[Row]]:
        """Micro-batch id to the rows it wrote (no-data micro-batches included)."""
        return {b: list(rows) for b, rows in sorted(self._batches.items())}

    def progress(self, batch_id: Optional[int] = None) -> StreamingQueryProgress:
        """The progress Spark reported for micro-batch ``batch_id`` (default: the last one):
        ``numInputRows``, ``stateOperators`` (with kstate's ``customMetrics``), ``watermark``..."""
        b = max(self._batches, default=-1) if batch_id is None else batch_id
        if b not in self._progress:
            raise self._pipeline_error(
                f"no progress for micro-batch {b}; micro-batches run so far: {sorted(self._progress)}"
            )
        return self._progress[b]

    def custom_metrics(self, batch_id: Optional[int] = None) -> Dict[str, Dict[str, int]]:
        """Each stateful operator's custom metrics in micro-batch ``batch_id`` (default: the
        last), keyed by operator name (a second operator of the same name gets ``#2``, ...)."""
        out: Dict[str, Dict[str, int]] = {}
        for op in self.progress(batch_id).stateOperators:
            name, n = op.operatorName, 2
            while name in out:
                name, n = f"{op.operatorName}#{n}", n + 1
            out[name] = dict(op.customMetrics)
        return out

    def state(
        self, operator: Union[str, int], batch_id: Optional[int] = None, store_name: str = DEFAULT_STORE_NAME
    ) -> DataFrame:
        """A kstate operator's state after micro-batch ``batch_id`` (default: the last
        committed), through :func:`kstate.read_state` on the driver's checkpoint."""
        self._check_started()
        return read_state(self._spark, self.checkpoint, operator, batch_id, store_name)

    def table(self, name: str, as_of: AsOf = None) -> DataFrame:
        """A versioned kstate table as of ``as_of`` (default: latest), through
        :func:`kstate.read_table` on the driver's checkpoint."""
        self._check_started()
        return read_table(self._spark, self.checkpoint, name, as_of)

    @property
    def checkpoint(self) -> str:
        """The query's checkpoint directory, e.g. for Spark's ``statestore`` reader."""
        self._check_started()
        return os.path.join(self._root, "checkpoint")

    @property
    def query(self) -> StreamingQuery:
        """The running streaming query."""
        self._check_started()
        return self._query

    # --- internals -------------------------------------------------------------------------

    def _start_query(self) -> None:
        with session_conf(self._spark, self._conf):  # read when the query starts
            out = self._build()
            query_name = f"kstate_test_driver_{id(self)}"

            def collect(batch: DataFrame, batch_id: int) -> None:
                self._batches[batch_id] = batch.collect()  # a re-run replaces its rows
                self._written.append(batch_id)

            self._query = (
                out.writeStream.outputMode(self._output_mode)
                .option("checkpointLocation", os.path.join(self._root, "checkpoint"))
                .queryName(query_name)
                .foreachBatch(collect)
                .start()
            )

    def _build(self) -> DataFrame:
        sources = {name: i.source() for name, i in self._inputs.items()}
        out = self._pipeline(sources[DEFAULT_INPUT]) if self._single else self._pipeline(**sources)
        if not isinstance(out, DataFrame):
            raise self._pipeline_error(f"the pipeline function returned {type(out).__name__}, not a DataFrame")
        if not out.isStreaming:
            raise self._pipeline_error(
                "the pipeline's result is not a streaming DataFrame: build it from the input "
                "DataFrames the driver passes in"
            )
        return out

    def _run_available(self) -> List[Row]:
        """Runs every micro-batch there is input for; the rows of those micro-batches."""
        start = len(self._written)
        self._query.processAllAvailable()
        self._collect_progress()
        ran = sorted(set(self._written[start:]))
        return [r for b in ran for r in self._batches[b]]

    def _collect_progress(self) -> None:
        # A micro-batch that ran reports its progress with an 'addBatch' duration; idle
        # triggers report the next batch id without one.
        for p in self._query.recentProgress:
            if p.batchId in self._batches and "addBatch" in p.durationMs:
                self._progress[p.batchId] = p

    def _struct(self, name: str, schema: Schema) -> StructType:
        if isinstance(schema, StructType):
            return schema
        if isinstance(schema, str):
            try:
                return self._spark.createDataFrame([], schema).schema
            except Exception as e:  # pyspark raises several parse error types
                raise self._pipeline_error(
                    f"the schema of input '{name}' ({schema!r}) is not a valid DDL schema: {str(e).splitlines()[0]}"
                ) from None
        raise self._pipeline_error(
            f"the schema of input '{name}' must be a DDL string or a StructType, got {type(schema).__name__}"
        )

    def _check_arguments(self, output_mode: Any, partitions: Any, order: Any) -> None:
        if not self._schemas or not all(isinstance(n, str) and n for n in self._schemas):
            raise self._pipeline_error(
                "inputs must be a schema or a non-empty dict of input names (non-empty strings) to schemas"
            )
        if not callable(self._pipeline):
            raise self._pipeline_error("pipeline must be a function of the input DataFrames")
        if output_mode not in _OUTPUT_MODES:
            raise self._pipeline_error(f"output_mode must be one of {_OUTPUT_MODES}, got {output_mode!r}")
        if not isinstance(partitions, int) or isinstance(partitions, bool) or partitions < 1:
            raise self._pipeline_error(f"partitions must be a positive int, got {partitions!r}")
        if order not in _ORDERS:
            raise self._pipeline_error(f"order must be one of {_ORDERS}, got {order!r}")

    def _input_name(self, name: Optional[str]) -> str:
        if name is None and len(self._schemas) == 1:
            return next(iter(self._schemas))
        if name not in self._schemas:
            raise _hub_error(self._spark, "testDriverUnknownInput", str(name), ", ".join(self._schemas))
        return name

    def _pipeline_error(self, why: str) -> KStateError:
        return _hub_error(self._spark, "testDriverInvalidPipeline", why)

    def _check_started(self) -> None:
        if self._query is None:
            raise _hub_error(self._spark, "testDriverNotRunning", "closed" if self._closed else "not started")
