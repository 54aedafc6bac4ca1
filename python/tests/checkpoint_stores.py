"""Real checkpoint stores for the tests: an HDFS cluster and an S3 server on loopback, started and
stopped by the tests (docs/state-store.md, "Checkpoints on HDFS and S3").

- **HDFS**: Hadoop's own in-process cluster, ``MiniHadoopClusterManager`` from
  ``org.apache.hadoop:hadoop-client-minicluster`` (a NameNode and two DataNodes, no YARN), run
  with pyspark's Hadoop client jars; ``checkpointLocation`` = ``hdfs://127.0.0.1:<port>/...``.
- **S3**: s3proxy (``org.gaul:s3proxy``), an S3 server, with jclouds' in-memory ``transient``
  blob store; Spark reaches it through Hadoop's S3A connector (``hadoop-aws`` and the AWS SDK
  modules it uses), added to the tests' sessions by :func:`s3a_jars` and configured per bucket by
  :meth:`S3Server.settings`: ``checkpointLocation`` = ``s3a://<bucket>/...``. Why in-memory: with
  its ``filesystem`` blob store an empty "directory" (the marker S3A's ``mkdirs`` writes) lists as
  nothing, so Spark's file source failed at once (``No such file or directory:
  s3a://.../sources/0``); ``filesystem-nio2`` and ``transient-nio2`` answer a HEAD of a
  directory as a file (``FileAlreadyExistsException: Can't make directory``). The ``transient``
  store keeps S3's object semantics, and outlives every Spark process the tests start and kill.

The build fetches all of them from Maven Central: ``make checkpoint-stores-classpath`` (part of
``make test``) writes their classpaths to ``jvm/target/checkpoint-stores-classpath.json``
(``checkpointStoresClasspath`` in ``build.sbt``). Servers run as child processes in process groups
of their own, killed with their parent (see ``kafka_broker._die_with_parent``).
"""

from __future__ import annotations

import datetime
import hashlib
import hmac
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request
import uuid
from typing import Any, Dict, List, Optional

from kafka_broker import _die_with_parent, _java, free_port

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLASSPATH_FILE = os.path.join(ROOT, "jvm", "target", "checkpoint-stores-classpath.json")
START_TIMEOUT_S = 120
STOP_TIMEOUT_S = 20


class StoreSetupError(RuntimeError):
    """A checkpoint store cannot be started (what is missing and how to get it)."""


def classpaths() -> Dict[str, List[str]]:
    """``{"hdfs": [...], "s3server": [...], "s3a": [...]}`` as the build wrote them."""
    if not os.path.isfile(CLASSPATH_FILE):
        raise StoreSetupError(
            f"{CLASSPATH_FILE} not found: run `make checkpoint-stores-classpath` "
            "(bin/sbt checkpointStoresClasspath), which fetches them from Maven Central"
        )
    with open(CLASSPATH_FILE) as f:
        cp = json.load(f)
    missing = [j for js in cp.values() for j in js if not os.path.isfile(j)]
    if missing:
        raise StoreSetupError(
            f"jars listed in {CLASSPATH_FILE} are missing ({missing[:3]}...): "
            "run `bin/sbt checkpointStoresClasspath` again"
        )
    return cp


def s3a_jars() -> List[str]:
    """The jars a Spark session needs for ``s3a://`` paths (hadoop-aws, the AWS SDK modules)."""
    return classpaths()["s3a"]


def _pyspark_jars() -> str:
    import pyspark

    return os.path.join(os.path.dirname(pyspark.__file__), "jars", "*")


class _Service:
    """A JVM child process in a process group of its own, with a work directory and a log."""

    name = "service"

    def __init__(self) -> None:
        self.dir = tempfile.mkdtemp(prefix=f"kstate-{self.name}-")
        self.proc: Optional[subprocess.Popen] = None
        self.log_path = os.path.join(self.dir, f"{self.name}.log")

    def _spawn(self, cmd: List[str]) -> None:
        out = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            cmd, stdout=out, stderr=subprocess.STDOUT, cwd=self.dir, start_new_session=True, preexec_fn=_die_with_parent
        )
        out.close()

    def _wait(self, ready, what: str) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not ready():
            if self.proc.poll() is not None:
                raise StoreSetupError(f"{self.name} exited ({self.proc.returncode}) while starting:\n{self.log_tail()}")
            if time.monotonic() > deadline:
                raise StoreSetupError(f"{self.name}: no {what} within {START_TIMEOUT_S} s:\n{self.log_tail()}")
            time.sleep(0.2)

    def log_tail(self, lines: int = 40) -> str:
        if not os.path.exists(self.log_path):
            return ""
        with open(self.log_path, errors="replace") as f:
            return "".join(f.readlines()[-lines:])

    def start(self):
        try:
            self._start()
            return self
        except BaseException:
            self.stop()
            raise

    def _start(self) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        """Stops the process group (SIGTERM, then SIGKILL) and removes the work directory."""
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
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


class HdfsCluster(_Service):
    """A NameNode and ``datanodes`` DataNodes on loopback. ``with HdfsCluster() as h: h.url``."""

    name = "hdfs"

    def __init__(self, datanodes: int = 2) -> None:
        super().__init__()
        self.datanodes = datanodes
        self.port: Optional[int] = None

    @property
    def url(self) -> str:
        return f"hdfs://127.0.0.1:{self.port}"

    def _start(self) -> None:
        details = os.path.join(self.dir, "details.json")
        cp = os.pathsep.join(classpaths()["hdfs"] + [_pyspark_jars()])
        self._spawn(
            [
                _java(),
                "-Xmx512m",
                "-XX:+UseSerialGC",
                "-cp",
                cp,
                "org.apache.hadoop.mapreduce.MiniHadoopClusterManager",
                "-nomr",
                "-format",
                "-nnport",
                "0",
                "-nnhttpport",
                "0",
                "-datanodes",
                str(self.datanodes),
                "-writeDetails",
                details,
                "-D",
                f"hdfs.minidfs.basedir={os.path.join(self.dir, 'data')}",
                "-D",
                "dfs.replication=2",
            ]
        )
        self._wait(lambda: os.path.exists(details) and os.path.getsize(details) > 0, "NameNode")
        with open(details) as f:
            self.port = json.load(f)["namenode_port"]


class S3Server(_Service):
    """An S3 server on loopback with one bucket. ``with S3Server() as s: s.bucket, s.settings()``."""

    name = "s3"
    ACCESS_KEY = "kstate-test"
    SECRET_KEY = "kstate-test-secret"
    REGION = "us-east-1"

    def __init__(self) -> None:
        super().__init__()
        self.port = free_port()
        self.bucket = f"kstate-{uuid.uuid4().hex[:12]}"

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def settings(self) -> Dict[str, str]:
        """S3A settings for this server's bucket (per bucket, so servers of several test modules
        never share a cached file system's endpoint); set on a session with ``spark.conf.set``."""
        b = f"fs.s3a.bucket.{self.bucket}."
        return {
            b + "endpoint": self.endpoint,
            b + "path.style.access": "true",
            b + "access.key": self.ACCESS_KEY,
            b + "secret.key": self.SECRET_KEY,
            b + "connection.ssl.enabled": "false",
            b + "endpoint.region": self.REGION,
            b + "aws.credentials.provider": "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
        }

    def _start(self) -> None:
        conf = os.path.join(self.dir, "s3proxy.properties")
        with open(conf, "w") as f:
            f.write(
                f"s3proxy.endpoint={self.endpoint}\ns3proxy.authorization=aws-v2-or-v4\n"
                f"s3proxy.identity={self.ACCESS_KEY}\ns3proxy.credential={self.SECRET_KEY}\n"
                "jclouds.provider=transient\n"
                f"jclouds.identity={self.ACCESS_KEY}\njclouds.credential={self.SECRET_KEY}\n"
            )
        cp = os.pathsep.join(classpaths()["s3server"])
        self._spawn(
            [
                _java(),
                "-Xmx768m",
                "-XX:+UseSerialGC",
                "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
                "-Dlogback.configurationFile=" + self._logback(),
                "-cp",
                cp,
                "org.gaul.s3proxy.Main",
                "--properties",
                conf,
            ]
        )
        self._wait(self._answers, "listening server")
        self.request("PUT", f"/{self.bucket}")

    def _logback(self) -> str:
        path = os.path.join(self.dir, "logback.xml")
        with open(path, "w") as f:
            f.write(
                '<configuration><appender name="o" class="ch.qos.logback.core.ConsoleAppender">'
                '<encoder><pattern>%d %level %logger: %msg%n</pattern></encoder></appender>'
                '<root level="WARN"><appender-ref ref="o"/></root></configuration>'
            )
        return path

    def _answers(self) -> bool:
        try:
            urllib.request.urlopen(self.endpoint + "/", timeout=1)
        except urllib.error.HTTPError:
            return True  # it answered (403: unsigned)
        except OSError:
            return False
        return True

    def request(self, method: str, path: str, body: bytes = b"") -> bytes:
        """A request signed with AWS Signature Version 4 (for what S3A does not do: buckets)."""
        now = datetime.datetime.now(datetime.timezone.utc)
        amz_date, day = now.strftime("%Y%m%dT%H%M%SZ"), now.strftime("%Y%m%d")
        payload = hashlib.sha256(body).hexdigest()
        host = f"127.0.0.1:{self.port}"
        headers = {"host": host, "x-amz-content-sha256": payload, "x-amz-date": amz_date}
        signed = ";".join(sorted(headers))
        canonical = "\n".join(
            [method, path, "", "".join(f"{k}:{headers[k]}\n" for k in sorted(headers)), signed, payload]
        )
        scope = f"{day}/{self.REGION}/s3/aws4_request"
        to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()])

        def h(key: bytes, msg: str) -> bytes:
            return hmac.new(key, msg.encode(), hashlib.sha256).digest()

        key = h(h(h(h(("AWS4" + self.SECRET_KEY).encode(), day), self.REGION), "s3"), "aws4_request")
        signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
        req = urllib.request.Request(
            self.endpoint + path,
            data=body or None,
            method=method,
            headers={
                "x-amz-content-sha256": payload,
                "x-amz-date": amz_date,
                "Authorization": f"AWS4-HMAC-SHA256 Credential={self.ACCESS_KEY}/{scope}, SignedHeaders={signed}, "
                f"Signature={signature}",
            },
        )
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.read()
