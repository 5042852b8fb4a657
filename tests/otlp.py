"""An OTLP/HTTP receiver on loopback for the telemetry tests: it decodes what the real
OpenTelemetry SDK exports (protobuf, ``opentelemetry-proto``) and keeps every byte it was sent,
for the check that no prompt or argument left the process."""

from __future__ import annotations

import gzip
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.logs.v1 import logs_service_pb2
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

ROUTES: dict[str, tuple[Any, Any]] = {
    "/v1/traces": (
        trace_service_pb2.ExportTraceServiceRequest,
        trace_service_pb2.ExportTraceServiceResponse,
    ),
    "/v1/metrics": (
        metrics_service_pb2.ExportMetricsServiceRequest,
        metrics_service_pb2.ExportMetricsServiceResponse,
    ),
    "/v1/logs": (
        logs_service_pb2.ExportLogsServiceRequest,
        logs_service_pb2.ExportLogsServiceResponse,
    ),
}


def value_of(any_value: Any) -> Any:
    """An OTLP ``AnyValue`` as Python."""
    kind = any_value.WhichOneof("value")
    if kind == "array_value":
        return [value_of(v) for v in any_value.array_value.values]
    return getattr(any_value, kind) if kind else None


def attributes_of(pairs: Any) -> dict[str, Any]:
    return {pair.key: value_of(pair.value) for pair in pairs}


@dataclass
class Span:
    name: str
    attributes: dict[str, Any]
    events: list[tuple[str, dict[str, Any]]]


@dataclass
class Receiver:
    """What was exported to it: decoded requests by path, and the raw bodies."""

    base: str = ""
    received: dict[str, list[Any]] = field(default_factory=lambda: {p: [] for p in ROUTES})
    raw: list[bytes] = field(default_factory=list)

    def spans(self) -> Iterator[Span]:
        for request in list(self.received["/v1/traces"]):
            for resource in request.resource_spans:
                for scope in resource.scope_spans:
                    for span in scope.spans:
                        yield Span(
                            span.name,
                            attributes_of(span.attributes),
                            [(e.name, attributes_of(e.attributes)) for e in span.events],
                        )

    def counts(self, name: str) -> list[tuple[dict[str, Any], int]]:
        """The latest cumulative value of each series of counter ``name``."""
        latest: dict[tuple[tuple[str, str], ...], tuple[dict[str, Any], int]] = {}
        for request in list(self.received["/v1/metrics"]):
            for resource in request.resource_metrics:
                for scope in resource.scope_metrics:
                    for metric in scope.metrics:
                        if metric.name != name:
                            continue
                        for point in metric.sum.data_points:
                            attributes = attributes_of(point.attributes)
                            key = tuple(sorted((k, str(v)) for k, v in attributes.items()))
                            latest[key] = (attributes, point.as_int)
        return list(latest.values())

    def wait_for(self, found: Callable[[], Any], timeout: float = 15) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = found()
            if value:
                return value
            time.sleep(0.1)
        raise AssertionError("the receiver did not get what was expected")


def start_receiver() -> tuple[ThreadingHTTPServer, Receiver]:
    receiver = Receiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            if self.headers.get("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            receiver.raw.append(body)
            request_type, response_type = ROUTES[self.path]
            receiver.received[self.path].append(request_type.FromString(body))
            payload = response_type().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    receiver.base = f"http://127.0.0.1:{server.server_address[1]}"
    return server, receiver
