"""Body grammars of the XML-style dialects: Qwen3 XML, GLM, MiniMax-M2, DeepSeek DSML, Step-3.

Expected values are written by hand from the formats; calls are compared by name and decoded arguments.
"""

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from textcalls.dialects.context import Context
from textcalls.dialects.xml import dsml, glm, minimax_m2, qwen3_xml, step3, text_end, trim_value
from textcalls.toolcall import ToolCall

NO_TOOLS = Context()
TOOLS = Context(
    [
        {
            "type": "function",
            "function": {
                "name": "search",
                "parameters": {
                    "type": "object",
                    "properties": {
                        "query": {"type": "string"},
                        "limit": {"type": "integer"},
                        "ratio": {"type": "number"},
                        "exact": {"type": "boolean"},
                        "filters": {"type": "object"},
                        "tags": {"type": "array"},
                    },
                },
            },
        },
        {"type": "function", "function": {"name": "now", "parameters": {"type": "object", "properties": {}}}},
    ]
)


def calls(result):
    """``[(name, arguments as a dict)]`` of a grammar's result."""
    assert isinstance(result, list)
    return [(c.name, json.loads(c.arguments)) for c in result]


def items(result):
    """The (name, value) pairs of each call's arguments, in order."""
    return [list(json.loads(c.arguments).items()) for c in result]


# ---------------------------------------------------------------- Qwen3-Coder / Qwen3.5 / Seed-OSS


class TestQwen3Xml:
    def test_one_call_two_parameters(self):
        body = "\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=unit>\ncelsius\n</parameter>\n</function>\n"
        assert calls(qwen3_xml("<tool_call>", body, NO_TOOLS)) == [
            ("get_weather", {"city": "Paris", "unit": "celsius"})
        ]

    def test_several_functions_in_one_body(self):
        body = (
            "\n<function=a>\n<parameter=x>\n1\n</parameter>\n</function>\n"
            "<function=b>\n<parameter=y>\n2\n</parameter>\n</function>\n"
        )
        assert calls(qwen3_xml("<tool_call>", body, NO_TOOLS)) == [("a", {"x": "1"}), ("b", {"y": "2"})]

    def test_seed_oss_body_is_the_same(self):
        body = "\n<function=ls>\n<parameter=path>\n/tmp\n</parameter>\n</function>\n"
        assert calls(qwen3_xml("<seed:tool_call>", body, NO_TOOLS)) == [("ls", {"path": "/tmp"})]

    def test_parameters_keep_their_order(self):
        body = "<function=f>\n<parameter=z>\n1\n</parameter>\n<parameter=a>\n2\n</parameter>\n<parameter=m>\n3\n</parameter>\n</function>"
        assert items(qwen3_xml("<tool_call>", body, NO_TOOLS)) == [[("z", "1"), ("a", "2"), ("m", "3")]]

    def test_no_parameters(self):
        assert calls(qwen3_xml("<tool_call>", "\n<function=now>\n</function>\n", NO_TOOLS)) == [("now", {})]

    def test_schema_types_values(self):
        body = (
            "<function=search>\n"
            "<parameter=query>\n42\n</parameter>\n"
            "<parameter=limit>\n5\n</parameter>\n"
            "<parameter=ratio>\n0.25\n</parameter>\n"
            "<parameter=exact>\ntrue\n</parameter>\n"
            '<parameter=filters>\n{"lang": "en", "n": 2}\n</parameter>\n'
            '<parameter=tags>\n["a", "b"]\n</parameter>\n'
            "<parameter=extra>\n7\n</parameter>\n"
            "</function>"
        )
        expected = {
            "query": "42",
            "limit": 5,
            "ratio": 0.25,
            "exact": True,
            "filters": {"lang": "en", "n": 2},
            "tags": ["a", "b"],
            "extra": "7",  # not in the schema
        }
        assert calls(qwen3_xml("<tool_call>", body, TOOLS)) == [("search", expected)]

    def test_values_that_do_not_fit_the_schema_stay_strings(self):
        body = (
            "<function=search>\n<parameter=limit>\nfive\n</parameter>\n<parameter=tags>\n{}\n</parameter>\n</function>"
        )
        assert calls(qwen3_xml("<tool_call>", body, TOOLS)) == [("search", {"limit": "five", "tags": "{}"})]

    def test_without_schema_values_are_strings(self):
        body = '<function=search>\n<parameter=limit>\n5\n</parameter>\n<parameter=filters>\n{"a": 1}\n</parameter>\n</function>'
        assert calls(qwen3_xml("<tool_call>", body, NO_TOOLS)) == [("search", {"limit": "5", "filters": '{"a": 1}'})]

    def test_exactly_one_newline_is_trimmed_each_side(self):
        body = "<function=write>\n<parameter=code>\n\n    indented\n\n</parameter>\n<parameter=s>  x  </parameter>\n</function>"
        assert calls(qwen3_xml("<tool_call>", body, NO_TOOLS)) == [
            ("write", {"code": "\n    indented\n", "s": "  x  "})
        ]

    def test_multiline_value(self):
        body = "<function=write>\n<parameter=text>\nline 1\nline 2\n</parameter>\n</function>"
        assert calls(qwen3_xml("<tool_call>", body, NO_TOOLS)) == [("write", {"text": "line 1\nline 2"})]

    def test_non_ascii(self):
        body = "<function=翻訳>\n<parameter=テキスト>\n東京は晴れ ☀️\n</parameter>\n</function>"
        result = qwen3_xml("<tool_call>", body, NO_TOOLS)
        assert calls(result) == [("翻訳", {"テキスト": "東京は晴れ ☀️"})]
        assert "東京" in result[0].arguments  # not escaped

    def test_missing_parameter_close_before_next_parameter(self):
        body = "<function=f>\n<parameter=a>\n1\n<parameter=b>\n2\n</parameter>\n</function>"
        assert calls(qwen3_xml("<tool_call>", body, NO_TOOLS)) == [("f", {"a": "1", "b": "2"})]

    def test_missing_parameter_close_before_function_close(self):
        body = "<function=f>\n<parameter=a>\n1\n</function>\n"
        assert calls(qwen3_xml("<tool_call>", body, NO_TOOLS)) == [("f", {"a": "1"})]

    def test_missing_function_close_at_end(self):
        body = "<function=f>\n<parameter=a>\n1\n</parameter>\n"
        assert calls(qwen3_xml("<tool_call>", body, NO_TOOLS)) == [("f", {"a": "1"})]

    def test_missing_both_closes_at_end(self):
        assert calls(qwen3_xml("<tool_call>", "<function=f>\n<parameter=a>\n1\n", NO_TOOLS)) == [("f", {"a": "1"})]

    def test_closing_tag_inside_a_value_is_text(self):
        body = "<function=write>\n<parameter=content>\ns = '</parameter>' + x\n</parameter>\n</function>"
        assert calls(qwen3_xml("<tool_call>", body, NO_TOOLS)) == [("write", {"content": "s = '</parameter>' + x"})]

    def test_parameter_tag_inside_a_line_is_text(self):
        body = "<function=doc>\n<parameter=text>\nwrite <parameter=x> then\n</parameter>\n</function>"
        assert calls(qwen3_xml("<tool_call>", body, NO_TOOLS)) == [("doc", {"text": "write <parameter=x> then"})]

    def test_repeated_parameter_keeps_first_place_and_last_value(self):
        body = "<function=f>\n<parameter=a>\n1\n</parameter>\n<parameter=b>\n2\n</parameter>\n<parameter=a>\n3\n</parameter>\n</function>"
        assert items(qwen3_xml("<tool_call>", body, NO_TOOLS)) == [[("a", "3"), ("b", "2")]]

    def test_name_is_stripped(self):
        assert calls(qwen3_xml("<tool_call>", "<function= f >\n</function>", NO_TOOLS)) == [("f", {})]

    @pytest.mark.parametrize(
        "body",
        [
            "",
            "   \n",
            "just text",
            '{"name": "f", "arguments": {}}',
            "note\n<function=f>\n</function>",
            "<function=f>\n</function>\ntrailing",
            "<function=f>\nstray\n<parameter=a>\n1\n</parameter>\n</function>",
            "<function=f>\n<parameter=a>\n1\n</parameter>\nstray\n<parameter=b>\n2\n</parameter>\n</function>",
            "<function=>\n</function>",
            "<function=  >\n</function>",
            "<function=get weather>\n</function>",
            "<function={{ tc.name }}>\n</function>",
            '<function="f">\n</function>',
            "<function=f>\n</parameter>\n</function>",
            "<function=f>\n<parameter=>\n1\n</parameter>\n</function>",
            "<parameter=a>\n1\n</parameter>",
            "</function>",
        ],
    )
    def test_malformed(self, body):
        assert qwen3_xml("<tool_call>", body, NO_TOOLS) == []


# ---------------------------------------------------------------- GLM-4.5 / 4.6 / 4.7 / 5


class TestGlm:
    def test_glm45_with_newlines(self):
        body = "get_weather\n<arg_key>city</arg_key>\n<arg_value>Beijing</arg_value>\n<arg_key>date</arg_key>\n<arg_value>2024-06-27</arg_value>\n"
        assert calls(glm("<tool_call>", body, NO_TOOLS)) == [("get_weather", {"city": "Beijing", "date": "2024-06-27"})]

    def test_glm47_without_newlines(self):
        body = "get_weather<arg_key>city</arg_key><arg_value>Beijing</arg_value><arg_key>date</arg_key><arg_value>2024-06-27</arg_value>"
        assert calls(glm("<tool_call>", body, NO_TOOLS)) == [("get_weather", {"city": "Beijing", "date": "2024-06-27"})]

    def test_parameters_keep_their_order(self):
        body = "f<arg_key>z</arg_key><arg_value>1</arg_value><arg_key>a</arg_key><arg_value>2</arg_value>"
        assert items(glm("<tool_call>", body, NO_TOOLS)) == [[("z", "1"), ("a", "2")]]

    @pytest.mark.parametrize("body", ["now", "now\n", "\n now \n"])
    def test_no_arguments(self, body):
        assert calls(glm("<tool_call>", body, NO_TOOLS)) == [("now", {})]

    def test_schema_types_values(self):
        body = (
            "search\n"
            "<arg_key>query</arg_key>\n<arg_value>42</arg_value>\n"
            "<arg_key>limit</arg_key>\n<arg_value>10</arg_value>\n"
            "<arg_key>ratio</arg_key>\n<arg_value>1.5</arg_value>\n"
            "<arg_key>exact</arg_key>\n<arg_value>false</arg_value>\n"
            '<arg_key>filters</arg_key>\n<arg_value>{"k": [1, 2]}</arg_value>\n'
            '<arg_key>tags</arg_key>\n<arg_value>["x"]</arg_value>\n'
        )
        expected = {"query": "42", "limit": 10, "ratio": 1.5, "exact": False, "filters": {"k": [1, 2]}, "tags": ["x"]}
        assert calls(glm("<tool_call>", body, TOOLS)) == [("search", expected)]

    def test_json_values_without_schema_stay_strings(self):
        body = 'f<arg_key>obj</arg_key><arg_value>{"a": 1}</arg_value><arg_key>n</arg_key><arg_value>3</arg_value>'
        assert calls(glm("<tool_call>", body, NO_TOOLS)) == [("f", {"obj": '{"a": 1}', "n": "3"})]
        # an offered tool without this parameter in its schema: a string too
        body = "now<arg_key>n</arg_key><arg_value>3</arg_value>"
        assert calls(glm("<tool_call>", body, TOOLS)) == [("now", {"n": "3"})]

    def test_literal_backslash_n_between_key_and_value(self):
        body = "f<arg_key>a</arg_key>\\n<arg_value>1</arg_value>"
        assert calls(glm("<tool_call>", body, NO_TOOLS)) == [("f", {"a": "1"})]

    def test_value_and_key_whitespace(self):
        body = "f\n<arg_key> path </arg_key>\n<arg_value>\n  a b  \n</arg_value>"
        assert calls(glm("<tool_call>", body, NO_TOOLS)) == [("f", {"path": "  a b  "})]

    def test_missing_value_close_before_next_key(self):
        body = "f<arg_key>a</arg_key><arg_value>1<arg_key>b</arg_key><arg_value>2</arg_value>"
        assert calls(glm("<tool_call>", body, NO_TOOLS)) == [("f", {"a": "1", "b": "2"})]

    def test_missing_value_close_at_end(self):
        assert calls(glm("<tool_call>", "f<arg_key>a</arg_key><arg_value>1", NO_TOOLS)) == [("f", {"a": "1"})]

    def test_non_ascii(self):
        body = "查询天气\n<arg_key>城市</arg_key>\n<arg_value>北京 🌧</arg_value>\n"
        assert calls(glm("<tool_call>", body, NO_TOOLS)) == [("查询天气", {"城市": "北京 🌧"})]

    def test_name_with_inner_space_is_kept(self):
        assert calls(glm("<tool_call>", "get weather", NO_TOOLS)) == [("get weather", {})]

    @pytest.mark.parametrize(
        "body",
        [
            "",
            "  \n ",
            "<arg_key>a</arg_key><arg_value>1</arg_value>",
            '{"name": "f"}',
            "get\nweather<arg_key>a</arg_key><arg_value>1</arg_value>",
            "a<b<arg_key>a</arg_key><arg_value>1</arg_value>",
            "f<arg_key>a</arg_key>",
            "f<arg_key>a</arg_key>junk<arg_value>1</arg_value>",
            "f<arg_key>a</arg_key><arg_value>1</arg_value>junk<arg_key>b</arg_key><arg_value>2</arg_value>",
            "f<arg_key>a</arg_key><arg_value>1</arg_value>trailing",
            "f<arg_key> </arg_key><arg_value>1</arg_value>",
            "f</arg_value>",
        ],
    )
    def test_malformed(self, body):
        assert glm("<tool_call>", body, NO_TOOLS) == []


# ---------------------------------------------------------------- MiniMax-M2


class TestMinimaxM2:
    def test_two_invokes(self):
        body = (
            '\n<invoke name="search_web">\n<parameter name="query">vLLM</parameter>\n<parameter name="n">3</parameter>\n</invoke>\n'
            '<invoke name="open">\n<parameter name="url">https://example.com</parameter>\n</invoke>\n'
        )
        assert calls(minimax_m2("<minimax:tool_call>", body, NO_TOOLS)) == [
            ("search_web", {"query": "vLLM", "n": "3"}),
            ("open", {"url": "https://example.com"}),
        ]

    @pytest.mark.parametrize("quote", ['"', "'", ""])
    def test_name_quotes(self, quote):
        body = f"<invoke name={quote}f{quote}><parameter name={quote}p{quote}>v</parameter></invoke>"
        assert calls(minimax_m2("<minimax:tool_call>", body, NO_TOOLS)) == [("f", {"p": "v"})]

    def test_whitespace_between_tags_and_in_tags(self):
        body = ' \n\t<invoke  name = "f" >\n\n  <parameter name="p">v</parameter >\n  </invoke >  \n'
        assert calls(minimax_m2("<minimax:tool_call>", body, NO_TOOLS)) == [("f", {"p": "v"})]

    def test_schema_types_values(self):
        body = (
            '<invoke name="search">\n'
            '<parameter name="limit">7</parameter>\n'
            '<parameter name="ratio">-2.5e3</parameter>\n'
            '<parameter name="exact">True</parameter>\n'
            '<parameter name="filters">{"a": null}</parameter>\n'
            '<parameter name="tags">[]</parameter>\n'
            '<parameter name="query">true</parameter>\n'
            "</invoke>"
        )
        expected = {"limit": 7, "ratio": -2500.0, "exact": True, "filters": {"a": None}, "tags": [], "query": "true"}
        assert calls(minimax_m2("<minimax:tool_call>", body, TOOLS)) == [("search", expected)]

    def test_no_schema_keeps_strings(self):
        body = '<invoke name="search"><parameter name="limit">7</parameter></invoke>'
        assert calls(minimax_m2("<minimax:tool_call>", body, NO_TOOLS)) == [("search", {"limit": "7"})]

    def test_one_newline_trimmed(self):
        body = '<invoke name="f"><parameter name="code">\n\ndef f():\n    pass\n\n</parameter></invoke>'
        assert calls(minimax_m2("<minimax:tool_call>", body, NO_TOOLS)) == [("f", {"code": "\ndef f():\n    pass\n"})]

    def test_no_parameters(self):
        assert calls(minimax_m2("<minimax:tool_call>", '<invoke name="now"></invoke>', NO_TOOLS)) == [("now", {})]

    def test_missing_invoke_close_at_end(self):
        body = '<invoke name="f">\n<parameter name="p">v</parameter>\n'
        assert calls(minimax_m2("<minimax:tool_call>", body, NO_TOOLS)) == [("f", {"p": "v"})]

    def test_html_in_a_value(self):
        body = '<invoke name="write">\n<parameter name="html"><p>hi</p></parameter>\n</invoke>'
        assert calls(minimax_m2("<minimax:tool_call>", body, NO_TOOLS)) == [("write", {"html": "<p>hi</p>"})]

    def test_non_ascii(self):
        body = '<invoke name="перевести"><parameter name="текст">Привет, мир — ✓</parameter></invoke>'
        assert calls(minimax_m2("<minimax:tool_call>", body, NO_TOOLS)) == [("перевести", {"текст": "Привет, мир — ✓"})]

    @pytest.mark.parametrize(
        "body",
        [
            "",
            "text",
            "<invoke><parameter name='p'>v</parameter></invoke>",
            '<invoke name="">x</invoke>',
            '<invoke name="f">loose text</invoke>',
            '<invoke name="f"><parameter>v</parameter></invoke>',
            '<invoke name="f"><parameter name="p">v</parameter>junk</invoke>',
            'before<invoke name="f"></invoke>',
            '<invoke name="f"></invoke>after',
            '<invoke name="f"></parameter></invoke>',
        ],
    )
    def test_malformed(self, body):
        assert minimax_m2("<minimax:tool_call>", body, NO_TOOLS) == []


# ---------------------------------------------------------------- DeepSeek V3.2 / V4 DSML

B = "｜"  # U+FF5C


def dsml_param(name, value, string=None):
    attr = "" if string is None else f' string="{string}"'
    return f'<{B}DSML{B}parameter name="{name}"{attr}>{value}</{B}DSML{B}parameter>'


def dsml_invoke(name, *inner):
    return f'<{B}DSML{B}invoke name="{name}">\n' + "\n".join(inner) + f"\n</{B}DSML{B}invoke>"


class TestDsml:
    def test_v32_two_invokes(self):
        body = (
            "\n"
            + dsml_invoke(
                "get_weather", dsml_param("location", "杭州", "true"), dsml_param("date", "2024-01-16", "true")
            )
            + "\n"
            + dsml_invoke(
                "get_weather", dsml_param("location", "北京", "true"), dsml_param("date", "2024-01-16", "true")
            )
            + "\n"
        )
        assert calls(dsml(f"<{B}DSML{B}function_calls>", body, NO_TOOLS)) == [
            ("get_weather", {"location": "杭州", "date": "2024-01-16"}),
            ("get_weather", {"location": "北京", "date": "2024-01-16"}),
        ]

    def test_string_false_is_json(self):
        body = dsml_invoke(
            "f",
            dsml_param("n", "42", "false"),
            dsml_param("x", "-1.5", "false"),
            dsml_param("b", "true", "false"),
            dsml_param("o", '{"k": ["v", null]}', "false"),
            dsml_param("a", "[1, 2]", "false"),
            dsml_param("s", '"quoted"', "false"),
        )
        expected = {"n": 42, "x": -1.5, "b": True, "o": {"k": ["v", None]}, "a": [1, 2], "s": "quoted"}
        assert calls(dsml(f"<{B}DSML{B}tool_calls>", body, NO_TOOLS)) == [("f", expected)]

    def test_string_false_relaxed(self):
        body = dsml_invoke("f", dsml_param("o", "{a: 1, 'b': [2,],}", "false"))
        assert calls(dsml(f"<{B}DSML{B}tool_calls>", body, NO_TOOLS)) == [("f", {"o": {"a": 1, "b": [2]}})]

    def test_string_true_is_verbatim(self):
        body = dsml_invoke("search", dsml_param("limit", "5", "true"), dsml_param("query", "\n  padded \n", "true"))
        # even where the schema says integer, and with its newlines
        assert calls(dsml(f"<{B}DSML{B}tool_calls>", body, TOOLS)) == [
            ("search", {"limit": "5", "query": "\n  padded \n"})
        ]

    def test_without_string_attribute_the_schema_types(self):
        body = dsml_invoke("search", dsml_param("limit", "5"), dsml_param("query", "\nq\n"))
        assert calls(dsml(f"<{B}DSML{B}tool_calls>", body, TOOLS)) == [("search", {"limit": 5, "query": "q"})]
        assert calls(dsml(f"<{B}DSML{B}tool_calls>", body, NO_TOOLS)) == [("search", {"limit": "5", "query": "q"})]

    def test_v4_json_object_body(self):
        body = f'\n<{B}DSML{B}invoke name="f">{{"a": 1, "b": "два"}}</{B}DSML{B}invoke>\n'
        assert calls(dsml(f"<{B}DSML{B}tool_calls>", body, NO_TOOLS)) == [("f", {"a": 1, "b": "два"})]

    def test_v4_relaxed_json_object_body(self):
        body = f'<{B}DSML{B}invoke name="f">\n{{a: 1,}}\n</{B}DSML{B}invoke>'
        assert calls(dsml(f"<{B}DSML{B}tool_calls>", body, NO_TOOLS)) == [("f", {"a": 1})]

    def test_empty_invoke(self):
        body = f'<{B}DSML{B}invoke name="now"></{B}DSML{B}invoke>'
        assert calls(dsml(f"<{B}DSML{B}tool_calls>", body, NO_TOOLS)) == [("now", {})]

    def test_ascii_bars(self):
        body = '<|DSML|invoke name="f"><|DSML|parameter name="p" string="false">1</|DSML|parameter></|DSML|invoke>'
        assert calls(dsml("<|DSML|tool_calls>", body, NO_TOOLS)) == [("f", {"p": 1})]

    def test_parameters_keep_their_order(self):
        body = dsml_invoke("f", dsml_param("z", "1", "false"), dsml_param("a", "2", "false"))
        assert items(dsml(f"<{B}DSML{B}tool_calls>", body, NO_TOOLS)) == [[("z", 1), ("a", 2)]]

    @pytest.mark.parametrize(
        "body",
        [
            "",
            "text",
            dsml_invoke("f", dsml_param("n", "forty two", "false")),
            dsml_invoke("f", dsml_param("n", "NaN", "false")),
            dsml_invoke("f", dsml_param("n", "[" * 5000, "false")),
            f"<{B}DSML{B}invoke>{dsml_param('p', 'v', 'true')}</{B}DSML{B}invoke>",
            f'<{B}DSML{B}invoke name="f">[1, 2]</{B}DSML{B}invoke>',
            f'<{B}DSML{B}invoke name="f">not json</{B}DSML{B}invoke>',
            f'<{B}DSML{B}invoke name="f"><{B}DSML{B}parameter string="true">v</{B}DSML{B}parameter></{B}DSML{B}invoke>',
            "junk" + dsml_invoke("f"),
        ],
    )
    def test_malformed(self, body):
        assert dsml(f"<{B}DSML{B}tool_calls>", body, NO_TOOLS) == []


# ---------------------------------------------------------------- Step-3


class TestStep3:
    def test_typical(self):
        body = (
            'function<｜tool_sep｜><steptml:invoke name="search">\n'
            '<steptml:parameter name="query">rust programming</steptml:parameter>\n'
            '<steptml:parameter name="limit">10</steptml:parameter>\n'
            "</steptml:invoke>"
        )
        assert calls(step3("<｜tool_call_begin｜>", body, NO_TOOLS)) == [
            ("search", {"query": "rust programming", "limit": "10"})
        ]
        assert calls(step3("<｜tool_call_begin｜>", body, TOOLS)) == [
            ("search", {"query": "rust programming", "limit": 10})
        ]

    def test_schema_types_values(self):
        body = (
            'function<｜tool_sep｜><steptml:invoke name="search">'
            '<steptml:parameter name="ratio">3</steptml:parameter>'
            '<steptml:parameter name="exact">FALSE</steptml:parameter>'
            '<steptml:parameter name="filters">{"x": {}}</steptml:parameter>'
            '<steptml:parameter name="tags">["t"]</steptml:parameter>'
            "</steptml:invoke>"
        )
        expected = {"ratio": 3, "exact": False, "filters": {"x": {}}, "tags": ["t"]}
        assert calls(step3("<｜tool_call_begin｜>", body, TOOLS)) == [("search", expected)]

    def test_without_the_type_prefix(self):
        body = '<steptml:invoke name="f"><steptml:parameter name="p">v</steptml:parameter></steptml:invoke>'
        assert calls(step3("<｜tool_call_begin｜>", body, NO_TOOLS)) == [("f", {"p": "v"})]

    def test_separator_inside_a_value_is_text(self):
        body = (
            '<steptml:invoke name="f"><steptml:parameter name="p">a<｜tool_sep｜>b</steptml:parameter></steptml:invoke>'
        )
        assert calls(step3("<｜tool_call_begin｜>", body, NO_TOOLS)) == [("f", {"p": "a<｜tool_sep｜>b"})]

    def test_non_ascii(self):
        body = 'function<｜tool_sep｜><steptml:invoke name="f"><steptml:parameter name="città">Zürich ✈</steptml:parameter></steptml:invoke>'
        assert calls(step3("<｜tool_call_begin｜>", body, NO_TOOLS)) == [("f", {"città": "Zürich ✈"})]

    @pytest.mark.parametrize(
        "body",
        [
            "",
            "function<｜tool_sep｜>",
            'search<｜tool_sep｜><steptml:invoke name="f"></steptml:invoke>',
            'function<steptml:invoke name="f"></steptml:invoke>',
            "function<｜tool_sep｜><steptml:invoke></steptml:invoke>",
            'function<｜tool_sep｜><steptml:invoke name="f">text</steptml:invoke>',
        ],
    )
    def test_malformed(self, body):
        assert step3("<｜tool_call_begin｜>", body, NO_TOOLS) == []


# ---------------------------------------------------------------- every grammar

GRAMMARS = [qwen3_xml, glm, minimax_m2, dsml, step3]
FRAGMENTS = [
    "<function=f>",
    "</function>",
    "<parameter=p>",
    "<parameter=>",
    "</parameter>",
    "<arg_key>",
    "</arg_key>",
    "<arg_value>",
    "</arg_value>",
    "\\n",
    '<invoke name="f">',
    "<invoke name='g'>",
    "<invoke>",
    "</invoke>",
    '<parameter name="limit">',
    "</parameter >",
    f'<{B}DSML{B}invoke name="search">',
    f"</{B}DSML{B}invoke>",
    f'<{B}DSML{B}parameter name="p" string="false">',
    f'<{B}DSML{B}parameter name="q" string="true">',
    f"</{B}DSML{B}parameter>",
    "function<｜tool_sep｜>",
    '<steptml:invoke name="search">',
    "</steptml:invoke>",
    '<steptml:parameter name="tags">',
    "</steptml:parameter>",
    "search",
    "\n",
    " ",
    "{",
    "}",
    "[",
    "]",
    '"',
    "'",
    "1",
    "NaN",
    "=",
    "<",
    ">",
    "東",
]
markup_text = st.lists(st.sampled_from(FRAGMENTS) | st.text(max_size=4), max_size=30).map("".join)


@pytest.mark.parametrize("grammar", GRAMMARS)
@settings(max_examples=300, deadline=None)
@given(body=st.text() | markup_text, typed=st.booleans())
def test_never_raises(grammar, body, typed):
    result = grammar("<opener>", body, TOOLS if typed else NO_TOOLS)
    assert isinstance(result, list)
    for call in result:
        assert isinstance(call, ToolCall) and call.name
        assert isinstance(json.loads(call.arguments), dict)


def test_deep_nesting_under_a_schema_stays_a_string():
    deep = "[" * 5000
    body = f"<function=search>\n<parameter=tags>\n{deep}\n</parameter>\n</function>"
    assert calls(qwen3_xml("<tool_call>", body, TOOLS)) == [("search", {"tags": deep})]


def test_glm_value_without_its_opening_tag_is_not_swallowed_by_the_previous_one():
    body = (
        "get-weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n"
        "<arg_key>unit</arg_key>\ncelsius</arg_value>\n"
    )
    calls = glm("<tool_call>", body, Context())
    assert [(c.name, json.loads(c.arguments)) for c in calls] == [("get-weather", {"city": "Paris", "unit": "celsius"})]


# ---------------------------------------------------------------- the layout around a value (issue 8, class 5)
#
# The rule (xml.py's module doc): one leading line break (with spaces or tabs before it) and one trailing
# line break with the closing tag's indentation go; if that indentation is not empty and every non-blank
# line starts with it, the indentation common to the non-blank lines goes from every line; on a side with
# no line break, exactly one space next to a non-space character goes. Nothing else changes.


def qwen_body(value, name="p", tool="f"):
    return f"<function={tool}>\n<parameter={name}>{value}</parameter>\n</function>"


def glm_body(value, name="p", tool="f"):
    return f"{tool}\n<arg_key>{name}</arg_key>\n<arg_value>{value}</arg_value>\n"


def minimax_body(value, name="p", tool="f"):
    return f'\n  <invoke name="{tool}">\n    <parameter name="{name}">{value}</parameter>\n  </invoke>\n'


def dsml_body(value, name="p", tool="f"):
    return f'<{B}DSML{B}invoke name="{tool}">\n<{B}DSML{B}parameter name="{name}">{value}</{B}DSML{B}parameter>\n</{B}DSML{B}invoke>'


def step3_body(value, name="p", tool="f"):
    return (
        f'function<｜tool_sep｜><steptml:invoke name="{tool}">\n'
        f'<steptml:parameter name="{name}">{value}</steptml:parameter>\n</steptml:invoke>'
    )


LAYOUTS = [
    pytest.param(qwen3_xml, qwen_body, id="qwen3_xml"),
    pytest.param(glm, glm_body, id="glm"),
    pytest.param(minimax_m2, minimax_body, id="minimax_m2"),
    pytest.param(dsml, dsml_body, id="dsml"),
    pytest.param(step3, step3_body, id="step3"),
]


def value_of(grammar, body, ctx=NO_TOOLS):
    ((_, args),) = calls(grammar("<opener>", body, ctx))
    return args["p"]


@pytest.mark.parametrize(("grammar", "make"), LAYOUTS)
@pytest.mark.parametrize(
    ("raw", "value"),
    [
        # the issue's example: the value on its own line, one level deeper than the indented closer
        ("\n      value\n    ", "value"),
        # the closer at the value's indentation
        ("\n    value\n    ", "value"),
        # tabs, CRLF, spaces after the opening tag before its line break
        ("\n\t\tvalue\n\t", "value"),
        ("\r\n    value\r\n    ", "value"),
        ("   \n    value\n    ", "value"),
        # whitespace-collapsed pastes: the line break and indentation became one space
        (" value ", "value"),
        (" value", "value"),
        ("value ", "value"),
        (" a  b ", "a  b"),  # inner spaces kept
        # a value written on the tag's line keeps what the collapse rule does not name
        ("value", "value"),
        ("  value  ", "  value  "),  # two spaces are the value's own
        (" ", " "),
        ("  ", "  "),
        # only whitespace around one line break: empty
        ("\n", ""),
        ("\n    ", ""),
        ("  \n  ", ""),
        ("\n\n", ""),
        # the seed's rule still holds where it said something: one line break each side, no more
        ("\n\n    indented\n\n", "\n    indented\n"),
        ("\nline 1\nline 2\n", "line 1\nline 2"),
    ],
)
def test_layout_around_a_value_is_trimmed(grammar, make, raw, value):
    assert value_of(grammar, make(raw)) == value


CODE = "def f():\n    return 1"


@pytest.mark.parametrize(("grammar", "make"), LAYOUTS)
@pytest.mark.parametrize(
    ("raw", "value"),
    [
        # the brief's example: the lines at the closer's indentation keep their relative indentation
        ("\n    def f():\n        return 1\n    ", CODE),
        # pretty-printed one level deeper than the closer
        ("\n      def f():\n          return 1\n    ", CODE),
        # blank lines inside: empty ones stay empty, blank ones lose the common indentation if they start with it
        ("\n    def f():\n\n        return 1\n    ", "def f():\n\n    return 1"),
        ("\n    def f():\n  \n        return 1\n    ", "def f():\n  \n    return 1"),  # shorter: kept as it is
        ("\n    def f():\n          \n        return 1\n    ", "def f():\n      \n    return 1"),
        # Qwen3-Coder's own layout (tags at column 0): every character of the value is kept
        ("\n    def f():\n        return 1\n", "    def f():\n        return 1"),
        # an edit snippet whose first line is deeper than the next: the closer is at column 0, nothing moves
        ("\n        return 1\n    def g():\n", "        return 1\n    def g():"),
        # a line that does not start with the closer's indentation: no line is touched
        ("\n  def f():\nreturn 1\n  ", "  def f():\nreturn 1"),
        ("\n    a\n   b\n    ", "    a\n   b"),
        # a first line on the tag's line does not start with the indentation: nothing moves
        ("def f():\n        return 1\n    ", "def f():\n        return 1"),
    ],
)
def test_code_keeps_its_inner_indentation(grammar, make, raw, value):
    assert value_of(grammar, make(raw)) == value


@pytest.mark.parametrize(("grammar", "make"), LAYOUTS)
def test_schema_typing_applies_after_trimming(grammar, make):
    for raw in ("\n      5\n    ", " 5 ", "\n5\n"):
        ((name, args),) = calls(grammar("<opener>", make(raw, name="limit", tool="search"), TOOLS))
        assert (name, args) == ("search", {"limit": 5})
    ((_, args),) = calls(
        grammar("<opener>", make('\n      {"lang": "en"}\n    ', name="filters", tool="search"), TOOLS)
    )
    assert args == {"filters": {"lang": "en"}}
    ((_, args),) = calls(grammar("<opener>", make("\n      42\n    ", name="query", tool="search"), TOOLS))
    assert args == {"query": "42"}  # a string parameter stays the trimmed string


def test_dsml_string_true_stays_verbatim():
    body = dsml_invoke("f", dsml_param("p", "\n      value\n    ", "true"), dsml_param("q", " v ", "true"))
    assert calls(dsml(f"<{B}DSML{B}tool_calls>", body, NO_TOOLS)) == [("f", {"p": "\n      value\n    ", "q": " v "})]


def test_pasted_field_layouts():
    # qwen3_coder-04 in tests/field: values after a space on the parameter's line, no closing tags
    body = "<function=create_new_file>\n<parameter=filepath> test.txt\n<parameter=contents> hello"
    assert calls(qwen3_xml("<tool_call>", body, NO_TOOLS)) == [
        ("create_new_file", {"filepath": "test.txt", "contents": "hello"})
    ]
    # deepseek_dsml-01: a V4 block pasted with its line breaks collapsed to single spaces
    body = (
        f' <{B}DSML{B}invoke name="terminal"> <{B}DSML{B}parameter name="cwd"> /tmp </{B}DSML{B}parameter>'
        f' <{B}DSML{B}parameter name="background" string="false">true</{B}DSML{B}parameter> </{B}DSML{B}invoke> '
    )
    assert calls(dsml(f"<{B}DSML{B}tool_calls>", body, NO_TOOLS)) == [("terminal", {"cwd": "/tmp", "background": True})]
    # a whole MiniMax block, indented and with a multi-line value
    body = (
        '\n  <invoke name="write">\n    <parameter name="path">\n      /tmp/a.py\n    </parameter>\n'
        '    <parameter name="content">\n      import os\n\n      def f():\n          return os.sep\n    </parameter>\n  </invoke>\n'
    )
    assert calls(minimax_m2("<minimax:tool_call>", body, NO_TOOLS)) == [
        ("write", {"path": "/tmp/a.py", "content": "import os\n\ndef f():\n    return os.sep"})
    ]


VALUE_TEXT = st.text(st.characters(blacklist_characters="<", blacklist_categories=("Cs",)), max_size=40)


@settings(max_examples=300, deadline=None)
@given(value=VALUE_TEXT.filter(lambda v: not v.endswith("\r")))
def test_qwen_layout_gives_back_every_character(value):
    """Qwen3-Coder's own layout, ``<parameter=p>\\nVALUE\\n</parameter>``, gives back VALUE exactly."""
    assert value_of(qwen3_xml, qwen_body("\n" + value + "\n")) == value


@settings(max_examples=300, deadline=None)
@given(
    value=VALUE_TEXT.filter(lambda v: v[:1].strip() and not v.endswith("\r")),
    indent=st.sampled_from(["  ", "    ", "\t", " \t"]),
    deeper=st.sampled_from(["", "  ", "\t"]),
    grammar_make=st.sampled_from([(qwen3_xml, qwen_body), (glm, glm_body), (minimax_m2, minimax_body)]),
)
def test_pretty_printed_layout_gives_back_every_character(value, indent, deeper, grammar_make):
    """A value whose first line starts with a non-space, pretty-printed at any indentation with the
    closer at that indentation or one level less, comes back exactly: relative indentation is kept."""
    grammar, make = grammar_make
    lines = value.split("\n")
    raw = "\n" + "\n".join(indent + deeper + line for line in lines) + "\n" + indent
    assert value_of(grammar, make(raw)) == value


LAYOUT_PIECES = ["x", "ab", " ", "\t", "\n", "\r\n", "\r", "  \n  ", " " * 70, "\t" * 65, "\u2003", "é"]


@settings(max_examples=600, deadline=None)
@given(text=st.lists(st.sampled_from(LAYOUT_PIECES), max_size=12).map("".join), data=st.data())
def test_a_value_is_trimmed_where_it_stands_in_the_body(text, data):
    """A value is trimmed as a span of its body (cut out once): the same as the value cut out first; the end
    of its text before trailing blanks found from the end by pieces is ``rstrip``'s."""
    lo = data.draw(st.integers(0, len(text)))
    hi = data.draw(st.integers(lo, len(text)))
    assert trim_value(text, lo, hi) == trim_value(text[lo:hi])
    for chars in (" \t", None):
        assert text_end(text, lo, hi, chars) == lo + len(text[lo:hi].rstrip(chars))


# The same through the scanners: whole and in any split, on both implementations.


def _pretty_blocks():
    code = "\n      def f():\n\n          return 1\n    "
    return [
        (
            "Sure.\n<tool_call>\n  <function=write>\n    <parameter=path>\n      /tmp/a.py\n    </parameter>\n"
            f"    <parameter=content>{code}</parameter>\n  </function>\n</tool_call>"
        ),
        (
            "Sure.\n<tool_call>write\n  <arg_key>path</arg_key>\n  <arg_value> /tmp/a.py </arg_value>\n"
            f"  <arg_key>content</arg_key>\n  <arg_value>{code}</arg_value>\n</tool_call>"
        ),
        (
            'Sure.\n<minimax:tool_call>\n  <invoke name="write">\n    <parameter name="path"> /tmp/a.py </parameter>\n'
            f'    <parameter name="content">{code}</parameter>\n  </invoke>\n</minimax:tool_call>'
        ),
        (
            f'Sure.\n<{B}DSML{B}function_calls>\n  <{B}DSML{B}invoke name="write">\n'
            f'    <{B}DSML{B}parameter name="path">\n      /tmp/a.py\n    </{B}DSML{B}parameter>\n'
            f'    <{B}DSML{B}parameter name="content">{code}</{B}DSML{B}parameter>\n  </{B}DSML{B}invoke>\n</{B}DSML{B}function_calls>'
        ),
        (
            'Sure.\n<｜tool_calls_begin｜><｜tool_call_begin｜>function<｜tool_sep｜><steptml:invoke name="write">\n'
            '  <steptml:parameter name="path"> /tmp/a.py </steptml:parameter>\n'
            f'  <steptml:parameter name="content">{code}</steptml:parameter>\n</steptml:invoke><｜tool_call_end｜><｜tool_calls_end｜>'
        ),
    ]


PRETTY = _pretty_blocks()
WRITE_ARGS = {"path": "/tmp/a.py", "content": "def f():\n\n    return 1"}


@pytest.mark.parametrize("text", PRETTY, ids=["hermes-qwen3", "hermes-glm", "minimax_m2", "deepseek_dsml", "step3"])
def test_trimmed_values_through_parse_and_any_split(impl, tc, text):
    from ..streams import feed_in_pieces

    parsed = tc.parse(text)
    assert parsed.content == "Sure."
    assert [(c.name, json.loads(c.arguments)) for c in parsed.calls] == [("write", WRITE_ARGS)]
    whole = feed_in_pieces(impl, text, [])
    assert whole[2] == [(c.name, c.arguments) for c in parsed.calls]
    for cut in range(len(text) + 1):  # every single cut
        assert feed_in_pieces(impl, text, [cut]) == whole
    assert feed_in_pieces(impl, text, range(len(text))) == whole  # one character at a time


@pytest.mark.parametrize("text", PRETTY, ids=["hermes-qwen3", "hermes-glm", "minimax_m2", "deepseek_dsml", "step3"])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_trimmed_values_random_splits(impl, text, data):
    from ..streams import feed_in_pieces

    cuts = data.draw(st.lists(st.integers(0, len(text)), max_size=12).map(sorted))
    assert feed_in_pieces(impl, text, cuts) == feed_in_pieces(impl, text, [])


@pytest.mark.parametrize(
    ("opener", "param", "closer"),
    [
        ("<tool_call>\n<function=f>\n", "<parameter=p{k}>v</parameter>\n", "</function>\n</tool_call>"),
        ("<tool_call>f\n", "<arg_key>p{k}</arg_key><arg_value>v</arg_value>", "</tool_call>"),
        (
            '<minimax:tool_call><invoke name="f">',
            '<parameter name="p{k}">v</parameter>',
            "</invoke></minimax:tool_call>",
        ),
    ],
)
def test_a_body_of_too_many_tags_is_malformed(impl, tc, opener, param, closer):
    from textcalls.dialects.xml import TAGS_MAX

    def text(n):
        return opener + "".join(param.format(k=k) for k in range(n)) + closer

    fits = (TAGS_MAX - 2) // 2  # the call's two tags (none for GLM's name line), and two per parameter
    (call,) = tc.parse(text(fits)).calls
    assert len(json.loads(call.arguments)) == fits
    parsed = tc.parse(text(TAGS_MAX // 2 + 1))
    assert (parsed.calls, parsed.removed, parsed.content) == ([], 1, "")


def test_the_tag_cap_is_exact():
    """``TAGS_MAX`` tags are read, each where it is written, though the body has more ``<``; one more tag and there
    are none (the body is malformed)."""
    from textcalls.dialects.xml import QWEN_MARKUP, TAGS_MAX

    for body in ("x" + "</parameter>y" * TAGS_MAX, "x" + "</parameter>y" * TAGS_MAX + "a < b <"):
        tags = QWEN_MARKUP.tags(body)
        assert len(tags) == TAGS_MAX
        assert [(t.kind, t.start, t.end, t.head) for t in tags[:2]] == [
            ("end_param", 1, 13, ""),
            ("end_param", 14, 26, ""),
        ]
        assert tags[-1].end == 13 * TAGS_MAX
        assert QWEN_MARKUP.tags(body + "<parameter=p>") is None
    assert QWEN_MARKUP.tags("<function=f>") == [("call", 0, 12, "f")]


@pytest.mark.parametrize("where", ["invoke", "parameter"])
def test_a_tag_whose_attributes_run_over_the_cap_is_malformed(impl, tc, where):
    from textcalls.dialects.xml import ATTRIBUTES_MAX

    def text(head_size):
        filler = 'x="y" ' * ((head_size - len(' name="f"')) // 6)
        invoke, parameter = (f" {filler}", " ") if where == "invoke" else (" ", f" {filler}")
        return (
            f'<minimax:tool_call><invoke{invoke}name="f"><parameter{parameter}name="p">v</parameter>'
            "</invoke></minimax:tool_call>"
        )

    (call,) = tc.parse(text(ATTRIBUTES_MAX)).calls  # a head of at most ATTRIBUTES_MAX characters: read
    assert (call.name, call.arguments) == ("f", '{"p": "v"}')
    parsed = tc.parse(text(ATTRIBUTES_MAX + 7))
    assert (parsed.calls, parsed.removed, parsed.malformed, parsed.content) == ([], 1, 1, "")


# --- the tag search: str.find to each "<", then the regex from there, gives finditer's matches ----------------

_PIECES = ["<", "</", "<<", "x", " ", "\n", "<function=f>", "</function >", "<parameter=a>", "</parameter>",
           "<invoke name='f'>", "</invoke>", "<parameter name=\"a\">", "<steptml:invoke name=\"f\">",
           "<arg_key>k</arg_key>", "<arg_value>", "</arg_value>", "<｜DSML｜invoke name=\"f\">"]  # fmt: skip


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(_PIECES), max_size=40).map("".join))
def test_the_tags_are_the_regexs_matches_in_order(body):
    from textcalls.dialects.xml import _GLM, DSML_MARKUP, MINIMAX_MARKUP, QWEN_MARKUP, STEP3_MARKUP

    for markup in (QWEN_MARKUP, MINIMAX_MARKUP, STEP3_MARKUP, DSML_MARKUP, _GLM):
        want = [
            (m.lastgroup, m.start(), m.end(), m.group("call_head") or m.group("param_head") or "")
            for m in markup.pattern.finditer(body)
        ]
        assert [tuple(tag) for tag in markup.tags(body)] == want


# A GLM body (``NAME<arg_key>…``) is tags: a quote in a value opens no JSON string, so the block closes at
# its closer, in parse and in any split (it was read to the end of the message, and with stream_arguments
# its call abandoned). A tag (``<`` then a letter or ``/``) before any ``{`` makes a body tags; a JSON body
# (Hermes) keeps its strings, so a closer written inside one stays data.
QUOTED = [
    ('<tool_call>edit\n<arg_key>old</arg_key>\n<arg_value>He said "hi</arg_value>\n</tool_call> after', 'He said "hi'),
    ('<tool_call>edit\n<arg_key>old</arg_key>\n<arg_value>{"</arg_value>\n</tool_call> after', '{"'),
    ('<tool_call>edit<arg_key>old</arg_key><arg_value>x = "</arg_value></tool_call> after', 'x = "'),
]
EDIT = [{"type": "function", "function": {"name": "edit", "parameters": {"type": "object"}}}]


@pytest.mark.parametrize(("text", "value"), QUOTED)
def test_a_quote_in_a_glm_value_does_not_hide_the_closer(impl, tc, text, value):
    from ..streams import feed_in_pieces

    p = tc.parse(text, tools=EDIT)
    assert ([(c.name, json.loads(c.arguments)) for c in p.calls], p.content) == ([("edit", {"old": value})], "after")
    scrubber = impl.StreamScrubber(tools=EDIT, stream_arguments=True)
    assert scrubber.feed(text) == " after"  # the block ended at its closer, not at the flush
    events = scrubber.take_events()
    assert (events[0][0], events[-1][0], scrubber.abandoned) == ("started", "ended", 0)  # streamed, not abandoned
    assert "".join(e[2] for e in events if e[0] == "arguments") == p.calls[0].arguments
    for cut in range(len(text) + 1):
        assert feed_in_pieces(impl, text, [cut], tools=EDIT)[0] == " after"


def test_a_closer_inside_a_json_string_stays_data(impl, tc):
    text = '<tool_call>{"name": "edit", "arguments": {"old": "</tool_call>"}}</tool_call> after'
    p = tc.parse(text, tools=EDIT)
    assert ([json.loads(c.arguments) for c in p.calls], p.content) == ([{"old": "</tool_call>"}], "after")


# --- the tag reader: tried only where a tag's literal begins (issue 31), the same tags as finditer -------------

from textcalls.dialects import xml as xml_module  # noqa: E402 (the private markups, read by these tests only)

MARKUPS = {
    "qwen": xml_module.QWEN_MARKUP,
    "minimax": xml_module.MINIMAX_MARKUP,
    "step3": xml_module.STEP3_MARKUP,
    "dsml": xml_module.DSML_MARKUP,
    "glm": xml_module._GLM,
    "k3": xml_module._K3,
}
# pieces of every markup's tags, whole and broken, and text dense in "<"
_TAG_PIECES = st.sampled_from(
    [
        "<function=f>",
        "</function>",
        "<parameter=p>",
        "</parameter>",
        "</parameter >",
        "<invoke",
        ' name="f">',
        "</invoke>",
        "<parameter",
        "<steptml:invoke",
        "</steptml:parameter>",
        "<steptml:parameter",
        "<｜DSML｜",
        "<|DSML|",
        "</｜DSML｜",
        "invoke",
        "parameter",
        ' name="p" string="true">',
        "<arg_key>",
        "k",
        "</arg_key>",
        "<arg_value>",
        "</arg_value>",
        "<|open|>",
        "<|close|>",
        "call",
        "argument",
        "<|sep|>",
        " ",
        "\n",
        "<",
        "</",
        "x < 3",
        "<b>",
        "'<tag>'",
        ">",
        "=",
        "｜",
    ]
)


def reference_tags(markup, body: str) -> list:
    """What the reader gave before (issue 31): every match of the markup's pattern, in order (``finditer``)."""
    out = []
    for m in markup.pattern.finditer(body):
        out.append((m.lastgroup, m.start(), m.end(), m.group("call_head") or m.group("param_head") or ""))
    return out


@settings(max_examples=500, deadline=None)
@given(name=st.sampled_from(sorted(MARKUPS)), parts=st.lists(_TAG_PIECES, max_size=30))
def test_the_tags_are_those_of_finditer_and_each_begins_with_a_start(name, parts):
    markup, body = MARKUPS[name], "".join(parts)
    want = reference_tags(markup, body)
    assert all(body.startswith(markup.starts, start) for _, start, _, _ in want)
    assert [tuple(tag) for tag in markup.tags(body)] == want


def test_a_value_dense_in_lt_is_read_as_one_value():
    code = "\n".join(["return x < 3 and '<tag>' != \"q\" or y <= z  # a <b> c"] * 2000)
    body = "<function=write_file>\n<parameter=content>\n" + code + "\n</parameter>\n</function>"
    assert len(xml_module.QWEN_MARKUP.tags(body)) == 4
    (call,) = qwen3_xml("<tool_call>", body, Context())
    assert json.loads(call.arguments) == {"content": code}
