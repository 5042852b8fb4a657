"""The addon's options: declared for mitmproxy, read and checked once each time they change.

mitmproxy calls the addon's ``configure`` when it starts and whenever an option changes.
``read_settings`` turns the options into one frozen ``Settings``, which the hooks read, and
refuses a value that cannot work there, in one line naming the option, which the addon raises
as mitmproxy's ``OptionsError``: mitmproxy then keeps the previous values, and no flow meets the
bad one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any, TypeVar

from callgate.integrations.enforce.tap import MAX_BODY
from callgate.proxy_addon.webview import WebBody
from callgate.reassemble.gate import ON_ERROR
from callgate.redact import ArgumentMode

#: mitmproxy's own writers, which would put unredacted traffic on disk.
RAW_WRITERS = ("save_stream_file", "hardump")
#: Options that exist only where a user interface shows flows (mitmweb, the mitmproxy console).
VIEW_OPTIONS = ("web_port", "console_layout")

_Choice = TypeVar("_Choice", bound=StrEnum)


@dataclass(frozen=True)
class Settings:
    """What the options say, checked; the defaults are the options' defaults."""

    out: Path = Path("callgate-fixtures")
    arguments: ArgumentMode = ArgumentMode.MASK
    #: None: told from the upstream host, flow by flow.
    provider: str | None = None
    enforce: bool = False
    #: Enforcing, what a turn the tap cannot judge (its own failure) does: "block" or "pass".
    on_error: str = "block"
    #: The host names inspected, in lower case; empty: every known LLM endpoint.
    hosts: frozenset[str] = frozenset()
    allow_raw_dump: bool = False
    allow_verdict_change: bool = False
    web_body: WebBody = WebBody.redacted
    max_body: int = MAX_BODY
    web_body_max: int = 4 << 20
    #: A user interface shows flows (mitmweb, the mitmproxy console); mitmdump shows none, so
    #: no body is built for it.
    viewed: bool = False

    def inspects(self, host: str) -> bool:
        """Whether a flow to ``host`` is looked at, when it is a known LLM endpoint."""
        return not self.hosts or host.lower() in self.hosts

    def shows(self, body: WebBody) -> bool:
        """Whether a user interface is given ``body`` as a judged flow's body."""
        return self.viewed and self.web_body is body


def concerns(updated: set[str]) -> bool:
    """Whether a change of the options ``updated`` may change the settings."""
    return any(
        name.startswith("callgate_") or name in RAW_WRITERS or name in VIEW_OPTIONS
        for name in updated
    )


def add_options(loader: Any) -> None:
    """Declare the options with mitmproxy's ``loader`` (in the ``load`` hook)."""
    default = Settings()
    loader.add_option(
        "callgate_out", str, str(default.out), "Folder where redacted fixtures are written."
    )
    loader.add_option(
        "callgate_arguments",
        str,
        default.arguments.value,
        "Tool-call arguments in fixtures: mask, keep or drop.",
        choices=[mode.value for mode in ArgumentMode],
    )
    loader.add_option(
        "callgate_provider", str, "", "Provider name to assume (default: from the upstream host)."
    )
    loader.add_option(
        "callgate_enforce",
        bool,
        default.enforce,
        "Hold terminal events until the verdict; replace them by an error event when the turn "
        "fails.",
    )
    loader.add_option(
        "callgate_on_error",
        str,
        default.on_error,
        "Enforcing, a turn callgate cannot judge (a failure of its own): block it with the error "
        "event, or pass its bytes on unjudged.",
        choices=list(ON_ERROR),
    )
    loader.add_option(
        "callgate_hosts",
        Sequence[str],
        [],
        "Only inspect these hosts (default: every known LLM endpoint).",
    )
    loader.add_option(
        "callgate_allow_raw_dump",
        bool,
        default.allow_raw_dump,
        "Allow mitmproxy's own unredacted writers (-w, hardump) alongside.",
    )
    loader.add_option(
        "callgate_allow_verdict_change",
        bool,
        default.allow_verdict_change,
        "Write fixtures even when redaction changes their verdict.",
    )
    loader.add_option(
        "callgate_web_body",
        str,
        default.web_body.value,
        "The body mitmweb shows of a judged flow, kept in memory only: the redacted stream the "
        "fixture holds, the raw stream, or none.",
        choices=[kind.value for kind in WebBody],
    )
    loader.add_option(
        "callgate_max_body",
        int,
        default.max_body,
        "Largest response body judged and recorded, in bytes once decoded; a longer one passes "
        "through (observe) or is cut with an error event (enforce), and is neither judged nor "
        "recorded.",
    )
    loader.add_option(
        "callgate_web_body_max",
        int,
        default.web_body_max,
        "Largest body kept for mitmweb, in bytes; a longer one keeps its head and tail.",
    )


def read_settings(options: Any) -> Settings:
    """The settings mitmproxy's ``options`` hold. Raises ``ValueError``, one line naming the
    option, for a value that cannot work (mitmproxy has checked the types, not the values)."""
    settings = Settings(
        out=_folder(options.callgate_out),
        arguments=_choice(ArgumentMode, "callgate_arguments", options.callgate_arguments),
        provider=_provider(options.callgate_provider),
        enforce=options.callgate_enforce,
        on_error=options.callgate_on_error,
        hosts=frozenset(_host(entry) for entry in options.callgate_hosts),
        allow_raw_dump=options.callgate_allow_raw_dump,
        allow_verdict_change=options.callgate_allow_verdict_change,
        web_body=_choice(WebBody, "callgate_web_body", options.callgate_web_body),
        max_body=_size("callgate_max_body", options.callgate_max_body, least=1),
        web_body_max=_size("callgate_web_body_max", options.callgate_web_body_max, least=0),
        viewed=any(name in options for name in VIEW_OPTIONS),
    )
    raw_writers = [name for name in RAW_WRITERS if getattr(options, name, None)]
    if raw_writers and not settings.allow_raw_dump:
        raise ValueError(
            f"callgate: {' and '.join(raw_writers)} would write unredacted traffic to disk; "
            "remove it or set callgate_allow_raw_dump=true"
        )
    return settings


def _folder(value: str) -> Path:
    if not value.strip():
        raise ValueError("callgate_out: empty; give the folder fixtures go to")
    path = Path(value).expanduser()
    if path.exists() and not path.is_dir():
        raise ValueError(f"callgate_out: {str(path)!r} is a file, not a folder")
    return path


def _choice(kind: type[_Choice], name: str, value: str) -> _Choice:
    """mitmproxy lists an option's choices in its help but lets any string through."""
    try:
        return kind(value)
    except ValueError:
        known = ", ".join(member.value for member in kind)
        raise ValueError(f"{name}: {value!r} is not one of {known}") from None


def _provider(value: str) -> str | None:
    if re.search(r"\s", value):
        raise ValueError(
            f"callgate_provider: {value!r} holds white space; a provider name holds none"
        )
    return value or None


def _host(entry: str) -> str:
    """A host name as ``Request.pretty_host`` gives it, in lower case. A URL, a port or a path
    would never match one, and would silently leave the flows to that host uninspected."""
    host = entry.strip().lower()
    if host.startswith("[") and host.endswith("]"):  # an IPv6 literal, written as in a URL
        host = host[1:-1]
    if not host or re.search(r"[\s/@?#\[\]]", host) or re.fullmatch(r"[^:]*:\d*", host):
        raise ValueError(
            f"callgate_hosts: {entry!r} is not a host name; give it without scheme, port or "
            "path (api.example.com)"
        )
    return host


def _size(name: str, value: int, *, least: int) -> int:
    if value < least:
        raise ValueError(f"{name}: {value} bytes; it must be at least {least}")
    return value
