"""``callgate explain``: every code explains itself in the catalogue's own words."""

from __future__ import annotations

import io

import pytest

from callgate.cli.explain import quirk_explanation, run_explain
from callgate.reassemble.catalogue import CATALOGUE
from callgate.reassemble.codes import Code
from callgate.reassemble.quirks import QUIRKS


def explain(code: str | None) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = run_explain(code, out, err)
    return status, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("code", list(Code), ids=str)
def test_every_code_explains_with_its_catalogue_entry_verbatim_and_exit_0(code: Code) -> None:
    entry = CATALOGUE[code]
    text = (
        f"{code.value}\n\nMeaning: {entry.meaning}\n\n"
        f"Typical causes: {entry.causes}\n\nRecovery: "
        f"{entry.recovery}\n"
    )
    if code.value in QUIRKS:  # the quirk of the same name follows
        text += "\n" + quirk_explanation(QUIRKS[code.value])
    assert explain(code.value) == (0, text, "")


def test_a_name_that_is_a_code_and_a_quirk_explains_both() -> None:
    _, text, _ = explain("missing_call_id")
    assert text.count("\n\nMeaning: ") == 1
    assert "missing_call_id (a provider quirk; --allow-quirk missing_call_id)" in text


@pytest.mark.parametrize("quirk", list(QUIRKS))
def test_every_quirk_explains_what_it_tolerates_and_what_it_relaxes(quirk: str) -> None:
    found = QUIRKS[quirk]
    code, text, err = explain(quirk)
    assert (code, err) == (0, "")
    assert text.endswith(
        f"{quirk} (a provider quirk; --allow-quirk {quirk})\n\nTolerates: {found.description}"
        f"\n\nRelaxes: {found.relaxes.value}\n\nSeen from: {', '.join(sorted(found.providers))}\n"
    )


@pytest.mark.parametrize(
    "spelled", ["IDENTITY_COLLISION", "identity-collision", "Identity-Collision"]
)
def test_a_name_is_read_in_any_case_with_dashes_or_underscores(spelled: str) -> None:
    assert explain(spelled) == explain("identity_collision")


def test_no_name_lists_every_code_and_quirk_one_line_each() -> None:
    code, text, err = explain(None)
    lines = text.splitlines()
    assert (code, err, lines[0]) == (0, "", "Finding codes (callgate explain CODE):")
    assert lines[1 : 1 + len(CATALOGUE)] == [
        f"  {c.value}: {entry.meaning}" for c, entry in CATALOGUE.items()
    ]
    assert lines[len(CATALOGUE) + 2 :] == [
        "Provider quirks (--allow-quirk NAME; callgate explain NAME):",
        *(f"  {q.name}: relaxes {q.relaxes.value}" for q in QUIRKS.values()),
    ]


def test_an_unknown_code_prints_one_line_naming_the_known_codes_and_exits_2() -> None:
    known = ", ".join(sorted(code.value for code in CATALOGUE))
    assert explain("no_such_code") == (
        2,
        "",
        f"callgate: unknown finding code 'no_such_code'; known: {known} "
        "(quirks: `callgate explain`)\n",
    )


def test_surrounding_whitespace_is_forgiven() -> None:
    assert explain(" identity_collision\n") == explain("identity_collision")


def test_the_catalogue_cannot_be_changed_by_a_caller() -> None:
    import dataclasses

    with pytest.raises(dataclasses.FrozenInstanceError):
        CATALOGUE[Code.IDENTITY_COLLISION].meaning = "changed"  # type: ignore[misc]
