"""callgate's build backend: setuptools', after one check of the checkout.

How this works: ``callgate/cli``, ``callgate/integrations``, ``callgate/proxy_addon``,
``callgate/reassemble`` and ``callgate/redact`` are symbolic links to the design's folders at the
top of the repository. A checkout made without symbolic links (``core.symlinks=false``, Git's
default on Windows) holds a small text file in place of each, the link's target as its content,
and setuptools would build a wheel of ``callgate/__init__.py`` alone, which fails only when it is
imported. So every hook first checks that the five are folders, and stops the build with one line
saying why and what to do; then setuptools' own hook runs. An sdist holds the five as plain
folders, so a build from one passes. ``pyproject.toml`` names this module
(``backend-path = ["tools"]``).
"""

from __future__ import annotations

from importlib import import_module
from pathlib import Path
from typing import Any

#: The links in ``callgate/``, each to the top-level folder of the same name.
PARTS = ("cli", "integrations", "proxy_addon", "reassemble", "redact")

ConfigSettings = dict[str, Any] | None


def missing_part(root: Path) -> str | None:
    """The first ``callgate/<part>`` of the checkout at ``root`` that is not a folder, or None."""
    return next(
        (f"callgate/{part}" for part in PARTS if not (root / "callgate" / part).is_dir()), None
    )


def refusal(part: str) -> str:
    """The one line a build from a checkout without ``part`` stops with."""
    return (
        f"callgate: {part} is not a folder, so this checkout has no symbolic links "
        "(core.symlinks=false): run `git config core.symlinks true` and "
        "`git checkout -- callgate` (on Windows, with Developer Mode on), then build again"
    )


def _setuptools() -> Any:
    """setuptools' backend, once the checkout (the hooks' working folder) has its five folders.

    Imported only then, so the line comes first whatever the environment holds."""
    part = missing_part(Path.cwd())
    if part is not None:
        raise SystemExit(refusal(part))
    return import_module("setuptools.build_meta")


def get_requires_for_build_wheel(config_settings: ConfigSettings = None) -> list[str]:
    requires: list[str] = _setuptools().get_requires_for_build_wheel(config_settings)
    return requires


def get_requires_for_build_sdist(config_settings: ConfigSettings = None) -> list[str]:
    requires: list[str] = _setuptools().get_requires_for_build_sdist(config_settings)
    return requires


def get_requires_for_build_editable(config_settings: ConfigSettings = None) -> list[str]:
    requires: list[str] = _setuptools().get_requires_for_build_editable(config_settings)
    return requires


def prepare_metadata_for_build_wheel(
    metadata_directory: str, config_settings: ConfigSettings = None
) -> str:
    name: str = _setuptools().prepare_metadata_for_build_wheel(metadata_directory, config_settings)
    return name


def prepare_metadata_for_build_editable(
    metadata_directory: str, config_settings: ConfigSettings = None
) -> str:
    name: str = _setuptools().prepare_metadata_for_build_editable(
        metadata_directory, config_settings
    )
    return name


def build_wheel(
    wheel_directory: str,
    config_settings: ConfigSettings = None,
    metadata_directory: str | None = None,
) -> str:
    name: str = _setuptools().build_wheel(wheel_directory, config_settings, metadata_directory)
    return name


def build_editable(
    wheel_directory: str,
    config_settings: ConfigSettings = None,
    metadata_directory: str | None = None,
) -> str:
    name: str = _setuptools().build_editable(wheel_directory, config_settings, metadata_directory)
    return name


def build_sdist(sdist_directory: str, config_settings: ConfigSettings = None) -> str:
    name: str = _setuptools().build_sdist(sdist_directory, config_settings)
    return name
