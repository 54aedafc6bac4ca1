"""The JVM's kstate errors as :class:`KStateError`, read from the error objects, not their text.

* Classic session: pyspark's exception holds the Java throwable (py4j); its cause chain is
  walked to the ``io.kstate.KStateException``, whose ``getCondition()``,
  ``getMessageParameters()`` and ``getSqlState()`` make the :class:`KStateError`.
* Spark Connect: the server sends each error of the chain with its condition, parameters and
  SQLSTATE (Connect's error details). pyspark keeps only the outermost one, so
  :func:`install_connect` wraps pyspark's conversion of a server error to also keep the kstate
  error of the chain on the converted exception.

A Python ``foreachBatch`` function breaks the chain: the JVM sees a ``Py4JException`` whose
message is the Python traceback, and the kstate error is only in its text
(``...IllegalArgumentException: [KSTATE_...] message SQLSTATE: ...``). That text is read then
(:meth:`KStateError.from_text`), the one place kstate reads an error's text.
"""

from __future__ import annotations

import functools
from typing import Any, Optional

from .errors import JVM_ERROR_CLASS, KStateError

__all__ = ["kstate_cause", "kstate_error_of", "install_connect"]

_MAX_CAUSES = 64  # a cause chain is short; the bound only guards against cycles
_ATTR = "_kstate_error"  # where the Connect conversion keeps the chain's kstate error


def kstate_cause(java_throwable: Any) -> Optional[KStateError]:
    """The first ``io.kstate.KStateException`` in a Java throwable's cause chain, or None."""
    t, depth, in_text = java_throwable, 0, None
    while t is not None and depth < _MAX_CAUSES:
        found = KStateError.from_java(t)
        if found is not None:
            return found
        message = t.getMessage()
        if in_text is None and message is not None:
            in_text = KStateError.from_text(str(message))
        t, depth = t.getCause(), depth + 1
    return in_text


def kstate_error_of(exc: BaseException) -> Optional[KStateError]:
    """The kstate error that caused ``exc`` (a py4j, pyspark or Spark Connect exception), or None."""
    if isinstance(exc, KStateError):
        return exc
    java = getattr(exc, "_origin", None) or getattr(exc, "java_exception", None)
    if java is not None:
        return kstate_cause(java)
    kept = getattr(exc, _ATTR, None)
    if kept is not None:
        return kept
    get_condition = getattr(exc, "getCondition", None)
    condition = get_condition() if callable(get_condition) else None
    if condition and str(condition).startswith("KSTATE_"):
        return KStateError.of_spark_error(
            str(condition),
            exc.getMessageParameters() or {},  # type: ignore[attr-defined]
            exc.getSqlState(),
            str(exc),
        )  # type: ignore[attr-defined]
    return None


def _chain_error(resp: Any) -> Optional[KStateError]:
    """The kstate error among the errors of a Connect ``FetchErrorDetailsResponse``."""
    for error in getattr(resp, "errors", None) or []:
        if JVM_ERROR_CLASS in list(error.error_type_hierarchy) and error.HasField("spark_throwable"):
            st = error.spark_throwable
            if st.HasField("error_class"):
                return KStateError.of_spark_error(
                    st.error_class,
                    dict(st.message_parameters),
                    st.sql_state if st.HasField("sql_state") else None,
                    error.message,
                )
    return None


def install_connect() -> None:
    """Wraps pyspark's Connect error conversion so that a converted exception keeps the kstate
    error of its server-side cause chain (once; only when Connect's extras are installed)."""
    import importlib.util

    if importlib.util.find_spec("grpc") is None:
        return
    try:
        from pyspark.sql.connect.client import core
    except ImportError:
        return
    convert = core.convert_exception
    if getattr(convert, "_kstate_wrapped", False):
        return

    @functools.wraps(convert)
    def converting(info: Any, truncated_message: Any, resp: Any = None, *args: Any, **kwargs: Any) -> Any:
        converted = convert(info, truncated_message, resp, *args, **kwargs)
        try:
            found = _chain_error(resp)
        except Exception:  # noqa: BLE001 - an unexpected response shape leaves pyspark's error as is
            found = None
        if found is not None:
            setattr(converted, _ATTR, found)
        return converted

    converting._kstate_wrapped = True  # type: ignore[attr-defined]
    core.convert_exception = converting
