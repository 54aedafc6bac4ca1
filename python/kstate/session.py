"""Adding kstate to a SparkSession."""
from __future__ import annotations

from typing import Any

from ._jvm import EXTENSION, jar_path

__all__ = ["configure"]


def configure(builder: Any) -> Any:
    """Adds the bundled kstate jar and its SQL extension to a ``SparkSession.Builder``.

    Parameters
    ----------
    builder : pyspark.sql.SparkSession.Builder
        The builder to configure; returned for chaining.

    Examples
    --------
    >>> spark = kstate.configure(SparkSession.builder.master("local[2]")).getOrCreate()
    """
    jar = jar_path()
    conf = getattr(builder, "_options", {})
    jars = [j for j in str(conf.get("spark.jars", "")).split(",") if j]
    exts = [e for e in str(conf.get("spark.sql.extensions", "")).split(",") if e]
    if jar not in jars:
        jars.append(jar)
    if EXTENSION not in exts:
        exts.append(EXTENSION)
    return builder.config("spark.jars", ",".join(jars)).config("spark.sql.extensions", ",".join(exts))
