"""``import callgate``: the public names resolve, and importing the package loads nothing more."""

from __future__ import annotations

import subprocess
import sys

import callgate
from callgate.reassemble import Reassembler, check
from callgate.reassemble.errors import CallgateError, InputError


def test_every_public_name_resolves_to_its_definition() -> None:
    resolved = {name: getattr(callgate, name) for name in callgate.__all__}
    assert resolved["check"] is check and resolved["Reassembler"] is Reassembler
    assert resolved["InputError"] is InputError
    assert issubclass(resolved["EnvelopeError"], CallgateError)
    assert sorted(dir(callgate)) == sorted(callgate.__all__)


def test_the_redaction_api_names_what_it_exports() -> None:
    import callgate.redact

    namespace: dict[str, object] = {}
    exec("from callgate.redact import *", namespace)  # what a star import gives a user
    assert (
        sorted(set(namespace) - {"__builtins__"})
        == sorted(callgate.redact.__all__)
        == [
            "ArgumentMode",
            "Exchange",
            "NotApplicable",
            "Redacted",
            "RedactionRefused",
            "fixture_bytes",
            "fixture_name",
            "redact_envelope",
            "redact_exchange",
            "refuse_leaks",
            "request_context",
            "request_json",
            "tool_schemas",
        ]
    )


def test_an_unknown_name_is_an_attribute_error() -> None:
    try:
        callgate.no_such_name  # noqa: B018
    except AttributeError as error:
        assert str(error) == "module 'callgate' has no attribute 'no_such_name'"
    else:
        raise AssertionError("no AttributeError")


def test_importing_callgate_loads_neither_the_engine_nor_jsonschema() -> None:
    probe = (
        "import sys, callgate, callgate.cli.pytest_plugin; "
        "print(sorted(m for m in sys.modules if m.startswith(('callgate.reassemble', "
        "'jsonschema', 'rich', 'mitmproxy'))))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert loaded == "[]"


def test_the_engine_package_exports_what_a_star_import_gives() -> None:
    namespace: dict[str, object] = {}
    exec("from callgate.reassemble import *", namespace)  # what a user may write
    assert sorted(name for name in namespace if name != "__builtins__") == [
        "Call",
        "Code",
        "DEFAULT_LIMITS",
        "ENVELOPE_SCHEMA",
        "EnvelopeError",
        "Finding",
        "Limits",
        "QUIRKS",
        "Quirk",
        "Reassembler",
        "Report",
        "Severity",
        "SlotState",
        "Status",
        "check",
        "validate_envelope",
    ]
