"""``tools/build_backend.py``: a checkout whose links came out as files stops the build with one
line saying why and what to do, from every hook a frontend calls.

The checkout is copied as Git writes it with ``core.symlinks=false`` for one link: a small file
holding the link's target. The hooks are called as frontends call them (``pyproject_hooks``, in a
subprocess with ``backend-path``); the slow tests run ``python -m build`` and ``pip install -e``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from pyproject_hooks import BuildBackendHookCaller, quiet_subprocess_runner

from tests.conftest import ROOT
from tools.build_backend import PARTS, missing_part, refusal

LINE = (
    "callgate: callgate/reassemble is not a folder, so this checkout has no symbolic links "
    "(core.symlinks=false): run `git config core.symlinks true` and `git checkout -- callgate` "
    "(on Windows, with Developer Mode on), then build again"
)


def _run(*command: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(part) for part in command], capture_output=True, text=True, timeout=600, check=False
    )


@pytest.fixture(scope="module")
def unlinked(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This checkout's files, links kept as links but ``callgate/reassemble``, which is a file
    holding its target (``../reassemble``)."""
    listed = _run("git", "-C", ROOT, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
    assert listed.returncode == 0, listed.stderr
    copy = tmp_path_factory.mktemp("unlinked")
    for name in filter(None, listed.stdout.split("\0")):
        source, target = ROOT / name, copy / name
        if not (source.exists() or source.is_symlink()):
            continue  # deleted in the work tree, not yet in the index
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            target.symlink_to(os.readlink(source))
        else:
            shutil.copy2(source, target)
    link = copy / "callgate" / "reassemble"
    target_text = os.readlink(link)
    link.unlink()
    link.write_text(target_text, encoding="utf-8")
    return copy


def test_the_refusal_is_one_line_naming_the_part_and_what_to_do() -> None:
    assert refusal("callgate/reassemble") == LINE
    assert "\n" not in LINE


def test_this_checkout_has_every_part_and_a_part_that_is_a_file_or_missing_is_named(
    tmp_path: Path,
) -> None:
    assert missing_part(ROOT) is None
    for part in PARTS:
        tree = tmp_path / part
        for other in PARTS:
            (tree / "callgate" / other).mkdir(parents=True)
        assert missing_part(tree) is None
        (tree / "callgate" / part).rmdir()
        assert missing_part(tree) == f"callgate/{part}"
        (tree / "callgate" / part).write_text(f"../{part}", encoding="utf-8")
        assert missing_part(tree) == f"callgate/{part}"


HOOKS: list[tuple[str, tuple[str, ...]]] = [
    ("get_requires_for_build_sdist", ()),
    ("get_requires_for_build_wheel", ()),
    ("get_requires_for_build_editable", ()),
    ("prepare_metadata_for_build_wheel", ("out",)),
    ("prepare_metadata_for_build_editable", ("out",)),
    ("build_sdist", ("out",)),
    ("build_wheel", ("out",)),
    ("build_editable", ("out",)),
]


@pytest.mark.parametrize(("hook", "folders"), HOOKS, ids=[hook for hook, _ in HOOKS])
def test_every_hook_stops_with_the_line_when_a_link_is_a_file(
    unlinked: Path, tmp_path: Path, hook: str, folders: tuple[str, ...]
) -> None:
    caller = BuildBackendHookCaller(
        unlinked, "build_backend", backend_path=["tools"], runner=quiet_subprocess_runner
    )
    with pytest.raises(subprocess.CalledProcessError) as stopped:
        getattr(caller, hook)(*(str(tmp_path / folder) for folder in folders))
    assert (stopped.value.returncode, stopped.value.output.decode()) == (1, LINE + "\n")
    assert not any(tmp_path.iterdir())


@pytest.mark.slow
def test_python_m_build_stops_with_the_line_and_builds_nothing(
    unlinked: Path, tmp_path: Path
) -> None:
    built = _run(sys.executable, "-m", "build", "--outdir", tmp_path / "dist", unlinked)
    assert built.returncode != 0
    assert (built.stdout + built.stderr).splitlines().count(LINE) == 1
    assert not (tmp_path / "dist").exists() or not any((tmp_path / "dist").iterdir())


@pytest.mark.slow
def test_an_editable_install_stops_with_the_line(unlinked: Path, tmp_path: Path) -> None:
    assert _run(sys.executable, "-m", "venv", tmp_path / "env").returncode == 0
    pip = [tmp_path / "env" / "bin" / "python", "-m", "pip", "--disable-pip-version-check"]
    installed = _run(*pip, "install", "--no-deps", "-e", unlinked)
    assert installed.returncode != 0
    output = [line.strip() for line in (installed.stdout + installed.stderr).splitlines()]
    assert output.count(LINE) == 1
    assert "callgate" not in _run(*pip, "list").stdout
