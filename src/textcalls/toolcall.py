"""What recovery gives: the recovered call (an OpenAI-shaped function call with a process-unique id) and
``Parsed``, what ``parse`` recovered from a text. A leaf: it imports nothing of the package.

``make_call`` (the one way a grammar turns a name and arguments into a call), ``read_from`` and
``ARGUMENTS_ENCODER`` live in ``_calls``, which needs the kernels; they are still read from here."""

from __future__ import annotations

import itertools
import secrets
import sysconfig
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # what __getattr__ gives, typed (never imported here at run time: _calls imports this module)
    from ._calls import ARGUMENTS_ENCODER, make_call, read_from

__all__ = ["ARGUMENTS_ENCODER", "Parsed", "ToolCall", "make_call", "new_call_id", "read_from"]

ID_PREFIX = "call_" + secrets.token_hex(6)
_ID_COUNTER = itertools.count()
_ID_LOCK = threading.Lock()
NEXT_ID = _ID_COUNTER.__next__
#: free-threaded: the count is shared between threads, so taking a number takes the lock (the Cython
#: scanner, which makes ids from the same count, then calls ``new_call_id``)
ID_LOCKED = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))


if ID_LOCKED:

    def new_call_id() -> str:
        """Return an id like ``call_3f9a0c1d2e4b0000002a``: random per process, never repeated within it."""
        with _ID_LOCK:
            n = NEXT_ID()
        return f"{ID_PREFIX}{n:010x}"

else:  # with the GIL, a count's next() is one atomic step

    def new_call_id() -> str:
        """Return an id like ``call_3f9a0c1d2e4b0000002a``: random per process, never repeated within it."""
        return f"{ID_PREFIX}{NEXT_ID():010x}"


@dataclass(frozen=True, slots=True, init=False)
class ToolCall:
    """One recovered call.

    ``arguments`` is the JSON text of an object (the OpenAI convention). ``id``: a fresh one (``new_call_id``)
    unless given. ``dialect`` names the markup it was read from (a ``DIALECTS`` name, ``"bare_json"`` for a
    bare JSON call; ``""`` when not read from markup). Two calls compare equal when their name and arguments
    do: the id and the dialect say where a call came from, not what it is.
    """

    name: str
    arguments: str
    id: str = field(default_factory=new_call_id, compare=False)
    dialect: str = field(default="", compare=False)

    def __init__(self, name: str, arguments: str, id: str | None = None, dialect: str = "") -> None:
        # the slots' own setters: what the frozen class's generated __init__ does, without a lookup per field
        _SET_NAME(self, name)
        _SET_ARGUMENTS(self, arguments)
        _SET_ID(self, new_call_id() if id is None else id)
        _SET_DIALECT(self, dialect)

    def to_openai(self) -> dict:
        """The ``tool_calls`` entry of an OpenAI chat message."""
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments},
        }


@dataclass(slots=True)
class Parsed:
    """What ``parse`` recovered from one text.

    ``content`` is the text with every block and marker removed, stripped at both ends;
    ``calls`` the calls in order of appearance; ``removed`` how many blocks and markers were
    removed (malformed blocks count: their markup goes even when no call results);
    ``reasoning`` the text of ``<think>`` spans (markers removed), stripped at both ends;
    ``malformed`` how many blocks of the content were removed without giving a call.
    """

    content: str
    calls: list[ToolCall]
    removed: int
    reasoning: str = ""
    malformed: int = 0


_SET_NAME, _SET_ARGUMENTS, _SET_ID, _SET_DIALECT = (ToolCall.__dict__[f].__set__ for f in ToolCall.__slots__)


@dataclass(frozen=True, slots=True)
class EncodedString:
    """A string argument a grammar wrote as JSON text (``json``, quotes included) where the model wrote it:
    ``make_call`` puts that text in the arguments as it is, or the string it reads as, among other values."""

    json: str


def __getattr__(name: str) -> object:
    """``make_call``, ``read_from`` and ``ARGUMENTS_ENCODER``, from ``_calls`` (imported on first use: it
    imports the kernels, which import this module)."""
    if name in ("ARGUMENTS_ENCODER", "make_call", "read_from"):
        from . import _calls

        return getattr(_calls, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
