"""``import callgate``: the public names resolve, and importing the package loads nothing more."""

from __future__ import annotations

import builtins
import inspect
import json
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import callgate
from callgate.reassemble import ENVELOPE_SCHEMA, Reassembler, check
from callgate.reassemble.errors import CallgateError, InputError
from callgate.redact.stream import REQUEST_PARAMETERS
from tests.conftest import CONFORMANCE


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


#: A bare name in double backquotes: what a docstring calls a parameter, an attribute or another
#: Python name. A dotted path (``meta.mutation``) or a quoted value (``"stop"``) is data.
_MENTION = re.compile(r"``([A-Za-z_]\w*)``")
#: Names of the data a docstring may speak of besides Python names: the envelope's members and
#: the request parameters a fixture keeps.
_DATA_NAMES = frozenset(ENVELOPE_SCHEMA["properties"]) | frozenset(REQUEST_PARAMETERS)


def _public_callables() -> Iterator[tuple[str, Callable[..., Any], object]]:
    """(label, callable, owner) for each callable of ``callgate.__all__`` and each public method
    or property of its classes; the owner is the class (or the function itself)."""
    for name in callgate.__all__:
        value = getattr(callgate, name)
        if inspect.isfunction(value):
            yield name, value, value
        elif inspect.isclass(value):
            yield name, value, value
            for member, attribute in vars(value).items():
                if isinstance(attribute, property) and attribute.fget is not None:
                    attribute = attribute.fget
                if inspect.isfunction(attribute) and not member.startswith("_"):
                    yield f"{name}.{member}", attribute, value


def _own_doc(function: Callable[..., Any]) -> str:
    # A class without a docstring of its own gets dataclasses' signature line or a base
    # class's text, which speak of no parameter of its own.
    doc = vars(function).get("__doc__") if inspect.isclass(function) else function.__doc__
    return doc or ""


def _unexplained(function: Callable[..., Any], owner: object) -> list[str]:
    """The bare names the docstring mentions that are no parameter of ``function``, no attribute
    of ``owner``, no name of its module, of builtins or of ``callgate``, and no data name."""
    parameters = inspect.signature(function).parameters
    module = vars(sys.modules[function.__module__])
    return sorted(
        mention
        for mention in set(_MENTION.findall(_own_doc(function)))
        if mention not in parameters
        and not hasattr(owner, mention)
        and mention not in module
        and not hasattr(builtins, mention)
        and mention not in callgate.__all__
        and mention not in _DATA_NAMES
    )


def test_public_docstrings_name_no_parameter_the_signature_lacks() -> None:
    unexplained = {
        label: names
        for label, function, owner in _public_callables()
        if (names := _unexplained(function, owner))
    }
    assert unexplained == {}


def test_the_docstring_check_catches_a_parameter_that_does_not_exist() -> None:
    def reads(profile: str, *, limits: object = None) -> None:
        """``profile`` names a profile; ``indexless`` places calls; ``limits`` bounds them."""

    assert _unexplained(reads, reads) == ["indexless"]
    assert len(list(_public_callables())) > len(callgate.__all__)  # methods are looked at too


def test_judging_plain_schemas_imports_no_jsonschema_until_arguments_do_not_fit() -> None:
    """Most tool schemas are plain (types, properties, required, enum, bounds): their metaschema
    check and arguments that fit them are told without jsonschema, which costs a process about
    0.09 s to import; arguments that do not fit load it to name the violation."""
    probe = (
        "import json, sys; from callgate.reassemble import check; "
        "turn = json.load(open(sys.argv[1])); "
        "print(check(turn).status.value, 'jsonschema' in sys.modules); "
        "turn['tool_schemas'] = {n: {'type': 'object', 'required': ['nowhere']} "
        "for n in turn['tool_schemas']}; "
        "print(check(turn).status.value, 'jsonschema' in sys.modules)"
    )
    fixture = str(CONFORMANCE / "openai" / "valid_fragmented.json")
    shown = subprocess.run(
        [sys.executable, "-c", probe, fixture], capture_output=True, text=True, check=True
    ).stdout
    assert shown == "pass False\nfail True\n"


def test_each_cli_choice_holds_the_values_of_the_enum_it_stands_for() -> None:
    """The CLI's options are built from ``callgate.cli.choices`` without importing the
    modules whose enums they mirror; each mirror must take exactly those values."""
    from callgate.cli import choices
    from callgate.proxy_addon.webview import WebBody
    from callgate.reassemble import profiles
    from callgate.reassemble.profile_names import PROFILE_NAMES, STREAM_KEYS
    from callgate.reassemble.profiles import PROFILES
    from callgate.redact import ArgumentMode
    from callgate.redact.scanning import Kind

    for mirror, enum in (
        (choices.Arguments, ArgumentMode),
        (choices.ScanKind, Kind),
        (choices.WebBodyChoice, WebBody),
    ):
        assert [m.value for m in mirror] == [m.value for m in enum], mirror
    # The registry loads each profile by its name: every module that defines one is named,
    # and each names itself and its stream as the table does.
    modules = Path(profiles.__file__).parent.glob("*.py")
    defining = sorted(m.stem for m in modules if "\nPROFILE = Profile(" in m.read_text())
    assert defining == sorted(name.replace("-", "_") for name in PROFILE_NAMES)
    assert tuple(PROFILES) == PROFILE_NAMES
    assert {name: (p.name, p.stream_key) for name, p in PROFILES.items()} == {
        name: (name, key) for name, key in STREAM_KEYS.items()
    }


#: What a command may not load: the proxy, the scanner, the redactor, the other commands, and
#: pydantic (typer 0.29 builds a pydantic adapter for each parameter at start: pyproject.toml).
_OTHER_COMMANDS = (
    "pydantic",
    "callgate.cli.diff",
    "callgate.cli.importing",
    "callgate.cli.mutate",
    "callgate.cli.record",
    "callgate.cli.scan",
    "callgate.cli.serve",
    "callgate.proxy_addon.addon",
    "callgate.redact",
    "mitmproxy",
)


def _loaded_by(*argv: str) -> set[str]:
    """The modules a ``callgate`` command loads, run in a process of its own."""
    probe = (
        "import contextlib, io, json, sys\n"
        "from callgate.cli.app import app\n"
        "with contextlib.redirect_stdout(io.StringIO()), "
        "contextlib.redirect_stderr(io.StringIO()):\n"
        "    try:\n"
        "        app(args=sys.argv[1:])\n"
        "    except SystemExit:\n"
        "        pass\n"
        "print(json.dumps(sorted(sys.modules)))"
    )
    shown = subprocess.run(
        [sys.executable, "-c", probe, *argv], capture_output=True, text=True, check=True
    ).stdout
    return set(json.loads(shown))


def _under(loaded: set[str], prefixes: tuple[str, ...]) -> list[str]:
    return sorted(m for m in loaded if m.startswith(prefixes))


def test_help_loads_no_command_and_no_engine() -> None:
    loaded = _loaded_by("--help")
    assert _under(loaded, ("callgate.reassemble.engine", "callgate.reassemble.profiles")) == []
    assert _under(loaded, (*_OTHER_COMMANDS, "callgate.cli.check", "jsonschema")) == []


def test_check_loads_the_engine_and_no_other_command() -> None:
    loaded = _loaded_by("check", str(CONFORMANCE / "openai" / "valid_fragmented.json"))
    assert "callgate.reassemble.engine" in loaded
    # the one profile the fixture names, and no declared tool's machinery (it states none)
    assert _under(loaded, ("callgate.reassemble.profiles.", "callgate.reassemble.freeform")) == [
        "callgate.reassemble.profiles.base",
        "callgate.reassemble.profiles.openai",
        "callgate.reassemble.profiles.shipped",
    ]
    # rich too: the JSON report prints none of it.
    assert _under(loaded, (*_OTHER_COMMANDS, "callgate.cli.replay", "jsonschema", "rich")) == []


def test_replay_loads_no_other_command() -> None:
    loaded = _loaded_by("replay", str(CONFORMANCE / "openai" / "valid_fragmented.json"))
    assert "callgate.cli.replay.runner" in loaded
    assert _under(loaded, (*_OTHER_COMMANDS, "callgate.cli.check")) == []


def test_the_in_app_gate_package_exports_guard_and_guarded_only() -> None:
    """``callgate.integrations.sdk`` is a package a user may star-import: it gives the two
    entry points, not the modules behind them."""
    namespace: dict[str, object] = {}
    exec("from callgate.integrations.sdk import *", namespace)
    assert sorted(name for name in namespace if name != "__builtins__") == ["guard", "guarded"]
