"""The protocol table: one registration mechanism for methods and tools, typed params and results, one adapter."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict

import stratagate.rpc.methods
import stratagate.tools  # noqa: F401  (registers every tool)
from stratagate.errors import INTERNAL_ERROR, INVALID_PARAMS, NOT_FOUND, DomainError, RpcError
from stratagate.imports.parsers import ImportFormatError
from stratagate.protocol import METHOD_TABLE, TOOL_TABLE, Entry, adapter
from stratagate.protocol.errors import as_rpc_error
from stratagate.protocol.registry import Table
from stratagate.protocol.toolbox import Toolbox
from stratagate.protocol.types import Result
from stratagate.rpc.methods import METHODS, ON_DEMAND, PAGE_MODULE, load_all_methods, module_to_load
from stratagate.tools.catalog import build_registry

REPO = Path(__file__).resolve().parents[1]
RETRIEVAL = {
    "memory_get_blocks",
    "memory_expand_block",
    "memory_search_raw",
    "memory_search_events",
    "memory_expand_event",
    "memory_search_graph",
    "memory_expand_graph_node",
}


def test_every_method_and_tool_has_a_params_and_a_result_model():
    load_all_methods()  # the handler modules are imported with the first call of one of their methods
    assert len(METHOD_TABLE.names()) >= 17
    for entry in [*METHOD_TABLE, *TOOL_TABLE]:
        assert issubclass(entry.params, BaseModel), entry.name
        assert issubclass(entry.result, BaseModel), entry.name
        assert entry.result is not BaseModel
    assert set(METHODS) == set(METHOD_TABLE.names()), "the dispatch dict is built from the table"


MANIFEST_PROBE = """
import json, sys
from stratagate.protocol import METHOD_TABLE
from stratagate.rpc import methods
at_start = set(METHOD_TABLE.names())
registered = {}
for module in dict.fromkeys(methods.ON_DEMAND.values()):
    before = set(METHOD_TABLE.names())
    methods.load_methods(module)
    registered[module] = sorted(set(METHOD_TABLE.names()) - before)
before = set(METHOD_TABLE.names())
methods.load_methods(methods.PAGE_MODULE)
print(json.dumps({"at_start": sorted(at_start), "registered": registered,
                  "page": sorted(set(METHOD_TABLE.names()) - before), "dispatched": sorted(methods.METHODS)}))
"""


def test_the_methods_loaded_on_demand_are_the_ones_their_modules_register():
    """The server imports a handler module with the first call of a method ``ON_DEMAND`` names (``page.*``: the
    Memory page): the map must name exactly what each module registers, or a method would be "not found"."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("STRATAGATE_")}
    env["PYTHONPATH"] = str(REPO / "sidecar")
    out = subprocess.run([sys.executable, "-c", MANIFEST_PROBE], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    found = json.loads(out.stdout.splitlines()[-1])
    for module, names in found["registered"].items():
        assert names == sorted(n for n, m in ON_DEMAND.items() if m == module), module
    assert not set(ON_DEMAND) & set(found["at_start"])
    assert found["page"] and all(name.startswith("page.") for name in found["page"])
    assert not any(name.startswith("page.") for name in found["at_start"])
    assert set(found["dispatched"]) == set(found["at_start"]) | set(ON_DEMAND) | set(found["page"])


def test_which_module_a_method_waits_for():
    load_all_methods()
    assert module_to_load("activation.render") is None
    assert module_to_load("page.nothing") is None, "once the page is loaded, an unknown page method is not found"
    assert module_to_load("no.such.method") is None
    assert module_to_load(["not", "a", "name"]) is None
    assert PAGE_MODULE == "stratagate.page.routes"


def test_retrieval_tools_are_the_ones_flagged_evidence():
    assert {e.name for e in TOOL_TABLE if e.evidence} == RETRIEVAL


def test_tools_list_order_is_the_registration_order():
    assert build_registry().names()[:3] == ["memory_get_blocks", "memory_expand_block", "memory_search_raw"]
    assert build_registry().names()[-2:] == ["memory_assess", "memory_record_use"]


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")
    n: int = 1


class _Out(Result):
    n: int
    note: str | None = None


def _entry(handler: Any, kind: str = "tool") -> Entry:
    return Entry(kind, "t_probe", _Args, _Out, handler, "probe")  # type: ignore[arg-type]


async def test_results_go_through_the_model_and_unset_keys_stay_out():
    async def handler(_ctx: Any, args: _Args) -> dict[str, Any]:
        return {"n": args.n}

    assert await adapter.call(_entry(handler), None, {"n": 3}) == {"n": 3}  # no "note": null added


async def test_a_result_key_the_model_does_not_declare_is_an_internal_error_naming_it():
    async def handler(_ctx: Any, _args: _Args) -> dict[str, Any]:
        return {"n": 1, "surprise": True}

    with pytest.raises(RpcError) as caught:
        await adapter.call(_entry(handler), None, {})
    assert caught.value.code == INTERNAL_ERROR
    assert "the result of t_probe does not match its model: surprise" in caught.value.message


async def test_method_and_tool_params_errors_come_from_the_one_adapter():
    async def handler(_ctx: Any, _args: _Args) -> dict[str, Any]:
        return {"n": 1}

    with pytest.raises(RpcError) as tool_error:
        await adapter.call(_entry(handler), None, {"n": "x"})
    assert tool_error.value.code == INVALID_PARAMS
    assert tool_error.value.message.startswith("bad arguments for t_probe: n: ")
    with pytest.raises(RpcError) as method_error:
        await adapter.call(_entry(handler, "method"), None, {"n": "x"})
    assert method_error.value.message.startswith("invalid params: n: ")
    assert method_error.value.data[0]["loc"] == ["n"]


async def test_exceptions_of_a_tool_are_mapped_once():
    async def refuses(_ctx: Any, _args: _Args) -> dict[str, Any]:
        raise ImportFormatError("notes.md", "not a Markdown export")

    async def breaks(_ctx: Any, _args: _Args) -> dict[str, Any]:
        raise KeyError("bug")

    with pytest.raises(RpcError) as refused:
        await adapter.call(_entry(refuses), None, {})
    assert (refused.value.code, refused.value.message) == (INVALID_PARAMS, "notes.md: not a Markdown export")
    with pytest.raises(RpcError) as broken:
        await adapter.call(_entry(breaks), None, {})
    assert broken.value.code == INTERNAL_ERROR


def test_domain_errors_keep_their_code_and_data():
    class Gone(DomainError):
        code = NOT_FOUND

    error = as_rpc_error(Gone("no such thing", {"id": "x_1"}))
    assert (error.code, error.message, error.data) == (NOT_FOUND, "no such thing", {"id": "x_1"})


async def test_the_toolbox_wraps_only_evidence_tools_and_renders_results_inert():
    async def shows(_ctx: Any, _args: _Args) -> dict[str, Any]:
        return {"n": 1, "note": "<b>hi</b>"}

    wrapped: list[str] = []

    def wrap(name: str, run: Any) -> Any:
        wrapped.append(name)
        return run

    plain = Entry("tool", "t_plain", _Args, _Out, shows, "d")
    evidence = Entry("tool", "t_evidence", _Args, _Out, shows, "d", evidence=True)
    box = Toolbox([plain, evidence], evidence_wrap=wrap)
    assert wrapped == ["t_evidence"]
    assert (await box.call(None, "t_plain", {}))["note"] == "&lt;b&gt;hi&lt;/b&gt;"  # type: ignore[arg-type]
    with pytest.raises(RpcError) as unknown:
        await box.call(None, "t_nope", {})  # type: ignore[arg-type]
    assert unknown.value.code == NOT_FOUND


def test_a_name_registered_twice_is_refused():
    table = Table("tool")

    async def one(_ctx: Any, _args: Any) -> Any:
        return None

    async def two(_ctx: Any, _args: Any) -> Any:
        return None

    table.add(Entry("tool", "t", _Args, _Out, one))
    with pytest.raises(ValueError, match="registered twice"):
        table.add(Entry("tool", "t", _Args, _Out, two))
    with pytest.raises(TypeError):
        table.add(Entry("method", "m", _Args, _Out, one))
