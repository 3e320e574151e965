"""Fixtures for the end-to-end tests against the real DeepSeek Harness (DSH).

* ``dsh_install`` (session): runs scripts/install-dsh.sh once. A failed install FAILS every e2e test with the
  install log; these tests are never skipped.
* ``stratagate_tgz`` / ``probe_tgz`` (session): ``npm pack`` of the repository / of tests/e2e/probe-plugin.
* ``model`` + ``model_server``: a ScriptedModelServer whose default is the DSH-aware ``DshModel``.
* ``dsh_home``: a fresh DSH_HOME whose settings.yaml points DSH's model at ``model_server``.
  On teardown every process started for it (dsh, sidecars) is killed by pid; on failure the runs' output,
  the StrataGate files and logs are attached to the report.
* ``stratagate``: ``dsh_home`` with the StrataGate tarball installed in the headless profile and the
  STRATAGATE_* overrides for fast tests; ``web_stratagate``: the same in the web profile (multi-turn sessions
  through support.dsh_web).
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from pathlib import Path

import pytest

from support.dsh import REPO, DshHome, DshInstall, DshInstallError, install_dsh, npm_pack, repo_python
from support.dsh_model import DshModel
from support.model_server import ScriptedModelServer

E2E_DIR = Path(__file__).resolve().parent
PROBE_PLUGIN = E2E_DIR / "probe-plugin"
LOG_EXPORTER = E2E_DIR / "dsh-log-exporter.mjs"
STRATAGATE_PACKAGE = "stratagate-py"

# Overrides the plugin (shim and sidecar) reads from the environment for fast, deterministic tests.
STRATAGATE_TEST_ENV = {
    "STRATAGATE_PYTHON": str(repo_python()),
    "STRATAGATE_BLOCK_TURNS": "1",
    "STRATAGATE_JOB_BACKOFF_BASE": "0.05",
    "STRATAGATE_JOB_BACKOFF_CAP": "0.2",
    "STRATAGATE_HOST_LLM_TIMEOUT": "20",
    # The repo venv's editable install points at the main checkout; this makes the sidecar run THIS tree's code
    # (a worktree's), as the tarball's shim does (clean_env strips the developer's own PYTHONPATH first).
    "PYTHONPATH": str(REPO / "sidecar"),
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if E2E_DIR in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.e2e)


@pytest.fixture(scope="session")
def _dsh_install_result() -> DshInstall | DshInstallError:
    try:
        return install_dsh()
    except DshInstallError as exc:
        return exc


@pytest.fixture
def dsh_install(_dsh_install_result: DshInstall | DshInstallError) -> DshInstall:
    if isinstance(_dsh_install_result, DshInstallError):
        pytest.fail(
            f"DSH could not be installed ({_dsh_install_result}); the e2e tests need it.\n{_dsh_install_result.log}",
            pytrace=False,
        )
    return _dsh_install_result


@pytest.fixture(scope="session")
def _packed() -> dict[str, Path | Exception]:
    """Tarballs built in this session (or why building one failed), by name."""
    return {}


def _pack(cache: dict[str, Path | Exception], key: str, source: Path, install: DshInstall, dest: Path) -> Path:
    if key not in cache:
        try:
            cache[key] = npm_pack(source, dest, install)
        except Exception as exc:
            cache[key] = exc
    value = cache[key]
    if isinstance(value, Exception):
        pytest.fail(f"could not pack {source}: {value}", pytrace=False)
    return value


@pytest.fixture
def stratagate_tgz(
    dsh_install: DshInstall, _packed: dict[str, Path | Exception], tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """The plugin tarball built from the repository with ``npm pack`` (once per session)."""
    dest = tmp_path_factory.getbasetemp() / "packed-stratagate"
    return _pack(_packed, "stratagate", REPO, dsh_install, dest)


@pytest.fixture
def probe_tgz(
    dsh_install: DshInstall, _packed: dict[str, Path | Exception], tmp_path_factory: pytest.TempPathFactory
) -> Path:
    dest = tmp_path_factory.getbasetemp() / "packed-probe"
    return _pack(_packed, "probe", PROBE_PLUGIN, dsh_install, dest)


@pytest.fixture
def model() -> DshModel:
    return DshModel()


@pytest.fixture
def model_server(model: DshModel) -> Iterator[ScriptedModelServer]:
    server = ScriptedModelServer()
    server.default = model
    with server:
        yield server


@pytest.fixture
def dsh_home(tmp_path: Path, dsh_install: DshInstall, model_server: ScriptedModelServer) -> Iterator[DshHome]:
    home = DshHome(tmp_path / "dsh-home", dsh_install, model_server.base_url, logs=tmp_path / "logs")
    try:
        yield home
    finally:
        home.kill_all()


@pytest.fixture
def stratagate(dsh_home: DshHome, stratagate_tgz: Path) -> DshHome:
    """A DSH_HOME with StrataGate installed in the headless profile and the test overrides set."""
    dsh_home.extra_env.update(STRATAGATE_TEST_ENV)
    dsh_home.extra_env["STRATAGATE_SHIM_LOG"] = str(dsh_home.logs / "shim.log")
    dsh_home.log_to_stderr(LOG_EXPORTER)
    dsh_home.add_plugin(stratagate_tgz, "headless")
    bundles = dsh_home.profile_manifest("headless")["dsh"]["profile"]["bundles"]
    assert STRATAGATE_PACKAGE in bundles, f"DSH did not register {STRATAGATE_PACKAGE} as a bundle: {bundles}"
    return dsh_home


@pytest.fixture
def web_stratagate(dsh_home: DshHome, stratagate_tgz: Path) -> DshHome:
    """A DSH_HOME with StrataGate installed in the web profile (drive it with support.dsh_web.running_web)."""
    dsh_home.extra_env.update(STRATAGATE_TEST_ENV)
    dsh_home.extra_env["STRATAGATE_SHIM_LOG"] = str(dsh_home.logs / "shim.log")
    dsh_home.log_to_stderr(LOG_EXPORTER)
    dsh_home.add_plugin(stratagate_tgz, "web")
    bundles = dsh_home.profile_manifest("web")["dsh"]["profile"]["bundles"]
    assert STRATAGATE_PACKAGE in bundles, f"DSH did not register {STRATAGATE_PACKAGE} as a web bundle: {bundles}"
    return dsh_home


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """On a failure, attach what DSH printed, the processes left and the StrataGate files and logs."""
    report: pytest.TestReport = yield
    if report.failed and report.when in ("call", "setup"):
        for value in getattr(item, "funcargs", {}).values():
            if isinstance(value, DshHome):
                try:
                    report.sections.append(("dsh diagnostics", value.diagnostics()))
                except Exception as exc:  # diagnostics must never hide the real failure
                    report.sections.append(("dsh diagnostics", f"could not collect: {exc!r}"))
                break
    return report
