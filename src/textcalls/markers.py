"""The one table of tool-call markup. Both scanners (Cython and the twin) read these literals.

U+FF5C is the full-width bar ``｜``; U+2581 is ``▁``.
"""

HERMES = "hermes"
DEEPSEEK = "deepseek"

#: ``<tool_call`` opens when followed by ``>``, ``|`` or whitespace and a ``>`` within ATTR_MAX characters.
HERMES_OPEN = "<tool_call"
HERMES_CLOSE = "</tool_call>"
DEEPSEEK_OPEN = "<\uff5ctool\u2581call\u2581begin\uff5c>"
DEEPSEEK_CLOSE = "<\uff5ctool\u2581call\u2581end\uff5c>"
#: DeepSeek section wrappers: markup only right before / right after a DeepSeek call (whitespace between).
DEEPSEEK_SECTION_OPEN = "<\uff5ctool\u2581calls\u2581begin\uff5c>"
DEEPSEEK_SECTION_CLOSE = "<\uff5ctool\u2581calls\u2581end\uff5c>"
DEEPSEEK_SEP = "<\uff5ctool\u2581sep\uff5c>"

#: Characters that may follow ``<tool_call`` in an opener (besides end of text while streaming).
HERMES_DELIMITERS = ">| \t\n\r\f\v"
#: Whitespace, as the scanners understand it (section wrappers, "only whitespace between").
WHITESPACE = " \t\n\r\f\v"
#: How far (characters after ``<tool_call``) the ``>`` ending an opener's attribute text may be.
ATTR_MAX = 256
#: How much whitespace may separate a DeepSeek section opener from the call it wraps.
SECTION_GAP_MAX = 256
#: Default cap on a block's body, in characters (``max_block``).
MAX_BLOCK = 1 << 20

#: Every literal whose proper prefix at the end of a buffer must be held back while streaming.
HOLD_LITERALS = (HERMES_OPEN, DEEPSEEK_OPEN, DEEPSEEK_SECTION_OPEN, DEEPSEEK_SECTION_CLOSE)
