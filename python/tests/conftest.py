"""Shared fixtures: ONE SparkSession with kstate for the whole test session."""

from __future__ import annotations

import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:  # `import _streaming`, `from models.dedup_model import ...`
    sys.path.insert(0, HERE)

# Spark's Python workers (if any) run this interpreter, not the system python3.
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)


@pytest.fixture(scope="session")
def spark():
    from _streaming import session_builder

    s = session_builder().getOrCreate()
    s.sparkContext.setLogLevel("WARN")
    yield s
    for q in s.streams.active:
        try:
            q.stop()
        except Exception:
            pass
    s.stop()


@pytest.fixture(scope="session")
def session_tmp(tmp_path_factory):
    """Factory of fresh directories that any test (incl. hypothesis examples) may use."""
    return tmp_path_factory


# Tests that run a real multi-executor Spark (local-cluster, ``cluster.py``) in a child process.
# Their placement depends on timing (spark.locality.wait against a busy 2-core machine), so they
# must not share the machine with another test worker: `make test` runs the rest of the suite in
# parallel (pytest-xdist, ``-m "not serial"``), then these alone (``-m serial``). A new module of
# such tests goes in this set.
SERIAL_MODULES = {"test_executor_loss"}


def pytest_configure(config):
    config.addinivalue_line("markers", "serial: runs a local-cluster; run alone, never next to another worker")


# The slowest modules (each runs driver processes that it kills), first: pytest-xdist's loadfile
# scheduling hands out modules in collection order, and one of these left for last would keep
# one worker busy alone for minutes.
SLOWEST_FIRST = [
    "test_spark_connect",
    "test_checkpoint_stores",
    "test_repartition",
    "test_schema_evolution",
    "test_tables_restart",
    "test_kill9_windows",
    "test_dedup_restart",
    "test_kafka_end_to_end",
]


def _rank(item) -> int:
    name = item.module.__name__ if item.module is not None else ""
    return SLOWEST_FIRST.index(name) if name in SLOWEST_FIRST else len(SLOWEST_FIRST)


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.module is not None and item.module.__name__ in SERIAL_MODULES:
            item.add_marker(pytest.mark.serial)
    items.sort(key=_rank)  # stable: each module keeps its own order
