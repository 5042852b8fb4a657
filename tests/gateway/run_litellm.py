"""``litellm`` (the proxy's command line, arguments as given), in a process that exported
OpenTelemetry first, as a gateway's operator sets it up: the SDK's providers, spans sent as they
end and metrics every half second, over OTLP/HTTP to ``OTEL_EXPORTER_OTLP_ENDPOINT``."""

from __future__ import annotations

import sys
from importlib.metadata import entry_points

from opentelemetry import metrics, trace
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor


def export() -> None:
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(tracer_provider)
    reader = PeriodicExportingMetricReader(OTLPMetricExporter(), export_interval_millis=500)
    metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))


if __name__ == "__main__":
    export()
    sys.argv[0] = "litellm"
    # The ``litellm`` command, wherever the release keeps it (``litellm_cli`` from 1.108 on).
    (command,) = entry_points(group="console_scripts", name="litellm")
    sys.exit(command.load()())
