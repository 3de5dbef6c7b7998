//! A fake model provider on loopback that speaks the real wire formats of
//! OpenAI Chat Completions and Anthropic Messages (streamed server-sent
//! events with tool calls), scripted: a question gets a `graph_stats` tool
//! call, a tool's answer gets text quoting it, "say you cannot" gets a
//! refusal from the router models, "approve everything" a call of a tool
//! that would write; and each call can be made to fail ([`Mode`]).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};

/// How the fake provider answers each call.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Mode {
    /// Tool calls and text, as a model would.
    Normal,
    /// 429 with `Retry-After: 1` on the first call, then normal.
    RateLimitedOnce,
    /// 429 on every call.
    RateLimited,
    /// 200 with a body that is not the stream format.
    Malformed,
    /// Waits 3 s before answering.
    Slow,
}

#[derive(Clone)]
pub struct Fake {
    mode: Arc<Mutex<Mode>>,
    /// Each call's body and headers, in order.
    calls: Arc<Mutex<Vec<(Value, HeaderMap)>>>,
}

impl Fake {
    pub fn set(&self, mode: Mode) {
        *self.mode.lock().expect("the fake provider's lock") = mode;
        self.calls.lock().expect("the fake provider's lock").clear();
    }
    pub fn calls(&self) -> Vec<(Value, HeaderMap)> {
        self.calls.lock().expect("the fake provider's lock").clone()
    }
}

fn sse(events: &[Value], done: bool) -> Response {
    let mut body = String::new();
    for e in events {
        if let Some(t) = e["type"].as_str() {
            body.push_str(&format!("event: {t}\n"));
        }
        body.push_str(&format!("data: {e}\n\n"));
    }
    if done {
        body.push_str("data: [DONE]\n\n");
    }
    ([("content-type", "text/event-stream")], body).into_response()
}

/// What the scripted model says next: a tool call for a question, the
/// answer from the tool's result, or words for the other cases.
enum Says {
    Call(&'static str, Value),
    Text(String),
}

fn script(model: &str, last_user: &str, tool_result: Option<&str>) -> Says {
    if let Some(result) = tool_result {
        let v: Value = serde_json::from_str(result).unwrap_or(Value::Null);
        if let Some(n) = v["active_nodes"].as_u64() {
            return Says::Text(format!("The estate holds {n} resources."));
        }
        if let Some(e) = v["error"].as_str() {
            return Says::Text(format!("That tool failed: {e}"));
        }
        return Says::Text("Done reading.".into());
    }
    if last_user.contains("say you cannot") {
        return if model == "small" || model == "claude-small" {
            Says::Text("I cannot answer that from here.".into())
        } else {
            Says::Text("The deep model answers.".into())
        };
    }
    if last_user.contains("approve everything") {
        return Says::Call("approve", json!({"crn": "crn:svc:aws:us-east-1:ec2:volume:1:vol-1"}));
    }
    Says::Call("graph_stats", json!({}))
}

async fn before(fake: &Fake, body: &Value, headers: &HeaderMap) -> Option<Response> {
    let attempt = {
        let mut calls = fake.calls.lock().expect("the fake provider's lock");
        calls.push((body.clone(), headers.clone()));
        calls.len()
    };
    let mode = *fake.mode.lock().expect("the fake provider's lock");
    match mode {
        Mode::Normal => None,
        Mode::RateLimitedOnce if attempt > 1 => None,
        Mode::RateLimitedOnce | Mode::RateLimited => Some(
            (
                StatusCode::TOO_MANY_REQUESTS,
                [("retry-after", "1")],
                json!({"error": {"message": "Rate limit reached"}}).to_string(),
            )
                .into_response(),
        ),
        Mode::Malformed => {
            Some(([("content-type", "text/event-stream")], "data: {\"choices\": [oops\n\n").into_response())
        }
        Mode::Slow => {
            tokio::time::sleep(Duration::from_secs(3)).await;
            None
        }
    }
}

async fn openai(State(fake): State<Fake>, headers: HeaderMap, body: String) -> Response {
    let body: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    if let Some(r) = before(&fake, &body, &headers).await {
        return r;
    }
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let last = messages.last().cloned().unwrap_or(Value::Null);
    let last_user = messages
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_owned();
    let tool_result = (last["role"] == "tool").then(|| last["content"].as_str().unwrap_or_default().to_owned());
    let model = body["model"].as_str().unwrap_or_default();
    match script(model, &last_user, tool_result.as_deref()) {
        Says::Text(t) => {
            let (a, b) = t.split_at(t.len() / 2);
            sse(
                &[
                    json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": a}}]}),
                    json!({"choices": [{"index": 0, "delta": {"content": b}}]}),
                    json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
                ],
                true,
            )
        }
        Says::Call(name, args) => {
            let args = args.to_string();
            let (a, b) = args.split_at(args.len() / 2);
            sse(
                &[
                    json!({"choices": [{"index": 0, "delta": {"role": "assistant", "tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": name, "arguments": a}}]}}]}),
                    json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": b}}]}}]}),
                    json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
                ],
                true,
            )
        }
    }
}

async fn anthropic(State(fake): State<Fake>, headers: HeaderMap, body: String) -> Response {
    let body: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    if let Some(r) = before(&fake, &body, &headers).await {
        return r;
    }
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let last = messages.last().cloned().unwrap_or(Value::Null);
    let tool_result = last["content"]
        .as_array()
        .and_then(|c| c.iter().find(|b| b["type"] == "tool_result"))
        .map(|b| b["content"].as_str().unwrap_or_default().to_owned());
    let last_user = messages
        .iter()
        .rev()
        .find_map(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_owned();
    let model = body["model"].as_str().unwrap_or_default();
    let start = json!({"type": "message_start", "message": {"id": "msg_1", "model": model, "content": []}});
    let stop = json!({"type": "message_stop"});
    match script(model, &last_user, tool_result.as_deref()) {
        Says::Text(t) => sse(
            &[
                start,
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": t}}),
                json!({"type": "content_block_stop", "index": 0}),
                json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}}),
                stop,
            ],
            false,
        ),
        Says::Call(name, args) => sse(
            &[
                start,
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "toolu_1", "name": name, "input": {}}}),
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": args.to_string()}}),
                json!({"type": "content_block_stop", "index": 0}),
                json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}}),
                stop,
            ],
            false,
        ),
    }
}

async fn models() -> impl IntoResponse {
    axum::Json(json!({"data": [{"id": "small"}, {"id": "big"}]}))
}

/// A fake provider listening on loopback: its base address and handle.
pub async fn fake_provider() -> (String, Fake) {
    let fake = Fake {
        mode: Arc::new(Mutex::new(Mode::Normal)),
        calls: Arc::new(Mutex::new(Vec::new())),
    };
    let app = Router::new()
        .route("/v1/chat/completions", post(openai))
        .route("/v1/messages", post(anthropic))
        .route("/v1/models", get(models))
        .with_state(fake.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a loopback port");
    let addr = listener.local_addr().expect("its address");
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{addr}"), fake)
}
