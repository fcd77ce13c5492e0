"""Spans through the OpenTelemetry API, called with plain values by extensions and hosts.

hostlink configures no SDK and no exporter: the application does (Logfire, LangSmith, an OTLP
exporter). Until one does, the API's tracer is a no-op and a span costs a few object
creations. The API is imported on first use, so a command that traces nothing never loads it.

While no tracer provider is set, hostlink makes no span at all (`recording` is false) rather
than the API's no-op ones: the current trace context, an incoming one included, stays as it was
and still goes on to every request the MCP SDK sends.

No span carries content by default: no prompt, message, tool argument or result, and no
path; only names a configuration bounds, counts, codes and durations. A failure is recorded
as its type or code (`error.type`), never its text, which may quote a request. Content is
added only where the GenAI convention's switch (`CONTENT_SWITCH`) is on.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from opentelemetry.context import Context as TraceContext
    from opentelemetry.trace import Span, Tracer

TRACER_NAME = "hostlink"
CONTENT_SWITCH = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
MAX_CONTENT_CHARS = 64 * 1024  # one captured attribute, cut beyond this
Attributes = Mapping[str, str | bool | int | float | list[str]]


def capture_content() -> bool:
    """The GenAI convention's opt-in: content goes into spans only when it is `true`."""
    return os.environ.get(CONTENT_SWITCH, "").strip().lower() == "true"


def content(value: Any) -> str:
    """`value` as the compact JSON a content attribute holds, bounded."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    return text if len(text) <= MAX_CONTENT_CHARS else text[:MAX_CONTENT_CHARS] + "…"


_loaded: dict[str, Any] = {}  # the API module and hostlink's tracer, once loaded


def _api() -> Any:
    """`opentelemetry.trace`, imported on first use (a function-level import on every span costs
    more than the no-op span itself)."""
    trace = _loaded.get("trace")
    if trace is None:
        import opentelemetry.trace as trace

        _loaded["trace"] = trace
    return trace


def recording() -> bool:
    """Whether the application set a tracer provider (in code or by `OTEL_PYTHON_TRACER_PROVIDER`)."""
    trace = _api()
    return not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)


def idle() -> Span:
    """The span that records nothing (what a caller holds while `recording()` is false)."""
    return _api().INVALID_SPAN  # type: ignore[no-any-return]


def tracer() -> Tracer:
    """hostlink's tracer, made once."""
    found: Tracer | None = _loaded.get("tracer")
    if found is None:
        found = _loaded["tracer"] = _api().get_tracer(TRACER_NAME)
    return found


def _kind(kind: str) -> Any:
    kinds = _api().SpanKind
    return {"client": kinds.CLIENT, "server": kinds.SERVER}.get(kind, kinds.INTERNAL)


def start(name: str, attributes: Attributes | None = None, *, kind: str = "internal",
          parent: Span | None = None) -> Span:
    """A span that is not made current: for work that spans the yields of a generator, where a
    current span would leak into the consumer's code. `parent` defaults to the current span.
    Called only while `recording()`: the caller holds `idle()` otherwise."""
    trace = _api()
    context = trace.set_span_in_context(parent) if parent is not None else None
    return tracer().start_span(name, context=context, kind=_kind(kind), attributes=attributes)


def end(span: Span, error: str | None = None) -> None:
    """End `span`, failed with `error` (a type or code, never a message) when given."""
    if error is not None:
        fail(span, error)
    span.end()


def fail(span: Span, error: str) -> None:
    span.set_attribute("error.type", error)
    span.set_status(_api().StatusCode.ERROR)


@contextmanager
def span(name: str, attributes: Attributes | None = None, *, kind: str = "internal",
         context: TraceContext | None = None) -> Iterator[Span]:
    """A current span around a block (no yield inside it); an exception leaving the block fails
    it with the exception's type. `context` continues a trace from elsewhere (`incoming`)."""
    if not recording():
        yield idle()
        return
    with tracer().start_as_current_span(name, context=context, kind=_kind(kind), attributes=attributes,
                                         record_exception=False, set_status_on_exception=False) as current:
        try:
            yield current
        except BaseException as error:
            fail(current, type(error).__name__)
            raise


def incoming(headers: Mapping[str, str]) -> TraceContext | None:
    """The trace a request's `traceparent` (and `tracestate`) continues; None when it has none
    that is valid, so the span starts a trace of its own (or nests under the current one)."""
    if "traceparent" not in headers:
        return None
    from opentelemetry import propagate, trace

    try:
        context = propagate.extract(dict(headers))
    except (ValueError, TypeError):
        return None
    return context if trace.get_current_span(context).get_span_context().is_valid else None
