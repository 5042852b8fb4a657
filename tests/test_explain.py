"""``callgate explain``: every code explains itself in the catalogue's own words."""

from __future__ import annotations

import io

import pytest

from callgate.cli.explain import run_explain
from callgate.reassemble.catalogue import CATALOGUE
from callgate.reassemble.codes import Code


def explain(code: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = run_explain(code, out, err)
    return status, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("code", list(Code), ids=str)
def test_every_code_explains_with_its_catalogue_entry_verbatim_and_exit_0(code: Code) -> None:
    entry = CATALOGUE[code]
    assert explain(code.value) == (
        0,
        f"{code.value}\n\nMeaning: {entry.meaning}\n\n"
        f"Typical causes: {entry.causes}\n\nRecovery: "
        f"{entry.recovery}\n",
        "",
    )


@pytest.mark.parametrize("code", ["no_such_code", "IDENTITY_COLLISION"])
def test_an_unknown_code_prints_one_line_naming_the_known_codes_and_exits_2(code: str) -> None:
    # Codes match exactly, not by case.
    known = ", ".join(sorted(code.value for code in CATALOGUE))
    assert explain(code) == (2, "", f"callgate: unknown finding code {code!r}; known: {known}\n")


def test_surrounding_whitespace_is_forgiven() -> None:
    assert explain(" identity_collision\n") == explain("identity_collision")


def test_the_catalogue_cannot_be_changed_by_a_caller() -> None:
    import dataclasses

    with pytest.raises(dataclasses.FrozenInstanceError):
        CATALOGUE[Code.IDENTITY_COLLISION].meaning = "changed"  # type: ignore[misc]
