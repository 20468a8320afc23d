"""The old name of ``textcalls.chat_bytes`` (it handles ``chat.completion`` bodies, not the Responses API),
kept so that ``from textcalls.responses_bytes import recover_response_bytes`` goes on working."""

from .chat_bytes import recover_response_bytes

__all__ = ["recover_response_bytes"]
