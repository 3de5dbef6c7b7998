//! The assistant's tools over the Model Context Protocol: a JSON-RPC 2.0
//! server with `initialize`, `ping`, `tools/list` and `tools/call`, so
//! assistants and editors that speak MCP can read the estate. The same
//! read-only catalogue as the chat ([`super::tools`]); how a call is run is
//! the transport's: in process as the asker on the daemon's streamable
//! HTTP endpoint (`POST /api/v1/mcp`), over HTTP to the daemon for `svc
//! mcp` on stdio.

use std::future::Future;

use serde_json::{Map, Value, json};

use super::run::Outcome;
use super::tools;

/// Protocol versions answered; a client asking for another gets the newest.
pub const PROTOCOL_VERSIONS: &[&str] = &["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

/// JSON-RPC error codes.
const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const METHOD_NOT_FOUND: i64 = -32601;
const INVALID_PARAMS: i64 = -32602;

/// What the server tells a client about itself.
const INSTRUCTIONS: &str = "Read-only tools over a cloud estate that svc scanned: search resources, read one with its edges, blast radius, waste and savings, audit history, a CEL policy dry run, the remediation queue and plans. Nothing here approves, rejects or changes anything.";

fn error(id: Value, code: i64, message: impl Into<String>) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message.into()}})
}

fn result(id: Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

/// The tools as `tools/list` lists them.
pub fn listed_tools() -> Value {
    let tools: Vec<Value> = tools::catalogue()
        .into_iter()
        .map(|t| {
            json!({
                "name": t.name,
                "description": t.description,
                "inputSchema": t.schema,
                "annotations": {"readOnlyHint": true, "destructiveHint": false, "openWorldHint": false},
            })
        })
        .collect();
    json!({ "tools": tools })
}

/// A tool call's answer as MCP content: the JSON as text, and as
/// structured content when it is an object.
fn call_result(outcome: Outcome) -> Value {
    let text = serde_json::to_string_pretty(&outcome.value).unwrap_or_default();
    let mut r = json!({
        "content": [{"type": "text", "text": text}],
        "isError": !outcome.ok,
    });
    if outcome.ok && outcome.value.is_object() {
        r["structuredContent"] = outcome.value;
    }
    r
}

/// Answers one JSON-RPC message (`None` for a notification), running tool
/// calls with `call`.
pub async fn handle<F, Fut>(message: &Value, call: &F) -> Option<Value>
where
    F: Fn(String, Value) -> Fut,
    Fut: Future<Output = Outcome>,
{
    let Some(m) = message.as_object() else {
        return Some(error(Value::Null, INVALID_REQUEST, "a JSON-RPC message is an object"));
    };
    let id = m.get("id").cloned();
    let Some(method) = m.get("method").and_then(Value::as_str) else {
        // A response or a malformed message: nothing to answer but an error
        // for a request with an id.
        return id.map(|id| error(id, INVALID_REQUEST, "a request needs a method"));
    };
    if m.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Some(error(
            id.unwrap_or(Value::Null),
            INVALID_REQUEST,
            "jsonrpc must be \"2.0\"",
        ));
    }
    // A notification (no id) is never answered.
    let id = id?;
    let empty = Map::new();
    let params = m.get("params").and_then(Value::as_object).unwrap_or(&empty);
    Some(match method {
        "initialize" => {
            let asked = params
                .get("protocolVersion")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let version = PROTOCOL_VERSIONS
                .iter()
                .find(|v| **v == asked)
                .or(PROTOCOL_VERSIONS.last())
                .copied()
                .unwrap_or_default();
            result(
                id,
                json!({
                    "protocolVersion": version,
                    "capabilities": {"tools": {"listChanged": false}},
                    "serverInfo": {"name": "svc", "version": env!("CARGO_PKG_VERSION")},
                    "instructions": INSTRUCTIONS,
                }),
            )
        }
        "ping" => result(id, json!({})),
        "tools/list" => result(id, listed_tools()),
        "tools/call" => {
            let Some(name) = params.get("name").and_then(Value::as_str) else {
                return Some(error(id, INVALID_PARAMS, "tools/call needs params.name"));
            };
            if !tools::catalogue().iter().any(|t| t.name == name) {
                return Some(error(id, INVALID_PARAMS, format!("no tool named {name:?}")));
            }
            let args = params.get("arguments").cloned().unwrap_or(Value::Null);
            result(id, call_result(call(name.to_owned(), args).await))
        }
        other => error(
            id,
            METHOD_NOT_FOUND,
            format!("no method {other:?}: this server offers tools only"),
        ),
    })
}

/// Answers a body of JSON-RPC: one message or a batch; `None` when nothing
/// is to be answered (notifications only).
pub async fn handle_body<F, Fut>(body: &[u8], call: &F) -> Option<Value>
where
    F: Fn(String, Value) -> Fut,
    Fut: Future<Output = Outcome>,
{
    let parsed: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(e) => return Some(error(Value::Null, PARSE_ERROR, format!("not JSON: {e}"))),
    };
    match parsed {
        Value::Array(batch) => {
            if batch.is_empty() {
                return Some(error(Value::Null, INVALID_REQUEST, "an empty batch"));
            }
            let mut answers = Vec::new();
            for m in &batch {
                if let Some(a) = handle(m, call).await {
                    answers.push(a);
                }
            }
            (!answers.is_empty()).then_some(Value::Array(answers))
        }
        one => handle(&one, call).await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn answer(body: &str) -> Option<Value> {
        let call = |name: String, args: Value| async move {
            Outcome {
                ok: name == "graph_stats",
                value: json!({"tool": name, "args": args}),
            }
        };
        handle_body(body.as_bytes(), &call).await
    }

    #[tokio::test]
    async fn the_handshake_lists_and_calls() {
        let a = answer(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#).await;
        let a = a.unwrap_or_default();
        assert_eq!(a["result"]["protocolVersion"], "2025-06-18");
        assert_eq!(a["result"]["serverInfo"]["name"], "svc");
        let a = answer(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"1999-01-01"}}"#)
            .await
            .unwrap_or_default();
        assert_eq!(
            a["result"]["protocolVersion"],
            PROTOCOL_VERSIONS[PROTOCOL_VERSIONS.len() - 1]
        );
        assert_eq!(
            answer(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).await,
            None
        );
        let a = answer(r#"{"jsonrpc":"2.0","id":"x","method":"tools/list"}"#)
            .await
            .unwrap_or_default();
        let tools = a["result"]["tools"].as_array().cloned().unwrap_or_default();
        assert_eq!(tools.len(), tools::catalogue().len());
        assert!(
            tools
                .iter()
                .all(|t| t["annotations"]["readOnlyHint"] == true && t["inputSchema"]["type"] == "object")
        );
        let a =
            answer(r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"graph_stats","arguments":{}}}"#)
                .await
                .unwrap_or_default();
        assert_eq!(
            (a["id"].as_i64(), a["result"]["isError"].as_bool()),
            (Some(2), Some(false))
        );
        assert_eq!(a["result"]["structuredContent"]["tool"], "graph_stats");
        let a = answer(
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"get_node","arguments":{"crn":"x"}}}"#,
        )
        .await
        .unwrap_or_default();
        assert_eq!(a["result"]["isError"], true);
    }

    #[tokio::test]
    async fn bad_messages_get_json_rpc_errors() {
        let code = |a: Option<Value>| a.unwrap_or_default()["error"]["code"].as_i64();
        assert_eq!(code(answer("{nope").await), Some(PARSE_ERROR));
        assert_eq!(code(answer("[]").await), Some(INVALID_REQUEST));
        assert_eq!(code(answer("7").await), Some(INVALID_REQUEST));
        assert_eq!(
            code(answer(r#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#).await),
            Some(INVALID_REQUEST)
        );
        assert_eq!(
            code(answer(r#"{"jsonrpc":"2.0","id":1,"method":"resources/list"}"#).await),
            Some(METHOD_NOT_FOUND)
        );
        assert_eq!(
            code(answer(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"approve"}}"#).await),
            Some(INVALID_PARAMS)
        );
        assert_eq!(
            code(answer(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}"#).await),
            Some(INVALID_PARAMS)
        );
        let batch = answer(
            r#"[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"}]"#,
        )
        .await
        .unwrap_or_default();
        assert_eq!(batch.as_array().map(Vec::len), Some(1));
    }
}
