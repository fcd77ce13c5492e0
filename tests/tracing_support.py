"""Shared by the tracing and metrics tests (no tests here): the OpenTelemetry SDK with its in-memory
exporter as this process's tracer provider and its in-memory reader as its meter provider, and
what a test asks of the spans and numbers it recorded."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import Counter, Histogram, MeterProvider, ObservableCounter
from opentelemetry.sdk.metrics.export import AggregationTemporality, InMemoryMetricReader, MetricsData
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

EXPORTER = InMemorySpanExporter()
PHASES = ["claude start", "first token", "answer", "stop and cleanup"]


def recording() -> InMemorySpanExporter:
    """The exporter every span of this process goes to from now on, emptied. The global provider
    can be set once a process: the first call sets it, later ones find it."""
    if not isinstance(trace.get_tracer_provider(), TracerProvider):
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(EXPORTER))
        trace.set_tracer_provider(provider)
    assert isinstance(trace.get_tracer_provider(), TracerProvider), "another provider was set first"
    EXPORTER.clear()
    return EXPORTER


def of_scope(spans: Iterable[ReadableSpan], scope: str) -> list[ReadableSpan]:
    return [span for span in spans if span.instrumentation_scope is not None
            and span.instrumentation_scope.name == scope]


def children(spans: Sequence[ReadableSpan], parent: ReadableSpan) -> list[ReadableSpan]:
    """`parent`'s direct children, in the order they started."""
    assert parent.context is not None
    found = [span for span in spans if span.parent is not None and span.parent.span_id == parent.context.span_id]
    return sorted(found, key=lambda span: span.start_time or 0)


def attribute_text(spans: Iterable[ReadableSpan]) -> str:
    """Every attribute and event of `spans` as one text, to look for what must not be there."""
    dumped: list[Any] = []
    for span in spans:
        dumped.append(span.name)
        dumped.append(dict(span.attributes or {}))
        dumped.extend(dict(event.attributes or {}) for event in span.events)
    return json.dumps(dumped, default=str)


READER = InMemoryMetricReader(preferred_temporality={
    Counter: AggregationTemporality.DELTA, Histogram: AggregationTemporality.DELTA,
    ObservableCounter: AggregationTemporality.DELTA})


def metering() -> InMemoryMetricReader:
    """The reader every metric of this process goes to from now on, each collection holding what
    was recorded since the one before (emptied here). Set once a process, as the tracer provider."""
    if not isinstance(metrics.get_meter_provider(), MeterProvider):
        metrics.set_meter_provider(MeterProvider(metric_readers=[READER]))
    assert isinstance(metrics.get_meter_provider(), MeterProvider), "another provider was set first"
    READER.get_metrics_data()
    return READER


def points(data: MetricsData | None, scope: str = "hostlink") -> dict[str, list[Any]]:
    """`scope`'s data points by metric name, from one collection."""
    found: dict[str, list[Any]] = {}
    for resource in data.resource_metrics if data is not None else ():
        for scoped in resource.scope_metrics:
            if scoped.scope.name == scope:
                for metric in scoped.metrics:
                    found.setdefault(metric.name, []).extend(metric.data.data_points)
    return found
