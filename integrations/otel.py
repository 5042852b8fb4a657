"""Every verdict on a live turn as OpenTelemetry: an evaluation event on the current span and a
counter of turns.

How this works: ``record_verdict`` is called wherever callgate judges a live turn (``guard``, the
proxy addon, the LiteLLM guardrail). It does nothing unless the process configured OpenTelemetry:
an app that did has imported ``opentelemetry.trace`` (or ``.metrics``) and set a provider, so
the check reads ``sys.modules`` and never imports OpenTelemetry itself. When it is configured,
the current span (or a ``callgate.check`` span of its own when there is none) gets the event
``gen_ai.evaluation.result`` of the GenAI semantic conventions, the ``callgate.*`` attributes and
one ``callgate.call`` event per call with its id and tool name; the counter ``callgate.turns``
counts the turn. Nothing of a call's arguments, the text or the prompt is ever exported.

The names are defined here: the conventions' Python package has no constant for the event, and
its attribute constants are marked as moved to the GenAI conventions repository.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable
from typing import Any

from callgate.reassemble.errors import SetupError
from callgate.reassemble.report import Report, Status

log = logging.getLogger("callgate.otel")

EVENT = "gen_ai.evaluation.result"
EVALUATION_NAME = "callgate.tool_call_admission"
SPAN = "callgate.check"
CALL_EVENT = "callgate.call"
COUNTER = "callgate.turns"
SCOPE = "callgate"

#: The evaluation's score label per status: a broken stream without calls admits nothing either.
LABELS = {
    Status.PASS: "pass",
    Status.FAIL: "fail",
    Status.NOT_APPLICABLE: "not_applicable",
    Status.INVALID: "not_applicable",
}

#: What ``callgate record --otel`` needs beside mitmproxy.
EXPORT_EXTRA = "callgate[proxy,otel-export]"


def evaluation_attributes(report: Report, response_id: str | None = None) -> dict[str, Any]:
    """The attributes of the ``gen_ai.evaluation.result`` event for ``report``."""
    attributes: dict[str, Any] = {
        "gen_ai.evaluation.name": EVALUATION_NAME,
        "gen_ai.evaluation.score.label": LABELS[report.status],
        "gen_ai.evaluation.explanation": ", ".join(report.blocking_codes),
    }
    if response_id:
        attributes["gen_ai.response.id"] = response_id
    return attributes


def verdict_attributes(report: Report) -> dict[str, Any]:
    """The ``callgate.*`` span attributes for ``report``: no argument, text or prompt."""
    return {
        "callgate.status": report.status.value,
        "callgate.codes": report.blocking_codes,
        "callgate.calls": len(report.calls),
        "callgate.profile": report.profile,
        "callgate.provider": report.provider or "unknown",
    }


def call_attributes(report: Report) -> list[dict[str, Any]]:
    """One ``callgate.call`` event's attributes per call: its id and tool name, where known."""
    events = []
    for call in report.calls:
        attributes: dict[str, Any] = {"callgate.call.slot": call.slot}
        if call.id is not None:
            attributes["gen_ai.tool.call.id"] = call.id
        if call.name is not None:
            attributes["gen_ai.tool.name"] = call.name
        events.append(attributes)
    return events


def counter_attributes(report: Report) -> dict[str, str]:
    """The counter's dimensions: the first blocking code stands for the turn (one count a turn)."""
    codes = report.blocking_codes
    return {
        "callgate.status": report.status.value,
        "callgate.code": codes[0] if codes else "none",
        "callgate.provider": report.provider or "unknown",
        "callgate.profile": report.profile,
    }


def record_verdict(report: Report, response_id: str | None = None) -> None:
    """Export ``report`` when OpenTelemetry is configured; never raises (a telemetry fault
    must not cost the turn)."""
    try:
        tracing, metering = _trace_api(), _metrics_api()
        if tracing is not None:
            _annotate_span(tracing, report, response_id)
        if metering is not None:
            _count(metering, report)
    except Exception as error:  # the exporter's or the SDK's: logged, the verdict stands
        log.warning("callgate: the verdict was not exported: %s", type(error).__name__)


#: The status an unjudged turn is counted with: the gate passed it on without a verdict.
UNJUDGED = "unjudged"


def record_unjudged(profile: str, error: str, response_id: str | None = None) -> None:
    """Export a turn a gate passed on unjudged (``on_error: pass``) after ``error`` (an
    exception's type name): an evaluation event labelled ``unjudged`` and a count; never
    raises."""
    try:
        tracing, metering = _trace_api(), _metrics_api()
        attributes = {"callgate.status": UNJUDGED, "callgate.profile": profile}
        if tracing is not None:
            event = {
                "gen_ai.evaluation.name": EVALUATION_NAME,
                "gen_ai.evaluation.score.label": UNJUDGED,
                "gen_ai.evaluation.explanation": error,
                **({"gen_ai.response.id": response_id} if response_id else {}),
            }

            def annotate(span: Any) -> None:
                span.set_attributes(attributes)
                span.add_event(EVENT, event)

            _with_span(tracing, annotate)
        if metering is not None:
            _counter(metering).add(
                1, {**attributes, "callgate.code": error, "callgate.provider": "unknown"}
            )
    except Exception as failure:  # the exporter's or the SDK's: logged
        log.warning("callgate: the unjudged turn was not exported: %s", type(failure).__name__)


def _trace_api() -> Any:
    trace = sys.modules.get("opentelemetry.trace")
    if trace is None or isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
        return None
    return trace


def _metrics_api() -> Any:
    metrics = sys.modules.get("opentelemetry.metrics")
    if metrics is None or type(metrics.get_meter_provider()).__name__.startswith("_Proxy"):
        return None
    return metrics


def _annotate_span(trace: Any, report: Report, response_id: str | None) -> None:
    _with_span(trace, lambda span: _annotate(span, report, response_id))


def _with_span(trace: Any, annotate: Callable[[Any], object]) -> None:
    """``annotate`` the current span, or a ``callgate.check`` span of its own when there is
    none."""
    span = trace.get_current_span()
    if span.is_recording():
        annotate(span)
        return
    with trace.get_tracer(SCOPE).start_as_current_span(SPAN) as own:
        annotate(own)


def _annotate(span: Any, report: Report, response_id: str | None) -> None:
    span.set_attributes(verdict_attributes(report))
    span.add_event(EVENT, evaluation_attributes(report, response_id))
    for attributes in call_attributes(report):
        span.add_event(CALL_EVENT, attributes)


#: The counter, per meter provider (an app may set its provider after the first turn).
_counters: dict[int, Any] = {}


def _count(metrics: Any, report: Report) -> None:
    _counter(metrics).add(1, counter_attributes(report))


def _counter(metrics: Any) -> Any:
    provider = metrics.get_meter_provider()
    counter = _counters.get(id(provider))
    if counter is None:
        counter = provider.get_meter(SCOPE).create_counter(
            COUNTER, unit="{turn}", description="Streamed turns callgate judged, by verdict"
        )
        _counters[id(provider)] = counter
    return counter


def export_over_otlp() -> Callable[[], None]:
    """Set up the OpenTelemetry SDK to export traces and metrics over OTLP/HTTP, configured by
    the standard ``OTEL_EXPORTER_OTLP_*`` variables; returns the function that flushes and shuts
    down. Raises ``SetupError`` (one line naming what to install) without the SDK or exporter."""
    try:
        from opentelemetry import metrics, trace
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError:
        raise SetupError(
            "--otel needs the OpenTelemetry SDK and its OTLP/HTTP exporter, which are not "
            f"installed: pip install '{EXPORT_EXTRA}'"
        ) from None
    # OTEL_SERVICE_NAME, when set, names the service; else callgate does.
    resource = Resource.create(
        {} if os.environ.get("OTEL_SERVICE_NAME") else {"service.name": SCOPE}
    )
    tracer_provider = TracerProvider(resource=resource)
    tracer_provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    reader = PeriodicExportingMetricReader(OTLPMetricExporter())
    meter_provider = MeterProvider(resource=resource, metric_readers=[reader])
    trace.set_tracer_provider(tracer_provider)
    metrics.set_meter_provider(meter_provider)

    def shutdown() -> None:
        tracer_provider.force_flush()
        meter_provider.force_flush()
        tracer_provider.shutdown()
        meter_provider.shutdown()

    return shutdown
