//! Shared harness of the end-to-end tests: starts the real `svc` binary on an
//! ephemeral port with its own data directory, and talks to it over HTTP and
//! WebSocket exactly as a user would.
//!
//! Every wait is a wait for an observed condition (a log line, a probe
//! answer, an event on the stream) with a deadline; nothing sleeps to let
//! time pass.

#![allow(dead_code)]

pub mod models;
pub mod moto;
pub mod terraform;
pub mod tmux;
pub mod workers;

use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::{SinkExt, StreamExt};
use reqwest::StatusCode;
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;

/// The binary under test.
pub const SVC: &str = env!("CARGO_BIN_EXE_svc");

/// How long the daemon may take to print its address and to become ready.
pub const START_DEADLINE: Duration = Duration::from_secs(60);
/// How long a scan may take in a debug build on a busy two-core machine.
pub const SCAN_DEADLINE: Duration = Duration::from_secs(300);
/// Pause between two polls of a condition.
pub const POLL_PAUSE: Duration = Duration::from_millis(50);
/// Largest amount of daemon output kept for failure messages.
const LOG_KEEP: usize = 64 * 1024;

/// Output of a daemon process, kept for failure messages.
#[derive(Clone, Default)]
pub struct Log(Arc<Mutex<String>>);

impl Log {
    pub fn push(&self, stream: &str, line: &str) {
        let mut s = self.0.lock().unwrap_or_else(|p| p.into_inner());
        s.push_str(stream);
        s.push_str(line);
        s.push('\n');
        if s.len() > LOG_KEEP * 2 {
            let cut = s.len() - LOG_KEEP;
            let cut = (cut..s.len()).find(|i| s.is_char_boundary(*i)).unwrap_or(s.len());
            s.drain(..cut);
        }
    }

    pub fn text(&self) -> String {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Whether a line containing `needle` arrives within `within` (the
    /// daemon logs from threads of its own, after the request that caused
    /// it has been answered).
    pub async fn wait_for(&self, needle: &str, within: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            if self.text().contains(needle) {
                return true;
            }
            if tokio::time::Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// A configuration that keeps the scheduler from scanning during a test:
/// one scan at start, the next an hour later.
pub const QUIET_CONFIG: &str = "[daemon]\nscan_interval = \"1h\"\n";

/// Writes [`QUIET_CONFIG`] unless the test wrote a configuration already.
pub fn write_quiet_config(data_dir: &Path) {
    std::fs::create_dir_all(data_dir).expect("create data dir");
    let path = data_dir.join("config.toml");
    if !path.exists() {
        std::fs::write(&path, QUIET_CONFIG).expect("write config.toml");
    }
}

/// What the daemon scans.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Sources {
    /// The mock estate (`--mock`).
    Mock,
    /// Nothing: cloud credentials are present but no provider plugin is
    /// active, so scans find nothing and change nothing. Used to look at a
    /// restored graph while no scan can touch it.
    None,
    /// No `--mock`, no cloud credentials anywhere and no plugins: the daemon
    /// falls back to the mock estate by itself.
    Fallback,
}

/// The `svc daemon` command for `data_dir`, with output piped.
pub fn daemon_command(data_dir: &Path, scale: usize) -> Command {
    daemon_command_with(data_dir, scale, Sources::Mock)
}

pub fn daemon_command_with(data_dir: &Path, scale: usize, sources: Sources) -> Command {
    let mut cmd = Command::new(SVC);
    cmd.arg("daemon");
    match sources {
        Sources::Mock => {
            cmd.args(["--mock", "--mock-scale", &scale.to_string()])
                .env_remove("AWS_ACCESS_KEY_ID");
        }
        Sources::None => {
            cmd.env("AWS_ACCESS_KEY_ID", "AKIAE2ETESTONLY");
        }
        Sources::Fallback => {
            cmd.args(["--mock-scale", &scale.to_string()]).env("HOME", data_dir);
            for k in [
                "AWS_ACCESS_KEY_ID",
                "AWS_PROFILE",
                "AWS_WEB_IDENTITY_TOKEN_FILE",
                "GOOGLE_APPLICATION_CREDENTIALS",
                "AZURE_CLIENT_ID",
                "AZURE_CLIENT_SECRET",
                "KUBECONFIG",
                "XDG_DATA_HOME",
            ] {
                cmd.env_remove(k);
            }
        }
    }
    cmd.args(["--listen", "127.0.0.1:0"])
        .env("SVC_DATA_DIR", data_dir)
        .env("NO_COLOR", "1")
        .env_remove("SVC_URL")
        .env_remove("SVC_TOKEN")
        .env_remove("SVC_LOG")
        .env_remove("SVC_LOG_FORMAT")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// Extracts `ADDR` from a line containing `listening on http://ADDR`; the
/// address ends at whitespace, a quote or an escape character.
pub fn parse_listen_line(line: &str) -> Option<SocketAddr> {
    let rest = &line[line.find("listening on http://")? + "listening on http://".len()..];
    let end = rest
        .find(|c: char| c.is_whitespace() || c == '"' || c == '\'' || c == '\\' || c.is_control())
        .unwrap_or(rest.len());
    rest[..end].parse().ok()
}

/// A running `svc daemon`. Dropping it kills the process. A watchdog
/// process kills the daemon too if the test binary dies without dropping it.
pub struct Daemon {
    pub addr: SocketAddr,
    pub token: String,
    pub data_dir: PathBuf,
    pub scale: usize,
    /// What the next start scans.
    pub sources: Sources,
    /// Whether the next start logs JSON (`--log-format json`).
    pub json_logs: bool,
    /// Extra environment of the next start (plugins inherit it).
    pub env: Vec<(String, String)>,
    /// Extra arguments of `svc daemon` at the next start.
    pub args: Vec<String>,
    pub log: Log,
    child: Option<Child>,
    watchdog: Option<(Child, ChildStdin)>,
}

impl Daemon {
    /// Starts a daemon on `data_dir` (mock estate of about `scale`
    /// resources) and waits until `/readyz` answers 200.
    pub async fn start(data_dir: &Path, scale: usize) -> Daemon {
        let mut d = Daemon::configure(data_dir, scale);
        d.launch().await;
        d
    }

    /// A daemon on `data_dir` that is not started yet: set its fields, then
    /// [`Daemon::launch`] it.
    pub fn configure(data_dir: &Path, scale: usize) -> Daemon {
        write_quiet_config(data_dir);
        Daemon {
            addr: "127.0.0.1:0".parse().expect("addr"),
            token: String::new(),
            data_dir: data_dir.to_owned(),
            scale,
            sources: Sources::Mock,
            json_logs: false,
            env: Vec::new(),
            args: Vec::new(),
            log: Log::default(),
            child: None,
            watchdog: None,
        }
    }

    /// Starts a daemon and waits for the scan it runs at start to complete.
    pub async fn start_scanned(data_dir: &Path, scale: usize) -> Daemon {
        let d = Daemon::start(data_dir, scale).await;
        d.wait_scan_after(0).await;
        d
    }

    /// Starts the daemon and waits until `/readyz` answers 200.
    pub async fn launch(&mut self) {
        self.launch_listening().await;
        self.wait_ready().await;
    }

    /// Starts the daemon and waits until it listens (and wrote its token),
    /// ready or not.
    pub async fn launch_listening(&mut self) {
        assert!(self.child.is_none(), "daemon already running");
        let mut cmd = daemon_command_with(&self.data_dir, self.scale, self.sources);
        if self.json_logs {
            cmd.args(["--log-format", "json"]);
        }
        cmd.envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        cmd.args(&self.args);
        let mut child = cmd.spawn().expect("spawn svc daemon");
        let pid = child.id();
        self.watchdog = Some(spawn_watchdog(pid));
        let (tx, rx) = mpsc::channel::<SocketAddr>();
        let stdout = child.stdout.take().expect("stdout");
        let stderr = child.stderr.take().expect("stderr");
        let log = self.log.clone();
        std::thread::spawn(move || {
            let mut tx = Some(tx);
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                log.push("out| ", &line);
                if let Some(addr) = parse_listen_line(&line)
                    && let Some(t) = tx.take()
                {
                    let _ = t.send(addr);
                }
            }
        });
        let log = self.log.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                log.push("err| ", &line);
            }
        });
        self.child = Some(child);
        let addr = tokio::task::spawn_blocking(move || rx.recv_timeout(START_DEADLINE))
            .await
            .expect("join");
        let addr = match addr {
            Ok(a) => a,
            Err(_) => {
                let status = self.child.as_mut().and_then(|c| c.try_wait().ok().flatten());
                panic!(
                    "daemon printed no `listening on http://ADDR` line within {START_DEADLINE:?} (exit: {status:?})\n{}",
                    self.log.text()
                );
            }
        };
        self.addr = addr;
        let token_path = self.data_dir.join("token");
        self.token = std::fs::read_to_string(&token_path)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", token_path.display()))
            .trim()
            .to_owned();
        assert_eq!(self.token.len(), 64, "token is 32 bytes of hex: {:?}", self.token);
    }

    /// Polls `/readyz` until it answers 200.
    pub async fn wait_ready(&mut self) {
        let http = http_client();
        let url = format!("{}/readyz", self.base());
        let deadline = Instant::now() + START_DEADLINE;
        loop {
            if let Some(status) = self.child.as_mut().and_then(|c| c.try_wait().ok().flatten()) {
                panic!("daemon exited before it was ready: {status}\n{}", self.log.text());
            }
            if let Ok(r) = http.get(&url).send().await
                && r.status() == StatusCode::OK
            {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "daemon not ready within {START_DEADLINE:?}\n{}",
                self.log.text()
            );
            tokio::time::sleep(POLL_PAUSE).await;
        }
    }

    /// Polls `/readyz` until it answers 503 with `reason` in its message
    /// (the daemon runs but is not ready, and says why); returns the body.
    pub async fn wait_unready(&self, reason: &str) -> Value {
        let deadline = Instant::now() + START_DEADLINE;
        loop {
            let r = self.anonymous().get("/readyz").await;
            if r.status == StatusCode::SERVICE_UNAVAILABLE && r.text.contains(reason) {
                return r.json;
            }
            assert!(
                Instant::now() < deadline,
                "/readyz never said {reason:?}: {} {}\n{}",
                r.status,
                r.text,
                self.log.text()
            );
            tokio::time::sleep(POLL_PAUSE).await;
        }
    }

    pub fn base(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn ws_url(&self) -> String {
        format!("ws://{}/events", self.addr)
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("daemon is running").id()
    }

    pub fn is_running(&self) -> bool {
        self.child.is_some()
    }

    /// A client that sends the operator token.
    pub fn api(&self) -> Api {
        Api {
            http: http_client(),
            base: self.base(),
            token: Some(self.token.clone()),
        }
    }

    /// A client that sends no token at all.
    pub fn anonymous(&self) -> Api {
        Api {
            http: http_client(),
            base: self.base(),
            token: None,
        }
    }

    /// Connects to `/events` with the operator token.
    pub async fn ws(&self) -> Ws {
        Ws::connect(&self.ws_url(), Some(&self.token))
            .await
            .unwrap_or_else(|e| panic!("websocket connect: {e}"))
    }

    /// Waits for a SCAN_COMPLETED event with a seq above `after_seq` (stored
    /// or live) and returns its envelope.
    pub async fn wait_scan_after(&self, after_seq: u64) -> Value {
        let mut ws = self.ws().await;
        ws.send_since(after_seq).await;
        let ev = ws
            .next_matching(SCAN_DEADLINE, |e| e["event_type"] == "SCAN_COMPLETED")
            .await;
        ws.close().await;
        ev
    }

    /// Stops the daemon with SIGTERM and waits for it to exit.
    pub async fn stop(&mut self) -> ExitStatus {
        self.signal_and_wait("-TERM").await
    }

    /// Kills the daemon with SIGKILL and waits for it to be gone.
    pub async fn kill_9(&mut self) -> ExitStatus {
        self.signal_and_wait("-KILL").await
    }

    /// Kills the daemon (SIGKILL) if it runs; used on drop.
    pub fn kill(&mut self) {
        self.stop_watchdog();
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    async fn signal_and_wait(&mut self, signal: &str) -> ExitStatus {
        let pid = self.pid();
        self.stop_watchdog();
        let status = Command::new("kill")
            .args([signal, &pid.to_string()])
            .status()
            .expect("run kill");
        assert!(status.success(), "kill {signal} {pid} failed: {status}");
        let mut child = self.child.take().expect("daemon is running");
        let deadline = Instant::now() + START_DEADLINE;
        loop {
            if let Some(status) = child.try_wait().expect("try_wait") {
                return status;
            }
            if Instant::now() >= deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "daemon did not exit within {START_DEADLINE:?} of kill {signal}\n{}",
                    self.log.text()
                );
            }
            tokio::time::sleep(POLL_PAUSE).await;
        }
    }

    /// Starts the daemon again on the same data directory.
    pub async fn restart(&mut self) {
        if self.child.is_some() {
            let status = self.stop().await;
            assert!(
                status.success(),
                "daemon exit on SIGTERM: {status}\n{}",
                self.log.text()
            );
        }
        self.log.push("--- ", "restart");
        self.launch().await;
    }

    fn stop_watchdog(&mut self) {
        if let Some((mut w, stdin)) = self.watchdog.take() {
            let _ = w.kill();
            let _ = w.wait();
            drop(stdin);
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A shell that kills `pid` once its stdin closes, which happens when the
/// test process exits for any reason.
fn spawn_watchdog(pid: u32) -> (Child, ChildStdin) {
    let mut w = Command::new("sh")
        .args(["-c", &format!("read _ ; kill -9 {pid} 2>/dev/null")])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn watchdog");
    let stdin = w.stdin.take().expect("watchdog stdin");
    (w, stdin)
}

/// Runs `svc daemon` on `data_dir` until it exits by itself and returns its
/// status and combined output. Fails when it is still running after `deadline`.
pub fn run_daemon_to_exit(data_dir: &Path, scale: usize, deadline: Duration) -> (ExitStatus, String) {
    let mut child = daemon_command(data_dir, scale).spawn().expect("spawn svc daemon");
    let (mut watch, watch_in) = spawn_watchdog(child.id());
    let mut out = child.stdout.take().expect("stdout");
    let mut err = child.stderr.take().expect("stderr");
    let out_t = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let err_t = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let end = Instant::now() + deadline;
    let status = loop {
        if let Some(s) = child.try_wait().expect("try_wait") {
            break s;
        }
        if Instant::now() >= end {
            let _ = child.kill();
            let _ = child.wait();
            panic!("daemon on {} is still running after {deadline:?}", data_dir.display());
        }
        std::thread::sleep(POLL_PAUSE);
    };
    let _ = watch.kill();
    let _ = watch.wait();
    drop(watch_in);
    let text = format!(
        "{}{}",
        out_t.join().unwrap_or_default(),
        err_t.join().unwrap_or_default()
    );
    (status, text)
}

pub fn http_client() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .timeout(SCAN_DEADLINE)
        .connect_timeout(Duration::from_secs(10))
        .build()
        .expect("http client")
}

/// Installs `svc-plugin-mock` (built beside `svc` by `cargo test
/// --workspace`) as plugin `mock` of the data directory `home`, inactive,
/// as `svc plugins install-local` does; returns the plugin directory.
pub fn install_mock_plugin(home: &Path) -> PathBuf {
    let plugin = Path::new(SVC).with_file_name("svc-plugin-mock");
    assert!(
        plugin.exists(),
        "{} is missing: run `cargo build -p svc-plugin-mock` first",
        plugin.display()
    );
    let out = Command::new(SVC)
        .args(["plugins", "install-local", "--name", "mock"])
        .arg(&plugin)
        .env("SVC_DATA_DIR", home)
        .output()
        .expect("run svc plugins install-local");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    home.join("plugins")
}

/// A REST client bound to one daemon.
#[derive(Clone)]
pub struct Api {
    pub http: reqwest::Client,
    pub base: String,
    pub token: Option<String>,
}

/// A response: status, body text and body JSON (`Null` when not JSON).
#[derive(Debug)]
pub struct Reply {
    pub status: StatusCode,
    pub text: String,
    pub json: Value,
}

impl Reply {
    /// Asserts a status and returns the JSON body.
    #[track_caller]
    pub fn expect(self, status: u16) -> Value {
        assert_eq!(self.status.as_u16(), status, "unexpected status; body: {}", self.text);
        self.json
    }

    /// Asserts an API error: the status and the body `{"error":{"code",..}}`.
    #[track_caller]
    pub fn expect_error(self, status: u16, code: &str) -> Value {
        assert_eq!(self.status.as_u16(), status, "unexpected status; body: {}", self.text);
        let err = &self.json["error"];
        assert_eq!(err["code"], code, "error code; body: {}", self.text);
        assert!(
            err["message"].as_str().is_some_and(|m| !m.is_empty()),
            "error message; body: {}",
            self.text
        );
        assert!(err["details"].is_object(), "error details object; body: {}", self.text);
        self.json
    }
}

impl Api {
    /// The same daemon with another token (or none).
    pub fn with_token(&self, token: Option<&str>) -> Api {
        Api {
            http: self.http.clone(),
            base: self.base.clone(),
            token: token.map(str::to_owned),
        }
    }

    fn auth(&self, req: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match &self.token {
            Some(t) => req.bearer_auth(t),
            None => req,
        }
    }

    async fn send(&self, req: reqwest::RequestBuilder) -> Reply {
        let resp = self
            .auth(req)
            .send()
            .await
            .unwrap_or_else(|e| panic!("request to {} failed: {e}", self.base));
        let status = resp.status();
        let text = resp
            .text()
            .await
            .unwrap_or_else(|e| panic!("reading the body failed: {e}"));
        let json = serde_json::from_str(&text).unwrap_or(Value::Null);
        Reply { status, text, json }
    }

    /// GET `path` (which may carry a query string, already encoded).
    pub async fn get(&self, path: &str) -> Reply {
        self.send(self.http.get(format!("{}{path}", self.base))).await
    }

    pub async fn delete(&self, path: &str) -> Reply {
        self.send(self.http.delete(format!("{}{path}", self.base))).await
    }

    /// GET with query pairs encoded by the client.
    pub async fn get_query(&self, path: &str, query: &[(&str, &str)]) -> Reply {
        self.send(self.http.get(format!("{}{path}", self.base)).query(query))
            .await
    }

    /// GET that must answer 200 with JSON.
    pub async fn get_ok(&self, path: &str) -> Value {
        let r = self.get(path).await;
        assert_eq!(r.status, StatusCode::OK, "GET {path}: {}", r.text);
        r.json
    }

    pub async fn get_query_ok(&self, path: &str, query: &[(&str, &str)]) -> Value {
        let r = self.get_query(path, query).await;
        assert_eq!(r.status, StatusCode::OK, "GET {path} {query:?}: {}", r.text);
        r.json
    }

    pub async fn post_json(&self, path: &str, body: &Value) -> Reply {
        self.send(self.http.post(format!("{}{path}", self.base)).json(body))
            .await
    }

    /// Sends `POST path` with `body` from a task of its own, for a request
    /// that may never be answered (the daemon dies under it); abort the
    /// task when done with it.
    pub fn post_unanswered(&self, path: &str, body: Value) -> tokio::task::JoinHandle<()> {
        let request = self
            .http
            .post(format!("{}{path}", self.base))
            .bearer_auth(self.token.clone().unwrap_or_default())
            .json(&body);
        tokio::spawn(async move {
            let _ = request.send().await;
        })
    }

    pub async fn put_json(&self, path: &str, body: &Value) -> Reply {
        self.send(self.http.put(format!("{}{path}", self.base)).json(body))
            .await
    }

    /// POST a raw body with `content-type: application/json`.
    pub async fn post_raw(&self, path: &str, body: impl Into<reqwest::Body>) -> Reply {
        let req = self
            .http
            .post(format!("{}{path}", self.base))
            .header("content-type", "application/json")
            .body(body);
        self.send(req).await
    }

    /// POSTs a `text/plain` body.
    #[allow(dead_code)]
    pub async fn post_text(&self, path: &str, body: String) -> Reply {
        let req = self
            .http
            .post(format!("{}{path}", self.base))
            .header("content-type", "text/plain")
            .body(body);
        self.send(req).await
    }

    /// POSTs a scan trigger (`engine/scan` or `sync`). The engine publishes
    /// SCAN_COMPLETED just before it frees the scan slot, so a trigger sent
    /// right after that event may still be refused with 409; such a trigger
    /// is repeated until the slot is free (bounded by [`SCAN_DEADLINE`]).
    pub async fn trigger(&self, path: &str, body: &Value) -> Reply {
        let deadline = Instant::now() + SCAN_DEADLINE;
        loop {
            let r = self.post_json(path, body).await;
            if r.status != StatusCode::CONFLICT || Instant::now() >= deadline {
                return r;
            }
            tokio::time::sleep(POLL_PAUSE).await;
        }
    }

    /// Runs a scan and waits for its report.
    pub async fn scan_wait(&self) -> Value {
        let r = self.trigger("/api/v1/engine/scan", &json!({ "wait": true })).await;
        assert_eq!(r.status, StatusCode::OK, "POST engine/scan wait: {}", r.text);
        r.json
    }

    /// Starts a scan without waiting for it; returns the 202 answer.
    pub async fn scan_start(&self) -> Value {
        let r = self.trigger("/api/v1/engine/scan", &json!({ "wait": false })).await;
        assert_eq!(r.status, StatusCode::ACCEPTED, "POST engine/scan: {}", r.text);
        r.json
    }

    /// Every event matching `query` (newest first), following `next_cursor`.
    pub async fn history_all(&self, query: &[(&str, &str)]) -> Vec<Value> {
        let mut out = Vec::new();
        let mut cursor = String::new();
        loop {
            let mut q: Vec<(&str, &str)> = query.to_vec();
            q.push(("limit", "500"));
            if !cursor.is_empty() {
                q.push(("cursor", &cursor));
            }
            let page = self.get_query_ok("/api/v1/history", &q).await;
            let events = page["events"].as_array().expect("events array");
            out.extend(events.iter().cloned());
            let next = page["next_cursor"].as_str().expect("next_cursor string").to_owned();
            if next.is_empty() {
                assert_eq!(
                    out.len() as u64,
                    page["total"].as_u64().expect("total"),
                    "paged events equal total"
                );
                return out;
            }
            cursor = next;
        }
    }

    /// Every visible node, following `next_cursor` of `graph/nodes`.
    pub async fn all_nodes(&self, provider: Option<&str>) -> Vec<Value> {
        let mut out = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let mut q: Vec<(&str, &str)> = vec![("limit", "1000")];
            if let Some(p) = provider {
                q.push(("provider", p));
            }
            if let Some(c) = &cursor {
                q.push(("cursor", c));
            }
            let page = self.get_query_ok("/api/v1/graph/nodes", &q).await;
            out.extend(page["nodes"].as_array().expect("nodes array").iter().cloned());
            match page["next_cursor"].as_str().filter(|c| !c.is_empty()) {
                Some(c) => cursor = Some(c.to_owned()),
                None => return out,
            }
        }
    }
}

/// Percent-encodes a path segment: everything but unreserved characters.
pub fn encode_segment(s: &str) -> String {
    let mut out = String::with_capacity(s.len() * 3);
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A WebSocket client of `/events`.
pub struct Ws {
    stream: tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>,
}

impl Ws {
    /// Connects with `Authorization: Bearer <token>` when a token is given.
    pub async fn connect(url: &str, token: Option<&str>) -> Result<Ws, tokio_tungstenite::tungstenite::Error> {
        let mut req = url.into_client_request()?;
        if let Some(t) = token {
            let v = HeaderValue::from_str(&format!("Bearer {t}")).expect("header value");
            req.headers_mut().insert("authorization", v);
        }
        let (stream, _resp) = tokio_tungstenite::connect_async(req).await?;
        Ok(Ws { stream })
    }

    pub async fn send_since(&mut self, seq: u64) {
        self.stream
            .send(Message::text(json!({ "since": seq }).to_string()))
            .await
            .expect("send since");
    }

    pub async fn send_text(&mut self, text: &str) {
        self.stream
            .send(Message::text(text.to_owned()))
            .await
            .expect("send text");
    }

    /// The next JSON text frame, or `None` when nothing arrives within `wait`.
    pub async fn next_within(&mut self, wait: Duration) -> Option<Value> {
        let end = tokio::time::Instant::now() + wait;
        loop {
            let msg = match tokio::time::timeout_at(end, self.stream.next()).await {
                Err(_) => return None,
                Ok(None) => panic!("event stream closed by the daemon"),
                Ok(Some(Err(e))) => panic!("event stream error: {e}"),
                Ok(Some(Ok(m))) => m,
            };
            match msg {
                Message::Text(t) => {
                    return Some(
                        serde_json::from_str(t.as_str()).unwrap_or_else(|e| panic!("frame is not JSON ({e}): {t}")),
                    );
                }
                Message::Close(f) => panic!("event stream closed by the daemon: {f:?}"),
                _ => continue,
            }
        }
    }

    /// The next frame; fails when none arrives within `wait`.
    pub async fn next(&mut self, wait: Duration) -> Value {
        match self.next_within(wait).await {
            Some(v) => v,
            None => panic!("no event within {wait:?}"),
        }
    }

    /// Reads frames until one matches `pred`; fails after `wait`.
    pub async fn next_matching(&mut self, wait: Duration, pred: impl Fn(&Value) -> bool) -> Value {
        let end = Instant::now() + wait;
        loop {
            let left = end.saturating_duration_since(Instant::now());
            let v = match self.next_within(left).await {
                Some(v) => v,
                None => panic!("no matching event within {wait:?}"),
            };
            if pred(&v) {
                return v;
            }
        }
    }

    /// Reads frames until the one with `seq` arrived; returns all of them.
    pub async fn collect_through(&mut self, seq: u64, wait: Duration) -> Vec<Value> {
        let end = Instant::now() + wait;
        let mut out = Vec::new();
        loop {
            let left = end.saturating_duration_since(Instant::now());
            let v = match self.next_within(left).await {
                Some(v) => v,
                None => panic!("event {seq} did not arrive within {wait:?}; got {} events", out.len()),
            };
            let s = v["seq"].as_u64().unwrap_or_else(|| panic!("envelope without seq: {v}"));
            out.push(v);
            if s >= seq {
                return out;
            }
        }
    }

    pub async fn close(mut self) {
        let _ = self.stream.close(None).await;
    }
}

/// A data directory that lives as long as the test.
pub fn data_dir() -> tempfile::TempDir {
    tempfile::Builder::new().prefix("svc-e2e-").tempdir().expect("tempdir")
}

/// The `seq` of every envelope, in order.
pub fn seqs(events: &[Value]) -> Vec<u64> {
    events
        .iter()
        .map(|e| e["seq"].as_u64().unwrap_or_else(|| panic!("no seq in {e}")))
        .collect()
}

/// Runs the `svc` CLI with `env` and returns (exit code, stdout, stderr).
pub async fn run_cli(args: &[&str], env: &[(&str, &str)]) -> (Option<i32>, String, String) {
    let mut cmd = tokio::process::Command::new(SVC);
    cmd.args(args)
        .env_remove("SVC_URL")
        .env_remove("SVC_TOKEN")
        .env_remove("SVC_DATA_DIR")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .kill_on_drop(true);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = tokio::time::timeout(SCAN_DEADLINE, cmd.output())
        .await
        .unwrap_or_else(|_| panic!("svc {args:?} did not finish within {SCAN_DEADLINE:?}"))
        .expect("run svc");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A daemon shared by the tests of one file. It lives in a `static`, which
/// is never dropped: the daemon's watchdog kills it when the test process
/// exits, and a reaper then removes its data directory.
pub struct Shared {
    pub daemon: Daemon,
    _reaper: (Child, ChildStdin),
}

impl Shared {
    pub async fn start(scale: usize) -> Shared {
        let dir = data_dir().keep();
        let daemon = Daemon::start_scanned(&dir, scale).await;
        let script = format!(
            "read _ ; while kill -0 {pid} 2>/dev/null ; do sleep 0.05 ; done ; rm -rf -- \"$0\"",
            pid = daemon.pid()
        );
        let mut reaper = Command::new("sh")
            .args(["-c", &script])
            .arg(&dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn reaper");
        let stdin = reaper.stdin.take().expect("reaper stdin");
        Shared {
            daemon,
            _reaper: (reaper, stdin),
        }
    }
}

/// SHA-256 of `data` as lowercase hex (FIPS 180-4), to check checksums the
/// daemon reports.
pub fn sha256_hex(data: &[u8]) -> String {
    const K: [u32; 64] = [
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98,
        0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
        0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8,
        0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
        0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819,
        0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
        0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
        0xc67178f2,
    ];
    let mut h: [u32; 8] = [
        0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
    ];
    let mut msg = data.to_vec();
    let bits = (data.len() as u64).wrapping_mul(8);
    msg.push(0x80);
    while msg.len() % 64 != 56 {
        msg.push(0);
    }
    msg.extend_from_slice(&bits.to_be_bytes());
    for block in msg.chunks_exact(64) {
        let mut w = [0u32; 64];
        for (i, word) in block.chunks_exact(4).enumerate() {
            w[i] = u32::from_be_bytes([word[0], word[1], word[2], word[3]]);
        }
        for i in 16..64 {
            let s0 = w[i - 15].rotate_right(7) ^ w[i - 15].rotate_right(18) ^ (w[i - 15] >> 3);
            let s1 = w[i - 2].rotate_right(17) ^ w[i - 2].rotate_right(19) ^ (w[i - 2] >> 10);
            w[i] = w[i - 16].wrapping_add(s0).wrapping_add(w[i - 7]).wrapping_add(s1);
        }
        let [mut a, mut b, mut c, mut d, mut e, mut f, mut g, mut hh] = h;
        for i in 0..64 {
            let s1 = e.rotate_right(6) ^ e.rotate_right(11) ^ e.rotate_right(25);
            let ch = (e & f) ^ (!e & g);
            let t1 = hh
                .wrapping_add(s1)
                .wrapping_add(ch)
                .wrapping_add(K[i])
                .wrapping_add(w[i]);
            let s0 = a.rotate_right(2) ^ a.rotate_right(13) ^ a.rotate_right(22);
            let maj = (a & b) ^ (a & c) ^ (b & c);
            let t2 = s0.wrapping_add(maj);
            hh = g;
            g = f;
            f = e;
            e = d.wrapping_add(t1);
            d = c;
            c = b;
            b = a;
            a = t1.wrapping_add(t2);
        }
        for (x, y) in h.iter_mut().zip([a, b, c, d, e, f, g, hh]) {
            *x = x.wrapping_add(y);
        }
    }
    h.iter().map(|x| format!("{x:08x}")).collect()
}

/// The exact texts of the elements of the top-level array `key` in a JSON
/// object's text (`"nodes":[...]`), as they appear in the body.
pub fn raw_array_elements<'a>(body: &'a str, key: &str) -> Vec<&'a str> {
    let needle = format!("\"{key}\":[");
    let start = body.find(&needle).unwrap_or_else(|| panic!("no {needle} in body")) + needle.len();
    let bytes = body.as_bytes();
    let mut out = Vec::new();
    let (mut depth, mut in_str, mut escaped) = (0usize, false, false);
    let mut elem_start = start;
    let mut i = start;
    while i < bytes.len() {
        let c = bytes[i];
        if in_str {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_str = false,
                _ => {}
            }
        } else {
            match c {
                b'"' => in_str = true,
                b'{' | b'[' => depth += 1,
                b'}' => depth -= 1,
                b']' if depth == 0 => {
                    if i > elem_start {
                        out.push(&body[elem_start..i]);
                    }
                    return out;
                }
                b']' => depth -= 1,
                b',' if depth == 0 => {
                    out.push(&body[elem_start..i]);
                    elem_start = i + 1;
                }
                _ => {}
            }
        }
        i += 1;
    }
    panic!("array {key} is not closed");
}

/// Processes whose executable is `exe`.
pub fn running(exe: &Path) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()))
        .filter(|pid| std::fs::read_link(format!("/proc/{pid}/exe")).is_ok_and(|p| p == exe))
        .collect()
}

/// Sets `field` of the payload of stored event `seq` in `events.redb` to
/// `value` with redb directly, keeping the record's hashes: what someone
/// with write access to the file would do, a break of the chain. The
/// stored layout: format byte, ts (8), prev_hash (32), hash (32), then six
/// LEB128-length strings, the payload JSON last (docs/formats.md).
pub fn tamper_payload(path: &Path, seq: u64, field: &str, value: Value) {
    use redb::ReadableTable;
    const EVENTS: redb::TableDefinition<u64, &[u8]> = redb::TableDefinition::new("events");
    const HEAD: usize = 1 + 8 + 32 + 32;
    let db = redb::Database::open(path).expect("open events.redb with redb");
    let txn = db.begin_write().expect("write txn");
    {
        let mut events = txn.open_table(EVENTS).expect("events table");
        let bytes = events.get(seq).expect("get").expect("event stored").value().to_vec();
        let (mut pos, mut strings) = (HEAD, Vec::new());
        for _ in 0..6 {
            let (mut len, mut shift) = (0usize, 0);
            loop {
                let b = bytes[pos];
                pos += 1;
                len |= usize::from(b & 0x7f) << shift;
                shift += 7;
                if b & 0x80 == 0 {
                    break;
                }
            }
            strings.push(bytes[pos..pos + len].to_vec());
            pos += len;
        }
        let mut payload: Value = serde_json::from_slice(&strings[5]).expect("payload json");
        payload[field] = value;
        strings[5] = serde_json::to_vec(&payload).expect("json");
        let mut out = bytes[..HEAD].to_vec();
        for s in &strings {
            let mut len = s.len();
            while len >= 0x80 {
                out.push((len as u8) | 0x80);
                len >>= 7;
            }
            out.push(len as u8);
            out.extend_from_slice(s);
        }
        events.insert(seq, out.as_slice()).expect("insert");
    }
    txn.commit().expect("commit");
}

/// The lines of a streamed JSON-lines answer (`/api/v1/cortex/assimilate`),
/// each parsed; a line that is not JSON fails the test.
pub fn json_lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap_or_else(|e| panic!("not a JSON line ({e}): {l}")))
        .collect()
}

/// The `text` pieces of an assistant's answer, joined.
pub fn answer_text(lines: &[Value]) -> String {
    lines
        .iter()
        .filter(|l| l["type"] == "text")
        .filter_map(|l| l["text"].as_str())
        .collect()
}
