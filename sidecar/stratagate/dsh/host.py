"""Is the DSH this plugin runs in one StrataGate-Py supports? The shim reads the host's versions (its DSH and Cordis
packages, shim-js/host-version.js) and sends them in ``host.check`` after each sidecar start; this module decides,
the shim logs the verdict, and the sidecar keeps it for ``system.info`` (``host``) and the Memory page's overview.

Why only one version: DSH's npm ``latest`` (0.1.5-rc.2) cannot be installed (its ``@deepseek-ai/dsh-acp-app``
dependency is missing from the registry), and 0.1.0-rc.8 resolved without pins gets Cordis releases that stop every
profile at boot. scripts/dsh-install/ pins the working set; a test keeps :data:`SUPPORTED_DSH` equal to that pin.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from stratagate.protocol.types import Result

SUPPORTED_DSH: tuple[str, ...] = ("0.1.0-rc.8",)
"""The DSH versions the plugin is tested with (scripts/dsh-install/package.json pins the first)."""
PINNED_CORDIS = "4.0.1"
"""The Cordis release the supported DSH runs on (the pin's ``pnpm.overrides``)."""
UNKNOWN = "unknown"
"""What the shim passes when it could not read a version."""

HostVerdict = Literal["supported", "unsupported", "cordis", "unknown", "standalone"]


class HostParams(BaseModel):
    """The versions the shim read; None (or absent) when it has none to send."""

    model_config = ConfigDict(extra="forbid")

    dsh: str | None = Field(None, max_length=100)
    cordis: str | None = Field(None, max_length=100)


class HostCheck(Result):
    dsh: str | None
    cordis: str | None
    verdict: HostVerdict
    supported: bool | None  # None: could not tell, or not running inside DSH
    supported_dsh: list[str]
    pinned_cordis: str
    message: str | None  # English, for the logs; the page builds its own words from the fields


def _version(value: str | None) -> str | None:
    value = (value or "").strip()
    return value or None


def check(dsh: str | None, cordis: str | None) -> HostCheck:
    """The verdict for the versions the shim read (``dsh`` None: not running inside DSH at all)."""
    dsh, cordis = _version(dsh), _version(cordis)
    known_cordis = cordis if cordis != UNKNOWN else None
    supported_list = ", ".join(SUPPORTED_DSH)
    fix = "install the supported DSH with `npx stratagate-install-dsh` or scripts/install-dsh.sh (README: Getting DSH)"
    verdict: HostVerdict
    if dsh is None:
        verdict, supported, message = "standalone", None, None
    elif dsh == UNKNOWN:
        verdict, supported = "unknown", None
        message = f"could not tell which DSH runs this plugin; StrataGate-Py supports DSH {supported_list}"
    elif dsh not in SUPPORTED_DSH:
        verdict, supported = "unsupported", False
        message = (f"DSH {dsh} is not a version StrataGate-Py supports (supported: {supported_list}); memory may "
                   f"not work: {fix}")
    elif known_cordis is not None and known_cordis != PINNED_CORDIS:
        verdict, supported = "cordis", False
        message = (f"DSH {dsh} runs on Cordis {known_cordis}, not the pinned {PINNED_CORDIS} (an install without the "
                   f"pins; newer Cordis releases break DSH's boot): {fix}")
    else:
        verdict, supported, message = "supported", True, None
    return HostCheck(dsh=dsh, cordis=cordis, verdict=verdict, supported=supported, supported_dsh=list(SUPPORTED_DSH),
                     pinned_cordis=PINNED_CORDIS, message=message)


STANDALONE = check(None, None)
"""The verdict until a shim sends its versions (``stratagate ui``, ``stratagate mcp``, tests)."""
