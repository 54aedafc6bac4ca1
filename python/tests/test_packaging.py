"""The jar ships inside the Python package, plain spark-submit --jars works, and the package's
metadata lets pip install it beside every pyspark kstate supports."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import kstate
import pyspark
import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[2]


def test_pip_install_bundles_the_jar_and_spark_submit_runs_kstate(tmp_path: Path) -> None:
    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), str(ROOT / "python")],
        check=True,
        cwd=tmp_path,
    )
    # the jar for the installed pyspark's Spark minor (kstate-spark<minor>_2.13-<version>.jar)
    jar = target / "kstate" / "jars" / kstate._jvm.jar_name()
    assert jar.is_file(), "pip install must bundle the kstate jar for the installed pyspark"
    assert (target / "kstate" / "error_conditions.json").is_file(), "the error conditions are package data"

    script = tmp_path / "job.py"
    script.write_text(
        textwrap.dedent("""
        import kstate
        from pyspark.sql import SparkSession
        spark = SparkSession.builder.getOrCreate()
        df = spark.createDataFrame([("k", 1000), ("k", 2000), ("k", 30000)], "k string, ts long")
        out = df.coalesce(1).kstate.deduplicate_by_key("10s", key="k", timestamp="ts")
        print("RESULT", sorted(r.ts for r in out.collect()))
        try:  # an error of the jar's (its conditions resource) arriving as the package's KStateError
            df.kstate.deduplicate_by_key("10s", key="nope", timestamp="ts")
        except kstate.KStateError as e:
            print("ERROR", e.getCondition(), e.getSqlState(), e.getMessageParameters()["role"])
    """)
    )
    bin_dir = Path(sys.executable).parent
    env = {
        **os.environ,
        "PYTHONPATH": str(target),
        "PYSPARK_PYTHON": sys.executable,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    done = subprocess.run(
        [
            str(bin_dir / "spark-submit"),
            "--master",
            "local[1]",
            "--jars",
            str(jar),
            "--conf",
            f"spark.sql.extensions={kstate.EXTENSION}",
            str(script),
        ],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "RESULT [1000, 30000]" in done.stdout
    assert "ERROR KSTATE_MISSING_COLUMN 42703 key" in done.stdout, done.stdout


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


def _pyspark_requirement(pyproject: Path) -> Requirement:
    import tomllib

    with open(pyproject, "rb") as f:
        deps = [Requirement(d) for d in tomllib.load(f)["project"]["dependencies"]]
    [req] = [d for d in deps if d.name == "pyspark"]
    return req


def test_the_metadata_admits_every_spark_minor_kstate_ships_a_jar_for() -> None:
    req = _pyspark_requirement(ROOT / "python" / "pyproject.toml")
    for minor in kstate._jvm.SUPPORTED_SPARK_MINORS:
        for patch in ("0", "1", "9"):
            assert f"{minor}.{patch}" in req.specifier, f"pyspark {minor}.{patch} excluded by {req}"
    assert "4.1.0" not in req.specifier and "4.4.0" not in req.specifier


@pytest.fixture(scope="module")
def wheels(tmp_path_factory) -> dict:
    """The package as a wheel, as is and with metadata that excludes the installed pyspark.

    Built with pip's build isolation (setuptools from the package index, as the spark-submit test
    above); only the installs below are kept off every index."""
    out = tmp_path_factory.mktemp("wheels")
    built = {}
    excluded = out / "excluded-src"
    shutil.copytree(
        ROOT / "python", excluded, ignore=shutil.ignore_patterns("tests", "build", "*.egg-info", "__pycache__")
    )
    pyproject = excluded / "pyproject.toml"
    text = pyproject.read_text()
    major = int(pyspark.__version__.split(".")[0])
    pin = f'"pyspark>={major + 90}"'
    text, n = re.subn(r'^dependencies = \[.*\]$', f"dependencies = [{pin}]", text, flags=re.M)
    assert n == 1
    pyproject.write_text(text)
    for name, src in (("ok", ROOT / "python"), ("excluded", excluded)):
        dest = out / name
        subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(dest), str(src)], check=True, cwd=out
        )
        [built[name]] = list(dest.glob("kstate-*.whl"))
    return built


def _venv_seeing_this_pyspark(path: Path) -> Path:
    """A new venv whose interpreter sees this environment's installed packages (pyspark among
    them) but installs into its own site-packages. A venv made from a venv's interpreter with
    --system-site-packages sees the base interpreter's packages, not the venv's: a .pth file adds
    this environment's site-packages."""
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(path)], check=True)
    py = path / "bin" / "python"
    site = subprocess.run(
        [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    Path(site, "parent_env.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return py


def _pip_install_offline(py: Path, wheel: Path, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    return subprocess.run(
        [str(py), "-m", "pip", "install", "--no-index", "--no-cache-dir", "--disable-pip-version-check", str(wheel)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_pip_resolves_the_installed_pyspark_without_an_index(tmp_path: Path, wheels: dict) -> None:
    """pip resolves kstate's dependencies against the installed pyspark (4.3 in .venv, 4.2 in
    .venv-spark42) with no index to download from: the metadata must admit it."""
    py = _venv_seeing_this_pyspark(tmp_path / "venv")
    done = _pip_install_offline(py, wheels["ok"], tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert re.search(
        r"Requirement already satisfied: pyspark.*\(" + re.escape(pyspark.__version__) + r"\)", done.stdout
    ), done.stdout
    check = subprocess.run(
        [
            str(py),
            "-c",
            "import importlib.metadata as m, importlib.util as u, kstate, pyspark; "
            "print(m.version('kstate'), pyspark.__version__, kstate.jar_path(), kstate.__file__, "
            "u.find_spec('kstate.proto.connect_pb2').origin)",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert check[:2] == [kstate.__version__, pyspark.__version__]
    assert check[2].endswith(kstate._jvm.jar_name()) and check[3].startswith(str(tmp_path / "venv"))
    assert check[4].startswith(str(tmp_path / "venv"))  # the Connect protocol module is packaged


def test_pip_refuses_metadata_that_excludes_the_installed_pyspark(tmp_path: Path, wheels: dict) -> None:
    """The counterpart: with metadata that excludes the installed pyspark, the same install fails
    resolution (this is what the 4.3-only pin did under pyspark 4.2)."""
    py = _venv_seeing_this_pyspark(tmp_path / "venv")
    done = _pip_install_offline(py, wheels["excluded"], tmp_path)
    assert done.returncode != 0
    assert "No matching distribution found for pyspark" in done.stdout + done.stderr, done.stdout + done.stderr
