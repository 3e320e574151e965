"""Which Node each part needs, said the same way everywhere. The plugin runs inside DSH's Node, and DSH needs Node
≥ 22: package.json's ``engines`` states that (what the package needs where it runs), and so do the READMEs and the
pinned DSH install. The dev tooling (``npm test``, ``npm start``, the node tests) runs on the machine's Node, which
may be an older major: both READMEs say which, the same one, and it is never above the plugin's."""

from __future__ import annotations

import json
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _read(path: str) -> str:
    return (REPO / path).read_text(encoding="utf-8")


def _major(pattern: str, path: str) -> int:
    found = re.search(pattern, _read(path))
    assert found, f"{path}: no match for {pattern!r} (the sentence stating the Node version moved or changed)"
    return int(found.group(1))


def plugin_node() -> int:
    engines = json.loads(_read("package.json"))["engines"]["node"]
    found = re.fullmatch(r">=\s*(\d+)(?:\.\d+){0,2}", engines)
    assert found, f"package.json engines.node must read '>=N', got {engines!r}"
    return int(found.group(1))


def test_the_plugin_node_is_the_same_everywhere():
    want = plugin_node()
    stated = {
        "shim-js/README.md (intro)": _major(r"DeepSeek Harness \(DSH[^)]*Node ≥ (\d+)\)", "shim-js/README.md"),
        "README.md (Install)": _major(r"It needs DSH on Node ≥ (\d+)", "README.md"),
        "scripts/install-dsh.sh (DSH needs)": _major(r"DSH needs Node >= (\d+)", "scripts/install-dsh.sh"),
    }
    wrong = {where: major for where, major in stated.items() if major != want}
    assert not wrong, f"package.json engines says Node >= {want}, but {wrong}"


def test_the_pinned_dsh_runs_on_a_node_the_plugin_accepts():
    pinned = _major(r"NODE_VERSION=\$\{STRATAGATE_DSH_NODE:-(\d+)\.", "scripts/install-dsh.sh")
    assert pinned >= plugin_node()
    assert _major(r"installs Node (\d+)", "tests/e2e/README.md") == pinned
    assert _major(r"with Node (\d+), pnpm and DSH", "README.md") == pinned


def test_the_dev_tooling_node_is_the_same_everywhere_and_not_above_the_plugins():
    stated = {
        "README.md (Quick start)": _major(r"Python ≥ 3\.11, Node ≥ (\d+) and npm", "README.md"),
        "shim-js/README.md (Tests)": _major(r"`npm run test:js` \(Node ≥ (\d+)", "shim-js/README.md"),
    }
    assert len(set(stated.values())) == 1, f"the dev tooling's Node is stated differently: {stated}"
    assert max(stated.values()) <= plugin_node()
