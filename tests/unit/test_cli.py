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
