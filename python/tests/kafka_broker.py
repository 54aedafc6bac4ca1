"""A real single-node Kafka broker (KRaft) for the end-to-end tests and ``make demo-kafka``.

The broker is ``kafka.Kafka`` from ``org.apache.kafka:kafka_2.13`` (and ``kafka-tools``), fetched
by the build as a test dependency: ``make kafka-classpath`` (part of ``make test``) writes its
classpath and the Spark Kafka connector's jars to ``jvm/target/kafka-test-classpath.json``
(``kafkaTestClasspath`` in ``build.sbt``). :func:`classpaths` reads that file.

:class:`KafkaBroker` formats a log directory in a temporary directory, starts the broker on free
loopback ports as a child process in a process group of its own, waits until it answers, and
stops it by that process group (SIGTERM, then SIGKILL): no JVM outlives :meth:`stop`, which the
context manager and the pytest fixture always call; and if the process that started it dies
without calling it, the kernel kills the broker (Linux parent-death signal).

Clients: topics are created and records with explicit timestamps produced through Kafka's own
Java clients (``kafka-clients``, on the Spark driver's classpath through ``spark.jars``) called
from Python over the SparkSession's Py4J gateway; records are read back with Spark's batch
``kafka`` source (:func:`read_topic`). No Python Kafka client is needed.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from typing import Any, Dict, Iterable, List, Optional

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLASSPATH_FILE = os.path.join(ROOT, "jvm", "target", "kafka-test-classpath.json")

START_TIMEOUT_S = 90
STOP_TIMEOUT_S = 20


class KafkaSetupError(RuntimeError):
    """The broker or the connector cannot be used (what is missing and how to get it)."""


def classpaths() -> Dict[str, List[str]]:
    """``{"broker": [jars], "connector": [jars]}`` as the build wrote them."""
    if not os.path.isfile(CLASSPATH_FILE):
        raise KafkaSetupError(
            f"{CLASSPATH_FILE} not found: run `make kafka-classpath` (or `bin/sbt kafkaTestClasspath`), "
            "which fetches the Kafka broker and Spark's Kafka connector from Maven Central"
        )
    with open(CLASSPATH_FILE) as f:
        cp = json.load(f)
    missing = [j for j in cp["broker"] + cp["connector"] if not os.path.isfile(j)]
    if missing:
        raise KafkaSetupError(
            f"jars listed in {CLASSPATH_FILE} are missing ({missing[:3]}...): "
            "run `bin/sbt kafkaTestClasspath` to fetch them again"
        )
    return cp


def connector_jars() -> List[str]:
    """The jars to add to ``spark.jars`` for Spark's ``kafka`` source and sink."""
    return classpaths()["connector"]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _cluster_id() -> str:
    """A KRaft cluster id: 16 random bytes, URL-safe base64 without padding (what
    ``kafka-storage.sh random-uuid`` prints), made here to save a JVM start. Like Kafka's
    ``Uuid.randomUuid``, never one starting with ``-`` (the tool would read it as an option)."""
    while True:
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cid.startswith("-"):
            return cid


def _die_with_parent() -> None:
    """In the broker's process before exec: SIGKILL when the process that started it dies (Linux
    ``PR_SET_PDEATHSIG``), so not even a killed test run leaves the broker's JVM behind."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # 1 = PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass  # not Linux: stop() and the fixture's teardown still stop it


def _java() -> str:
    home = os.environ.get("JAVA_HOME")
    return os.path.join(home, "bin", "java") if home else "java"


class KafkaBroker:
    """One broker+controller on 127.0.0.1. ``with KafkaBroker() as b: b.bootstrap`` ..."""

    def __init__(self, partitions: int = 3, workdir: Optional[str] = None) -> None:
        self.partitions = partitions
        self._own_dir = workdir is None
        self.dir = workdir or tempfile.mkdtemp(prefix="kstate-kafka-")
        self.port = free_port()
        self.controller_port = free_port()
        while self.controller_port == self.port:
            self.controller_port = free_port()
        self.proc: Optional[subprocess.Popen] = None
        self.log_path = os.path.join(self.dir, "broker.log")

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _properties(self) -> str:
        props = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.voters": f"1@127.0.0.1:{self.controller_port}",
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": os.path.join(self.dir, "logs"),
            "num.partitions": str(self.partitions),
            "offsets.topic.replication.factor": "1",
            "offsets.topic.num.partitions": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
            # records keep the producer's timestamps (the tests' event times), and are never
            # deleted for being old by them (retention goes by record timestamps)
            "log.message.timestamp.type": "CreateTime",
            "log.retention.ms": "-1",
            "log.message.timestamp.before.max.ms": str(2**62),
            "log.message.timestamp.after.max.ms": str(2**62),
        }
        path = os.path.join(self.dir, "server.properties")
        with open(path, "w") as f:
            for k, v in props.items():
                f.write(f"{k}={v}\n")
        return path

    def _java_cmd(self, heap: str, main: str, *args: str) -> List[str]:
        cp = os.pathsep.join(classpaths()["broker"])
        return [
            _java(),
            f"-Xmx{heap}",
            "-XX:TieredStopAtLevel=1",
            "-XX:+UseSerialGC",
            "-Dlog4j.configuration=" + self._log4j(),
            "-cp",
            cp,
            main,
            *args,
        ]

    def _log4j(self) -> str:
        """reload4j configuration: warnings and errors to the broker's log file."""
        path = os.path.join(self.dir, "log4j.properties")
        with open(path, "w") as f:
            f.write(
                "log4j.rootLogger=WARN, file\n"
                "log4j.appender.file=org.apache.log4j.FileAppender\n"
                f"log4j.appender.file.File={self.log_path}\n"
                "log4j.appender.file.layout=org.apache.log4j.PatternLayout\n"
                "log4j.appender.file.layout.ConversionPattern=%d %p %c: %m%n\n"
            )
        return "file:" + path

    def start(self) -> "KafkaBroker":
        """Formats the log directory and starts the broker; returns when it accepts connections.
        On any failure the broker is stopped and its directory removed before the error propagates."""
        try:
            return self._start()
        except BaseException:
            self.stop()
            raise

    def _start(self) -> "KafkaBroker":
        props = self._properties()
        fmt = subprocess.run(
            self._java_cmd(
                "256m", "kafka.tools.StorageTool", "format", "-t", _cluster_id(), "-c", props, "--standalone"
            ),
            capture_output=True,
            text=True,
            timeout=120,
        )
        if fmt.returncode != 0:
            raise KafkaSetupError(f"formatting the broker's storage failed:\n{fmt.stdout}\n{fmt.stderr}")
        out = open(os.path.join(self.dir, "broker.out"), "w")
        self.proc = subprocess.Popen(
            self._java_cmd("512m", "kafka.Kafka", props),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )
        out.close()
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if self.proc.poll() is not None:
                raise KafkaSetupError(f"the broker exited ({self.proc.returncode}) while starting:\n{self.log_tail()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return self
            except OSError as e:
                if time.monotonic() > deadline:
                    raise KafkaSetupError(
                        f"the broker did not listen within {START_TIMEOUT_S} s:\n{self.log_tail()}"
                    ) from e
                time.sleep(0.2)

    def log_tail(self, lines: int = 40) -> str:
        text = ""
        for name in ("broker.out", "broker.log"):
            p = os.path.join(self.dir, name)
            if os.path.exists(p):
                with open(p, errors="replace") as f:
                    text += "".join(f.readlines()[-lines:])
        return text

    def stop(self) -> None:
        """Stops the broker's process group (SIGTERM, then SIGKILL) and removes its directory."""
        p, self.proc = self.proc, None
        if p is not None and p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGTERM)
                p.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(timeout=STOP_TIMEOUT_S)
            except ProcessLookupError:
                pass
        if self._own_dir:
            shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> "KafkaBroker":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


class KafkaClients:
    """Kafka's Java admin client and producer in the Spark driver's JVM (through Py4J)."""

    def __init__(self, spark, bootstrap: str) -> None:
        self.jvm = spark._jvm
        self.bootstrap = bootstrap
        self._producer = None

    def _props(self, **extra: str):
        p = self.jvm.java.util.Properties()
        p.setProperty("bootstrap.servers", self.bootstrap)
        for k, v in extra.items():
            p.setProperty(k.replace("_", "."), v)
        return p

    def create_topic(self, name: str, partitions: int = 3) -> None:
        """Creates ``name`` with ``partitions`` partitions and waits until every partition has a
        leader (retrying while the new broker is still electing itself)."""
        admin = self.jvm.org.apache.kafka.clients.admin.Admin.create(self._props())
        try:
            topic = self.jvm.org.apache.kafka.clients.admin.NewTopic(name, partitions, 1)
            topics = self.jvm.java.util.ArrayList()
            topics.add(topic)
            admin.createTopics(topics).all().get(60, self.jvm.java.util.concurrent.TimeUnit.SECONDS)
            names = self.jvm.java.util.ArrayList()
            names.add(name)
            deadline = time.monotonic() + 60
            while True:
                desc = (
                    admin.describeTopics(names).allTopicNames().get(60, self.jvm.java.util.concurrent.TimeUnit.SECONDS)
                )
                parts = desc.get(name).partitions()
                if parts.size() == partitions and all(parts.get(i).leader() is not None for i in range(partitions)):
                    return
                assert time.monotonic() < deadline, f"topic {name}: partitions without a leader"
                time.sleep(0.2)
        finally:
            admin.close()

    def producer(self):
        if self._producer is None:
            ser = "org.apache.kafka.common.serialization.StringSerializer"
            self._producer = self.jvm.org.apache.kafka.clients.producer.KafkaProducer(
                self._props(
                    key_serializer=ser, value_serializer=ser, acks="all", linger_ms="5", enable_idempotence="true"
                )
            )
        return self._producer

    def produce(self, topic: str, records: Iterable[Dict[str, Any]]) -> None:
        """Sends records ``{"partition", "ts", "key", "value"}`` in order (so each partition gets
        its records in the order given: that order is the offsets'), then waits for every ack."""
        prod = self.producer()
        Long = self.jvm.java.lang.Long
        Integer = self.jvm.java.lang.Integer
        futures = []
        for r in records:
            rec = self.jvm.org.apache.kafka.clients.producer.ProducerRecord(
                topic, Integer.valueOf(r["partition"]), Long.valueOf(r["ts"]), r["key"], r["value"]
            )
            futures.append(prod.send(rec))
        prod.flush()
        for fut in futures:
            fut.get()

    def close(self) -> None:
        if self._producer is not None:
            self._producer.close()
            self._producer = None


def read_topic(spark, bootstrap: str, topic: str) -> List[Dict[str, Any]]:
    """Every record of ``topic`` (Spark's batch ``kafka`` source): dicts of partition, offset,
    timestamp (epoch ms), key and value (strings), ordered by partition and offset."""
    from pyspark.sql import functions as F

    df = (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("endingOffsets", "latest")
        .load()
        .select(
            "partition",
            "offset",
            F.unix_millis("timestamp").alias("timestamp"),
            F.col("key").cast("string").alias("key"),
            F.col("value").cast("string").alias("value"),
        )
    )
    return [r.asDict() for r in df.orderBy("partition", "offset").collect()]
