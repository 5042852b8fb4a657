"""callgate: may the tool calls of this streamed LLM turn be executed?

The public face of the Python API. Feed a provider's raw stream events (as parsed from the wire,
or the SDK's own event objects) to a ``Reassembler`` given the tools (a name-to-schema mapping, or
the list handed to the SDK), or a whole envelope to ``check``, and read the ``Report``: its
``status``, the reassembled ``calls`` and the ``findings``, each with a stable ``Code``.
``redact_envelope`` turns an envelope into a fixture that is safe to keep. ``guard`` wraps the
stream an SDK returned (``guarded`` a client) so that a turn whose calls may not run raises
``Blocked`` before its end reaches the app (``Unjudged`` for one callgate could not judge).
``transport`` (``async_transport``) gates every streamed turn an httpx client carries, as the
proxy's enforce mode does, for any SDK or framework that takes an ``http_client``.

How this works: the names below load on first use (PEP 562), so ``import callgate`` costs
nothing. That matters because pytest imports ``callgate.cli.pytest_plugin``, and with it this
package, in every test run of every project that has callgate installed.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

#: Public name -> the module that defines it.
_EXPORTS = {
    "Call": "callgate.reassemble",
    "Code": "callgate.reassemble",
    "DEFAULT_LIMITS": "callgate.reassemble",
    "ENVELOPE_SCHEMA": "callgate.reassemble",
    "EnvelopeError": "callgate.reassemble",
    "Finding": "callgate.reassemble",
    "Limits": "callgate.reassemble",
    "QUIRKS": "callgate.reassemble",
    "Quirk": "callgate.reassemble",
    "Reassembler": "callgate.reassemble",
    "Report": "callgate.reassemble",
    "Severity": "callgate.reassemble",
    "SlotState": "callgate.reassemble",
    "Status": "callgate.reassemble",
    "check": "callgate.reassemble",
    "validate_envelope": "callgate.reassemble",
    "CallgateError": "callgate.reassemble.errors",
    "InputError": "callgate.reassemble.errors",
    "NotApplicable": "callgate.reassemble.errors",
    "SetupError": "callgate.reassemble.errors",
    "UsageError": "callgate.reassemble.errors",
    "ArgumentMode": "callgate.redact",
    "RedactionRefused": "callgate.redact",
    "redact_envelope": "callgate.redact",
    "mutate": "callgate.reassemble.mutations",
    "Blocked": "callgate.reassemble.gate",
    "Unjudged": "callgate.reassemble.gate",
    "guard": "callgate.integrations.sdk",
    "guarded": "callgate.integrations.sdk",
    "transport": "callgate.integrations.enforce.transport",
    "async_transport": "callgate.integrations.enforce.transport",
    "mutations": "callgate.reassemble.mutations",
}

__all__ = [
    "DEFAULT_LIMITS",
    "ENVELOPE_SCHEMA",
    "QUIRKS",
    "ArgumentMode",
    "Blocked",
    "Call",
    "CallgateError",
    "Code",
    "EnvelopeError",
    "Finding",
    "InputError",
    "Limits",
    "NotApplicable",
    "Quirk",
    "Reassembler",
    "RedactionRefused",
    "Report",
    "SetupError",
    "Severity",
    "SlotState",
    "Status",
    "Unjudged",
    "UsageError",
    "__version__",
    "async_transport",
    "check",
    "guard",
    "guarded",
    "mutate",
    "mutations",
    "redact_envelope",
    "transport",
    "validate_envelope",
]

if TYPE_CHECKING:
    from callgate.integrations.enforce.transport import async_transport, transport
    from callgate.integrations.sdk import guard, guarded
    from callgate.reassemble import (
        DEFAULT_LIMITS,
        ENVELOPE_SCHEMA,
        QUIRKS,
        Call,
        Code,
        EnvelopeError,
        Finding,
        Limits,
        Quirk,
        Reassembler,
        Report,
        Severity,
        SlotState,
        Status,
        check,
        validate_envelope,
    )
    from callgate.reassemble.errors import (
        CallgateError,
        InputError,
        NotApplicable,
        SetupError,
        UsageError,
    )
    from callgate.reassemble.gate import Blocked, Unjudged
    from callgate.reassemble.mutations import mutate, mutations
    from callgate.redact import ArgumentMode, RedactionRefused, redact_envelope


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'callgate' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value  # the next access is a plain attribute read
    return value


def __dir__() -> list[str]:
    return __all__
