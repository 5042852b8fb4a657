"""``callgate explain``: every code explains itself in the catalogue's own words."""

from __future__ import annotations

import io

import pytest

from cli.explain import run_explain
from reassemble.catalogue import CATALOGUE
from reassemble.codes import Code


def explain(code: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = run_explain(code, out, err)
    return status, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("code", list(Code), ids=str)
def test_every_code_explains_with_exit_0_and_nothing_on_stderr(code: Code) -> None:
    status, out, err = explain(code.value)
    assert (status, err) == (0, "")
    assert out.splitlines()[0] == code.value


@pytest.mark.parametrize("code", list(Code), ids=str)
def test_the_text_is_the_catalogue_entry_verbatim(code: Code) -> None:
    entry = CATALOGUE[code]
    _, out, _ = explain(code.value)
    assert out == (f"{code.value}\n\nMeaning: {entry.meaning}\n\n"
                   f"Typical causes: {entry.causes}\n\nRecovery: {entry.recovery}\n")


def test_an_unknown_code_prints_one_line_naming_the_known_codes_and_exits_2() -> None:
    status, out, err = explain("no_such_code")
    assert (status, out) == (2, "")
    assert err.count("\n") == 1
    known = ", ".join(sorted(code.value for code in CATALOGUE))
    assert err == f"callgate: unknown finding code 'no_such_code'; known: {known}\n"


def test_a_code_is_matched_exactly_not_by_case() -> None:
    status, _, err = explain("IDENTITY_COLLISION")
    assert status == 2
    assert "'IDENTITY_COLLISION'" in err


def test_surrounding_whitespace_is_forgiven() -> None:
    status, out, _ = explain(" identity_collision\n")
    assert status == 0
    assert out.startswith("identity_collision\n")
