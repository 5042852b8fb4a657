"""Generated documentation stays equal to the code it is generated from."""

from __future__ import annotations

from cli.gendocs import GENERATED
from reassemble import Code
from reassemble.catalogue import CATALOGUE


def test_generated_files_are_up_to_date() -> None:
    for path, text in GENERATED.items():
        assert path.read_text(encoding="utf-8") == text, f"run `make docs` ({path.name})"


def test_every_code_has_a_catalogue_entry() -> None:
    assert list(CATALOGUE) == list(Code)
