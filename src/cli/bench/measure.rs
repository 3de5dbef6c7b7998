//! The figures of one scale, measured on a running [`BenchDaemon`] over
//! its REST API and `/events`, as a client on the same machine sees them.
//!
//! The order matters and is fixed: the daemon's own first scan (at start),
//! the later scans, memory after them, the 100-rule policy pass, blast
//! radius, `/api/v1/topology`, the HTTP load, the WebSocket delivery of a
//! scan's events, then a restart on the same data directory.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use futures::{SinkExt, StreamExt};
use reqwest::StatusCode;
use serde_json::{Map, Value, json};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

use super::daemon::{BenchDaemon, Setup};

/// How long [`Run::settle`] waits for a snapshot behind a commit.
const SETTLE_WAIT: Duration = Duration::from_secs(120);
use super::figures::{self, ENDPOINTS, Endpoint, phase_figure};
use crate::cli::client::encode_segment;

/// How much of each measurement a run does.
#[derive(Clone, Debug)]
pub struct Plan {
    pub later_scans: usize,
    pub scan_pause: Duration,
    pub blast_samples: usize,
    pub http_clients: usize,
    pub http_requests: usize,
    pub ws_clients: usize,
    /// How long the daemon may take to listen and to be ready.
    pub start_deadline: Duration,
    /// How long one scan may take.
    pub scan_deadline: Duration,
}

/// Providers whose first listing pages give the resources asked about.
const PROVIDERS: [&str; 4] = ["aws", "gcp", "azure", "kubernetes"];
/// How long a read may take before the bench gives up on it.
const READ_TIMEOUT: Duration = Duration::from_secs(600);
/// Live events are held back this long after a WebSocket connects (the
/// `/events` contract); a scan triggered sooner would wait for it.
const WS_HOLD_BACK: Duration = Duration::from_millis(400);

/// The figures of one scale being gathered, and where it is.
pub struct Run<'a> {
    pub http: &'a reqwest::Client,
    pub plan: &'a Plan,
    pub figures: Map<String, Value>,
    pub progress: &'a (dyn Fn(&str) + Sync),
    /// The number of the last scan asked for ([`Run::settle`]).
    pub last_scan: AtomicU64,
}

fn put(figures: &mut Map<String, Value>, name: &str, value: f64) {
    let v = if value.fract() == 0.0 && value.abs() < 9.0e15 {
        json!(value as i64)
    } else {
        json!((value * 1000.0).round() / 1000.0)
    };
    figures.insert(name.to_owned(), v);
}

/// A duration as a figure in milliseconds.
pub fn put_ms(figures: &mut Map<String, Value>, name: &str, d: Duration) {
    put(figures, name, ms(d));
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// The `p` quantile (0..=1) of sorted values, nearest rank.
pub fn quantile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = (p * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

pub fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    if v.is_empty() {
        return 0.0;
    }
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn u(v: &Value, key: &str) -> u64 {
    v.get(key).and_then(Value::as_u64).unwrap_or(0)
}

/// The wall time of each phase a scan report lists (`phases`), by the
/// names of [`figures::phases`]; phases it does not know are left out.
fn phase_times(report: &Value) -> Vec<(&'static str, f64)> {
    let listed = report.get("phases").and_then(Value::as_array).into_iter().flatten();
    listed
        .filter_map(|p| {
            let span = p.get("name").and_then(Value::as_str)?.strip_prefix("engine.")?;
            let phase = figures::phases().find(|known| *known == span)?;
            Some((phase, p.get("duration_ms").and_then(Value::as_f64)?))
        })
        .collect()
}

/// What the mock plugins did in a scan: nodes, and the longest source's
/// wall time (they stream at once). Fails unless every source is one of
/// the bench's plugins and succeeded.
fn plugin_ingest(report: &Value, setup: &Setup) -> anyhow::Result<(u64, Duration)> {
    let names = setup.plugin_names();
    let sources = report
        .get("sources")
        .and_then(Value::as_array)
        .context("the scan report has no sources")?;
    if sources.len() != names.len() {
        bail!("the scan had sources other than the bench's mock plugins ({names:?}): {sources:?}");
    }
    let (mut nodes, mut longest) = (0, 0);
    for s in sources {
        let name = s.get("name").and_then(Value::as_str).unwrap_or_default();
        if !names.iter().any(|n| n == name) {
            bail!("the scan's source {name:?} is not one of the bench's mock plugins ({names:?})");
        }
        if s.get("ok") != Some(&Value::Bool(true)) {
            bail!(
                "the scan of plugin {name} failed: {}",
                s.get("error").unwrap_or(&Value::Null)
            );
        }
        nodes += u(s, "nodes");
        longest = longest.max(u(s, "duration_ms"));
    }
    Ok((nodes, Duration::from_millis(longest)))
}

fn per_s(count: u64, d: Duration) -> f64 {
    if d.is_zero() {
        0.0
    } else {
        count as f64 / d.as_secs_f64()
    }
}

type Ws = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn connect_ws(d: &BenchDaemon, since: u64) -> anyhow::Result<Ws> {
    let mut req = format!("ws://{}/events", d.addr)
        .into_client_request()
        .context("bad WebSocket address")?;
    req.headers_mut().insert(
        "authorization",
        format!("Bearer {}", d.token).parse().context("bad token")?,
    );
    let (mut ws, _) = tokio_tungstenite::connect_async(req)
        .await
        .context("cannot connect to /events")?;
    ws.send(Message::text(json!({ "since": since }).to_string()))
        .await
        .context("cannot send to /events")?;
    Ok(ws)
}

/// The next event frame of `ws`, within `until`.
async fn next_event(ws: &mut Ws, until: Instant) -> anyhow::Result<Value> {
    loop {
        let left = until.saturating_duration_since(Instant::now());
        let msg = tokio::time::timeout(left, ws.next())
            .await
            .context("no event from /events in time")?;
        match msg {
            Some(Ok(Message::Text(t))) => {
                let v: Value = serde_json::from_str(t.as_str()).context("a frame of /events is not JSON")?;
                if let Some(e) = v.get("error") {
                    bail!("/events answered with an error: {e}");
                }
                return Ok(v);
            }
            Some(Ok(Message::Close(f))) => bail!("/events closed: {f:?}"),
            Some(Ok(_)) => {}
            Some(Err(e)) => bail!("/events failed: {e}"),
            None => bail!("/events ended"),
        }
    }
}

impl Run<'_> {
    fn put(&mut self, name: &str, value: f64) {
        put(&mut self.figures, name, value);
    }

    async fn post(&self, d: &BenchDaemon, path: &str, body: &Value, timeout: Duration) -> anyhow::Result<Value> {
        let resp = self
            .http
            .post(format!("{}{path}", d.base))
            .bearer_auth(&d.token)
            .json(body)
            .timeout(timeout)
            .send()
            .await
            .with_context(|| format!("POST {path}: no answer"))?;
        let status = resp.status();
        let text = resp
            .text()
            .await
            .with_context(|| format!("POST {path}: answer cut short"))?;
        if !status.is_success() {
            bail!(
                "POST {path}: {}: {}",
                status.as_u16(),
                text.chars().take(500).collect::<String>()
            );
        }
        serde_json::from_str(&text).with_context(|| format!("POST {path}: the answer is not JSON"))
    }

    async fn get_json(&self, d: &BenchDaemon, path: &str, query: &[(&str, String)]) -> anyhow::Result<Value> {
        let resp = self
            .http
            .get(format!("{}{path}", d.base))
            .query(query)
            .bearer_auth(&d.token)
            .timeout(READ_TIMEOUT)
            .send()
            .await
            .with_context(|| format!("GET {path}: no answer"))?;
        let status = resp.status();
        let text = resp
            .text()
            .await
            .with_context(|| format!("GET {path}: answer cut short"))?;
        if !status.is_success() {
            bail!(
                "GET {path}: {}: {}",
                status.as_u16(),
                text.chars().take(500).collect::<String>()
            );
        }
        serde_json::from_str(&text).with_context(|| format!("GET {path}: the answer is not JSON"))
    }

    /// A scan through the API, waited for (tried again while another runs).
    async fn scan(&self, d: &mut BenchDaemon) -> anyhow::Result<Value> {
        let until = Instant::now() + self.plan.scan_deadline;
        loop {
            let resp = self
                .http
                .post(format!("{}/api/v1/engine/scan", d.base))
                .bearer_auth(&d.token)
                .json(&json!({ "wait": true }))
                .timeout(self.plan.scan_deadline)
                .send()
                .await;
            let resp = match resp {
                Ok(r) => r,
                Err(e) if !d.alive() => return Err(d.died("during a scan")).context(e.to_string()),
                Err(e) => return Err(e).context("the scan got no answer"),
            };
            let status = resp.status();
            let text = resp.text().await.context("the scan's answer was cut short")?;
            if status == StatusCode::CONFLICT && Instant::now() < until {
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
            if !status.is_success() {
                bail!("the scan failed: {}: {text}", status.as_u16());
            }
            let report: Value = serde_json::from_str(&text).context("the scan's answer is not JSON")?;
            self.last_scan.store(u(&report, "scan_seq"), Ordering::Relaxed);
            return Ok(report);
        }
    }

    /// The daemon's scan at start, read from `/events`.
    pub async fn first_scan(&mut self, d: &mut BenchDaemon, setup: &Setup) -> anyhow::Result<u64> {
        (self.progress)("first scan (the daemon's own, at start)");
        let mut ws = connect_ws(d, 0).await?;
        let until = Instant::now() + self.plan.scan_deadline;
        let report = loop {
            let ev = match next_event(&mut ws, until).await {
                Ok(ev) => ev,
                Err(e) if !d.alive() => return Err(d.died("during its first scan")).context(e.to_string()),
                Err(e) => return Err(e).context("waiting for the first scan"),
            };
            if ev.get("event_type").and_then(Value::as_str) == Some("SCAN_COMPLETED") {
                break ev.get("payload").cloned().unwrap_or_default();
            }
        };
        let _ = ws.close(None).await;
        let (nodes, took) = plugin_ingest(&report, setup).context("the first scan")?;
        let total = u(&report, "node_count");
        self.put("nodes", total as f64);
        self.put("edges", u(&report, "edge_count") as f64);
        self.put("first_scan_ms", u(&report, "duration_ms") as f64);
        if let Some(c) = report.get("commit_ms").and_then(Value::as_u64) {
            self.put("first_scan_commit_ms", c as f64);
        }
        for (phase, took) in phase_times(&report) {
            self.put(&phase_figure(true, phase), took);
        }
        self.put("first_scan_ingest_ms", ms(took));
        self.put("first_scan_ingest_nodes_per_s", per_s(nodes, took));
        if total == 0 {
            bail!("the first scan found no resources: {report}");
        }
        Ok(total)
    }

    pub async fn later_scans(&mut self, d: &mut BenchDaemon, setup: &Setup) -> anyhow::Result<()> {
        let (mut took, mut rate, mut behind) = (Vec::new(), Vec::new(), Vec::new());
        let mut commit = Vec::new();
        let mut phases: Vec<(&str, Vec<f64>)> = figures::phases().map(|p| (p, Vec::new())).collect();
        // Each scan starts with the daemon at rest, as a scheduled one
        // does: the snapshot written behind the last commit in place, then
        // a pause. How long each later scan's snapshot took is a figure
        // of its own.
        self.settle(d, setup).await;
        for i in 0..self.plan.later_scans {
            (self.progress)(&format!("later scan {} of {}", i + 1, self.plan.later_scans));
            tokio::time::sleep(self.plan.scan_pause).await;
            let report = self.scan(d).await?;
            let answered = Instant::now();
            self.settle(d, setup).await;
            behind.push(ms(answered.elapsed()));
            let (nodes, ingest) = plugin_ingest(&report, setup).context("a later scan")?;
            took.push(u(&report, "duration_ms") as f64);
            rate.push(per_s(nodes, ingest));
            commit.extend(report.get("commit_ms").and_then(Value::as_f64));
            for (phase, took) in phase_times(&report) {
                if let Some((_, seen)) = phases.iter_mut().find(|(p, _)| *p == phase) {
                    seen.push(took);
                }
            }
        }
        if !commit.is_empty() {
            self.put("later_scan_commit_ms", median(&commit));
        }
        for (phase, seen) in phases.iter().filter(|(_, seen)| !seen.is_empty()) {
            self.put(&phase_figure(false, phase), median(seen));
        }
        if !behind.is_empty() {
            self.put("later_scan_snapshot_ms", median(&behind));
        }
        self.put("later_scans", took.len() as f64);
        if !took.is_empty() {
            let mut sorted = took.clone();
            sorted.sort_by(f64::total_cmp);
            self.put("later_scan_median_ms", median(&took));
            self.put("later_scan_min_ms", sorted[0]);
            self.put("later_scan_max_ms", sorted[sorted.len() - 1]);
            self.put("later_scan_ingest_nodes_per_s", median(&rate));
        }
        Ok(())
    }

    /// Waits until the snapshot the daemon writes behind the commit of the
    /// last scan is in place (at most [`SETTLE_WAIT`]), so the figures
    /// after a scan are of the daemon at rest, not of a snapshot being
    /// written beside them. Says so when it did not land in time.
    pub async fn settle(&self, d: &mut BenchDaemon, setup: &Setup) {
        if !self.settled(d, setup).await {
            (self.progress)("the last scan's snapshot is not in place; measuring the daemon as it is");
        }
    }

    async fn settled(&self, d: &mut BenchDaemon, setup: &Setup) -> bool {
        let scan_seq = self.last_scan.load(Ordering::Relaxed);
        let path = setup.data_dir.join(svc_engine::SNAPSHOT_FILE);
        let until = Instant::now() + SETTLE_WAIT;
        loop {
            let key = svc_engine::store::snapshot::key_at(&path);
            if key.is_some_and(|k| k.scan_seq >= scan_seq) {
                return true;
            }
            if Instant::now() >= until || !d.alive() {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    pub fn memory(&mut self, d: &BenchDaemon, nodes: u64) -> anyhow::Result<()> {
        let (rss, hwm) = d.memory()?;
        self.put("vm_rss_bytes", rss as f64);
        self.put("vm_hwm_bytes", hwm as f64);
        self.put("vm_rss_bytes_per_node", (rss as f64 / nodes.max(1) as f64).round());
        self.put("vm_hwm_bytes_per_node", (hwm as f64 / nodes.max(1) as f64).round());
        Ok(())
    }

    /// Installs the 100 rules, scans, and reads the policy phase; then one
    /// rule as a dry run.
    pub async fn policy(&mut self, d: &mut BenchDaemon) -> anyhow::Result<()> {
        (self.progress)("100 CEL policy rules: install, a scan, a dry run");
        let rules: Vec<Value> = super::rules::rules()
            .into_iter()
            .enumerate()
            .map(|(i, condition)| json!({ "id": format!("bench-{i:03}"), "condition": condition, "action": "warn" }))
            .collect();
        let count = rules.len();
        let started = Instant::now();
        self.post(d, "/api/v1/policies", &json!({ "rules": rules }), READ_TIMEOUT)
            .await
            .context("installing the 100 policy rules")?;
        self.put("policy_install_ms", ms(started.elapsed()));
        tokio::time::sleep(self.plan.scan_pause).await;
        let report = self.scan(d).await?;
        let policy = report.get("policy").context("the scan report has no policy counts")?;
        let evaluated = u(policy, "rules");
        if evaluated < count as u64 {
            bail!("the scan evaluated {evaluated} policy rules, not the {count} installed: {policy}");
        }
        self.put("policy_pass_ms", u(policy, "duration_ms") as f64);
        self.put("policy_pass_nodes", u(policy, "nodes") as f64);
        self.put("policy_pass_matches", u(policy, "matches") as f64);
        self.put("policy_scan_ms", u(&report, "duration_ms") as f64);
        let started = Instant::now();
        let dry = self
            .post(
                d,
                "/api/v1/policies/dry-run",
                &json!({ "condition": super::rules::DRY_RUN, "limit": 1 }),
                READ_TIMEOUT,
            )
            .await
            .context("the policy dry run")?;
        let wall = ms(started.elapsed());
        let took = dry.get("duration_ms").and_then(Value::as_f64).unwrap_or(wall);
        self.put("policy_dry_run_ms", took);
        Ok(())
    }

    /// Resources to ask about: the first listing pages of each provider,
    /// thinned evenly to `want`.
    pub async fn pool(&self, d: &BenchDaemon, want: usize) -> anyhow::Result<Vec<String>> {
        let mut all = Vec::new();
        for p in PROVIDERS {
            let q = [("limit", "1000".to_owned()), ("provider", p.to_owned())];
            let page = self.get_json(d, "/api/v1/graph/nodes", &q).await?;
            if let Some(nodes) = page.get("nodes").and_then(Value::as_array) {
                all.extend(
                    nodes
                        .iter()
                        .filter_map(|n| n.get("crn").and_then(Value::as_str).map(str::to_owned)),
                );
            }
        }
        if all.is_empty() {
            bail!("the graph lists no resources");
        }
        let step = (all.len() / want.max(1)).max(1);
        Ok(all.into_iter().step_by(step).take(want.max(1)).collect())
    }

    pub async fn blast_radius(&mut self, d: &BenchDaemon, crns: &[String]) -> anyhow::Result<()> {
        (self.progress)(&format!("blast radius of {} resources", crns.len()));
        let mut us = Vec::with_capacity(crns.len());
        for crn in crns {
            let path = format!("/api/v1/graph/blast-radius/{}", encode_segment(crn));
            let started = Instant::now();
            let resp = self
                .http
                .get(format!("{}{path}", d.base))
                .bearer_auth(&d.token)
                .timeout(READ_TIMEOUT)
                .send()
                .await
                .context("blast radius: no answer")?;
            let status = resp.status();
            let body = resp.bytes().await.context("blast radius: answer cut short")?;
            if !status.is_success() {
                bail!("GET {path}: {}: {}", status.as_u16(), String::from_utf8_lossy(&body));
            }
            us.push(started.elapsed().as_secs_f64() * 1e6);
        }
        us.sort_by(f64::total_cmp);
        self.put("blast_radius_samples", us.len() as f64);
        self.put("blast_radius_p50_us", quantile(&us, 0.5).round());
        self.put("blast_radius_p99_us", quantile(&us, 0.99).round());
        Ok(())
    }

    pub async fn topology(&mut self, d: &BenchDaemon) -> anyhow::Result<()> {
        (self.progress)("GET /api/v1/topology");
        let started = Instant::now();
        let resp = self
            .http
            .get(format!("{}/api/v1/topology", d.base))
            .bearer_auth(&d.token)
            .timeout(READ_TIMEOUT)
            .send()
            .await
            .context("topology: no answer")?;
        if !resp.status().is_success() {
            bail!("GET /api/v1/topology: {}", resp.status().as_u16());
        }
        let mut resp = resp;
        let (mut bytes, mut first) = (0u64, None);
        while let Some(chunk) = resp.chunk().await.context("topology: the stream broke")? {
            first.get_or_insert_with(|| started.elapsed());
            bytes += chunk.len() as u64;
        }
        self.put("topology_ms", ms(started.elapsed()));
        self.put("topology_first_byte_ms", ms(first.unwrap_or_default()));
        self.put("topology_bytes", bytes as f64);
        Ok(())
    }

    /// Every read endpoint in turn under `http_clients` concurrent
    /// clients, `http_requests` requests each.
    pub async fn http_load(&mut self, d: &BenchDaemon, crns: &Arc<Vec<String>>) -> anyhow::Result<()> {
        let plan = self.plan.clone();
        let mut total_requests = 0usize;
        let mut total_time = Duration::ZERO;
        for ep in ENDPOINTS {
            (self.progress)(&format!(
                "HTTP load: {} ({} clients, {} requests)",
                ep.route, plan.http_clients, plan.http_requests
            ));
            let next = Arc::new(AtomicUsize::new(0));
            let started = Instant::now();
            let mut tasks = Vec::new();
            for c in 0..plan.http_clients.max(1) {
                let (http, base, token) = (self.http.clone(), d.base.clone(), d.token.clone());
                let (next, crns) = (next.clone(), crns.clone());
                let total = plan.http_requests;
                tasks.push(tokio::spawn(async move {
                    load_client(*ep, c, &http, &base, &token, &next, total, &crns).await
                }));
            }
            let mut millis = Vec::with_capacity(plan.http_requests);
            for t in tasks {
                millis.extend(t.await.context("an HTTP client panicked")??);
            }
            let wall = started.elapsed();
            total_requests += millis.len();
            total_time += wall;
            millis.sort_by(f64::total_cmp);
            let key = ep.key;
            self.put(
                &format!("http_{key}_requests_per_s"),
                per_s(millis.len() as u64, wall).round(),
            );
            self.put(&format!("http_{key}_p50_ms"), quantile(&millis, 0.5));
            self.put(&format!("http_{key}_p99_ms"), quantile(&millis, 0.99));
        }
        self.put("http_requests_per_s", per_s(total_requests as u64, total_time).round());
        Ok(())
    }

    /// `ws_clients` clients on `/events`, then a scan: how its events reach them.
    pub async fn websocket(&mut self, d: &mut BenchDaemon) -> anyhow::Result<()> {
        let n = self.plan.ws_clients.max(1);
        (self.progress)(&format!("WebSocket: {n} clients on /events, then a scan"));
        // The head of the ledger: the last event, replayed to each client
        // as the sign that its stream is live.
        let head = self
            .get_json(d, "/api/v1/history", &[("limit", "1".to_owned())])
            .await?
            .get("events")
            .and_then(Value::as_array)
            .and_then(|e| e.first())
            .and_then(|e| e.get("id"))
            .and_then(|id| id.as_str().and_then(|s| s.parse::<u64>().ok()).or_else(|| id.as_u64()))
            .context("the ledger has no event to start from")?;
        let until = Instant::now() + self.plan.scan_deadline;
        let mut clients = Vec::with_capacity(n);
        for _ in 0..n {
            let mut ws = connect_ws(d, head.saturating_sub(1)).await?;
            loop {
                let ev = next_event(&mut ws, until)
                    .await
                    .context("a WebSocket client's replay")?;
                if ev.get("seq").and_then(Value::as_u64) >= Some(head) {
                    break;
                }
            }
            clients.push(ws);
        }
        tokio::time::sleep(WS_HOLD_BACK).await;
        // Each client reads on its own task until it has the scan's
        // SCAN_COMPLETED; every event after `head` is timed as it arrives.
        let (last_tx, last_rx) = tokio::sync::watch::channel(None::<u64>);
        let mut readers = Vec::with_capacity(n);
        for mut ws in clients {
            let mut last_rx = last_rx.clone();
            readers.push(tokio::spawn(async move {
                let mut got: Vec<(u64, Instant)> = Vec::new();
                loop {
                    let done = *last_rx.borrow_and_update();
                    if let (Some(last), Some((seq, _))) = (done, got.last())
                        && *seq >= last
                    {
                        break;
                    }
                    tokio::select! {
                        ev = next_event(&mut ws, until) => {
                            let ev = ev?;
                            if let Some(seq) = ev.get("seq").and_then(Value::as_u64) {
                                got.push((seq, Instant::now()));
                            }
                        }
                        _ = last_rx.changed() => {}
                    }
                }
                let _ = ws.close(None).await;
                anyhow::Ok(got)
            }));
        }
        let report = self.scan(d).await;
        let answered = Instant::now();
        let last = report.as_ref().map(|r| u(r, "event_seq")).unwrap_or(u64::MAX);
        let _ = last_tx.send(Some(last));
        let report = report?;
        let mut deliveries: Vec<(u64, Instant)> = Vec::new();
        for r in readers {
            let got = r.await.context("a WebSocket client panicked")??;
            deliveries.extend(got.into_iter().filter(|(seq, _)| *seq > head && *seq <= last));
        }
        let events = last.saturating_sub(head);
        let expected = events * n as u64;
        if (deliveries.len() as u64) != expected {
            bail!(
                "the scan's {events} events reached the {n} clients {} times, not {expected}",
                deliveries.len()
            );
        }
        // Each event is timed from the first sign it was committed: the
        // scan's answer, or its first delivery to any client if sooner.
        let mut first: std::collections::HashMap<u64, Instant> = std::collections::HashMap::new();
        for (seq, at) in &deliveries {
            let f = first.entry(*seq).or_insert(answered);
            *f = (*f).min(*at);
        }
        let mut lat: Vec<f64> = deliveries
            .iter()
            .map(|(seq, at)| ms(at.saturating_duration_since(first[seq])))
            .collect();
        lat.sort_by(f64::total_cmp);
        self.put("ws_clients", n as f64);
        self.put("ws_scan_events", events as f64);
        self.put("ws_deliveries", deliveries.len() as f64);
        self.put("ws_delivery_p50_ms", quantile(&lat, 0.5));
        self.put("ws_delivery_p99_ms", quantile(&lat, 0.99));
        self.put("ws_scan_ms", u(&report, "duration_ms") as f64);
        Ok(())
    }
}

/// One client of the HTTP load: takes request numbers from `next` until
/// `total` are taken; the latency of each, in ms.
#[allow(clippy::too_many_arguments, reason = "one client's whole context, spawned as a task")]
async fn load_client(
    ep: Endpoint,
    client: usize,
    http: &reqwest::Client,
    base: &str,
    token: &str,
    next: &AtomicUsize,
    total: usize,
    crns: &[String],
) -> anyhow::Result<Vec<f64>> {
    let mut out = Vec::new();
    let mut cursor = String::new();
    loop {
        let i = next.fetch_add(1, Ordering::Relaxed);
        if i >= total {
            return Ok(out);
        }
        let (path, mut query) = match ep.key {
            "node" => {
                let crn = &crns[(i * 7919 + client) % crns.len().max(1)];
                (format!("{}/{}", ep.path, encode_segment(crn)), Vec::new())
            }
            _ => (
                ep.path.to_owned(),
                ep.query.iter().map(|(k, v)| (*k, (*v).to_owned())).collect(),
            ),
        };
        if ep.paged && !cursor.is_empty() {
            query.push(("cursor", cursor.clone()));
        }
        let started = Instant::now();
        let resp = http
            .get(format!("{base}{path}"))
            .query(&query)
            .bearer_auth(token)
            .timeout(READ_TIMEOUT)
            .send()
            .await
            .with_context(|| format!("GET {path}: no answer"))?;
        let status = resp.status();
        let body = resp
            .bytes()
            .await
            .with_context(|| format!("GET {path}: answer cut short"))?;
        out.push(ms(started.elapsed()));
        if !status.is_success() {
            bail!(
                "GET {path}: {}: {}",
                status.as_u16(),
                String::from_utf8_lossy(&body[..body.len().min(300)])
            );
        }
        if ep.paged {
            cursor = serde_json::from_slice::<Value>(&body)
                .ok()
                .and_then(|v| v.get("next_cursor").and_then(Value::as_str).map(str::to_owned))
                .unwrap_or_default();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_take_the_nearest_rank() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(quantile(&v, 0.5), 50.0);
        assert_eq!(quantile(&v, 0.99), 99.0);
        assert_eq!(quantile(&[3.0], 0.99), 3.0);
        assert_eq!(quantile(&[], 0.5), 0.0);
        assert_eq!(median(&[5.0, 1.0, 3.0]), 3.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
    }

    #[test]
    fn whole_figures_are_integers_and_others_keep_three_decimals() {
        let mut m = Map::new();
        put(&mut m, "a", 12.0);
        put(&mut m, "b", 1.23456);
        assert_eq!(m["a"], json!(12));
        assert_eq!(m["b"], json!(1.235));
    }
}
