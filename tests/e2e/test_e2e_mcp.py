"""DSH's own MCP client (``@deepseek-ai/dsh-mcp-client``, the pinned DSH) configured with `stratagate mcp`: it lists
the memory tools (offered to the model as ``mcp__<server>__<tool>`` with our descriptions and schemas) and calls them;
what the agent remembers through MCP is in the folder's project memory, which StrataGate's DSH plugin then finds.

The MCP client is mounted with ``--patch`` (one plugin instance per server, as its README configures it in
cordis.yml), next to the installed StrataGate plugin; both use the same memory.db.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from stratagate.mcp_server import catalog
from stratagate.namespaces import ResolveParams, resolve
from support.dsh import REPO, DshHome, Run, repo_python
from support.dsh_model import DshModel, content_text, is_agent_request, tool_messages
from support.model_server import ScriptedModelServer

SERVER = "sgmcp"
MCP_CLIENT = "@deepseek-ai/dsh-mcp-client"
FACT = "The harbour-ledger release train leaves every second Thursday from the blue branch."


def mcp_patch(home: DshHome, project: Path) -> Path:
    """A patch mounting DSH's MCP client with `stratagate mcp` for ``project``, as the README configures it: DSH hands
    an MCP child no ``DSH_*`` variable, so the row passes ``DSH_HOME`` on (``!!js``) and the server finds the profile's
    memory.db by the same default as ``serve``. The rest of ``env`` is the test's (this tree's sidecar, no model)."""
    env = {"PYTHONPATH": str(REPO / "sidecar"), "STRATAGATE_MODEL_ROUTE": "none", "STRATAGATE_DENSE": "off"}
    args = ["-m", "stratagate", "mcp", "--project", str(project)]
    patch = home.logs / "mcp-client.patch.yml"
    patch.write_text(
        "- insert:\n"
        f"    - id: mcp-{SERVER}\n"
        f"      name: {json.dumps(MCP_CLIENT)}\n"
        "      config:\n"
        f"        serverName: {SERVER}\n"
        "        transport: stdio\n"
        f"        command: {json.dumps(str(repo_python()))}\n"
        f"        args: {json.dumps(args)}\n"
        "        failOnStartupError: true\n"
        "        env:\n"
        "          DSH_HOME: !!js process.env.DSH_HOME ?? ''\n"
        + "".join(f"          {key}: {json.dumps(value)}\n" for key, value in env.items())
    )
    return patch


def agent_requests(server: ScriptedModelServer, run: Run) -> list[dict[str, Any]]:
    first, last = run.request_range
    return [b for b in server.requests[first:last] if is_agent_request(b)]


def tool_result_text(requests: list[dict[str, Any]]) -> str:
    return "\n".join(content_text(m.get("content")) for body in requests for m in tool_messages(body))


def test_dsh_mcp_client_lists_and_calls_the_memory_tools_of_stratagate_mcp(
    stratagate: DshHome, model_server: ScriptedModelServer, model: DshModel, tmp_path: Path
):
    project = tmp_path / "harbour"
    project.mkdir()
    patch = mcp_patch(stratagate, project)
    model.tool, model.arguments = f"mcp__{SERVER}__memory_remember", {"text": FACT}
    run = stratagate.headless("Remember when the release train leaves.", project, patches=[patch], timeout=180,
                              requests=lambda: len(model_server.requests))
    assert run.returncode == 0, run.describe()
    steps = agent_requests(model_server, run)
    assert steps, run.describe()

    # Listed: every offered memory tool under the server's prefix, with our description and schema.
    offered = {(t.get("function") or {}).get("name"): t["function"] for t in steps[0].get("tools") or []}
    for entry in catalog.offered():
        spec = offered.get(f"mcp__{SERVER}__{entry.name}")
        assert spec is not None, sorted(offered)
        assert spec["description"] == entry.spec()["description"]
        assert spec["parameters"]["properties"].keys() == entry.spec()["parameters"]["properties"].keys()
    assert f"mcp__{SERVER}__compress" not in offered  # context-window tools stay DSH's own

    # Called: the tool result the model saw is the stored event, in the folder's project namespace.
    seen = tool_result_text(steps)
    assert '"status": "active"' in seen and FACT in seen, run.describe()
    namespace = resolve(ResolveParams(mode="project", cwd=str(project)))["namespace"]
    rows = stratagate.query(
        "SELECT e.id FROM events e JOIN namespaces n ON n.id = e.namespace_id WHERE n.name = ? AND e.summary = ?",
        (namespace, FACT),
    )
    assert len(rows) == 1, stratagate.diagnostics()

    # StrataGate's own DSH tool finds what the MCP client remembered (same folder, same memory).
    model.tool, model.arguments = "memory_search_events", {"query": "release train blue branch"}
    again = stratagate.headless("When does the release train leave?", project, timeout=180,
                                requests=lambda: len(model_server.requests))
    assert again.returncode == 0, again.describe()
    assert f'"evt_{rows[0]["id"]}"' in tool_result_text(agent_requests(model_server, again)), again.describe()
