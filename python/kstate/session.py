"""Adding kstate to a SparkSession."""

from __future__ import annotations

from typing import Any

from ._jvm import EXTENSION, PLUGIN, jar_path

__all__ = ["configure"]


def configure(builder: Any) -> Any:
    """Adds the bundled kstate jar, its SQL extension and its plugin to a ``SparkSession.Builder``.

    The plugin (``spark.plugins=io.kstate.KStatePlugin``) keeps standby replicas when
    ``spark.kstate.standbyReplicas`` is above 0 (docs/replicas.md); with the default 0 it holds
    nothing. Settings already on the builder are kept: kstate's entries are appended to them.

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
    plugins = [p for p in str(conf.get("spark.plugins", "")).split(",") if p]
    if jar not in jars:
        jars.append(jar)
    if EXTENSION not in exts:
        exts.append(EXTENSION)
    if PLUGIN not in plugins:
        plugins.append(PLUGIN)
    return (
        builder.config("spark.jars", ",".join(jars))
        .config("spark.sql.extensions", ",".join(exts))
        .config("spark.plugins", ",".join(plugins))
    )
