"""``callgate record``: run mitmproxy with the callgate addon in front of an LLM API.

Reverse mode needs no CA: the app points its base URL at the proxy
(``OPENAI_BASE_URL=http://127.0.0.1:8080/v1``, ``ANTHROPIC_BASE_URL=http://127.0.0.1:8080``).
Regular mode serves apps that only honour ``HTTPS_PROXY`` and needs mitmproxy's CA, which lives in
callgate's own folder (``~/.callgate/mitmproxy`` or ``$CALLGATE_HOME/mitmproxy``), not in
``~/.mitmproxy``. mitmdump's per-flow lines are off: they print request URLs, and keys travel in
query strings; callgate prints its own line per captured turn instead.
"""

from __future__ import annotations

import ipaddress
import os
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from callgate.cli.choices import ProxyMode
from callgate.cli.extras import PROXY_EXTRA, has_mitmproxy
from callgate.cli.loopback import require_free, split_listen
from callgate.cli.output import error_line
from callgate.reassemble.errors import SetupError, UsageError

LOOPBACK_NAMES = ("localhost",)
#: mitmweb's flow list, with the comment column where callgate writes its verdict.
WEB_COLUMNS = ["icon", "path", "method", "status", "size", "time", "comment"]


@dataclass(frozen=True, kw_only=True)
class RecordOptions:
    upstream: str | None
    listen: str = "127.0.0.1:8080"
    out: Path = Path("callgate-fixtures")
    web: bool = False
    enforce: bool = False
    on_error: str = "block"
    arguments: str = "mask"
    provider: str | None = None
    mode: ProxyMode = ProxyMode.reverse
    allow_raw_dump: bool = False
    web_body: str = "redacted"
    web_port: int = 8081
    otel: bool = False


def callgate_home() -> Path:
    return Path(os.environ.get("CALLGATE_HOME") or Path.home() / ".callgate")


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def upstream_problem(upstream: str) -> str | None:
    """Why ``upstream`` cannot be the reverse proxy's target, in one line; None when it can.
    mitmproxy forwards each request with its own path and takes a scheme, host and port alone
    (a path fails its start with a traceback), so the API's prefix (``/v1``) belongs in the
    app's base URL: ``http://127.0.0.1:8080/v1`` to the proxy, ``https://api.openai.com`` to
    ``--upstream``."""
    parts = urlsplit(upstream)
    if not parts.scheme or not parts.netloc:  # ``api.openai.com``: all of it read as a path
        host = upstream.split("://")[-1].split("/")[0]
        return (
            f"--upstream takes a scheme, host and port, not {upstream!r}: "
            f"give https://{host or 'HOST'}"
        )
    if parts.path.strip("/") or parts.query or parts.fragment:
        host = f"{parts.scheme}://{parts.netloc}" if parts.scheme else parts.netloc
        return (
            f"--upstream takes a scheme, host and port alone, not {upstream!r}: requests keep "
            f"their own path (/v1/... from the app's base URL); give {host}"
        )
    return None


def mitmproxy_options(options: RecordOptions) -> dict[str, Any]:
    """The mitmproxy options that ``record`` runs with (callgate's own are set after loading)."""
    host, port = split_listen(options.listen)
    mode = f"reverse:{options.upstream}" if options.mode is ProxyMode.reverse else "regular"
    return {
        "mode": [mode],
        "listen_host": host,
        "listen_port": port,
        "confdir": str(callgate_home() / "mitmproxy"),
    }


def callgate_options(options: RecordOptions) -> dict[str, Any]:
    return {
        "callgate_out": str(options.out),
        "callgate_enforce": options.enforce,
        "callgate_on_error": options.on_error,
        "callgate_arguments": options.arguments,
        "callgate_provider": options.provider or "",
        "callgate_allow_raw_dump": options.allow_raw_dump,
        "callgate_web_body": options.web_body,
    }


def build_master(options: RecordOptions) -> Any:
    """A DumpMaster (or, with ``web``, a WebMaster) with the callgate addon loaded."""
    from mitmproxy import options as mitm_options

    from callgate.proxy_addon.addon import CallgateAddon

    opts = mitm_options.Options(**mitmproxy_options(options))
    master: Any
    if options.web:
        from mitmproxy.tools.web.master import WebMaster

        master = WebMaster(opts)
        master.options.update(
            web_open_browser=False, web_port=options.web_port, web_columns=WEB_COLUMNS
        )
    else:
        from mitmproxy.tools.dump import DumpMaster

        master = DumpMaster(opts)
        master.options.update(flow_detail=0)
    master.addons.add(CallgateAddon())
    master.options.update(**callgate_options(options))
    return master


def run_record(options: RecordOptions) -> int:
    """Run the proxy until interrupted. Raises ``SetupError`` without mitmproxy and
    ``UsageError`` for options that cannot work together."""
    if not has_mitmproxy():
        raise SetupError(f"record runs mitmproxy, which is not installed: {PROXY_EXTRA}")
    if options.mode is ProxyMode.reverse and not options.upstream:
        raise UsageError("--upstream is required in reverse mode")
    if options.upstream and (problem := upstream_problem(options.upstream)):
        raise UsageError(problem)
    host, port = split_listen(options.listen)
    require_free(host, port)
    if not is_loopback(host):
        print(
            f"callgate: warning: listening on {host}, not loopback: anyone who can reach this "
            "machine can use your API credentials through it",
            file=sys.stderr,
        )
    flush_telemetry = _export_verdicts() if options.otel else None
    try:
        import asyncio  # here, not at the top: the command line imports this module to start

        return asyncio.run(_main(options))
    except KeyboardInterrupt:
        return 0
    finally:
        if flush_telemetry is not None:
            flush_telemetry()


def _export_verdicts() -> Callable[[], None]:
    """Export every verdict over OTLP (``--otel``); raises ``SetupError`` without the SDK."""
    from callgate.integrations.otel import export_over_otlp

    flush = export_over_otlp()
    endpoint = os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or "the OTLP default endpoint"
    print(f"callgate record: verdicts go over OTLP/HTTP to {endpoint}", flush=True)
    return flush


async def _main(options: RecordOptions) -> int:
    try:
        master = build_master(options)
    except Exception as error:  # mitmproxy reports bad options as exceptions: one line
        return error_line(str(error), sys.stderr)
    host, port = split_listen(options.listen)
    print(
        f"callgate record: proxy on http://{host}:{port} -> "
        f"{options.upstream or 'any host (regular mode)'}",
        flush=True,
    )
    print(f"callgate record: redacted fixtures go to {options.out.resolve()}", flush=True)
    if options.web:
        print(
            f"callgate record: mitmweb on http://127.0.0.1:{options.web_port}/ (mitmproxy 12 "
            "prints the address with its login token)",
            flush=True,
        )
    import asyncio

    loop = asyncio.get_running_loop()
    for signal_number in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signal_number, master.shutdown)
    await master.run()
    return 0
