"""kstate's error type: :class:`KStateError`, a PySpark error with kstate's error conditions.

Every kstate error has a condition (``KSTATE_...``, or ``KSTATE_....SUB_CONDITION`` where one
condition has several forms), a SQLSTATE and message parameters, as Spark's errors do. The
conditions, their SQLSTATEs and message templates are in ``error_conditions.json`` beside this
module, the one file both languages read (the JVM's ``io.kstate.KStateException`` carries the same
condition, SQLSTATE and parameters).
"""

from __future__ import annotations

import functools
import json
import os
import re
from typing import Any, Dict, Mapping, Optional

from pyspark.errors import PySparkException

__all__ = ["KStateError", "JVM_ERROR_CLASS"]

#: The JVM class of kstate's errors.
JVM_ERROR_CLASS = "io.kstate.KStateException"
_CONDITIONS_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "error_conditions.json")
_PLACEHOLDER = re.compile(r"<([a-zA-Z0-9_-]+)>")


@functools.lru_cache(maxsize=1)
def conditions() -> Dict[str, Any]:
    """The error conditions file, as a dict (condition -> message, sqlState, subClass)."""
    with open(_CONDITIONS_FILE, encoding="utf-8") as f:
        return json.load(f)


def _entry(condition: str) -> Optional[Dict[str, Any]]:
    main, _, sub = condition.partition(".")
    info = conditions().get(main)
    if info is None or not sub:
        return info
    return (info.get("subClass") or {}).get(sub)


def message_template(condition: str) -> str:
    """The condition's message template (a sub-condition's follows its condition's, as in Spark)."""
    main = condition.partition(".")[0]
    info, entry = conditions().get(main), _entry(condition)
    if info is None or entry is None:
        raise KeyError(condition)
    lines = "\n".join(info["message"])
    return lines + " " + "\n".join(entry["message"]) if entry is not info else lines


def condition_sql_state(condition: str) -> Optional[str]:
    """The condition's SQLSTATE (a sub-condition has its condition's)."""
    info = conditions().get(condition.partition(".")[0])
    return None if info is None else info.get("sqlState")


def render(condition: str, parameters: Mapping[str, str]) -> str:
    """The condition's message with ``parameters`` filled in; every placeholder must have a value."""

    def value(m: "re.Match[str]") -> str:
        if m.group(1) not in parameters:
            raise KeyError(f"{condition}: no value for <{m.group(1)}>")
        return str(parameters[m.group(1)])

    return _PLACEHOLDER.sub(value, message_template(condition))


class KStateError(PySparkException, ValueError):
    """Raised for anything the user can fix, from Python or from the JVM.

    It is a PySpark error (``pyspark.errors.PySparkException``) and a ``ValueError``:

    * ``getCondition()``: e.g. ``KSTATE_INVALID_DURATION`` or
      ``KSTATE_STATE_NOT_FOUND.NO_COMMITTED_BATCH``;
    * ``getSqlState()``, ``getMessageParameters()``: the condition's SQLSTATE and the values in
      its message;
    * ``error_class``: the condition without its sub-condition (``KSTATE_STATE_NOT_FOUND``), and
      ``message``: the text without the ``[CONDITION]`` prefix.

    Errors raised by the JVM side (``io.kstate.KStateException``), on a classic session or over
    Spark Connect, arrive as this class with the JVM error's condition, SQLSTATE and parameters.

    Parameters
    ----------
    condition : str
        A condition of ``error_conditions.json``.
    parameters : mapping, optional
        The values of the condition's message template (converted with ``str``).
    message : str, optional
        The message text, when it is not rendered here: a JVM error whose condition this
        package's file lacks.
    sql_state : str, optional
        Likewise the SQLSTATE.
    """

    def __init__(
        self,
        condition: str,
        parameters: Optional[Mapping[str, Any]] = None,
        *,
        message: Optional[str] = None,
        sql_state: Optional[str] = None,
    ):
        params = {str(k): str(v) for k, v in (parameters or {}).items()}
        text = render(condition, params) if message is None else message
        super().__init__(message=text, errorClass=condition, messageParameters=params)
        self.args = (self.getMessage(),)
        self._kstate_sql_state = sql_state if sql_state is not None else condition_sql_state(condition)
        self.error_class = condition.partition(".")[0]
        self.message = text

    def getSqlState(self) -> Optional[str]:
        return self._kstate_sql_state

    def __reduce__(self) -> Any:  # pickles by its fields (its args are its message)
        return (
            _restore,
            (type(self), self.getCondition(), self.getMessageParameters(), self.message, self._kstate_sql_state),
        )

    @classmethod
    def from_java(cls, throwable: Any) -> Optional["KStateError"]:
        """The kstate error of a JVM throwable (py4j), if it is an ``io.kstate.KStateException``."""
        if throwable is None or str(throwable.getClass().getName()) != JVM_ERROR_CLASS:
            return None
        return cls.of_spark_error(
            str(throwable.getCondition()),
            dict(throwable.getMessageParameters()),
            str(throwable.getSqlState()),
            str(throwable.getMessage()),
        )

    @classmethod
    def of_spark_error(
        cls, condition: str, parameters: Mapping[str, str], sql_state: Optional[str], jvm_message: str
    ) -> "KStateError":
        """A JVM kstate error from its condition and parameters (as Spark Connect sends them)."""
        try:
            return cls(condition, parameters, sql_state=sql_state)
        except KeyError:  # a condition or parameter this package does not know: keep the JVM's text
            text = jvm_message.split("] ", 1)[-1].rsplit(" SQLSTATE: ", 1)[0]
            return cls(condition, parameters, message=text, sql_state=sql_state)

    @classmethod
    def from_text(cls, text: str) -> Optional["KStateError"]:
        """The kstate error named in a text (``[KSTATE_...] message SQLSTATE: ...``), or None.

        Only for where the JVM's error object is gone and its text is all there is: a Python
        ``foreachBatch`` function's traceback sent back through the JVM (docs/errors.md). Its
        message parameters are not in the text: ``getMessageParameters()`` is empty.
        """
        m = re.search(r"\[(KSTATE_[A-Z_]+(?:\.[A-Z_]+)?)\]\s*(.*)", text, re.S)
        if not m:
            return None
        body = m.group(2)
        if " SQLSTATE: " in body:  # Spark's format: the message ends there
            body = body.split(" SQLSTATE: ", 1)[0]
        # else up to py4j's JVM frames ("\n\tat ...") or Spark Connect's "JVM stacktrace:" section
        body = body.split("\n\tat ")[0].split("\nJVM stacktrace:")[0].strip()
        return cls(m.group(1), {}, message=body)


def _restore(cls: type, condition: str, parameters: Dict[str, str], message: str, sql_state: Optional[str]) -> Any:
    return cls(condition, parameters, message=message, sql_state=sql_state)
