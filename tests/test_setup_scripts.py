"""The setup scripts a user runs: scripts/install-dsh.sh installs only the supported DSH and refuses the others with
the reason the README gives (checked with --dry-run or refused before anything is fetched: no install here), and
scripts/progress.sh keeps a long step from being silent for more than its interval."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from support.sidecar import REPO

INSTALLER = REPO / "scripts" / "install-dsh.sh"



def installer(*args: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(INSTALLER), "--prefix", str(tmp_path / "dsh"), *args], capture_output=True,
                          text=True, timeout=60)


def test_the_installer_accepts_the_pinned_version(tmp_path: Path) -> None:
    for args in ([], ["--version", "0.1.0-rc.8"]):
        result = installer(*args, "--dry-run", tmp_path=tmp_path)
        assert result.returncode == 0, result.stderr
        assert result.stdout.splitlines() == ["version=0.1.0-rc.8", f"prefix={tmp_path / 'dsh'}"]
    assert not (tmp_path / "dsh").exists()


@pytest.mark.parametrize("version", ["latest", "0.1.5-rc.2"])
def test_the_installer_refuses_the_registrys_latest_with_the_reason(version: str, tmp_path: Path) -> None:
    result = installer("--version", version, tmp_path=tmp_path)
    assert result.returncode == 2 and result.stdout == ""
    assert "cannot be installed by anyone" in result.stderr and "@deepseek-ai/dsh-acp-app@^0.1.5-rc.2" in result.stderr
    assert not (tmp_path / "dsh").exists()


def test_the_installer_refuses_other_versions_naming_the_supported_one(tmp_path: Path) -> None:
    result = installer("--version", "0.1.1-rc.2", tmp_path=tmp_path)
    assert result.returncode == 2 and result.stdout == ""
    assert "DSH 0.1.1-rc.2 is not supported by StrataGate-Py; the supported DSH is 0.1.0-rc.8" in result.stderr
    assert "user patch-layer watching requires the Cordis HMR service" in result.stderr
    assert not (tmp_path / "dsh").exists()
    bad = installer("--frobnicate", tmp_path=tmp_path)
    assert bad.returncode == 2 and "unknown argument --frobnicate" in bad.stderr


def test_a_long_step_says_it_is_still_working(tmp_path: Path) -> None:
    script = f'. "{REPO / "scripts" / "progress.sh"}"; with_progress "pip: installing" sh -c "sleep 1.3; exit 3"'
    result = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60,
                            env={"PATH": "/usr/bin:/bin", "STRATAGATE_PROGRESS_S": "0.25"})
    assert result.returncode == 3  # the step's own status
    ticks = [line for line in result.stderr.splitlines() if line.startswith("  pip: installing: still working (")]
    assert len(ticks) >= 2, result.stderr


def test_the_setup_steps_run_with_progress() -> None:
    bootstrap = (REPO / "scripts" / "bootstrap.sh").read_text(encoding="utf-8")
    pips = [line for line in bootstrap.splitlines() if "-m pip install" in line]
    assert pips and all("with_progress" in line for line in pips), pips
    start = (REPO / "scripts" / "start.sh").read_text(encoding="utf-8")
    assert "with_progress \"dsh plugin add\"" in start and "waiting for dsh web to answer" in start
