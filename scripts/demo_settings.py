"""The offline demo's configuration, in one place for scripts/start.sh and the e2e test of the demo.

* ``settings.yaml`` of the demo DSH home: DSH's model is the offline demo model (scripts/demo_model.py);
* the environment of ``dsh web``: the demo provider's dummy key, and for StrataGate zero-model mode
  (``STRATAGATE_MODEL_ROUTE=none``: no block summary or extraction goes to the demo model, the sidecar writes them
  by rule) with one turn per block (``STRATAGATE_BLOCK_TURNS``, unless already set): recall leaves out the turns of
  the open block, so with one-turn blocks memory shows from the second message on.

CLI (start.sh): ``demo_settings.py write --home H --base-url U`` writes settings.yaml and prints ``KEY=VALUE``
lines to export; ``demo_settings.py remove --home H`` deletes a settings.yaml this module wrote (DEEPSEEK_API_KEY
set: DSH's own defaults apply again). Standard library only.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from pathlib import Path

MARK = "stratagate-demo"  # the provider id; also how remove() recognises a file written here
KEY_ENV = "STRATAGATE_DEMO_KEY"
DEMO_BLOCK_TURNS = "1"


def settings_yaml(base_url: str) -> str:
    return f"""# Written by scripts/start.sh ({MARK}): DSH's model is the offline demo model.
llm-pi-ai:
  providers:
    {MARK}:
      displayName: StrataGate offline demo model
      apiKeyEnv: {KEY_ENV}
      api: openai-completions
      baseURL: {base_url}
      compat:
        supportsDeveloperRole: false
        maxTokensField: max_tokens
      models:
        - id: {MARK}
          contextWindow: 65536
          maxTokens: 4096
agent-default-model:
  provider: {MARK}
  model: {MARK}
"""


def demo_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The variables ``dsh web`` (and so the shim and the sidecar) needs for the demo."""
    environ = os.environ if environ is None else environ
    env = {KEY_ENV: "offline-demo", "STRATAGATE_MODEL_ROUTE": "none"}
    if not environ.get("STRATAGATE_BLOCK_TURNS"):
        env["STRATAGATE_BLOCK_TURNS"] = DEMO_BLOCK_TURNS
    return env


def write(home: Path, base_url: str) -> Path:
    home.mkdir(parents=True, exist_ok=True)
    path = home / "settings.yaml"
    path.write_text(settings_yaml(base_url), encoding="utf-8")
    return path


def remove(home: Path) -> bool:
    path = home / "settings.yaml"
    if path.is_file() and MARK in path.read_text(encoding="utf-8", errors="replace"):
        path.unlink()
        return True
    return False


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    w = sub.add_parser("write")
    w.add_argument("--home", type=Path, required=True)
    w.add_argument("--base-url", required=True)
    r = sub.add_parser("remove")
    r.add_argument("--home", type=Path, required=True)
    args = parser.parse_args()
    if args.command == "write":
        write(args.home, args.base_url)
        for key, value in demo_env().items():
            print(f"{key}={value}")
    else:
        remove(args.home)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
