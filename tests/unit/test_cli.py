"""The ``textcalls recover`` command."""

import json
import subprocess
import sys

import pytest

from textcalls.cli import main

TEXT = 'Sure.<tool_call id="call_0">{"name":"lookup","arguments":{"q":1}}</tool_call>'


def test_recover_plain_text_from_a_file(impl, tmp_path, capsys):
    path = tmp_path / "out.txt"
    path.write_text(TEXT, encoding="utf-8")
    assert main(["recover", str(path)]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["content"] == "Sure."
    # the arguments object as the model wrote it
    assert [c["function"] for c in result["tool_calls"]] == [{"name": "lookup", "arguments": '{"q":1}'}]


def test_recover_a_completion_json(impl, tmp_path, capsys):
    response = {
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": TEXT}, "finish_reason": "stop"}],
    }
    path = tmp_path / "resp.json"
    path.write_text(json.dumps(response), encoding="utf-8")
    assert main(["recover", str(path)]) == 0
    choice = json.loads(capsys.readouterr().out)["choices"][0]
    assert choice["finish_reason"] == "tool_calls" and choice["message"]["content"] == "Sure."
    assert main(["recover", "--no-tools", str(path)]) == 0
    assert json.loads(capsys.readouterr().out) == response


def test_recover_reads_stdin_via_the_console_entry():
    proc = subprocess.run(
        [sys.executable, "-m", "textcalls", "recover"],
        input=TEXT,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["content"] == "Sure."


def test_missing_file_is_a_one_line_error_with_exit_code_2(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["recover", str(tmp_path / "nope.txt")])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("textcalls: error: cannot read") and err.count("\n") == 1


def test_unknown_command_exits_2(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["frobnicate"])
    assert exc.value.code == 2


# --- --tools, --explain, the knobs, ``textcalls dialects`` (issue 30) ----------------------------------------

WEATHER = {"type": "object", "properties": {"city": {"type": "string"}}}
BARE = '{"name": "get_weather", "arguments": {"city": "Paris"}}'
SHAPES = {
    "chat": [{"type": "function", "function": {"name": "get_weather", "parameters": WEATHER}}],
    "responses": [{"type": "function", "name": "get_weather", "parameters": WEATHER}],
    "messages": [{"name": "get_weather", "input_schema": WEATHER}],
    "request": {"model": "m", "messages": [], "tools": [{"type": "function", "function": {"name": "get_weather"}}]},
}


def run_cli(capsys, *args):
    """``main(args)``: (exit status, stdout, stderr); an argparse exit's status too."""
    try:
        status = main(list(args))
    except SystemExit as e:
        status = e.code
    out = capsys.readouterr()
    return status, out.out, out.err


def write(tmp_path, name, value) -> str:
    path = tmp_path / name
    path.write_text(value if isinstance(value, str) else json.dumps(value), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_tools_from_a_file_let_a_bare_call_be_read(impl, tmp_path, capsys, shape):
    text = write(tmp_path, "bare.txt", BARE)
    status, out, _ = run_cli(capsys, "recover", text)
    assert status == 0 and json.loads(out)["tool_calls"] == []  # no tools: the bare JSON stays text
    status, out, _ = run_cli(capsys, "recover", "--tools", write(tmp_path, "tools.json", SHAPES[shape]), text)
    result = json.loads(out)
    assert status == 0 and result["content"] == ""
    assert [c["function"] for c in result["tool_calls"]] == [{"name": "get_weather", "arguments": '{"city": "Paris"}'}]


@pytest.mark.parametrize(
    ("tools", "says"),
    [
        (None, "No such file"),
        ("not json", "cannot read"),
        ({"model": "m"}, "holds no tools"),
        ([{"type": "function", "function": {"parameters": {}}}], "tools[0] is a function tool without a"),
        ([{"type": "function", "name": "f", "parameters": 3}], "tools[0].parameters is a number"),
    ],
)
def test_bad_tools_are_one_error_line_and_exit_2(tmp_path, capsys, tools, says):
    path = str(tmp_path / "missing.json") if tools is None else write(tmp_path, "tools.json", tools)
    status, out, err = run_cli(capsys, "recover", "--tools", path, write(tmp_path, "t.txt", "hi"))
    assert status == 2 and out == ""
    assert "error: --tools:" in err and says in err


def test_explain_says_what_became_of_each_block(impl, tmp_path, capsys):
    tools = write(tmp_path, "tools.json", SHAPES["chat"])
    text = (
        'a <tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'
        ' b <tool_call>{"name": "rm", "arguments": {}}</tool_call> c <tool_call>oops</tool_call>'
        ' d <tool_call>{"name": "get_weather", "arguments": {"city": "Par'
    )
    status, out, err = run_cli(capsys, "recover", "--explain", "--tools", tools, write(tmp_path, "t.txt", text))
    assert status == 0 and len(json.loads(out)["tool_calls"]) == 1
    lines = err.splitlines()
    assert len(lines) == 4 and all(line.startswith("textcalls: text 0: [hermes] '<tool_call>': ") for line in lines)
    assert lines[0].endswith('read as calls -> get_weather({"city": "Paris"})')
    assert "names a tool not offered (rm): it stays text" in lines[1]
    assert "malformed" in lines[2] and "removed, no call" in lines[2]
    assert "no closer before the end" in lines[3] and "no complete call: it stays text" in lines[3]


def test_explain_in_json_and_when_nothing_was_read(impl, tmp_path, capsys):
    status, out, err = run_cli(capsys, "recover", "--explain", "--json", write(tmp_path, "t.txt", BARE))
    (note,) = json.loads(out)["explain"]
    assert status == 0 and err == ""
    assert note["dialect"] is None and note["calls"] == []
    assert "no tool-call markup was read" in note["why"] and "--tools" in note["why"] and "json_message" in note["why"]
    status, _, err = run_cli(capsys, "recover", "--json", write(tmp_path, "t.txt", BARE))
    assert status == 2 and "--json goes with --explain" in err


def test_explain_a_completion_and_an_sse_capture_per_choice(impl, tmp_path, capsys):
    response = {"object": "chat.completion", "choices": [{"index": 0, "message": {"content": TEXT}}]}
    status, out, err = run_cli(capsys, "recover", "--explain", write(tmp_path, "r.json", response))
    assert status == 0 and err.startswith("textcalls: text 0: [hermes]") and "lookup" in err
    chunks = [TEXT[:20], TEXT[20:]]
    capture = "".join(f"data: {json.dumps({'choices': [{'index': 0, 'delta': {'content': c}}]})}\n\n" for c in chunks)
    status, out, err = run_cli(capsys, "recover", "--explain", write(tmp_path, "c.sse", capture + "data: [DONE]\n\n"))
    assert status == 0 and '"lookup"' in out and err.startswith("textcalls: text 0: [hermes]")


def test_stream_arguments_sends_a_capture_s_arguments_in_pieces(impl, tmp_path, capsys):
    args = json.dumps({"content": "line\n" * 40})
    text = f'<tool_call>{{"name": "write", "arguments": {args}}}</tool_call>'
    chunks = [text[i : i + 7] for i in range(0, len(text), 7)]
    capture = "".join(f"data: {json.dumps({'choices': [{'index': 0, 'delta': {'content': c}}]})}\n\n" for c in chunks)
    path = write(tmp_path, "c.sse", capture)

    def pieces(*flags):
        status, out, _ = run_cli(capsys, "recover", *flags, path)
        assert status == 0
        data = [json.loads(line[6:]) for line in out.splitlines() if line.startswith("data: {")]
        deltas = [d["choices"][0]["delta"] for d in data if d.get("choices")]
        return [c["function"].get("arguments", "") for d in deltas for c in d.get("tool_calls", [])]

    whole, streamed = pieces(), pieces("--stream-arguments")
    assert "".join(whole) == "".join(streamed) == args
    assert len([p for p in whole if p]) == 1 and len([p for p in streamed if p]) > 3


def test_the_knobs_reach_the_scanner(impl, tmp_path, capsys):
    message = write(tmp_path, "m.txt", '[get_weather(city="Paris")]')
    status, out, _ = run_cli(capsys, "recover", message)
    assert json.loads(out)["tool_calls"] == []  # pythonic_message is off by default
    status, out, _ = run_cli(capsys, "recover", "--formats", "+pythonic_message", message)
    assert [c["function"]["name"] for c in json.loads(out)["tool_calls"]] == ["get_weather"]
    status, out, _ = run_cli(capsys, "recover", "--reasoning-started", write(tmp_path, "r.txt", "hmm</think>Done."))
    assert json.loads(out) == {"content": "Done.", "tool_calls": [], "reasoning_content": "hmm"}
    status, out, err = run_cli(capsys, "recover", "--formats", "hermes,klingon", message)
    assert status == 2 and "klingon" in err and out == ""


def test_dialects_lists_every_dialect_with_an_example_that_reads(capsys):
    from textcalls import DIALECTS

    status, out, _ = run_cli(capsys, "dialects", "--json")
    rows = json.loads(out)
    assert status == 0 and [r["dialect"] for r in rows] == list(DIALECTS)
    for row in rows:
        assert row["default"] is DIALECTS[row["dialect"]]
        if row["dialect"] == "reasoning":
            assert row["calls"] == [] and row["reasoning"]
        else:
            assert row["calls"] == [{"name": "get_weather", "arguments": '{"city": "Paris"}'}], row["dialect"]
    status, out, _ = run_cli(capsys, "dialects")
    assert status == 0 and out.count("  example:") == len(DIALECTS) and "json_message  [off" in out
