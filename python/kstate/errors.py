"""kstate's error type: one class, a stable ``error_class`` per problem."""
from __future__ import annotations

import re
from typing import Optional, Union

__all__ = ["KStateError"]

_CLASS = re.compile(r"\[(KSTATE_[A-Z_]+)\]\s*(.*)", re.S)


class KStateError(ValueError):
    """Raised for anything the user can fix; ``error_class`` is e.g. ``KSTATE_INVALID_DURATION``.

    Errors raised by the JVM side (``io.kstate.KStateException``) arrive as this class too,
    with the same ``error_class`` and message.
    """

    def __init__(self, error_class: str, message: str):
        super().__init__(f"[{error_class}] {message}")
        self.error_class = error_class
        self.message = message

    @classmethod
    def from_jvm(cls, exc: Union[BaseException, str]) -> Optional["KStateError"]:
        """The KStateError inside a py4j/Spark exception (or its text), or None if it is not one."""
        text = str(exc)
        m = _CLASS.search(text)
        if not m:
            return None
        # py4j appends the JVM frames ("\n\tat ..."), Spark Connect a "JVM stacktrace:" section
        body = m.group(2).split("\n\tat ")[0].split("\nJVM stacktrace:")[0].strip()
        return cls(m.group(1), body)
