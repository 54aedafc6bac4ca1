"""py4j plumbing: the kstate jar, the JVM entry points and error translation.

On a Spark Connect session the same calls are recorded and made by the server's plugin
(:mod:`kstate._connect`); the helpers below (``jcol``, ``jdf``, ``jseq``, ``jsession``,
``to_df``) hand the JVM, or the recording, what each kind of session needs.
"""

from __future__ import annotations

import functools
import glob
import os
from typing import Any, Callable, TypeVar

import pyspark

from . import _connect
from ._jvm_errors import kstate_error_of
from .errors import KStateError

__version__ = "0.1.0"
#: The Spark minors kstate is built for: one jar each, ``kstate-spark<minor>_2.13-<version>.jar``.
SUPPORTED_SPARK_MINORS = ("4.2", "4.3")
#: The installed pyspark's Spark minor: the jar :func:`jar_path` picks is the one built for it.
SPARK_MINOR = ".".join(pyspark.__version__.split(".")[:2])
_JARS_DIR = os.path.join(os.path.dirname(__file__), "jars")
EXTENSION = "io.kstate.KStateExtensions"
PLUGIN = "io.kstate.KStatePlugin"

F = TypeVar("F", bound=Callable[..., Any])


def jar_name(spark_minor: str | None = None) -> str:
    """File name of the kstate jar built for ``spark_minor`` (default: the installed pyspark's).

    Examples
    --------
    >>> jar_name("4.2")
    'kstate-spark4.2_2.13-0.1.0.jar'
    """
    return f"kstate-spark{spark_minor or SPARK_MINOR}_2.13-{__version__}.jar"


def jar_path() -> str:
    """Path of the bundled kstate jar built for the installed pyspark's Spark minor.

    Raises ``KSTATE_SPARK_VERSION_MISMATCH`` when kstate is not built for that minor (see
    ``SUPPORTED_SPARK_MINORS``), ``KSTATE_JAR_MISSING`` when its jar is not in the package.
    """
    if SPARK_MINOR not in SUPPORTED_SPARK_MINORS:
        raise KStateError(
            "KSTATE_SPARK_VERSION_MISMATCH.INSTALLED_PYSPARK",
            {
                "kstateVersion": __version__,
                "supported": " and ".join(SUPPORTED_SPARK_MINORS),
                "pysparkVersion": pyspark.__version__,
                "install": " or ".join(m + ".x" for m in reversed(SUPPORTED_SPARK_MINORS)),
            },
        )
    here = _JARS_DIR
    jars = sorted(glob.glob(os.path.join(here, jar_name())))
    if not jars:
        raise KStateError(
            "KSTATE_JAR_MISSING",
            {"kstateVersion": __version__, "sparkMinor": SPARK_MINOR, "jar": jar_name(), "directory": here},
        )
    return jars[0]


def translate_errors(fn: F) -> F:
    """Re-raises JVM-side kstate errors as :class:`KStateError` (same error class)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except KStateError:
            raise
        except Exception as e:  # py4j / pyspark wrap JVM exceptions in several types
            k = kstate_error_of(e) or _connect.plugin_missing(e)
            if k is None:
                raise
            raise k from None

    return wrapper  # type: ignore[return-value]


def check_jvm(spark: Any) -> Any:
    """The session's JVM view after checking the kstate jar is loaded and matches.

    On a Spark Connect session: a :class:`kstate._connect.RemoteJvm` that records the calls for
    the server's kstate plugin (which checks its jar's version against this package's).
    """
    if _connect.is_connect(spark):
        return _connect.RemoteJvm(spark)
    if getattr(spark, "sparkContext", None) is None:  # not a session (None, a DataFrame, a path...)
        raise KStateError("KSTATE_INVALID_SESSION", {"type": type(spark).__name__})
    jvm = spark.sparkContext._jvm
    try:
        info = jvm.io.kstate.BuildInfo
        jar_version, jar_spark = str(info.version()), str(info.sparkMinor())
    except Exception as e:  # class not found: the jar is not on the classpath
        raise KStateError("KSTATE_JAR_NOT_LOADED", {"extension": EXTENSION}) from e
    if jar_version != __version__:
        raise KStateError("KSTATE_VERSION_MISMATCH", {"jarVersion": jar_version, "kstateVersion": __version__})
    spark_minor = ".".join(spark.version.split(".")[:2])
    if jar_spark != spark_minor:
        raise KStateError(
            "KSTATE_SPARK_VERSION_MISMATCH.SESSION",
            {"jarSpark": jar_spark, "sessionSpark": spark.version, "jar": jar_name(spark_minor)},
        )
    return jvm


def jcol(column: Any) -> Any:
    """A Column as a JVM call argument."""
    return _connect.ColumnArg(column) if _connect.is_connect(column) else column._jc


def jdf(df: Any) -> Any:
    """A DataFrame as a JVM call argument."""
    return _connect.RelationArg(df) if _connect.is_connect(df.sparkSession) else df._jdf


def jsession(spark: Any) -> Any:
    """A SparkSession as a JVM call argument."""
    return _connect.SESSION if _connect.is_connect(spark) else spark._jsparkSession


def jseq(jvm: Any, items: list) -> Any:
    """A Python list as a Scala ``Seq`` argument."""
    if isinstance(jvm, _connect.RemoteJvm):
        return list(items)
    return jvm.scala.jdk.javaapi.CollectionConverters.asScala(list(items)).toSeq()


def to_df(result: Any, spark: Any) -> Any:
    """The DataFrame a JVM call returned (on Connect: the recorded call, analyzed at once)."""
    if isinstance(result, _connect.Remote):
        return result._dataframe()
    from pyspark.sql import DataFrame

    return DataFrame(result, spark)


def checked(result: Any) -> Any:
    """A JVM call's non-DataFrame result (a table, a windowed stream) after its argument checks:
    on Connect the server makes the call now, so a bad argument raises here as on a classic
    session."""
    return result._checked() if isinstance(result, _connect.Remote) else result


def jvalue(result: Any) -> Any:
    """A JVM call's plain result (bool, str): on Connect the server's text of it."""
    return result._values()[0] if isinstance(result, _connect.Remote) else result
