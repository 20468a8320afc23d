"""The recovered call: an OpenAI-shaped function call with a process-unique id."""

from __future__ import annotations

import itertools
import secrets
import threading
from dataclasses import dataclass, field

__all__ = ["ToolCall", "new_call_id"]

_ID_PREFIX = "call_" + secrets.token_hex(6)
_ID_COUNTER = itertools.count()
_ID_LOCK = threading.Lock()


def new_call_id() -> str:
    """Return an id like ``call_3f9a0c1d2e4b0000002a``: random per process, never repeated within it."""
    with _ID_LOCK:
        n = next(_ID_COUNTER)
    return f"{_ID_PREFIX}{n:010x}"


@dataclass(frozen=True)
class ToolCall:
    """One recovered call.

    ``arguments`` is the JSON text of an object (the OpenAI convention). Two calls compare
    equal when their name and arguments do: the id says where a call came from, not what it is.
    """

    name: str
    arguments: str
    id: str = field(default_factory=new_call_id, compare=False)

    def to_openai(self) -> dict:
        """The ``tool_calls`` entry of an OpenAI chat message."""
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments},
        }
