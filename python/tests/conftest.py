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
