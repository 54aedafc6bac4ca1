"""Errors of a running streaming query, as :class:`KStateError`.

A kstate error raised while a query runs (``KSTATE_BUFFER_FULL``, ``KSTATE_STATE_FILE_*``,
``KSTATE_OPERATOR_CONFIG_CHANGED``, ...) stops the query; pyspark reports it as a
``StreamingQueryException`` whose Java cause chain holds the ``io.kstate.KStateException``.
``import kstate`` wraps ``StreamingQuery.awaitTermination``, ``processAllAvailable`` and
``exception`` (classic and Spark Connect) so such a failure is a
:class:`KStateStreamingQueryError`: a
``StreamingQueryException`` (existing ``except StreamingQueryException`` keeps working) that is
also a :class:`KStateError` with the kstate ``error_class``. Other failures are unchanged.

A kstate error raised when a query starts (``writeStream...start()`` / ``toTable()``, e.g.
``KSTATE_UNSUPPORTED_OUTPUT_MODE``) is raised as a :class:`KStateError`, as when a DataFrame is
built.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Dict, Optional

from pyspark.errors.exceptions.captured import StreamingQueryException as _CapturedQueryException

from ._jvm import translate_errors
from ._jvm_errors import install_connect as _install_connect_errors
from ._jvm_errors import kstate_cause, kstate_error_of
from .errors import KStateError

__all__ = ["KStateStreamingQueryError", "install"]


class KStateStreamingQueryError(_CapturedQueryException, KStateError):
    """A streaming query stopped by a kstate error: catch it as ``kstate.KStateError`` or as
    pyspark's ``StreamingQueryException``.

    ``getCondition()``, ``getSqlState()``, ``getMessageParameters()``, ``error_class`` and
    ``message`` are the kstate error's (the error that stopped the query, e.g.
    ``KSTATE_BUFFER_FULL``, not Spark's ``STREAM_FAILED`` around it); ``str()`` and the JVM stack
    trace are the query's.
    """

    @classmethod
    def of(cls, query_error: _CapturedQueryException, cause: KStateError) -> "KStateStreamingQueryError":
        """``query_error`` re-typed, carrying ``cause``'s condition, parameters and message."""
        err = cls.__new__(cls)
        err.__dict__.update(query_error.__dict__)
        err.args = query_error.args
        err.error_class = cause.error_class
        err.message = cause.message
        err._kstate_cause = cause
        return err

    def getCondition(self) -> Optional[str]:
        return self._kstate_cause.getCondition()

    def getErrorClass(self) -> Optional[str]:
        return self._kstate_cause.getCondition()

    def getSqlState(self) -> Optional[str]:
        return self._kstate_cause.getSqlState()

    def getMessageParameters(self) -> Optional[Dict[str, str]]:
        return self._kstate_cause.getMessageParameters()


def as_kstate_error(query_error: _CapturedQueryException, java_throwable: Any) -> _CapturedQueryException:
    """``query_error`` as a :class:`KStateStreamingQueryError` when a kstate error caused it."""
    if java_throwable is None or isinstance(query_error, KStateError):
        return query_error
    cause = kstate_cause(java_throwable)
    return query_error if cause is None else KStateStreamingQueryError.of(query_error, cause)


def _raising(error_type: type, convert: Callable[[Any], Any]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Wraps a method so that an ``error_type`` it raises is raised as ``convert(error)``."""

    def wrap(method: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(method)
        def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
            try:
                return method(self, *args, **kwargs)
            except error_type as e:
                converted = convert(e)
                if converted is e:
                    raise
                raise converted from None

        wrapper._kstate_wrapped = True  # type: ignore[attr-defined]
        return wrapper

    return wrap


_raising_kstate_errors = _raising(_CapturedQueryException, lambda e: as_kstate_error(e, getattr(e, "_origin", None)))


def _returning_kstate_errors(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def wrapper(self: Any) -> Any:
        error = method(self)
        if error is None:
            return None
        jerror = self._jsq.exception()
        return as_kstate_error(error, jerror.get() if jerror.isDefined() else None)

    wrapper._kstate_wrapped = True  # type: ignore[attr-defined]
    return wrapper


def _starting_kstate_errors(method: Callable[..., Any]) -> Callable[..., Any]:
    wrapper = translate_errors(method)
    wrapper._kstate_wrapped = True  # type: ignore[attr-defined]
    return wrapper


_CONNECT_ERROR: Optional[type] = None


def _connect_error_class() -> type:
    """:class:`KStateStreamingQueryError` for a Spark Connect query: also pyspark's Connect
    ``StreamingQueryException`` (made on first use: Connect's classes need its extras)."""
    global _CONNECT_ERROR
    if _CONNECT_ERROR is None:
        from pyspark.errors.exceptions.connect import StreamingQueryException as _ConnectQueryException

        _CONNECT_ERROR = type(
            "KStateStreamingQueryError",
            (KStateStreamingQueryError, _ConnectQueryException),
            {"__doc__": KStateStreamingQueryError.__doc__, "__module__": __name__},
        )
    return _CONNECT_ERROR


def as_kstate_connect_error(query_error: Any) -> Any:
    """A Connect query's error as a :class:`KStateStreamingQueryError` when a kstate error caused
    it: the server sends the error chain's conditions and parameters (Connect's error details)."""
    if query_error is None or isinstance(query_error, KStateError):
        return query_error
    cause = kstate_error_of(query_error)
    return query_error if cause is None else _connect_error_class().of(query_error, cause)


def _returning_connect_kstate_errors(method: Callable[..., Any]) -> Callable[..., Any]:
    """``StreamingQuery.exception()`` on Connect: the server's answer holds the query error's text
    only, so the error is fetched again the way ``awaitTermination`` raises it, with its chain's
    details (a terminated query raises its error at once)."""

    @functools.wraps(method)
    def wrapper(self: Any) -> Any:
        error = method(self)
        if error is None or isinstance(error, KStateError):
            return error
        try:
            self.awaitTermination(0.001)
        except KStateError as raised:  # awaitTermination is wrapped too: the kstate error, typed
            return raised
        except Exception:  # noqa: BLE001 - not a kstate error: pyspark's answer stands
            return error
        return error

    wrapper._kstate_wrapped = True  # type: ignore[attr-defined]
    return wrapper


def _install_connect() -> None:
    """The same for Spark Connect's ``StreamingQuery`` and ``DataStreamWriter``, when its extras
    are installed (without grpc, importing pyspark's Connect modules can end the interpreter)."""
    import importlib.util

    if importlib.util.find_spec("grpc") is None:
        return
    try:
        from pyspark.sql.connect.streaming.query import StreamingQuery
        from pyspark.sql.connect.streaming.readwriter import DataStreamWriter
    except ImportError:  # other Connect extras missing
        return
    from pyspark.errors.exceptions.connect import StreamingQueryException as _ConnectQueryException

    _install_connect_errors()
    raising = _raising(_ConnectQueryException, as_kstate_connect_error)
    _wrap(
        [
            (StreamingQuery, "awaitTermination", raising),
            (StreamingQuery, "processAllAvailable", raising),
            (StreamingQuery, "exception", _returning_connect_kstate_errors),
            (DataStreamWriter, "start", _starting_kstate_errors),
            (DataStreamWriter, "toTable", _starting_kstate_errors),
        ]
    )


def _wrap(methods: Any) -> None:
    for cls, name, wrap in methods:
        method = getattr(cls, name)
        if not getattr(method, "_kstate_wrapped", False):
            setattr(cls, name, wrap(method))


def install() -> None:
    """Wraps pyspark's ``StreamingQuery`` and ``DataStreamWriter`` methods, classic and Spark
    Connect (once)."""
    from pyspark.sql.streaming.query import StreamingQuery
    from pyspark.sql.streaming.readwriter import DataStreamWriter

    _wrap(
        [
            (StreamingQuery, "awaitTermination", _raising_kstate_errors),
            (StreamingQuery, "processAllAvailable", _raising_kstate_errors),
            (StreamingQuery, "exception", _returning_kstate_errors),
            (DataStreamWriter, "start", _starting_kstate_errors),
            (DataStreamWriter, "toTable", _starting_kstate_errors),
        ]
    )
    _install_connect()
