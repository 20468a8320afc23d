"""Feeding a text to a scrubber in pieces, as the property tests do; a chat.completion chunk."""


def feed_in_pieces(mod, text, cuts, *, truncated=False, **options):
    """Feed ``text`` cut at ``cuts`` to ``mod.StreamScrubber(**options)``, then ``flush(truncated=...)``;
    return everything it gave: (content, reasoning, [(name, arguments)], removed)."""
    s = mod.StreamScrubber(**options)
    outs, thoughts, prev = [], [], 0
    for c in list(cuts) + [len(text)]:
        outs.append(s.feed(text[prev:c]))
        thoughts.append(s.take_reasoning())
        prev = c
    outs.append(s.flush(truncated=truncated) if truncated else s.flush())
    thoughts.append(s.take_reasoning())
    return "".join(outs), "".join(thoughts), [(c.name, c.arguments) for c in s.calls], s.removed


def ch(content=None, *, finish=None, index=0, **delta):
    """A chunk with one choice; ``content`` and extra delta fields as given."""
    if content is not None:
        delta["content"] = content
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [{"index": index, "delta": delta, "logprobs": None, "finish_reason": finish}],
    }
