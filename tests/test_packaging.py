"""The distribution ships every package of the source tree (a package missing from
``[tool.setuptools] packages`` works in the editable install and is absent from the wheel)."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOP_LEVEL = ("reassemble", "redact", "proxy_addon", "cli")


def test_every_package_in_the_tree_is_listed_for_the_wheel() -> None:
    listed = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "packages"]
    found = sorted(".".join(init.parent.relative_to(ROOT).parts)
                   for top in TOP_LEVEL for init in (ROOT / top).rglob("__init__.py"))
    assert sorted(listed) == found
