"""A real multi-executor Spark on this machine, for tests and benchmarks that lose executors.

``local-cluster[N,C,M]`` runs a standalone Master and N Workers inside the driver JVM; each
Worker starts its executor as a separate JVM (``CoarseGrainedExecutorBackend``), so an executor
can be killed with ``kill -9`` like a lost machine, and the Master then starts a replacement with
a new executor id. It works from PySpark with the venv's pyspark as it is: the Workers launch
executors from ``SPARK_HOME`` (pyspark's package directory, which has ``jars/``), and the kstate
jar reaches them through ``spark.jars``. (``spark.test.home`` is needed only when
``spark.testing`` is set, which PySpark does not set.)

Only one SparkContext can live in a Python process, and the pytest session already has one
(``conftest.spark``, ``local[2]``): tests therefore run a cluster in a child process (see
``_executor_loss_driver.py``); benchmarks, which own their process, use it directly.

    with LocalCluster(executors=3).start(conf) as c:
        pids = c.executors()              # {executor id: pid of its JVM}
        c.kill(victim)                    # kill -9
        c.wait_for_replacement(victim)    # N live executors again, none of them ``victim``
"""

from __future__ import annotations

import os
import signal
import sys
import time
from typing import Any, Dict, List, Mapping, Optional


class LocalCluster:
    """Starts, inspects and damages one ``local-cluster`` SparkSession (see the module doc)."""

    def __init__(
        self,
        executors: int = 3,
        cores: int = 1,
        worker_mb: int = 1024,
        executor_memory: str = "768m",
        app_name: str = "kstate-cluster",
    ) -> None:
        self.n, self.cores, self.worker_mb = executors, cores, worker_mb
        self.executor_memory, self.app_name = executor_memory, app_name
        self.spark: Any = None

    @property
    def master(self) -> str:
        return f"local-cluster[{self.n},{self.cores},{self.worker_mb}]"

    def start(self, conf: Optional[Mapping[str, str]] = None, timeout_s: float = 180) -> "LocalCluster":
        """Starts the session (kstate jar and extension added) and waits for all executors."""
        import kstate
        from pyspark.sql import SparkSession

        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
        # Master, Workers and executors talk over loopback (no dependence on the host's address).
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        b = (
            kstate.configure(SparkSession.builder.master(self.master).appName(self.app_name))
            .config("spark.executor.memory", self.executor_memory)
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
        )
        for k, v in (conf or {}).items():
            b = b.config(k, str(v))
        self.spark = b.getOrCreate()
        self.spark.sparkContext.setLogLevel("ERROR")
        self._wait(lambda ids: len(ids) >= self.n, timeout_s, f"{self.n} executors")
        return self

    def stop(self) -> None:
        if self.spark is not None:
            for q in self.spark.streams.active:
                try:
                    q.stop()
                except Exception:
                    pass
            self.spark.stop()
            self.spark = None

    def __enter__(self) -> "LocalCluster":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # --- inspection ------------------------------------------------------------------------

    def executor_ids(self) -> List[str]:
        """Executors registered with the driver's scheduler now (no driver)."""
        seq = self.spark.sparkContext._jsc.sc().getExecutorIds()
        return sorted(str(seq.apply(i)) for i in range(seq.size()))

    def executors(self, timeout_s: float = 60) -> Dict[str, int]:
        """{executor id: pid of its JVM} of every registered executor, found by running tasks.

        One job of many small tasks; repeated until every registered executor has answered
        (the scheduler may give all tasks of one job to a few executors).
        """
        sc = self.spark.sparkContext

        # Defined here, not at module level: cloudpickle ships a nested function by value, and
        # the executors' Python workers cannot import this test module.
        def executor_of_this_process(_: Any) -> Any:
            """Runs in a task: (executor id, pid) of the executor JVM that runs this Python worker.

            A Python worker is a descendant of its executor's JVM (JVM -> pyspark daemon -> worker);
            the JVM is the ancestor whose command line is ``CoarseGrainedExecutorBackend``, and its
            ``--executor-id`` argument is Spark's executor id (``SparkEnv.executorId``).
            """
            import os as _os

            pid = _os.getpid()
            while pid > 1:
                try:
                    with open(f"/proc/{pid}/cmdline", "rb") as f:
                        argv = f.read().split(b"\0")
                    with open(f"/proc/{pid}/stat") as f:
                        parent = int(f.read().rsplit(")", 1)[1].split()[1])
                except OSError:
                    break
                if b"org.apache.spark.executor.CoarseGrainedExecutorBackend" in argv and b"--executor-id" in argv:
                    yield argv[argv.index(b"--executor-id") + 1].decode(), pid
                    return
                pid = parent
            raise RuntimeError(f"no executor JVM among the ancestors of Python worker {_os.getpid()}")

        found: Dict[str, int] = {}
        deadline = time.monotonic() + timeout_s
        while True:
            want = set(self.executor_ids())
            tasks = 8 * max(len(want), 1)
            found.update(sc.parallelize(range(tasks), tasks).mapPartitions(executor_of_this_process).collect())
            live = {e: p for e, p in found.items() if e in want}
            if want and want <= set(live):
                return live
            if time.monotonic() > deadline:
                raise TimeoutError(f"executors {sorted(want - set(live))} ran no task in {timeout_s} s")

    def state_locations(self, query: Any, partitions: int, store: str = "default") -> Dict[int, str]:
        """{state partition: executor id} of the one stateful operator of a running ``query``,
        as Spark's state store coordinator records them: the executor that last loaded each
        partition's store, Spark's placement hint (``executor_<host>_<id>``). Internal API,
        via py4j. The operator id is the name of the operator's directory under the
        checkpoint's ``state/`` (kstate derives it from the operator's name, not 0, 1, ...)."""
        jvm = self.spark.sparkContext._jvm
        state = jvm.org.apache.spark.sql.execution.streaming.state
        root = str(query._jsq.streamingQuery().checkpointFile("state"))  # as Spark spells it
        path = jvm.org.apache.hadoop.fs.Path(root)  # local, HDFS or S3: through Hadoop
        fs = path.getFileSystem(self.spark._jsparkSession.sessionState().newHadoopConf())
        operators = [s.getPath().getName() for s in fs.listStatus(path) if s.getPath().getName().lstrip("-").isdigit()]
        if len(operators) != 1:
            raise ValueError(f"expected one stateful operator under {root}, found {operators}")
        run_id = jvm.java.util.UUID.fromString(str(query.runId))
        coordinator = self.spark._jsparkSession.streams().stateStoreCoordinator()
        out: Dict[int, str] = {}
        for p in range(partitions):
            store_id = state.StateStoreId(root, int(operators[0]), p, store)
            loc = coordinator.getLocation(state.StateStoreProviderId(store_id, run_id))
            if loc.isDefined():
                out[p] = str(loc.get()).rsplit("_", 1)[1]
        return out

    # --- damage ----------------------------------------------------------------------------

    def kill(self, executor_id: str, pids: Optional[Mapping[str, int]] = None) -> int:
        """``kill -9`` the JVM of ``executor_id``; returns its pid."""
        pid = (pids or self.executors())[executor_id]
        os.kill(pid, signal.SIGKILL)
        return pid

    def wait_for_replacement(self, lost: Any, timeout_s: float = 120) -> List[str]:
        """Waits until the driver has removed ``lost`` (an executor id or a list of them) and N
        executors are registered again."""
        gone = [lost] if isinstance(lost, str) else list(lost)
        return self._wait(
            lambda ids: not set(gone) & set(ids) and len(ids) >= self.n, timeout_s, f"executors {gone} replaced"
        )

    def wait_standbys_warm(self, query: Any, partitions: int, timeout_s: float = 120) -> List[Dict[str, Any]]:
        """Waits until every one of ``partitions`` state partitions of ``query`` has a standby at
        the newest committed version, as ``kstate.replica_status`` reports it; returns that
        status. Between micro-batches that is the status's ``committed_version`` (the version
        the last planned batch started from) + 1: that batch committed. (Not the last
        progress's ``batchId`` + 1: an idle trigger's progress carries the next batch's id.)"""
        import kstate

        deadline = time.monotonic() + timeout_s
        while True:
            status = kstate.replica_status(query)
            warm = [r for r in status if any(s.get("version") == r["committed_version"] + 1 for s in r["standbys"])]
            if len(warm) == partitions:
                return status
            if time.monotonic() > deadline:
                raise TimeoutError(f"standbys not warm after {timeout_s} s: {status}")
            time.sleep(0.25)

    def wait_warmups_ready(self, query: Any, lag: int = 1, timeout_s: float = 120) -> List[Dict[str, Any]]:
        """Waits until every warm-up copy of ``query`` holds a version within ``lag`` of the next
        micro-batch's start (the status's ``committed_version`` + 1, as in
        :meth:`wait_standbys_warm`), so that the next batch moves its store; returns the status."""
        import kstate

        deadline = time.monotonic() + timeout_s
        while True:
            status = kstate.replica_status(query)
            alive = set(self.executor_ids())
            cold = [
                r
                for r in status
                if r["warmup"] is not None
                and r["warmup"]["executor"] in alive
                and (r["warmup"]["version"] is None or r["warmup"]["version"] < r["committed_version"] + 1 - lag)
            ]
            if not cold:
                return status
            if time.monotonic() > deadline:
                raise TimeoutError(f"warm-ups not ready after {timeout_s} s: {status}")
            time.sleep(0.25)

    # --- capacity --------------------------------------------------------------------------

    def remove_executor(self, executor_id: str, timeout_s: float = 120) -> List[str]:
        """Takes ``executor_id`` away the way a scale-down does (``SparkContext.killExecutor``:
        the application then wants one executor fewer, so the Master does not replace it);
        returns the executors left."""
        before = len(self.executor_ids())
        self.spark.sparkContext._jsc.sc().killExecutor(executor_id)
        return self._wait(
            lambda ids: executor_id not in ids and len(ids) == before - 1, timeout_s, f"executor {executor_id} removed"
        )

    def add_executors(self, total: int, timeout_s: float = 180) -> List[str]:
        """Scales up to ``total`` executors (``SparkContext.requestTotalExecutors``; the Master
        starts the new ones on free Workers, as when a worker is added) and waits for them and
        for their kstate followers."""
        sc = self.spark.sparkContext
        empty = sc._jvm.PythonUtils.toScalaMap(sc._jvm.java.util.HashMap())
        sc._jsc.sc().requestTotalExecutors(total, 0, empty)
        ids = self.wait_for_executors(total, timeout_s)
        self.wait_for_followers(ids, timeout_s)
        return ids

    def wait_for_followers(self, executor_ids: List[str], timeout_s: float = 120) -> None:
        """Waits until kstate's replica coordinator hears from the follower of each of
        ``executor_ids`` (an executor registers with the scheduler before its plugin's follower
        first polls; until then it gets no copies). Internal API, via py4j."""
        jvm = self.spark.sparkContext._jvm
        rc = jvm.org.apache.spark.sql.kstate.replica.ReplicaCoordinator.current().get()
        deadline = time.monotonic() + timeout_s
        while not set(executor_ids) <= set(rc.followingExecutors()):
            if time.monotonic() > deadline:
                raise TimeoutError(f"followers of {executor_ids} not polling after {timeout_s} s")
            time.sleep(0.2)

    def wait_for_executors(self, n: int, timeout_s: float = 120) -> List[str]:
        """Waits until at least ``n`` executors are registered."""
        return self._wait(lambda ids: len(ids) >= n, timeout_s, f"{n} executors")

    def _wait(self, done: Any, timeout_s: float, what: str) -> List[str]:
        deadline = time.monotonic() + timeout_s
        while True:
            ids = self.executor_ids()
            if done(ids):
                return ids
            if time.monotonic() > deadline:
                raise TimeoutError(f"waited {timeout_s} s for {what}; executors now: {ids}")
            time.sleep(0.2)
