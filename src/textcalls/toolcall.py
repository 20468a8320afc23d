"""What recovery gives: the recovered call (an OpenAI-shaped function call with a process-unique id),
``make_call``, the one way a grammar turns a name and arguments into one, and ``Parsed``, what ``parse``
recovered from a text."""

from __future__ import annotations

import itertools
import json
import secrets
import sysconfig
import threading
from dataclasses import dataclass, field
from json.encoder import c_make_encoder  # type: ignore[attr-defined]  # json's C encoder (None without it)

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


class _ArgumentsEncoder(json.JSONEncoder):
    """``json.dumps(…, ensure_ascii=False, allow_nan=False)``, its strings written by the hot path's
    ``json_string`` (json's own text; in C, long strings are written in runs); an ``EncodedString`` as the
    string it reads as."""

    def default(self, o: object) -> object:
        if type(o) is EncodedString:
            return json.loads(o.json)
        return super().default(o)

    def iterencode(self, o: object, _one_shot: bool = False):
        if not _one_shot or c_make_encoder is None:
            return super().iterencode(o, _one_shot)
        try:  # as JSONEncoder.iterencode makes it (3.10-3.13), with json_string for strings
            encode = c_make_encoder(
                {},
                self.default,
                _scan.impl.json_string,
                None,
                self.key_separator,
                self.item_separator,
                False,
                False,
                False,
            )
        except TypeError:  # a json whose C encoder is made otherwise: its own way
            return super().iterencode(o, _one_shot)
        return encode(o, 0)


#: ``json.dumps(…, ensure_ascii=False, allow_nan=False)``, built once (``json.dumps`` with options builds one a call)
ARGUMENTS_ENCODER = _ArgumentsEncoder(ensure_ascii=False, allow_nan=False)


def make_call(name: object, args: object, call_id: str | None = None) -> ToolCall | None:
    """The call of ``name`` (a non-blank string, stripped) with the arguments ``args`` (a dict), or ``None``.

    The arguments are serialised once, ``json.dumps(args, ensure_ascii=False, allow_nan=False)`` (a value that
    is an ``EncodedString`` as its JSON text); ``None`` too when they cannot be JSON (NaN or Infinity, an int
    too long to convert, nesting too deep).
    ``call_id``: an id the model wrote (a fresh one without it).
    """
    if not isinstance(name, str) or not name.strip() or not isinstance(args, dict):
        return None
    arguments = _scan.impl.string_object(args)  # string arguments (the most common) written at once
    if arguments is None:
        try:
            arguments = ARGUMENTS_ENCODER.encode(args)
        except (ValueError, RecursionError):
            return None
    if call_id is None:
        return ToolCall(name.strip(), arguments)
    return ToolCall(name.strip(), arguments, id=call_id)


def read_from(calls: list[ToolCall], dialect: str) -> list[ToolCall]:
    """``calls``, just made by a grammar and seen by nothing else yet, marked as read from ``dialect``."""
    for call in calls:
        object.__setattr__(call, "dialect", dialect)  # a frozen dataclass: set once, where it is made
    return calls


from . import _scan  # noqa: E402  # (read at call time; _scan's implementations import this module)
