"""The settings table (sidecar/stratagate/settings_table.py) is the one declaration of a setting: a row added there
reaches the environment, the Memory page's settings (read, checked, written, applied), the shim's option map
(plugin/settings.json) and the docs test with no other edit. And what is generated from it is current."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import typing
from pathlib import Path

import pytest
from pydantic import BaseModel

from stratagate import config, settings_table, user_settings
from stratagate.context import settings as context_settings
from stratagate.errors import DomainError, RpcError
from stratagate.page.settings_view import SettingsValues, values_model
from stratagate.settings_table import Scope, Settings, plugin_manifest, row, rows
from stratagate.storage.db import Database
from test_docs import README, SHIM_README, settings_docs, undocumented

REPO = Path(__file__).resolve().parents[1]


class WithRecallLimit(Settings):
    """The table with one more row: a page-editable setting that is also a plugin option (the module's how-to)."""

    recall_limit: int = row(8, ge=1, le=50, plugin="recallLimit", page=("Recall limit", "召回条数"),
                            en="how many memories recall shows", zh="召回显示的记忆条数")


GROUPS: dict[Scope, type[BaseModel]] = {**settings_table.GROUPS, "sidecar": WithRecallLimit}


# --- a new row reaches every consumer ---------------------------------------------------------------------------------


def test_a_new_row_is_read_from_its_env_variable_with_its_bounds(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(config, "Settings", WithRecallLimit)
    loaded = config.load_settings({}, environ={"STRATAGATE_RECALL_LIMIT": "12"})
    assert isinstance(loaded, WithRecallLimit) and loaded.recall_limit == 12
    assert config.load_settings({}, environ={}).recall_limit == 8  # type: ignore[attr-defined]
    with pytest.raises(config.SettingsError, match="STRATAGATE_RECALL_LIMIT: Input should be less than or equal to 50"):
        config.load_settings({}, environ={"STRATAGATE_RECALL_LIMIT": "51"})


async def test_a_new_page_row_is_read_checked_written_and_applied_by_the_page(db: Database):
    settings = WithRecallLimit(db=db.path, recall_limit=10)
    applied = user_settings.Applied.of(settings)
    got = await user_settings.snapshot(db, settings, applied)
    assert got["settings"]["recall_limit"] == 10
    (spec,) = [f for f in got["fields"] if f["name"] == "recall_limit"]
    assert spec == {"name": "recall_limit", "type": "int", "min": 1, "max": 50, "default": 8, "source": "env",
                    "label": {"en": "Recall limit", "zh": "召回条数"},
                    "help": {"en": "how many memories recall shows", "zh": "召回显示的记忆条数"}}
    values_model(WithRecallLimit).model_validate(got["settings"])  # the typed reply of page.settings.get takes it

    with pytest.raises((RpcError, DomainError), match="recall_limit"):
        user_settings.validate_changes(settings, {"recall_limit": 0})
    changes = user_settings.validate_changes(settings, {"recall_limit": 20})
    async with db.transaction() as conn:
        before, after = await user_settings.write(conn, settings, applied, changes)
    user_settings.assign(settings, applied, after)
    assert before["settings"] == {"recall_limit": 10} and after["settings"] == {"recall_limit": 20}
    assert settings.recall_limit == 20
    # Stored: re-applied at the next start over the environment's value.
    restarted = WithRecallLimit(db=db.path, recall_limit=10)
    again = await user_settings.apply_at_start(db, restarted)
    assert restarted.recall_limit == 20 and again.stored == {"recall_limit": 20}
    fields = (await user_settings.snapshot(db, restarted, again))["fields"]
    assert {f["name"]: f["source"] for f in fields}["recall_limit"] == "page"


def test_a_new_row_is_a_plugin_option_the_shim_passes_to_the_sidecar():
    options = plugin_manifest(GROUPS)["options"]
    # tests/js/config.test.mjs feeds this very entry to the shim's normalizeConfig and sidecarEnv.
    assert options["recallLimit"] == {"setting": "recall_limit", "type": "int", "default": None,
                                      "env": "STRATAGATE_RECALL_LIMIT", "sidecar": True}
    assert "recallLimit" not in plugin_manifest()["options"]


def test_the_docs_test_requires_a_new_row_until_the_tables_are_regenerated():
    readme, shim = README.read_text(encoding="utf-8"), SHIM_README.read_text(encoding="utf-8")
    extended = rows(GROUPS)
    assert undocumented(extended, readme, shim) == ["STRATAGATE_RECALL_LIMIT", "recallLimit"]
    assert settings_docs.marked(readme) != settings_table.readme_table(GROUPS)
    regenerated = (settings_docs.rewrite(readme, settings_table.readme_table(GROUPS)),
                   settings_docs.rewrite(shim, settings_table.shim_table(GROUPS)))
    assert undocumented(extended, *regenerated) == []
    assert "| `STRATAGATE_RECALL_LIMIT` | 8 | ≥ 1, ≤ 50 | yes | `recallLimit` |" in regenerated[0]


# --- the table itself ----------------------------------------------------------------------------------------------


def test_every_row_is_complete_and_names_are_unique():
    table = rows()
    assert len(table) >= 38
    for r in table:
        assert r.help.en.strip() and r.help.zh.strip(), f"{r.name}: help in English and Chinese"
        assert r.env is None or r.env.startswith("STRATAGATE_"), r.name
        if r.page is not None:
            assert r.page.en.strip() and r.page.zh.strip(), f"{r.name}: page label in English and Chinese"
            assert r.type in ("int", "choice", "string"), f"{r.name}: the page edits int, choice and string settings"
    for key in ("name", "env", "plugin"):
        values = [getattr(r, key) for r in table if getattr(r, key) is not None]
        assert len(values) == len(set(values)), f"duplicate {key}"
    # Every Settings field is a row (nothing declared outside the table), and read from its variable.
    assert [r.name for r in table if r.scope == "sidecar"] == list(Settings.model_fields)
    assert settings_table.env_names(Settings)["block_turns"] == "STRATAGATE_BLOCK_TURNS"


def test_the_page_edits_what_the_table_marks_and_the_reply_is_typed_by_it():
    assert user_settings.app_fields() == ("namespace_mode", "block_turns", "model_route", "activation_recent_tokens",
                                          "activation_session_tokens", "activation_longterm_tokens", "team_dsn",
                                          "team_member")
    assert user_settings.context_fields() == {"context_mode": "mode"}
    assert list(SettingsValues.model_fields) == [r.name for r in user_settings.page_rows()]


def test_the_context_mode_row_is_the_engines_mode():
    (mode,) = [r for r in rows() if r.scope == "context"]
    assert mode.choices == list(typing.get_args(context_settings.Mode))
    assert mode.default == context_settings.ContextSettings.model_fields["mode"].default


def test_plugin_settings_json_is_the_output_of_stratagate_settings():
    """plugin/settings.json lets the shim read its options before any sidecar runs; it must never drift."""
    shipped = json.loads((REPO / "plugin" / "settings.json").read_text(encoding="utf-8"))
    assert shipped == plugin_manifest(), (
        "regenerate it: PYTHONPATH=sidecar .venv/bin/python -m stratagate settings > plugin/settings.json"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("STRATAGATE_")}
    env["PYTHONPATH"] = str(REPO / "sidecar")
    out = subprocess.run([sys.executable, "-m", "stratagate", "settings"], capture_output=True, text=True, env=env,
                         stdin=subprocess.DEVNULL, timeout=120, check=True)
    assert json.loads(out.stdout) == shipped


def test_the_bundle_row_shows_only_plugin_options_with_the_tables_defaults():
    """plugin/cordis.patch.yml's `stratagate` row shows options (set, or commented out): each is a row of the table
    with the table's default (a new option need not be added there: a missing option falls back to its default)."""
    text = (REPO / "plugin" / "cordis.patch.yml").read_text(encoding="utf-8")
    block = text[text.index("      config:\n") : text.index("\n\n", text.index("      config:\n"))]
    shown = dict(re.findall(r"^        (\w+): (.+)$", block, re.M))
    shown |= dict(re.findall(r"^        # (\w+): (\S+|\{.*\})$", block, re.M))  # an option shown commented out
    options = plugin_manifest()["options"]
    assert len(shown) >= 10 and set(shown) <= set(options), set(shown) - set(options)
    for name, spec in options.items():
        if name in shown and not spec["sidecar"] and spec["default"] is not None:
            assert shown[name] == str(spec["default"]).lower(), f"cordis.patch.yml: {name}"
