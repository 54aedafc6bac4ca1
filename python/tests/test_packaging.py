"""The jar ships inside the Python package, and plain spark-submit --jars works."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import kstate

ROOT = Path(__file__).resolve().parents[2]


def test_pip_install_bundles_the_jar_and_spark_submit_runs_kstate(tmp_path: Path) -> None:
    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target),
         str(ROOT / "python")],
        check=True, cwd=tmp_path)
    # the jar for the installed pyspark's Spark minor (kstate-spark<minor>_2.13-<version>.jar)
    jar = target / "kstate" / "jars" / kstate._jvm.jar_name()
    assert jar.is_file(), "pip install must bundle the kstate jar for the installed pyspark"

    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent("""
        import kstate
        from pyspark.sql import SparkSession
        spark = SparkSession.builder.getOrCreate()
        df = spark.createDataFrame([("k", 1000), ("k", 2000), ("k", 30000)], "k string, ts long")
        out = df.coalesce(1).kstate.deduplicate_by_key("10s", key="k", timestamp="ts")
        print("RESULT", sorted(r.ts for r in out.collect()))
    """))
    bin_dir = Path(sys.executable).parent
    env = {**os.environ, "PYTHONPATH": str(target), "PYSPARK_PYTHON": sys.executable,
           "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run(
        [str(bin_dir / "spark-submit"), "--master", "local[1]", "--jars", str(jar),
         "--conf", f"spark.sql.extensions={kstate.EXTENSION}", str(script)],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "RESULT [1000, 30000]" in done.stdout


def test_configure_adds_jar_and_extension_once() -> None:
    class Builder:
        def __init__(self) -> None:
            self._options: dict = {"spark.jars": "/other.jar"}

        def config(self, k: str, v: str) -> "Builder":
            self._options[k] = v
            return self

    b = kstate.configure(kstate.configure(Builder()))
    assert b._options["spark.jars"].split(",") == ["/other.jar", kstate.jar_path()]
    assert b._options["spark.sql.extensions"] == kstate.EXTENSION
