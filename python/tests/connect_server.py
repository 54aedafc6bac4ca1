"""pyspark's bundled Spark Connect server, with or without kstate's plugin, for
``test_spark_connect.py`` (docs/connect.md, "Tests").

:class:`ConnectServer` runs ``$SPARK_HOME/sbin/start-connect-server.sh`` (``SPARK_HOME``: the
installed pyspark package, which ships the script and Spark's jars, the Connect server's
included) on a free loopback port, with its logs and pid file in a temporary directory of its
own, waits until the port answers, and stops it with ``stop-connect-server.sh`` (then by its pid,
SIGKILL, should that leave it running). :meth:`log_tail` is the end of the server's log, for a
failing test's message.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from typing import Dict, Optional

import kstate
import pyspark

SPARK_HOME = os.path.dirname(os.path.abspath(pyspark.__file__))
START_TIMEOUT_S = 180

# What the tests' classic session has (_streaming.session_builder), for the same results.
SESSION_CONF = {
    "spark.sql.shuffle.partitions": "2",
    "spark.ui.enabled": "false",
    "spark.sql.streaming.stateStore.maintenanceInterval": "600s",
    "spark.sql.session.timeZone": "UTC",
}


def plugin_conf() -> Dict[str, str]:
    """The settings a Connect server needs for kstate, as docs/connect.md gives them."""
    return {
        "spark.connect.extensions.relation.classes": "io.kstate.KStateConnectPlugin",
        "spark.sql.extensions": kstate.EXTENSION,
        "spark.plugins": "io.kstate.KStatePlugin",
    }


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ConnectServer:
    """One Connect server process (``with_kstate=False``: no kstate jar, no plugin)."""

    def __init__(self, with_kstate: bool = True):
        self.with_kstate = with_kstate
        self.port = _free_port()
        self.dir = tempfile.mkdtemp(prefix="kstate-connect-")
        self.ident = "kstate-" + uuid.uuid4().hex[:8]
        self.env = dict(
            os.environ,
            SPARK_HOME=SPARK_HOME,
            SPARK_LOG_DIR=os.path.join(self.dir, "logs"),
            SPARK_PID_DIR=os.path.join(self.dir, "pid"),
            SPARK_IDENT_STRING=self.ident,
        )
        self.env.pop("SPARK_CONNECT_MODE_ENABLED", None)
        # the server logs warnings and errors only (Spark's default is INFO: megabytes per module)
        conf_dir = os.path.join(self.dir, "conf")
        os.makedirs(conf_dir)
        with open(os.path.join(conf_dir, "log4j2.properties"), "w") as f:
            f.write(
                "rootLogger.level = warn\nrootLogger.appenderRef.stdout.ref = console\n"
                "appender.console.type = Console\nappender.console.name = console\n"
                "appender.console.target = SYSTEM_ERR\nappender.console.layout.type = PatternLayout\n"
                "appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex\n"
            )
        self.env["SPARK_CONF_DIR"] = conf_dir

    @property
    def url(self) -> str:
        return f"sc://127.0.0.1:{self.port}"

    def _script(self, name: str) -> str:
        return os.path.join(SPARK_HOME, "sbin", name)

    def start(self) -> "ConnectServer":
        conf = dict(
            SESSION_CONF,
            **{"spark.connect.grpc.binding.port": str(self.port), "spark.connect.grpc.binding.address": "127.0.0.1"},
        )
        args = ["bash", self._script("start-connect-server.sh"), "--master", "local[2]"]
        if self.with_kstate:
            conf.update(plugin_conf())
            args += ["--jars", kstate.jar_path()]
        for k, v in conf.items():
            args += ["--conf", f"{k}={v}"]
        subprocess.run(args, env=self.env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + START_TIMEOUT_S
        while not self._answers():
            if time.monotonic() > deadline or self._pid() is None:
                log = self.log_tail()
                self.stop()
                raise RuntimeError(f"the Spark Connect server did not start on {self.url}:\n{log}")
            time.sleep(0.5)
        return self

    def _answers(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                return True
        except OSError:
            return False

    def _pid(self) -> Optional[int]:
        pid_dir = self.env["SPARK_PID_DIR"]
        if not os.path.isdir(pid_dir):
            return None
        for f in os.listdir(pid_dir):
            with open(os.path.join(pid_dir, f)) as fh:
                pid = int(fh.read().strip() or 0)
            try:
                os.kill(pid, 0)
                return pid
            except OSError:
                return None
        return None

    def log_tail(self, lines: int = 60) -> str:
        log_dir = self.env["SPARK_LOG_DIR"]
        if not os.path.isdir(log_dir):
            return "(no server log)"
        out = []
        for f in sorted(os.listdir(log_dir)):
            with open(os.path.join(log_dir, f), errors="replace") as fh:
                out.append(f"--- {f}\n" + "".join(fh.readlines()[-lines:]))
        return "\n".join(out)

    def stop(self) -> None:
        pid = self._pid()
        subprocess.run(
            ["bash", self._script("stop-connect-server.sh")],
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 30
        while pid is not None and time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except OSError:
                break
            time.sleep(0.2)
        else:
            if pid is not None:
                os.kill(pid, signal.SIGKILL)
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> "ConnectServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def remote_session(url: str):
    """A Spark Connect session to ``url``, leaving this process's classic session as it was
    (pyspark's builder marks the whole process as Connect, which turns ``F.col`` into Connect
    columns for the classic tests too)."""
    from pyspark.sql.connect.session import SparkSession as RemoteSparkSession

    had = "SPARK_CONNECT_MODE_ENABLED" in os.environ
    session = RemoteSparkSession.builder.remote(url).create()
    if not had:
        os.environ.pop("SPARK_CONNECT_MODE_ENABLED", None)
    return session
