"""An MCP client (the official `mcp` package) against svc's MCP server:
`stdio` starts `svc mcp` and speaks to it on its stdin and stdout;
`http` speaks streamable HTTP to the daemon's `/api/v1/mcp` with the
token. Lists the tools, calls each once, and prints one JSON document of
what it saw.

Usage: mcp_client.py stdio SVC_BINARY URL TOKEN CRN
       mcp_client.py http URL TOKEN CRN
"""

import asyncio
import json
import os
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client


def arguments(name, crn):
    """Arguments each tool is called with."""
    return {
        "search_nodes": {"limit": 2, "waste": True},
        "get_node": {"crn": crn},
        "node_edges": {"crn": crn, "limit": 5},
        "blast_radius": {"crn": crn, "limit": 5},
        "graph_stats": {},
        "waste_summary": {"top": 2},
        "history": {"limit": 3},
        "policy_dry_run": {"condition": "true", "limit": 2},
        "remediation_queue": {"limit": 2},
        "remediation_plan": {"crn": crn},
        "resource_drift": {"crn": crn},
    }.get(name, {})


def field(obj, *names):
    """An attribute under its snake_case or camelCase name."""
    for n in names:
        if hasattr(obj, n):
            return getattr(obj, n)
    raise AttributeError(names)


async def exercise(session, crn):
    init = await session.initialize()
    listed = await session.list_tools()
    seen = {
        "protocol": field(init, "protocol_version", "protocolVersion"),
        "server": field(field(init, "server_info", "serverInfo"), "name"),
        "tools": [t.name for t in listed.tools],
        "read_only": [
            bool(getattr(field(t, "annotations"), "read_only_hint", None) or getattr(field(t, "annotations"), "readOnlyHint", None))
            for t in listed.tools
        ],
        "results": {},
    }
    for t in listed.tools:
        r = await session.call_tool(t.name, arguments(t.name, crn))
        text = r.content[0].text if r.content else ""
        seen["results"][t.name] = {"error": bool(field(r, "is_error", "isError")), "text": text[:4000]}
    # A tool that would write is not there to call: a protocol error.
    try:
        refused = await session.call_tool("approve", {"crn": crn})
        seen["approve_refused"] = bool(field(refused, "is_error", "isError"))
    except Exception as e:  # the SDK raises the server's JSON-RPC error
        seen["approve_refused"] = "no tool named" in str(e)
    return seen


async def over_stdio(svc, url, token, crn):
    env = dict(os.environ, SVC_URL=url, SVC_TOKEN=token)
    params = StdioServerParameters(command=svc, args=["mcp"], env=env)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            return await exercise(session, crn)


async def over_http(url, token, crn):
    import httpx2

    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http:
        async with streamable_http_client(f"{url}/api/v1/mcp", http_client=http) as streams:
            read, write = streams[0], streams[1]
            async with ClientSession(read, write) as session:
                return await exercise(session, crn)


def main():
    mode = sys.argv[1]
    if mode == "stdio":
        seen = asyncio.run(over_stdio(*sys.argv[2:6]))
    else:
        seen = asyncio.run(over_http(*sys.argv[2:5]))
    print(json.dumps(seen))


if __name__ == "__main__":
    main()
