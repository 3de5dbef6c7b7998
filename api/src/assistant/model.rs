//! The language models the assistant speaks to: any OpenAI-compatible Chat
//! Completions endpoint (OpenAI, vLLM, llama.cpp, Ollama) and Anthropic's
//! Messages API, both streamed, both with tool calls. One call sends the
//! conversation and the tools and reads the reply as it streams: its text
//! goes on as it arrives, its tool calls are gathered whole.
//!
//! HTTP 429 is retried, at most [`ATTEMPTS`] attempts in all, after the
//! `Retry-After` the answer gave (capped at [`MAX_RETRY_AFTER`]) or an
//! exponential backoff. A timeout, another error status or a reply that is
//! not the wire format ends the call with an error in words.

use std::future::Future;
use std::time::Duration;

use serde_json::{Value, json};

use super::tools::Tool;

/// Attempts of one call, the first included, when the endpoint answers 429.
pub const ATTEMPTS: u32 = 3;
/// Longest wait a `Retry-After` may ask for.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(30);
/// The backoff before the second attempt when no `Retry-After` came; it
/// doubles for each attempt after.
const FIRST_BACKOFF: Duration = Duration::from_millis(500);
/// Longest reply read, in bytes.
const MAX_REPLY_BYTES: usize = 4 * 1024 * 1024;

/// Which wire format an endpoint speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wire {
    /// `POST {base}/chat/completions`.
    OpenAi,
    /// `POST {base}/v1/messages`.
    Anthropic,
}

/// An endpoint and one of its models.
#[derive(Clone, Debug)]
pub struct Endpoint {
    pub wire: Wire,
    /// Without the trailing slash: `https://api.openai.com/v1`,
    /// `https://api.anthropic.com`, `http://127.0.0.1:8000/v1`.
    pub base_url: String,
    pub api_key: Option<String>,
    pub model: String,
    /// Longest wait for the reply to start, and between two of its pieces.
    pub timeout: Duration,
}

/// One message of a conversation, in the form both wire formats are made from.
#[derive(Clone, Debug, PartialEq)]
pub enum Message {
    User(String),
    /// The model's turn: its text and the tools it called.
    Assistant {
        text: String,
        calls: Vec<ToolCall>,
    },
    /// A tool's answer to the call `id`.
    ToolResult {
        id: String,
        name: String,
        content: String,
    },
}

/// A tool call of the model's.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    /// The arguments as the model wrote them (JSON text), parsed when valid.
    pub args: Result<Value, String>,
}

/// What one call of the model answered.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Reply {
    pub text: String,
    pub calls: Vec<ToolCall>,
}

/// Why a call failed, in words; `status` when the endpoint answered one.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ModelError {
    pub message: String,
    pub status: Option<u16>,
}

impl ModelError {
    fn new(message: impl Into<String>) -> ModelError {
        ModelError {
            message: message.into(),
            status: None,
        }
    }
}

/// The HTTP client of the model calls.
pub fn client() -> Result<http_client::Client, ModelError> {
    http_client::Client::builder()
        .user_agent(concat!("svc/", env!("CARGO_PKG_VERSION")))
        .connect_timeout(Duration::from_secs(10))
        .build()
        .map_err(|e| ModelError::new(format!("cannot build the HTTP client: {e}")))
}

/// The body of a call: the conversation after `system`, and the tools.
pub fn request_body(endpoint: &Endpoint, system: &str, messages: &[Message], tools: &[Tool]) -> Value {
    match endpoint.wire {
        Wire::OpenAi => {
            let mut out = vec![json!({"role": "system", "content": system})];
            for m in messages {
                match m {
                    Message::User(t) => out.push(json!({"role": "user", "content": t})),
                    Message::Assistant { text, calls } => {
                        let mut msg = json!({"role": "assistant", "content": text});
                        if !calls.is_empty() {
                            msg["tool_calls"] = calls
                                .iter()
                                .map(|c| {
                                    json!({
                                        "id": c.id,
                                        "type": "function",
                                        "function": {"name": c.name, "arguments": args_text(c)},
                                    })
                                })
                                .collect();
                        }
                        out.push(msg);
                    }
                    Message::ToolResult { id, content, .. } => {
                        out.push(json!({"role": "tool", "tool_call_id": id, "content": content}))
                    }
                }
            }
            let tools: Vec<Value> = tools
                .iter()
                .map(|t| json!({"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.schema}}))
                .collect();
            json!({"model": endpoint.model, "messages": out, "tools": tools, "stream": true})
        }
        Wire::Anthropic => {
            let mut out: Vec<Value> = Vec::new();
            for m in messages {
                match m {
                    Message::User(t) => out.push(json!({"role": "user", "content": t})),
                    Message::Assistant { text, calls } => {
                        let mut content = Vec::new();
                        if !text.is_empty() {
                            content.push(json!({"type": "text", "text": text}));
                        }
                        for c in calls {
                            let input = c.args.clone().unwrap_or_else(|_| json!({}));
                            content.push(json!({"type": "tool_use", "id": c.id, "name": c.name, "input": input}));
                        }
                        out.push(json!({"role": "assistant", "content": content}));
                    }
                    Message::ToolResult { id, content, .. } => {
                        let block = json!({"type": "tool_result", "tool_use_id": id, "content": content});
                        // Results of one turn's calls go back in one user message.
                        match out.last_mut() {
                            Some(last)
                                if last["role"] == "user"
                                    && last["content"]
                                        .as_array()
                                        .is_some_and(|c| c.iter().all(|b| b["type"] == "tool_result")) =>
                            {
                                if let Some(list) = last["content"].as_array_mut() {
                                    list.push(block);
                                }
                            }
                            _ => out.push(json!({"role": "user", "content": [block]})),
                        }
                    }
                }
            }
            let tools: Vec<Value> = tools
                .iter()
                .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.schema}))
                .collect();
            json!({"model": endpoint.model, "system": system, "messages": out, "tools": tools, "max_tokens": 2048, "stream": true})
        }
    }
}

fn args_text(c: &ToolCall) -> String {
    match &c.args {
        Ok(v) => v.to_string(),
        Err(raw) => raw.clone(),
    }
}

/// `req` with the endpoint's key and version headers, as its wire format
/// wants them.
pub fn authorized(req: http_client::RequestBuilder, endpoint: &Endpoint) -> http_client::RequestBuilder {
    let req = match (endpoint.wire, &endpoint.api_key) {
        (Wire::OpenAi, Some(k)) => req.bearer_auth(k),
        (Wire::Anthropic, Some(k)) => req.header("x-api-key", k),
        (_, None) => req,
    };
    match endpoint.wire {
        Wire::Anthropic => req.header("anthropic-version", "2023-06-01"),
        Wire::OpenAi => req,
    }
}

/// The wait a 429 asks for: its `Retry-After` in seconds or as an HTTP
/// date, capped; `None` when it gave none that parses.
pub fn retry_after(value: Option<&str>, now: std::time::SystemTime) -> Option<Duration> {
    let v = value?.trim();
    if let Ok(s) = v.parse::<u64>() {
        return Some(Duration::from_secs(s).min(MAX_RETRY_AFTER));
    }
    let at = httpdate::parse_http_date(v).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO).min(MAX_RETRY_AFTER))
}

/// Calls the model with the conversation and the tools, handing each piece
/// of its text to `text` as it streams; its whole reply.
pub async fn call<F, Fut>(
    client: &http_client::Client,
    endpoint: &Endpoint,
    system: &str,
    messages: &[Message],
    tools: &[Tool],
    mut text: F,
) -> Result<Reply, ModelError>
where
    F: FnMut(String) -> Fut,
    Fut: Future<Output = ()>,
{
    let body = request_body(endpoint, system, messages, tools);
    let url = match endpoint.wire {
        Wire::OpenAi => format!("{}/chat/completions", endpoint.base_url),
        Wire::Anthropic => format!("{}/v1/messages", endpoint.base_url),
    };
    let body = body.to_string();
    let mut attempt = 1;
    let mut response = loop {
        let req = authorized(
            client
                .post(&url)
                .header(http_client::header::CONTENT_TYPE, "application/json")
                .body(body.clone()),
            endpoint,
        );
        let sent = tokio::time::timeout(endpoint.timeout, req.send()).await;
        let resp = match sent {
            Err(_) => {
                return Err(ModelError::new(format!(
                    "the model did not answer within {:?}",
                    endpoint.timeout
                )));
            }
            Ok(Err(e)) => return Err(ModelError::new(format!("cannot reach the model at {url}: {e}"))),
            Ok(Ok(r)) => r,
        };
        let status = resp.status().as_u16();
        if status == 429 && attempt < ATTEMPTS {
            let asked = resp
                .headers()
                .get(http_client::header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            let wait = retry_after(asked.as_deref(), std::time::SystemTime::now())
                .unwrap_or(FIRST_BACKOFF * 2u32.pow(attempt - 1));
            tracing::warn!(
                attempt,
                wait_ms = wait.as_millis() as u64,
                "the model answered 429; retrying"
            );
            tokio::time::sleep(wait).await;
            attempt += 1;
            continue;
        }
        if !(200..300).contains(&status) {
            let text = tokio::time::timeout(endpoint.timeout, resp.text())
                .await
                .ok()
                .and_then(Result::ok)
                .unwrap_or_default();
            let detail: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
            let said = detail["error"]["message"]
                .as_str()
                .map_or_else(|| text.chars().take(300).collect::<String>(), str::to_owned);
            let tries = if status == 429 {
                format!(" after {attempt} attempts")
            } else {
                String::new()
            };
            return Err(ModelError {
                message: format!("the model answered HTTP {status}{tries}: {}", said.trim()),
                status: Some(status),
            });
        }
        break resp;
    };
    let mut parser = Stream::new(endpoint.wire);
    let mut read = 0usize;
    loop {
        let chunk = match tokio::time::timeout(endpoint.timeout, response.chunk()).await {
            Err(_) => {
                return Err(ModelError::new(format!(
                    "the model's answer stalled for {:?}",
                    endpoint.timeout
                )));
            }
            Ok(Err(e)) => return Err(ModelError::new(format!("the model's answer broke off: {e}"))),
            Ok(Ok(None)) => break,
            Ok(Ok(Some(c))) => c,
        };
        read += chunk.len();
        if read > MAX_REPLY_BYTES {
            return Err(ModelError::new(format!(
                "the model's answer is longer than {MAX_REPLY_BYTES} bytes"
            )));
        }
        for piece in parser.push(&chunk)? {
            text(piece).await;
        }
        if parser.done {
            break;
        }
    }
    parser.finish()
}

/// A whole streamed reply in `wire`'s format, read from `bytes` as if they
/// had come in one piece: its text pieces and the reply.
pub fn read_stream(wire: Wire, bytes: &[u8]) -> Result<(Vec<String>, Reply), ModelError> {
    let mut s = Stream::new(wire);
    let pieces = s.push(bytes)?;
    Ok((pieces, s.finish()?))
}

/// A streamed reply, read as server-sent events.
struct Stream {
    wire: Wire,
    line: Vec<u8>,
    reply: Reply,
    /// Tool calls being written: by index (OpenAI) or content block
    /// (Anthropic), their id, name and argument text so far.
    open: Vec<(usize, String, String, String)>,
    /// The stream said it is complete.
    done: bool,
    /// Any event came.
    started: bool,
}

impl Stream {
    fn new(wire: Wire) -> Stream {
        Stream {
            wire,
            line: Vec::new(),
            reply: Reply::default(),
            open: Vec::new(),
            done: false,
            started: false,
        }
    }

    /// Reads `bytes`; the text pieces they complete.
    fn push(&mut self, bytes: &[u8]) -> Result<Vec<String>, ModelError> {
        let mut pieces = Vec::new();
        for &b in bytes {
            if b != b'\n' {
                self.line.push(b);
                continue;
            }
            let line = std::mem::take(&mut self.line);
            let line = String::from_utf8_lossy(&line);
            let line = line.trim_end_matches('\r');
            let Some(data) = line.strip_prefix("data:") else {
                continue;
            };
            let data = data.trim();
            if data == "[DONE]" {
                self.done = true;
                continue;
            }
            let event: Value = serde_json::from_str(data).map_err(|e| {
                ModelError::new(format!(
                    "the model's answer is not the {} stream format: {e} in {:?}",
                    self.name(),
                    data.chars().take(120).collect::<String>()
                ))
            })?;
            self.started = true;
            if let Some(t) = self.event(&event)? {
                self.reply.text.push_str(&t);
                pieces.push(t);
            }
        }
        Ok(pieces)
    }

    fn name(&self) -> &'static str {
        match self.wire {
            Wire::OpenAi => "Chat Completions",
            Wire::Anthropic => "Messages",
        }
    }

    /// One event: the text it adds, if any.
    fn event(&mut self, e: &Value) -> Result<Option<String>, ModelError> {
        if let Some(m) = e["error"]["message"].as_str() {
            return Err(ModelError::new(format!("the model reported an error: {m}")));
        }
        match self.wire {
            Wire::OpenAi => {
                let Some(choice) = e["choices"].get(0) else {
                    return Ok(None);
                };
                let delta = &choice["delta"];
                for call in delta["tool_calls"].as_array().into_iter().flatten() {
                    let index = call["index"].as_u64().unwrap_or(0) as usize;
                    let f = &call["function"];
                    match self.open.iter_mut().find(|o| o.0 == index) {
                        Some(o) => {
                            if let Some(a) = f["arguments"].as_str() {
                                o.3.push_str(a);
                            }
                        }
                        None => self.open.push((
                            index,
                            call["id"].as_str().unwrap_or_default().to_owned(),
                            f["name"].as_str().unwrap_or_default().to_owned(),
                            f["arguments"].as_str().unwrap_or_default().to_owned(),
                        )),
                    }
                }
                if choice["finish_reason"].is_string() {
                    self.done = true;
                }
                Ok(delta["content"].as_str().filter(|t| !t.is_empty()).map(str::to_owned))
            }
            Wire::Anthropic => match e["type"].as_str() {
                Some("content_block_start") => {
                    let block = &e["content_block"];
                    if block["type"] == "tool_use" {
                        self.open.push((
                            e["index"].as_u64().unwrap_or(0) as usize,
                            block["id"].as_str().unwrap_or_default().to_owned(),
                            block["name"].as_str().unwrap_or_default().to_owned(),
                            String::new(),
                        ));
                    }
                    Ok(block["text"].as_str().filter(|t| !t.is_empty()).map(str::to_owned))
                }
                Some("content_block_delta") => {
                    let d = &e["delta"];
                    match d["type"].as_str() {
                        Some("text_delta") => Ok(d["text"].as_str().map(str::to_owned)),
                        Some("input_json_delta") => {
                            let index = e["index"].as_u64().unwrap_or(0) as usize;
                            if let Some(o) = self.open.iter_mut().find(|o| o.0 == index) {
                                o.3.push_str(d["partial_json"].as_str().unwrap_or_default());
                            }
                            Ok(None)
                        }
                        _ => Ok(None),
                    }
                }
                Some("message_stop") => {
                    self.done = true;
                    Ok(None)
                }
                _ => Ok(None),
            },
        }
    }

    /// The whole reply, once the stream ended.
    fn finish(mut self) -> Result<Reply, ModelError> {
        if !self.started {
            return Err(ModelError::new(format!(
                "the model's answer held no {} events",
                self.name()
            )));
        }
        if !self.done {
            return Err(ModelError::new(
                "the model's answer ended before it said it was complete",
            ));
        }
        for (_, id, name, args) in std::mem::take(&mut self.open) {
            let text = if args.trim().is_empty() { "{}".to_owned() } else { args };
            let parsed = serde_json::from_str::<Value>(&text).map_err(|_| text.clone());
            self.reply.calls.push(ToolCall { id, name, args: parsed });
        }
        Ok(self.reply)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(wire: Wire, sse: &str) -> Result<(Vec<String>, Reply), ModelError> {
        let mut s = Stream::new(wire);
        let mut pieces = Vec::new();
        // In awkward pieces, as a socket would hand them over.
        for chunk in sse.as_bytes().chunks(7) {
            pieces.extend(s.push(chunk)?);
        }
        Ok((pieces, s.finish()?))
    }

    #[test]
    fn an_openai_stream_gives_its_text_and_whole_tool_calls() {
        let sse = concat!(
            "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"Look\"}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"content\":\"ing.\"}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"get_node\",\"arguments\":\"{\\\"crn\\\":\"}}]}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"\\\"crn:x\\\"}\"}}]}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n",
            "data: [DONE]\n\n",
        );
        let (pieces, reply) = read(Wire::OpenAi, sse).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(pieces, ["Look", "ing."]);
        assert_eq!(reply.text, "Looking.");
        assert_eq!(reply.calls.len(), 1);
        assert_eq!(
            (reply.calls[0].id.as_str(), reply.calls[0].name.as_str()),
            ("call_1", "get_node")
        );
        assert_eq!(reply.calls[0].args, Ok(json!({"crn": "crn:x"})));
    }

    #[test]
    fn an_anthropic_stream_gives_its_text_and_whole_tool_calls() {
        let sse = concat!(
            "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\"}}\n\n",
            "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
            "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"One moment\"}}\n\n",
            "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"graph_stats\",\"input\":{}}}\n\n",
            "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"\"}}\n\n",
            "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"}}\n\n",
            "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
        );
        let (pieces, reply) = read(Wire::Anthropic, sse).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(pieces, ["One moment"]);
        assert_eq!(reply.calls[0].name, "graph_stats");
        assert_eq!(reply.calls[0].args, Ok(json!({})));
    }

    #[test]
    fn a_broken_stream_is_an_error_in_words() {
        let e = read(Wire::OpenAi, "data: {not json}\n\n")
            .err()
            .map(|e| e.message)
            .unwrap_or_default();
        assert!(e.contains("not the Chat Completions stream format"), "{e}");
        let e = read(
            Wire::OpenAi,
            "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n",
        )
        .err()
        .map(|e| e.message)
        .unwrap_or_default();
        assert!(e.contains("ended before it said it was complete"), "{e}");
        let e = read(Wire::Anthropic, "").err().map(|e| e.message).unwrap_or_default();
        assert!(e.contains("held no Messages events"), "{e}");
        let e = read(
            Wire::Anthropic,
            "data: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n",
        )
        .err()
        .map(|e| e.message)
        .unwrap_or_default();
        assert!(e.contains("Overloaded"), "{e}");
    }

    #[test]
    fn retry_after_takes_seconds_or_a_date_and_is_capped() {
        let now = std::time::SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        assert_eq!(retry_after(Some("2"), now), Some(Duration::from_secs(2)));
        assert_eq!(retry_after(Some("3600"), now), Some(MAX_RETRY_AFTER));
        let later = httpdate::fmt_http_date(now + Duration::from_secs(5));
        assert_eq!(retry_after(Some(&later), now), Some(Duration::from_secs(5)));
        assert_eq!(retry_after(Some("soon"), now), None);
        assert_eq!(retry_after(None, now), None);
    }

    #[test]
    fn both_bodies_carry_the_conversation_and_the_tools() {
        let tools = super::super::tools::catalogue();
        let messages = vec![
            Message::User("what is idle?".into()),
            Message::Assistant {
                text: String::new(),
                calls: vec![ToolCall {
                    id: "c1".into(),
                    name: "graph_stats".into(),
                    args: Ok(json!({})),
                }],
            },
            Message::ToolResult {
                id: "c1".into(),
                name: "graph_stats".into(),
                content: "{}".into(),
            },
        ];
        let endpoint = |wire| Endpoint {
            wire,
            base_url: "http://x".into(),
            api_key: None,
            model: "m".into(),
            timeout: Duration::from_secs(1),
        };
        let o = request_body(&endpoint(Wire::OpenAi), "sys", &messages, &tools);
        assert_eq!(o["messages"][0]["role"], "system");
        assert_eq!(o["messages"][2]["tool_calls"][0]["function"]["name"], "graph_stats");
        assert_eq!(o["messages"][3]["tool_call_id"], "c1");
        assert_eq!(o["tools"].as_array().map(Vec::len), Some(tools.len()));
        assert_eq!(o["stream"], true);
        let a = request_body(&endpoint(Wire::Anthropic), "sys", &messages, &tools);
        assert_eq!(a["system"], "sys");
        assert_eq!(a["messages"][1]["content"][0]["type"], "tool_use");
        assert_eq!(a["messages"][2]["content"][0]["tool_use_id"], "c1");
        assert_eq!(a["tools"][0]["input_schema"]["type"], "object");
    }
}
