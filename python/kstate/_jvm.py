"""py4j plumbing: the kstate jar, the JVM entry points and error translation."""
from __future__ import annotations

import functools
import glob
import os
from typing import Any, Callable, TypeVar

from .errors import KStateError

__version__ = "0.1.0"
SPARK_MINOR = "4.3"
EXTENSION = "io.kstate.KStateExtensions"
PLUGIN = "io.kstate.KStatePlugin"

F = TypeVar("F", bound=Callable[..., Any])


def jar_path() -> str:
    """Path of the kstate jar bundled in this package."""
    here = os.path.join(os.path.dirname(__file__), "jars")
    jars = sorted(glob.glob(os.path.join(here, f"kstate_2.13-{__version__}.jar")))
    if not jars:
        raise KStateError(
            "KSTATE_JAR_MISSING",
            f"the kstate jar for version {__version__} is not in {here}. Reinstall the kstate "
            "package, or run 'make jar' in a source checkout.",
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
            k = KStateError.from_jvm(e)
            if k is None:
                raise
            raise k from None

    return wrapper  # type: ignore[return-value]


def check_jvm(spark: Any) -> Any:
    """The session's JVM view after checking the kstate jar is loaded and matches."""
    _reject_connect(spark)
    jvm = spark.sparkContext._jvm
    try:
        info = jvm.io.kstate.BuildInfo
        jar_version, jar_spark = str(info.version()), str(info.sparkMinor())
    except Exception as e:  # class not found: the jar is not on the classpath
        raise KStateError(
            "KSTATE_JAR_NOT_LOADED",
            "the kstate jar is not on this SparkSession's classpath. Build the session with "
            "kstate.configure(SparkSession.builder) (or spark-submit --jars <kstate jar> "
            f"--conf spark.sql.extensions={EXTENSION}).",
        ) from e
    if jar_version != __version__:
        raise KStateError(
            "KSTATE_VERSION_MISMATCH",
            f"the kstate jar on the classpath is version {jar_version} but the Python package is "
            f"{__version__}. Use the jar bundled with this package: kstate.jar_path().",
        )
    spark_minor = ".".join(spark.version.split(".")[:2])
    if jar_spark != spark_minor:
        raise KStateError(
            "KSTATE_SPARK_VERSION_MISMATCH",
            f"this kstate build targets Spark {jar_spark} but the session runs Spark "
            f"{spark.version}. Install pyspark {jar_spark}.x or a kstate build for your Spark.",
        )
    return jvm


def _reject_connect(spark: Any) -> None:
    if type(spark).__module__.startswith("pyspark.sql.connect"):
        raise KStateError(
            "KSTATE_SPARK_CONNECT_UNSUPPORTED",
            "kstate does not support Spark Connect sessions yet: its operators run inside the "
            "Spark driver. Use a classic SparkSession (SparkSession.builder.master(...)), "
            "not .remote(...).",
        )
