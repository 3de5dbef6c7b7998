//! A small REST client for the CLI verbs, over HTTP or HTTPS (rustls; the
//! system's roots plus `--ca-file`).
//!
//! Exit codes: 0 done, 1 failed, 2 a usage error (clap's), 3 the daemon
//! could not be reached, 4 the API refused (its error code and message are
//! printed), 5 the ledger's chain is broken (`svc ledger verify`).

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use http_client::{Method, StatusCode};
use serde_json::Value;

use super::remote::Remote;
use crate::paths;

/// Exit code when the daemon cannot be reached.
pub const EXIT_UNREACHABLE: u8 = 3;
/// Exit code when the daemon answered with an error.
pub const EXIT_API_ERROR: u8 = 4;

/// How long the CLI waits for a byte of an answer before giving up.
pub const READ_TIMEOUT: Duration = Duration::from_secs(60);

pub struct Client {
    http: http_client::Client,
    base: String,
    token: Option<String>,
}

/// Why a request failed, already phrased for a person.
pub enum Failure {
    Unreachable(String),
    Api {
        status: StatusCode,
        code: String,
        message: String,
    },
}

impl Failure {
    pub fn report(&self) -> ExitCode {
        match self {
            Failure::Unreachable(m) => {
                eprintln!("error: {m}");
                ExitCode::from(EXIT_UNREACHABLE)
            }
            Failure::Api { status, code, message } => {
                let code = if code.is_empty() {
                    String::new()
                } else {
                    format!("{code}: ")
                };
                eprintln!("error: {code}{message} (HTTP {})", status.as_u16());
                ExitCode::from(EXIT_API_ERROR)
            }
        }
    }

    /// The HTTP status of a refusal.
    pub fn status(&self) -> Option<StatusCode> {
        match self {
            Failure::Api { status, .. } => Some(*status),
            Failure::Unreachable(_) => None,
        }
    }
}

/// The CA certificates of `--ca-file` (PEM), if given.
pub fn ca_pem(remote: &Remote) -> anyhow::Result<Option<Vec<u8>>> {
    remote
        .ca_file
        .as_ref()
        .map(|path| std::fs::read(path).with_context(|| format!("cannot read the CA file {}", path.display())))
        .transpose()
}

/// The token given, else the admin token in `$SVC_DATA_DIR/token`.
pub fn token_of(remote: &Remote) -> Option<String> {
    match &remote.token {
        Some(t) => Some(t.clone()),
        None => std::fs::read_to_string(paths::data_dir().join(paths::TOKEN_FILE))
            .ok()
            .map(|t| t.trim().to_owned()),
    }
}

impl Client {
    /// A client that gives up on an answer silent for [`READ_TIMEOUT`].
    pub fn new(remote: &Remote) -> anyhow::Result<Client> {
        Client::with_read_timeout(remote, Some(READ_TIMEOUT))
    }

    /// A client that waits as long as the daemon takes (a blocking scan).
    pub fn patient(remote: &Remote) -> anyhow::Result<Client> {
        Client::with_read_timeout(remote, None)
    }

    fn with_read_timeout(remote: &Remote, read_timeout: Option<Duration>) -> anyhow::Result<Client> {
        let token = token_of(remote);
        let mut builder = http_client::Client::builder()
            .user_agent(concat!("svc-cli/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(Duration::from_secs(5));
        if let Some(t) = read_timeout {
            builder = builder.read_timeout(t);
        }
        if let Some(pem) = ca_pem(remote)? {
            let certs =
                http_client::Certificate::from_pem_bundle(&pem).context("the CA file holds no PEM certificate")?;
            builder = builder.tls_certs_merge(certs);
        }
        let http = builder.build().context("cannot build the HTTP client")?;
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

    pub async fn put(&self, path: &str, body: Value) -> Result<Value, Failure> {
        self.send(Method::PUT, path, &[], Some(body)).await
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

    /// The text answer of a GET (the probes and `/metrics` answer text).
    pub async fn get_text(&self, path: &str) -> Result<String, Failure> {
        let url = format!("{}{path}", self.base);
        let mut req = self.http.get(&url);
        if let Some(t) = &self.token {
            req = req.bearer_auth(t);
        }
        let resp = req.send().await.map_err(|e| self.unreachable(&e))?;
        let status = resp.status();
        let text = resp
            .text()
            .await
            .map_err(|e| Failure::Unreachable(format!("reading the answer failed: {e}")))?;
        if status.is_success() {
            return Ok(text);
        }
        Err(self.api_failure(status, &text))
    }

    /// The base URL requests go to.
    pub fn base(&self) -> &str {
        &self.base
    }

    fn unreachable(&self, e: &http_client::Error) -> Failure {
        use std::error::Error;
        let mut why = e.to_string();
        let mut source = e.source();
        while let Some(s) = source {
            why.push_str(&format!(": {s}"));
            source = s.source();
        }
        if e.is_timeout() {
            return Failure::Unreachable(format!("svc daemon at {} did not answer in time ({why})", self.base));
        }
        if why.contains("certificate") {
            return Failure::Unreachable(format!(
                "svc daemon at {} cannot be trusted ({why}); name its CA with --ca-file or SVC_CA_FILE",
                self.base
            ));
        }
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
            .map(super::output::printable)
            .unwrap_or_else(|| super::output::printable(&value.to_string()));
        let code = value
            .pointer("/error/code")
            .and_then(Value::as_str)
            .map(super::output::printable)
            .unwrap_or_default();
        if status == StatusCode::UNAUTHORIZED && self.token.is_none() {
            message.push_str("; no token found: set SVC_TOKEN or SVC_DATA_DIR to the daemon's data directory");
        }
        Failure::Api { status, code, message }
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

/// The TLS configuration of a `wss://` stream: the system's roots and the
/// `--ca-file`'s, on aws-lc-rs.
fn ws_tls(remote: &Remote) -> anyhow::Result<std::sync::Arc<rustls::ClientConfig>> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    roots.add_parsable_certificates(rustls_native_certs::load_native_certs().certs);
    if let Some(pem) = ca_pem(remote)? {
        for cert in CertificateDer::pem_slice_iter(&pem) {
            roots
                .add(cert.context("the CA file holds a bad PEM certificate")?)
                .context("the CA file holds a certificate that is no CA")?;
        }
    }
    let provider = std::sync::Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .context("no TLS version in common with the crypto provider")?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(std::sync::Arc::new(config))
}

/// A WebSocket stream of the daemon, `ws://` or `wss://`.
pub type WsStream = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// Opens a WebSocket to the daemon with the token.
pub async fn ws_connect(remote: &Remote, url: &str, token: Option<&str>) -> anyhow::Result<WsStream> {
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    let mut req = url.into_client_request()?;
    if let Some(t) = token {
        req.headers_mut()
            .insert("authorization", format!("Bearer {t}").parse()?);
    }
    let connector = tokio_tungstenite::Connector::Rustls(ws_tls(remote)?);
    let (ws, _) = tokio_tungstenite::connect_async_tls_with_config(req, None, false, Some(connector)).await?;
    Ok(ws)
}

/// One page of a listing at `path` (its `limit` and `cursor`), or with
/// `all` every page, following `next_cursor` to the end: the last page's
/// answer with the items of `key` of every page.
pub async fn pages(
    client: &Client,
    path: &str,
    query: &[(&str, String)],
    key: &str,
    page: &super::page::Page,
) -> Result<Value, Failure> {
    let mut cursor = page.cursor.clone();
    let mut items: Vec<Value> = Vec::new();
    loop {
        let mut q = query.to_vec();
        q.push(("limit", page.limit.to_string()));
        if let Some(c) = &cursor {
            q.push(("cursor", c.clone()));
        }
        let mut v = client.get(path, &q).await?;
        if !page.all {
            return Ok(v);
        }
        if let Some(Value::Array(list)) = v.get_mut(key) {
            items.append(list);
        }
        cursor = next_cursor(&v).map(str::to_owned);
        if cursor.is_none() {
            v[key] = Value::Array(items);
            return Ok(v);
        }
    }
}

/// Where the page after `v` starts; none on the last page (`null` or empty).
pub fn next_cursor(v: &Value) -> Option<&str> {
    v.get("next_cursor").and_then(Value::as_str).filter(|c| !c.is_empty())
}
