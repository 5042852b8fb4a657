"""callgate as its users install it: one ``callgate`` package, beside the provider SDKs, in
fresh virtual environments on Python 3.11 and on the newest Python here.

The wheel is built once per run with ``python -m build``; each environment installs it with pip
from the package registry (the SDKs at the versions the proxy tests use).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import time
import zipfile
from collections.abc import Callable
from email.parser import Parser
from pathlib import Path

import pytest

from tests.conftest import CONFORMANCE, ROOT
from tests.proxy_harness import fake_provider, fixtures_in, post, request_body, start_record

# One worker builds the wheel and the environments once for the whole module.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("packaging")]

DESIGN_FOLDERS = ("cli", "integrations", "proxy_addon", "reassemble", "redact")
SDK_PINS = [
    line
    for line in (ROOT / "tests" / "apps" / "requirements.txt").read_text().split("\n")
    if line and not line.startswith("#")
]
SDKS = [pin for pin in SDK_PINS if pin.split("==")[0] in ("openai", "anthropic")]
PIP = ["-m", "pip", "--disable-pip-version-check", "--no-input", "-q"]
NO_EXTRA_LINE = (
    "callgate: record runs mitmproxy, which is not installed: pip install "
    "'callgate[proxy]' (or pipx install 'callgate[proxy]')\n"
)


def newest_python() -> str | None:
    """The newest Python 3.12+ here (mitmproxy 12 and the SDKs share one environment there)."""
    pyenv = sorted(Path.home().glob(".pyenv/versions/3.1[2-9]*/bin/python3"), reverse=True)
    for candidate in ["python3.14", "python3.13", "python3.12", *map(str, pyenv)]:
        if _runs(candidate, "import sys; assert sys.version_info >= (3, 12)"):
            return candidate
    return None


def _runs(python: str, code: str = "pass") -> bool:
    try:
        subprocess.run([python, "-c", code], capture_output=True, check=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return False
    return True


def run(
    *command: str | Path,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(part) for part in command],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=900,
        check=False,
    )


def ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def tracked_files() -> list[str]:
    listed = run("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", cwd=ROOT)
    return [name for name in ok(listed).split("\0") if name and (ROOT / name).exists()]


def copy_checkout(folder: Path) -> None:
    """This checkout's files (tracked, or new and not ignored) copied into ``folder``, symlinks
    kept as symlinks."""
    for name in tracked_files():
        target = folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if (ROOT / name).is_symlink():
            target.symlink_to(os.readlink(ROOT / name))
        else:
            shutil.copy2(ROOT / name, target)


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path | str]:
    """The wheel and sdist built from this checkout's files (as a release builds them from a clean
    clone: no caches or virtual environments), and what the build printed."""
    source, out = tmp_path_factory.mktemp("source"), tmp_path_factory.mktemp("dist")
    copy_checkout(source)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    built = run(sys.executable, "-m", "build", "--outdir", out, source, env=env)
    output = ok(built) + built.stderr
    return {"wheel": next(out.glob("*.whl")), "sdist": next(out.glob("*.tar.gz")), "output": output}


def venv(
    tmp_path_factory: pytest.TempPathFactory, python: str, name: str, *requirements: str | Path
) -> Path:
    """A fresh virtual environment with ``requirements`` installed; returns its bin folder."""
    folder = tmp_path_factory.mktemp(name)
    ok(run(python, "-m", "venv", folder))
    ok(run(folder / "bin" / "python", *PIP, "install", *requirements))
    return folder / "bin"


@pytest.fixture(scope="module")
def env311(tmp_path_factory: pytest.TempPathFactory, dist: dict[str, Path | str]) -> Path:
    return venv(tmp_path_factory, sys.executable, "py311", dist["wheel"], *SDKS, "pytest>=8")


@pytest.fixture(scope="module")
def env_newest(tmp_path_factory: pytest.TempPathFactory, dist: dict[str, Path | str]) -> Path:
    python = newest_python()
    if python is None:
        pytest.skip("no Python 3.12 or newer here (make test runs where pyenv has one)")
    wheel = Path(dist["wheel"]).as_uri()
    return venv(tmp_path_factory, python, "newest", f"callgate[proxy] @ {wheel}", *SDKS)


def source_files() -> set[str]:
    """Every file of the package as the checkout tracks it (through callgate/'s links)."""
    return {name for name in package_files() if name.startswith("callgate/")}


def package_files() -> set[str]:
    """The tracked files, with callgate/'s links to the design folders followed."""
    names = set()
    for name in tracked_files():
        top = name.split("/")[0]
        names.add(f"callgate/{name}" if top in DESIGN_FOLDERS else name)
    # callgate/'s links to the design folders are not files; a link to a file (the samples
    # ``serve --samples`` serves) is the file it names
    return {n for n in names if not ((ROOT / n).is_symlink() and (ROOT / n).is_dir())}


def test_the_wheel_holds_the_callgate_package_and_nothing_else(dist: dict[str, Path]) -> None:
    names = zipfile.ZipFile(dist["wheel"]).namelist()
    info = "callgate-0.1.0.dist-info/"
    assert {name.split("/")[0] for name in names} == {"callgate", info.rstrip("/")}
    assert {n for n in names if not n.startswith(info)} == source_files()
    assert not any("demo" in name or "gendocs" in name for name in names)
    metadata = Parser().parsestr(zipfile.ZipFile(dist["wheel"]).read(info + "METADATA").decode())
    assert metadata["License-Expression"] == "MIT"
    assert metadata.get_all("License-File") == ["LICENSE"]
    requires = metadata.get_all("Requires-Dist")
    assert [r for r in requires if r.startswith("mitmproxy")] == ['mitmproxy>=11; extra == "proxy"']
    assert not any(r.startswith("rfc3987") or "format" in r for r in requires)
    entry_points = zipfile.ZipFile(dist["wheel"]).read(info + "entry_points.txt").decode()
    assert "callgate = callgate.cli.app:main" in entry_points
    assert "[pytest11]\ncallgate = callgate.cli.pytest_plugin" in entry_points


def test_the_sdist_is_the_source_with_the_package_as_plain_files(dist: dict[str, Path]) -> None:
    with tarfile.open(dist["sdist"]) as sdist:
        members = [m for m in sdist.getmembers() if not m.isdir()]
    assert not any(member.issym() for member in members)
    names = {member.name.split("/", 1)[1] for member in members}
    generated = {"PKG-INFO", "setup.cfg"}
    assert names - generated == {
        n for n in package_files() if not n.startswith((".ci/", ".gitignore"))
    } | {n for n in names if n.startswith("callgate.egg-info/")}


def test_the_build_prints_no_warning(dist: dict[str, str]) -> None:
    assert re.findall(r".*warn.*", dist["output"], re.IGNORECASE) == []


def test_no_module_imports_a_design_folder_by_its_bare_name() -> None:
    bare = re.compile(rf"^\s*(from|import) ({'|'.join(DESIGN_FOLDERS)})\b", re.MULTILINE)
    files = [
        p
        for folder in [*DESIGN_FOLDERS, "callgate", "tests", "tools", "bench"]
        for p in (ROOT / folder).rglob("*.py")
    ]
    assert [str(p.relative_to(ROOT)) for p in files if bare.search(p.read_text())] == []


@pytest.mark.parametrize("which", ["env311", "env_newest"])
def test_callgate_installs_and_imports_beside_the_sdks(
    which: str, request: pytest.FixtureRequest
) -> None:
    bin_dir: Path = request.getfixturevalue(which)
    ok(run(bin_dir / "python", *PIP, "check"))
    probe = (
        "import importlib.util as u, json, callgate, openai, anthropic\n"
        "from importlib.metadata import files\n"
        "tops = sorted({f.parts[0] for f in files('callgate') if f.parts[0] != '..'})\n"
        f"bare = [n for n in {DESIGN_FOLDERS!r} if u.find_spec(n)]\n"
        "print(json.dumps([tops, bare, callgate.check.__module__]))"
    )
    tops, bare, module = json.loads(ok(run(bin_dir / "python", "-c", probe, cwd=bin_dir)))
    assert (tops, bare, module) == (
        ["callgate", "callgate-0.1.0.dist-info"],
        [],
        "callgate.reassemble.envelope",
    )
    fixture = CONFORMANCE / "openai" / "reused_index_new_id.json"
    checked = run(bin_dir / "callgate", "check", fixture)
    assert (checked.returncode, json.loads(checked.stdout)["status"]) == (1, "fail")


def test_record_without_the_proxy_extra_says_how_to_get_it(env311: Path) -> None:
    result = run(env311 / "callgate", "record", "--upstream", "http://127.0.0.1:9")
    assert (result.returncode, result.stdout, result.stderr) == (2, "", NO_EXTRA_LINE)


def test_a_project_with_its_own_cli_redact_and_reassemble_keeps_its_tests_green(
    env311: Path, tmp_path: Path
) -> None:
    for package in ("cli", "redact", "reassemble"):
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text(f"NAME = {package!r}\n")
    (tmp_path / "cli" / "pytest_plugin.py").write_text("OWN = True\n")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_own.py").write_text(
        "import cli, cli.pytest_plugin, redact, reassemble\n\n\n"
        "def test_own_packages():\n"
        "    assert (cli.NAME, redact.NAME, reassemble.NAME) == ('cli', 'redact', 'reassemble')\n"
        "    assert cli.pytest_plugin.OWN\n"
    )
    (tmp_path / "pyproject.toml").write_text("[tool.pytest.ini_options]\npythonpath = ['.']\n")
    tests = run(env311 / "python", "-m", "pytest", "-q", "-p", "no:cacheprovider", cwd=tmp_path)
    assert tests.returncode == 0 and "1 passed" in tests.stdout, tests.stdout + tests.stderr
    assert "--callgate" in ok(run(env311 / "python", "-m", "pytest", "--help", cwd=tmp_path))


def test_with_the_proxy_extra_record_writes_a_fixture(env_newest: Path, tmp_path: Path) -> None:
    upstream = fake_provider()
    process, port = start_record(env_newest / "callgate", upstream.url, tmp_path / "fx", tmp_path)
    try:
        status, _, _ = post(
            f"http://127.0.0.1:{port}",
            "/f/openai/reused_index_new_id/v1/chat/completions",
            request_body("openai/reused_index_new_id"),
        )
        [fixture] = fixtures_in(tmp_path / "fx", 1)
    finally:
        process.terminate()
        output, _ = process.communicate(timeout=30)
        upstream.close()
    assert status == 200, output
    assert (fixture["profile"], fixture["expect"]["status"]) == ("openai", "fail")
    assert fixture["expect"]["codes"] == ["identity_collision"]


@pytest.mark.full
@pytest.mark.parametrize("minor", [11, 12, 13])
def test_callgate_resolves_beside_every_sdk_it_is_tested_with(
    minor: int, dist: dict[str, Path]
) -> None:
    python = (
        sys.executable
        if minor == 11
        else next(
            (str(p) for p in Path.home().glob(f".pyenv/versions/3.{minor}*/bin/python3")),
            f"python3.{minor}",
        )
    )
    if not _runs(python):
        pytest.skip(f"no Python 3.{minor} here")
    result = run(
        python, *PIP, "install", "--dry-run", "--ignore-installed", dist["wheel"], *SDK_PINS
    )
    assert result.returncode == 0, result.stdout + result.stderr


def quickstart_commands() -> list[str]:
    """The README's quickstart, one command a line (a heredoc and its body are one)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Quickstart") :]
    start = section.index("```sh\n") + len("```sh\n")
    block = section[start : section.index("\n```", start)]
    commands: list[str] = []
    lines = iter(block.splitlines())
    for line in lines:
        if "<<'EOF'" in line:
            body = list(iter(lambda: next(lines), "EOF"))
            line = "\n".join([line, *body, "EOF"])
        commands.append(line)
    return commands


def wait_for(ready: Callable[[], bool], process: subprocess.Popen[str] | None = None) -> None:
    """Until ``ready()``, while ``process`` runs (a minute at most): a user's pace, not a
    guess at one."""
    deadline = time.monotonic() + 60
    while not ready():
        if process is not None and process.poll() is not None:
            raise AssertionError(process.communicate()[0])
        assert time.monotonic() < deadline, "not ready after a minute"
        time.sleep(0.05)


def serving(command: str, comment: str, cwd: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    """``command`` started in the background, once the port its ``comment`` names answers."""
    process = subprocess.Popen(
        command,
        shell=True,
        cwd=cwd,
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    port = int(re.findall(r"127\.0\.0\.1:(\d+)", comment)[-1])
    try:
        wait_for(lambda: listening(port), process)
    except BaseException:  # it never answered: stopped here, as the test stops the others
        stop(process)
        raise
    return process


def stop(process: subprocess.Popen[str]) -> None:
    """End a process ``serving`` started, with everything it started, and wait for it."""
    with contextlib.suppress(ProcessLookupError):  # it has ended already
        os.killpg(process.pid, signal.SIGTERM)
    process.communicate(timeout=30)


def listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def test_the_readmes_quickstart_runs_as_written_against_the_wheel(
    env_newest: Path, tmp_path: Path
) -> None:
    """Each line of the quickstart runs in one folder, as a user runs them one after the other:
    the install lines are the wheel's environment, a line ending in ``&`` runs in the background
    until the port its comment names answers, ``kill %1 %2`` stops those. Each command exits as
    its comment says (``# exit N``; 0 without one)."""
    env = {**os.environ, "PATH": f"{env_newest}{os.pathsep}{os.environ['PATH']}"}
    env = {k: v for k, v in env.items() if not k.startswith(("OPENAI", "VIRTUAL_ENV"))}
    background: list[subprocess.Popen[str]] = []
    said: dict[str, subprocess.CompletedProcess[str]] = {}
    try:
        for command in quickstart_commands():
            code, _, comment = command.partition(" #")
            if code.startswith(("pipx install", "pip install")):
                continue
            if code.strip() == "kill %1 %2":
                break
            if code.rstrip().endswith("&"):
                background.append(serving(code.rstrip()[:-1], comment, tmp_path, env))
                continue
            done = subprocess.run(
                code,
                shell=True,
                cwd=tmp_path,
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
            )
            expected = int(m.group(1)) if (m := re.search(r"exit (\d+)", comment)) else 0
            assert done.returncode == expected, (code, done.stdout, done.stderr)
            said[code.strip()] = done
            if code.endswith("python app.py"):  # the recorder writes the turn as it ends
                runs = sum(key.endswith("python app.py") for key in said)
                wait_for(lambda n=runs: len(list(tmp_path.glob("recorded/*.json"))) == n)
    finally:
        for process in background:
            stop(process)
    replayed = said["callgate replay recorded"].stdout.splitlines()[-1]
    assert replayed == "2 fixtures: 2 held (1 pass, 1 blocked as pinned), 0 did not, 0 unreadable"
    assert said["callgate replay recorded --require-pass"].stderr.endswith(
        ": pinned as blocked (identity_collision); --require-pass\n"
    )
    explained = said["callgate explain identity_collision"].stdout
    assert explained.startswith("identity_collision\n\nMeaning: A slot that already has an id")
