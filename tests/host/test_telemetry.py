"""`hostlink.host.telemetry` and `hostlink.host.meters` with the OpenTelemetry SDK as the
application configures it (its in-memory exporter and reader): which incoming trace context is
continued, failures recorded as a type and never a message, content only under the GenAI switch,
bounded; the MCP client's numbers."""

from __future__ import annotations

import os
import signal

import pytest
from opentelemetry import trace

from hostlink.host import telemetry
from tracing_support import metering, points, recording

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT = "00f067aa0ba902b7"


def test_a_valid_traceparent_is_continued_and_anything_else_starts_afresh():
    exporter = recording()
    context = telemetry.incoming({"traceparent": f"00-{TRACE_ID}-{PARENT}-01", "tracestate": "a=1"})
    with telemetry.span("continued", kind="server", context=context):
        pass
    for headers in ({}, {"traceparent": "00-zz-01"}, {"traceparent": f"00-{'0' * 32}-{PARENT}-01"}):
        with telemetry.span("fresh", context=telemetry.incoming(headers)):
            pass
    continued, *fresh = exporter.get_finished_spans()
    assert f"{continued.context.trace_id:032x}" == TRACE_ID and f"{continued.parent.span_id:016x}" == PARENT
    assert continued.kind == trace.SpanKind.SERVER and continued.context.trace_state.get("a") == "1"
    assert [span.parent for span in fresh] == [None, None, None]
    assert len({span.context.trace_id for span in fresh}) == 3


def test_a_failure_is_its_type_never_its_message():
    exporter = recording()
    with pytest.raises(ValueError, match="secret"), telemetry.span("work"):
        raise ValueError("/home/someone/secret.txt")
    [span] = exporter.get_finished_spans()
    assert span.attributes["error.type"] == "ValueError" and span.status.status_code == trace.StatusCode.ERROR
    assert "secret" not in str(span.to_json()) and not span.events


def test_spans_across_a_generator_are_ended_explicitly_under_their_parent():
    exporter = recording()
    parent = telemetry.start("chat", {"gen_ai.operation.name": "chat"}, kind="client")
    child = telemetry.start("phase", parent=parent)
    assert trace.get_current_span() is not parent  # not current: nothing leaks into the consumer's code
    telemetry.end(child)
    telemetry.end(parent, "timeout")
    phase, chat = exporter.get_finished_spans()
    assert phase.parent.span_id == chat.context.span_id
    assert chat.attributes["error.type"] == "timeout" and chat.kind == trace.SpanKind.CLIENT


def test_content_capture_is_the_genai_switch_and_bounded(monkeypatch):
    monkeypatch.delenv(telemetry.CONTENT_SWITCH, raising=False)
    assert not telemetry.capture_content()
    for value, on in (("true", True), ("TRUE", True), ("false", False), ("1", False)):
        monkeypatch.setenv(telemetry.CONTENT_SWITCH, value)
        assert telemetry.capture_content() is on
    text = telemetry.content(["x" * (telemetry.MAX_CONTENT_CHARS * 2)])
    assert len(text) == telemetry.MAX_CONTENT_CHARS + 1 and text.endswith("…")
    assert telemetry.content({"a": [1, "é"]}) == '{"a":[1,"é"]}'


@pytest.mark.anyio
async def test_an_mcp_call_span_says_whether_the_tool_or_hostlink_failed(tmp_path, monkeypatch):
    from hostlink.mcp.extension import McpExtension
    from mcp_runtime_support import Host, stdio

    monkeypatch.setenv("HOSTLINK_RUNTIME_DIR", str(tmp_path / "rt"))
    exporter = recording()
    async with Host(McpExtension(servers={"fx": stdio()}), tmp_path) as host:
        assert (await host.run(action="call", server="fx", tool="fail")).is_error  # the tool's own error
        assert (await host.run(action="call", server="fx", tool="nope")).is_error  # hostlink's
        assert not (await host.run(action="call", server="fx", tool="echo", args={"text": "x"})).is_error
    calls = [span for span in exporter.get_finished_spans() if span.name == "mcp call"]
    assert [(span.attributes.get("error.type"), span.status.status_code.name) for span in calls] == [
        ("tool_error", "ERROR"), ("unknown_tool", "ERROR"), (None, "UNSET")]
    assert [span.attributes.get("gen_ai.tool.name") for span in calls] == ["fail", None, "echo"]


def test_tool_labels_are_cut_to_safe_characters_and_to_a_bounded_set(monkeypatch):
    from hostlink.mcp import metering

    monkeypatch.setattr(metering, "_tools", set())
    assert metering.tool_label("<img src=x>") == "?img?src?x?"
    labels = [metering.tool_label(f"t{n}") for n in range(metering.MAX_TOOLS + 2)]
    assert labels[metering.MAX_TOOLS - 2:] == ["t198", "other", "other", "other"]  # "<img…>" took one place
    assert metering.tool_label("t0") == "t0"  # a name already labelled keeps its label


@pytest.mark.anyio
async def test_mcp_calls_states_and_a_reconnect_are_in_the_opentelemetry_metrics(tmp_path, monkeypatch):
    """A real host session over the MCP extension and the fixture server on stdio: the calls by
    server, tool and outcome, a killed server latched and reconnected (counted once), the states
    read while the session runs and gone with it."""
    from hostlink.mcp.extension import McpExtension
    from mcp_runtime_support import Host, stdio, text

    monkeypatch.setenv("HOSTLINK_RUNTIME_DIR", str(tmp_path / "rt"))
    reader = metering()
    async with Host(McpExtension(servers={"fx": stdio()}), tmp_path) as host:
        first = int(text(await host.run(action="call", server="fx", tool="pid")))
        assert (await host.run(action="call", server="fx", tool="<img src=x>")).is_error
        assert (await host.run(action="call", server="nowhere", tool="pid")).is_error
        assert not (await host.run(action="status")).is_error  # not a tool call: not counted
        os.kill(first, signal.SIGTERM)
        lost = await host.run(action="call", server="fx", tool="echo", args={"text": "x"})
        assert lost.is_error and "use reconnect" in text(lost)
        assert not (await host.run(action="reconnect", server="fx")).is_error
        assert int(text(await host.run(action="call", server="fx", tool="pid"))) != first
        during = points(reader.get_metrics_data())
    after = points(reader.get_metrics_data())
    calls = {tuple(sorted(point.attributes.items())): point.count for point in during["mcp.client.operation.duration"]}

    def key(server: str, tool: str, error: str | None = None) -> tuple:
        labels = {"mcp.method.name": "tools/call", "hostlink.mcp.server": server, "gen_ai.tool.name": tool}
        return tuple(sorted({**labels, **({"error.type": error} if error else {})}.items()))

    codes = sorted(dict(labels)["error.type"] for labels in calls
                   if ("hostlink.mcp.server", "fx") in labels and ("gen_ai.tool.name", "-") in labels)
    assert codes == ["connection_failed", "unknown_tool"]  # a call that failed before its server answered: no tool
    assert calls == {key("fx", "pid"): 2, key("fx", "-", codes[0]): 1, key("fx", "-", codes[1]): 1,
                     key("other", "-", "unknown_server"): 1}
    assert [(dict(point.attributes), point.value) for point in during["hostlink.mcp.reconnects"]] == [
        ({"hostlink.mcp.server": "fx", "hostlink.mcp.reconnect.kind": "reconnect"}, 1)]
    assert [(dict(point.attributes), point.value) for point in during["hostlink.mcp.server.state"]] == [
        ({"hostlink.mcp.server": "fx", "hostlink.mcp.state": "connected"}, 1)]
    assert "hostlink.mcp.server.state" not in after  # the session stopped: its client is no longer read
