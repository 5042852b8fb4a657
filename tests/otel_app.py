"""An app that configured OpenTelemetry (the real SDK, exporting over OTLP/HTTP to the endpoint
given as the first argument) and guards three streamed turns with ``callgate.guard``: a passing
one inside its own span, a failing one outside any span, and, inside a span of its own, the
passing one with an item callgate cannot read in it, passed on unjudged (``on_error="pass"``).
The fixtures' paths follow."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from opentelemetry import metrics, trace
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

import callgate


def turn(path: str) -> None:
    envelope = json.loads(Path(path).read_text())
    stream = callgate.guard(iter(envelope["chunks"]), envelope["tool_schemas"], profile="openai")
    try:
        for _ in stream:
            pass
    except callgate.Blocked:
        pass


def unjudged(path: str) -> None:
    envelope = json.loads(Path(path).read_text())
    items = [*envelope["chunks"][:2], object(), *envelope["chunks"][2:]]
    stream = callgate.guard(
        iter(items), envelope["tool_schemas"], profile="openai", on_error="pass"
    )
    assert list(stream) == items


def main() -> None:
    base, passing, failing = sys.argv[1:4]
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(f"{base}/v1/traces")))
    reader = PeriodicExportingMetricReader(
        OTLPMetricExporter(f"{base}/v1/metrics"), export_interval_millis=60_000
    )
    meter_provider = MeterProvider(metric_readers=[reader])
    trace.set_tracer_provider(tracer_provider)
    metrics.set_meter_provider(meter_provider)
    with trace.get_tracer("app").start_as_current_span("chat gpt-4o-mini"):
        turn(passing)
    turn(failing)
    with trace.get_tracer("app").start_as_current_span("chat unjudged"):
        unjudged(passing)
    tracer_provider.force_flush()
    meter_provider.force_flush()
    tracer_provider.shutdown()
    meter_provider.shutdown()


if __name__ == "__main__":
    main()
