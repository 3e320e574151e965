"""The check of the DSH the plugin runs in (dsh/host.py): the sidecar's verdict on the versions the shim read, the
supported version kept equal to the install pin, and the verdict reported by `host.check`, system.info and the
Memory page's overview. The installer's own version gate is tests/test_setup_scripts.py's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stratagate.dsh import host
from support.sidecar import REPO, SidecarClient

PIN = json.loads((REPO / "scripts" / "dsh-install" / "package.json").read_text())


def test_the_supported_versions_are_the_install_pin() -> None:
    assert host.SUPPORTED_DSH == (PIN["dependencies"]["@deepseek-ai/dsh"],)
    assert host.PINNED_CORDIS == PIN["pnpm"]["overrides"]["@deepseek-ai/cordis"]


def test_the_pinned_dsh_on_its_pinned_cordis_is_supported() -> None:
    verdict = host.check("0.1.0-rc.8", "4.0.1")
    assert (verdict.verdict, verdict.supported, verdict.message) == ("supported", True, None)


@pytest.mark.parametrize("version", ["0.1.5-rc.2", "0.1.1-rc.2", "0.1.0-rc.6"])
def test_another_dsh_is_unsupported_and_the_message_says_what_to_do(version: str) -> None:
    verdict = host.check(version, "4.0.1")
    assert verdict.verdict == "unsupported" and verdict.supported is False
    assert verdict.message is not None
    assert f"DSH {version} is not a version StrataGate-Py supports (supported: 0.1.0-rc.8)" in verdict.message
    assert "stratagate-install-dsh" in verdict.message


def test_the_pinned_dsh_on_an_unpinned_cordis_is_unsupported() -> None:
    verdict = host.check("0.1.0-rc.8", "4.0.4")
    assert verdict.verdict == "cordis" and verdict.supported is False
    assert verdict.message is not None and "Cordis 4.0.4, not the pinned 4.0.1" in verdict.message


def test_unreadable_versions_and_no_dsh_at_all() -> None:
    unknown = host.check("unknown", "unknown")
    assert unknown.verdict == "unknown" and unknown.supported is None
    assert unknown.message is not None and "supports DSH 0.1.0-rc.8" in unknown.message
    assert host.check("0.1.0-rc.8", "unknown").supported is True  # Cordis unread: the DSH version decides
    standalone = host.check(None, None)
    assert (standalone.verdict, standalone.supported, standalone.message) == ("standalone", None, None)


async def test_the_verdict_is_reported_by_host_check_system_info_and_the_page(tmp_path: Path) -> None:
    client = await SidecarClient.start(tmp_path / "memory.db", process=True)
    try:
        assert (await client.call("system.info"))["host"]["verdict"] == "standalone"  # no shim has told it yet
        checked = await client.call("host.check", {"dsh": "0.1.5-rc.2", "cordis": "4.0.1"})
        assert checked["dsh"] == "0.1.5-rc.2" and checked["supported"] is False
        assert (await client.call("system.info"))["host"] == checked
        assert (await client.call("page.overview", {}))["host"] == checked
    finally:
        await client.close()
    logged = "\n".join(client.stderr_lines)
    assert "WARNING" in logged and "host: DSH 0.1.5-rc.2 is not a version" in logged
