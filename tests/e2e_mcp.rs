//! The MCP server through a real MCP client (the official Python `mcp`
//! package): over stdio (`svc mcp`, which asks the daemon over HTTP) and
//! over streamable HTTP on the daemon (`POST /api/v1/mcp`, behind the
//! token). The client lists the tools, calls each, and finds no tool that
//! would write.

#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

mod common;

use common::Daemon;
use serde_json::{Value, json};

const CLIENT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/mcp_client.py");

async fn client(args: &[&str]) -> Value {
    let out = tokio::process::Command::new("python3")
        .arg(CLIENT)
        .args(args)
        .output()
        .await
        .expect("python3 runs (scripts/test installs the `mcp` package into its venv)");
    assert!(
        out.status.success(),
        "mcp_client.py {args:?} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(text.lines().last().unwrap_or_default()).unwrap_or_else(|e| panic!("{e}: {text}"))
}

#[tokio::test]
async fn an_mcp_client_lists_and_calls_every_tool_over_stdio_and_http() {
    let dir = common::data_dir();
    let d = Daemon::start_scanned(dir.path(), 600).await;
    let api = d.api();
    let queue = api.get_query_ok("/api/v1/remediation/queue", &[("limit", "1")]).await;
    let crn = queue["stages"]["pending"][0]["crn"].as_str().unwrap().to_owned();
    let stats = api.get_ok("/api/v1/graph/stats").await;
    let events_before = api.get_query_ok("/api/v1/history", &[("limit", "1")]).await["total"].clone();
    let base = d.base();
    let tools = [
        "search_nodes",
        "get_node",
        "node_edges",
        "blast_radius",
        "graph_stats",
        "waste_summary",
        "history",
        "policy_dry_run",
        "remediation_queue",
        "remediation_plan",
        "resource_drift",
    ];
    for seen in [
        client(&["stdio", common::SVC, &base, &d.token, &crn]).await,
        client(&["http", &base, &d.token, &crn]).await,
    ] {
        assert_eq!(seen["server"], "svc", "{seen}");
        assert!(seen["protocol"].as_str().is_some_and(|p| p.starts_with("20")), "{seen}");
        assert_eq!(seen["tools"], json!(tools), "{seen}");
        assert!(
            seen["read_only"].as_array().unwrap().iter().all(|r| r == true),
            "{seen}"
        );
        for t in tools {
            let r = &seen["results"][t];
            assert_eq!(r["error"], false, "{t}: {r}");
        }
        let stats_text: Value = serde_json::from_str(seen["results"]["graph_stats"]["text"].as_str().unwrap()).unwrap();
        assert_eq!(stats_text["active_nodes"], stats["active_nodes"]);
        assert!(seen["results"]["get_node"]["text"].as_str().unwrap().contains(&crn));
        assert!(
            seen["results"]["remediation_plan"]["text"]
                .as_str()
                .unwrap()
                .contains("steps"),
            "{seen}"
        );
        let drift: Value = serde_json::from_str(seen["results"]["resource_drift"]["text"].as_str().unwrap()).unwrap();
        assert_eq!(drift["configured"], false, "{seen}");
        assert_eq!(drift["provenance"]["crn"], json!(crn), "{seen}");
        assert_eq!(seen["approve_refused"], true, "{seen}");
    }
    // Nothing the clients did was written to the ledger.
    let events_after = api.get_query_ok("/api/v1/history", &[("limit", "1")]).await["total"].clone();
    assert_eq!(events_after, events_before);

    // The endpoint is behind the token, and answers JSON-RPC errors in JSON-RPC.
    let path = "/api/v1/mcp";
    api.with_token(None)
        .post_json(path, &json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}))
        .await
        .expect_error(401, "unauthorized");
    let r = api.post_raw(path, "{nope").await;
    assert_eq!(
        (r.status.as_u16(), r.json["error"]["code"].as_i64()),
        (200, Some(-32700)),
        "{}",
        r.text
    );
    let r = api
        .post_json(path, &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await;
    assert_eq!((r.status.as_u16(), r.text.as_str()), (202, ""));
    let r = api.get(path).await;
    assert_eq!(r.status.as_u16(), 405, "{}", r.text);
}
