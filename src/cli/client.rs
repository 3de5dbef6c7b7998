//! A small REST client for the CLI verbs.

use std::process::ExitCode;

use anyhow::Context;
use reqwest::{Method, StatusCode};
use serde_json::Value;

use super::remote::Remote;
use crate::paths;

/// Exit code when the daemon cannot be reached.
pub const EXIT_UNREACHABLE: u8 = 2;
/// Exit code when the daemon answered with an error.
pub const EXIT_API_ERROR: u8 = 3;

pub struct Client {
    http: reqwest::Client,
    base: String,
    token: Option<String>,
}

/// Why a request failed, already phrased for a person.
pub enum Failure {
    Unreachable(String),
    Api { status: StatusCode, message: String },
}

impl Failure {
    pub fn report(&self) -> ExitCode {
        match self {
            Failure::Unreachable(m) => {
                eprintln!("error: {m}");
                ExitCode::from(EXIT_UNREACHABLE)
            }
            Failure::Api { status, message } => {
                eprintln!("error: {message} (HTTP {})", status.as_u16());
                ExitCode::from(EXIT_API_ERROR)
            }
        }
    }
}

impl Client {
    pub fn new(remote: &Remote) -> anyhow::Result<Client> {
        let token = match &remote.token {
            Some(t) => Some(t.clone()),
            None => std::fs::read_to_string(paths::data_dir().join(paths::TOKEN_FILE))
                .ok()
                .map(|t| t.trim().to_owned()),
        };
        let http = reqwest::Client::builder()
            .user_agent(concat!("svc-cli/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(std::time::Duration::from_secs(5))
            .build()
            .context("cannot build the HTTP client")?;
        Ok(Client {
            http,
            base: remote.url.trim_end_matches('/').to_owned(),
            token,
        })
    }

    /// The token sent with each request, if any.
    pub fn token(&self) -> Option<&str> {
        self.token.as_deref()
    }

    pub async fn get(&self, path: &str, query: &[(&str, String)]) -> Result<Value, Failure> {
        self.send(Method::GET, path, query, None).await
    }

    pub async fn post(&self, path: &str, body: Value) -> Result<Value, Failure> {
        self.send(Method::POST, path, &[], Some(body)).await
    }

    /// A POST without a body, its parameters in the query.
    pub async fn post_query(&self, path: &str, query: &[(&str, String)]) -> Result<Value, Failure> {
        self.send(Method::POST, path, query, None).await
    }

    pub async fn delete(&self, path: &str) -> Result<Value, Failure> {
        self.send(Method::DELETE, path, &[], None).await
    }

    /// POSTs `body` and hands each line of the streamed answer to `line`
    /// as it arrives (JSON lines); an error answer is the failure.
    pub async fn post_lines(&self, path: &str, body: Value, mut line: impl FnMut(&str)) -> Result<(), Failure> {
        let url = format!("{}{path}", self.base);
        let mut req = self.http.post(&url).json(&body);
        if let Some(t) = &self.token {
            req = req.bearer_auth(t);
        }
        let mut resp = req.send().await.map_err(|e| self.unreachable(&e))?;
        let status = resp.status();
        if !status.is_success() {
            let text = resp.text().await.unwrap_or_default();
            return Err(self.api_failure(status, &text));
        }
        let mut pending: Vec<u8> = Vec::new();
        loop {
            let chunk = resp
                .chunk()
                .await
                .map_err(|e| Failure::Unreachable(format!("the answer stopped: {e}")))?;
            let Some(chunk) = chunk else { break };
            pending.extend_from_slice(&chunk);
            while let Some(end) = pending.iter().position(|b| *b == b'\n') {
                let rest = pending.split_off(end + 1);
                line(String::from_utf8_lossy(&pending[..end]).trim());
                pending = rest;
            }
        }
        if !pending.is_empty() {
            line(String::from_utf8_lossy(&pending).trim());
        }
        Ok(())
    }

    fn unreachable(&self, e: &reqwest::Error) -> Failure {
        let why = if e.is_connect() {
            "connection refused or host unreachable".to_owned()
        } else {
            e.to_string()
        };
        Failure::Unreachable(format!(
            "svc daemon is not running at {} ({why}); start it with `svc daemon --mock`",
            self.base
        ))
    }

    fn api_failure(&self, status: StatusCode, text: &str) -> Failure {
        let value: Value = serde_json::from_str(text).unwrap_or(Value::String(text.to_owned()));
        let mut message = value
            .pointer("/error/message")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .unwrap_or_else(|| value.to_string());
        if status == StatusCode::UNAUTHORIZED && self.token.is_none() {
            message.push_str("; no token found: set SVC_TOKEN or SVC_DATA_DIR to the daemon's data directory");
        }
        Failure::Api { status, message }
    }

    async fn send(
        &self,
        method: Method,
        path: &str,
        query: &[(&str, String)],
        body: Option<Value>,
    ) -> Result<Value, Failure> {
        let url = format!("{}{path}", self.base);
        let mut req = self.http.request(method, &url).query(query);
        if let Some(t) = &self.token {
            req = req.bearer_auth(t);
        }
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req.send().await.map_err(|e| self.unreachable(&e))?;
        let status = resp.status();
        let text = resp
            .text()
            .await
            .map_err(|e| Failure::Unreachable(format!("reading the answer failed: {e}")))?;
        if status.is_success() {
            return Ok(serde_json::from_str(&text).unwrap_or(Value::String(text)));
        }
        Err(self.api_failure(status, &text))
    }
}

/// Percent-encodes a CRN for a path segment (ids may contain `/`).
pub fn encode_segment(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~' | b':') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}
