"""MCP elicitation (form mode) through the host's `ask`, against a fixture server whose
tools ask questions: opt-in per server and offered only when the host can ask; a form is
sanitized before it is shown, a secret is never asked for, a web page never opened, an
answer checked against the form. On a real pseudo-terminal: answers typed, a value that
does not fit asked again, a decline, a cancel (Ctrl-D); without a terminal nothing is
offered and the server is told so.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from host_support import Notices
from hostlink.host import Answer, CancelSignal, Question
from hostlink.host.session import HostSession
from hostlink.mcp.config.schema import HttpServer
from hostlink.mcp.extension import McpExtension
from mcp_cli_support import configure, hostlink
from mcp_runtime_support import ASKER, HttpFixture
from terminal_support import typed


async def ask_through_a_host(asker: HttpFixture, tool: str, ask, *, opted_in: bool = True,
                             protocol: str = "auto") -> tuple[dict, list[str]]:
    server = HttpServer(url=asker.url, elicitation=opted_in, protocol_version=protocol)
    host, notices = HostSession([McpExtension(servers={"asker": server})]), Notices()
    await host.start(cwd=Path.cwd(), project_trusted=False, notifier=notices, ask=ask)
    try:
        result = await host.run_tool("mcp", {"action": "call", "server": "asker", "tool": tool}, CancelSignal())
    finally:
        await host.shutdown()
    assert not result.is_error, result.content
    return json.loads(result.content[0].text), notices.messages


@pytest.mark.anyio
@pytest.mark.parametrize("protocol", ["auto", "legacy"])  # embedded in the call's result / a request of its own
async def test_an_accepted_answer_reaches_the_server_and_the_form_was_sanitized(asker, protocol):
    asked: list[Question] = []

    async def ask(question: Question) -> Answer:
        asked.append(question)
        return Answer("accept", {"name": "Ada", "age": 36, "color": "blue"})

    said, _ = await ask_through_a_host(asker, "ask_user", ask, protocol=protocol)
    assert said == {"action": "accept", "content": {"name": "Ada", "age": 36, "color": "blue"}}
    (question,) = asked
    assert question.asker == "asker" and question.message == "Tell me about you"  # the OSC title is gone
    name = question.fields["properties"]["name"]
    assert name == {"type": "string", "title": "Your name", "description": "as printed", "maxLength": 20}
    assert question.fields["required"] == ["name", "age"] and question.fields["additionalProperties"] is False


@pytest.mark.anyio
async def test_choices_of_every_sep1330_shape_keep_their_shape_and_an_answer_of_several_goes_back(asker):
    asked: list[Question] = []
    answer = {"size": "l", "tone": "loud", "legacy": "b", "toppings": ["ham", "kale"], "extras": ["x1", "x2"]}

    async def ask(question: Question) -> Answer:
        asked.append(question)
        return Answer("accept", answer)

    said, notices = await ask_through_a_host(asker, "ask_choices", ask)
    assert said == {"action": "accept", "content": answer}, notices
    fields = asked[0].fields["properties"]
    assert fields["size"] == {"type": "string", "enum": ["s", "m", "l"], "default": "m"}
    assert fields["tone"]["oneOf"] == [{"const": "calm", "title": "Calm tone"}, {"const": "loud", "title": "Loud tone"}]
    assert fields["legacy"] == {"type": "string", "enum": ["a", "b"], "enumNames": ["Alpha", "Beta"]}
    assert fields["toppings"] == {"type": "array", "items": {"type": "string", "enum": ["ham", "egg", "kale"]},
                                  "minItems": 1, "maxItems": 2}
    assert fields["extras"]["items"] == {"anyOf": [{"const": "x1", "title": "Extra one"},
                                                   {"const": "x2", "title": "Extra two"}]}
    assert fields["extras"]["default"] == ["x2"]


@pytest.mark.anyio
async def test_an_answer_that_does_not_fit_the_form_is_cancelled_and_the_person_told(asker):
    async def ask(question: Question) -> Answer:
        return Answer("accept", {"name": "Ada", "age": "old"})

    said, notices = await ask_through_a_host(asker, "ask_user", ask)
    assert said == {"action": "cancel", "content": None}
    assert any("did not fit its form" in notice for notice in notices)


@pytest.mark.anyio
@pytest.mark.parametrize(("tool", "reason"), [("ask_secret", "asks for a secret"), ("ask_page", "web page")])
async def test_a_secret_or_a_web_page_is_declined_without_asking(asker, tool, reason):
    async def ask(question: Question) -> Answer:
        raise AssertionError("the person must not be asked")

    said, notices = await ask_through_a_host(asker, tool, ask)
    assert said["action"] == "decline" and any(reason in notice for notice in notices), notices


@pytest.mark.anyio
@pytest.mark.parametrize(("opted_in", "can_ask"), [(False, True), (True, False)])
async def test_without_opt_in_or_a_host_that_can_ask_nothing_is_offered(asker, opted_in, can_ask):
    async def ask(question: Question) -> Answer:
        raise AssertionError("the person must not be asked")

    said, _ = await ask_through_a_host(asker, "ask_user", ask if can_ask else None, opted_in=opted_in)
    assert "error" in said  # the server's request was refused: the capability was never advertised


# --- on a terminal ----------------------------------------------------------------------------


@pytest.fixture
def env(tmp_path):
    return configure(tmp_path, {"asker": {"command": sys.executable, "args": [ASKER], "elicitation": True}})


def test_answers_typed_on_a_terminal_with_a_misfit_asked_again(env, tmp_path):
    code, out, shown = typed(env, tmp_path, [b"y\n", b"Ada\n", b"old\n", b"36\n", b"\n", b"y\n"],
                             "mcp", "call", "asker", "ask_user", "{}")
    assert code == 0, shown
    assert json.loads(out) == {"action": "accept", "content": {"name": "Ada", "age": 36, "color": "green",
                                                               "subscribe": True}}
    assert "MCP server 'asker' asks (its words, not hostlink's):" in shown and "| Tell me about you" in shown
    assert "a whole number is needed; try again" in shown  # "old" for the age
    assert "one of: 1) red, 2) green, 3) blue; Enter: green" in shown
    assert "\x1b]0;" not in shown and "\x1b[31m" not in shown


def test_choices_picked_on_a_terminal_by_number_or_value_several_by_commas(env, tmp_path):
    code, out, shown = typed(env, tmp_path, [b"y\n", b"\n", b"2\n", b"Beta\n", b"b\n", b"1,2,3\n", b"egg, 1\n",
                                             b"\n"], "mcp", "call", "asker", "ask_choices", "{}")
    assert code == 0, shown
    assert json.loads(out) == {"action": "accept", "content": {"size": "m", "tone": "loud", "legacy": "b",
                                                               "toppings": ["egg", "ham"], "extras": ["x2"]}}
    assert "one of: 1) Calm tone, 2) Loud tone" in shown and "one of: 1) Alpha, 2) Beta" in shown
    assert "some of: 1) ham, 2) egg, 3) kale, separated by commas" in shown
    assert "pick at most 2; try again" in shown  # 1,2,3 for the toppings
    assert "Enter: x2" in shown and "\x1b[31m" not in shown


@pytest.mark.parametrize(("answers", "action"), [([b"n\n"], "decline"), ([b"y\n", b"\x04"], "cancel")])
def test_a_decline_and_a_cancel_on_a_terminal(env, tmp_path, answers, action):
    code, out, shown = typed(env, tmp_path, answers, "mcp", "call", "asker", "ask_user", "{}")
    assert code == 0, shown
    assert json.loads(out) == {"action": action, "content": None}


def test_without_a_terminal_the_server_is_told_nothing_can_be_asked(env, tmp_path):
    result = hostlink(env, tmp_path, "mcp", "call", "asker", "ask_user", "{}", stdin="")
    assert result.returncode == 0, result.stderr
    assert "error" in json.loads(result.stdout)


# --- in process: each form hostlink does not show, and what the person is told ------------------

def _text_field(**extra):
    return {"type": "string", **extra}


@pytest.mark.anyio
@pytest.mark.parametrize(("schema", "reason"), [
    ({"type": "array"}, "the form is not an object of fields"),
    ({"type": "object", "properties": {}}, "the form has no fields"),
    ({"type": "object", "properties": {f"f{n}": _text_field() for n in range(21)}}, "the form has more than 20 fields"),
    ({"type": "object", "properties": {"name": _text_field()}, "required": ["name", "age"]},
     "the form's required list names fields it does not have"),
    ({"type": "object", "properties": {"na\x1bme": _text_field()}}, "a field name is not a short plain name"),
    ({"type": "object", "properties": {"photo": {"type": "object"}}},
     "field 'photo' is not a text, number, yes/no or choice field"),
    ({"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string"}}}},
     "field 'tags' is a list of something other than choices"),
    ({"type": "object", "properties": {"size": _text_field(enum=["s", "m"], enumNames=["small"])}},
     "field 'size' has choice names that do not match its choices"),
    ({"type": "object", "properties": {"size": _text_field(oneOf=["s", "m"])}},
     "field 'size' has choices that are not short plain texts"),
    ({"type": "object", "properties": {"size": _text_field(anyOf=[{"const": "s"}, {"const": "s"}])}},
     "field 'size' has choices that are not short plain texts"),
    ({"type": "object", "properties": {"note": {"type": "string", "title": "Your API key"}}},
     "field 'note' asks for a secret, which a form must not collect"),
])
async def test_a_form_hostlink_does_not_show_is_declined_and_the_person_told_why(schema, reason):
    from mcp_types import ElicitRequestFormParams

    from hostlink.mcp.runtime.elicitation import elicitation_for

    asked, notices = [], Notices()

    async def ask(question):
        asked.append(question)
        return Answer("accept", {})

    elicit = elicitation_for(ask, notices)("asker")
    result = await elicit(None, ElicitRequestFormParams(message="Tell me", requested_schema=schema))
    assert result.action == "decline" and asked == []
    (notice,) = notices.messages
    assert notice.startswith(f"MCP server 'asker' asked a question hostlink does not ask: {reason}")
    assert notice.endswith("; declined")


@pytest.mark.anyio
async def test_a_text_field_keeps_a_format_mcp_allows_and_loses_any_other():
    from mcp_types import ElicitRequestFormParams

    from hostlink.mcp.runtime.elicitation import elicitation_for

    asked = []

    async def ask(question):
        asked.append(question)
        return Answer("accept", {"mail": "a@example.com", "shade": "red"})

    schema = {"type": "object",
              "properties": {"mail": _text_field(format="email"), "shade": _text_field(format="color")}}
    result = await elicitation_for(ask, Notices())("asker")(None, ElicitRequestFormParams(message="Tell me",
                                                                                          requested_schema=schema))
    assert result.action == "accept" and result.content == {"mail": "a@example.com", "shade": "red"}
    (question,) = asked
    assert question.fields["properties"] == {"mail": {"type": "string", "format": "email"}, "shade": {"type": "string"}}
