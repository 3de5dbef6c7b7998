//! `svc bench soak`: a long run of a daemon under a steady mix of work,
//! its resident memory sampled as it goes.
//!
//! The driver starts a daemon of its own (this binary, `daemon --mock`,
//! a data directory of its own) or attaches to a running one, then for
//! the whole run keeps scans going (one after another, a pause between
//! them), several API readers walking the graph, resource, finding,
//! remediation and history routes, listing pages and single resources,
//! now and then asking about the past (`/graph/at`, `/graph/diff`), and
//! several WebSocket clients on `/events`, each reconnecting now and then
//! with a replay. It polls the daemon's `VmRSS` every second; every sample
//! period it prints a line with `VmRSS` then and its low and high since
//! the line before, `RssAnon` and threads (`/proc/<pid>/status`),
//! `process_resident_memory_bytes` (`/metrics`) and the graph's rows
//! (`/api/v1/graph/stats`). Near the end many more readers join for a
//! while (the burst), a line every few seconds, and the run goes on a few
//! minutes more so that what the daemon does with the memory the burst
//! made it take shows.
//!
//! Exits 1 when any request was answered with a 5xx or got no answer, an
//! event stream broke its order or closed on its own, or the daemon died.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use futures::{SinkExt, StreamExt};
use parking_lot::{Mutex, RwLock};
use reqwest::StatusCode;
use serde_json::{Value, json};
use tokio::sync::watch;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

use super::client::encode_segment;
use crate::paths;

/// `svc bench soak` options.
#[derive(clap::Args, Debug)]
pub struct SoakArgs {
    /// How long the load runs, the burst and what follows it included.
    #[arg(long, default_value = "30m", value_parser = humantime::parse_duration)]
    pub duration: Duration,
    /// Size of the simulated estate of the daemon started (`--mock-scale`).
    #[arg(long, default_value_t = 1_000_000)]
    pub scale: usize,
    /// Data directory of the daemon started; by default a fresh one in the
    /// system's temporary directory, removed at the end.
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// Keep the data directory made for the run.
    #[arg(long)]
    pub keep: bool,
    /// Attach to the daemon at this URL instead of starting one (needs `--pid`).
    #[arg(long, requires = "pid")]
    pub attach: Option<String>,
    /// Process id of the daemon attached to.
    #[arg(long)]
    pub pid: Option<u32>,
    /// Token of the daemon attached to (the global `--token`); defaults to
    /// `$SVC_DATA_DIR/token`.
    #[arg(skip)]
    pub token: Option<String>,
    /// Pause between the end of one scan and the start of the next.
    #[arg(long, default_value = "30s", value_parser = humantime::parse_duration)]
    pub scan_pause: Duration,
    /// Stop scanning when the burst starts: what the daemon gives back
    /// after it is then its own doing, not a scan's.
    #[arg(long)]
    pub no_scans_from_burst: bool,
    /// Concurrent API readers for the whole run.
    #[arg(long, default_value_t = 4)]
    pub readers: usize,
    /// Pause of each reader between two requests.
    #[arg(long, default_value = "50ms", value_parser = humantime::parse_duration)]
    pub reader_pause: Duration,
    /// Least time between two questions about the past (`/graph/at`,
    /// `/graph/diff`) from one reader.
    #[arg(long, default_value = "5m", value_parser = humantime::parse_duration)]
    pub past_every: Duration,
    /// WebSocket clients on `/events` for the whole run.
    #[arg(long, default_value_t = 4)]
    pub ws_clients: usize,
    /// How long a WebSocket client stays connected before it reconnects
    /// with a replay of the last events it saw.
    #[arg(long, default_value = "3m", value_parser = humantime::parse_duration)]
    pub ws_session: Duration,
    /// Time between two samples of the daemon's memory.
    #[arg(long, default_value = "1m", value_parser = humantime::parse_duration)]
    pub sample: Duration,
    /// Start of the flat part: memory is compared from the first sample at
    /// or after it.
    #[arg(long, default_value = "5m", value_parser = humantime::parse_duration)]
    pub warmup: Duration,
    /// Readers added during the burst.
    #[arg(long, default_value_t = 64)]
    pub burst_readers: usize,
    /// How long the burst lasts.
    #[arg(long, default_value = "1m", value_parser = humantime::parse_duration)]
    pub burst: Duration,
    /// How long the run goes on after the burst.
    #[arg(long, default_value = "5m", value_parser = humantime::parse_duration)]
    pub after_burst: Duration,
}

/// Time between two memory samples during the burst.
const BURST_SAMPLE: Duration = Duration::from_secs(5);
/// How long a started daemon may take to listen, to be ready and to finish its first scan.
const START_DEADLINE: Duration = Duration::from_secs(1800);
/// How long one read may take before it counts as failed.
const READ_TIMEOUT: Duration = Duration::from_secs(300);
/// How long a stopped daemon may take to exit before it is killed.
const STOP_DEADLINE: Duration = Duration::from_secs(120);
/// Events a reconnecting WebSocket client asks to have replayed.
const WS_REPLAY: u64 = 100;
/// Resources kept for the detail routes.
const POOL: usize = 4000;
/// Failures printed as they happen; later ones are only counted.
const FAILURES_SHOWN: usize = 20;
/// Providers the listing readers filter on (`None`: every provider).
const PROVIDERS: [Option<&str>; 5] = [None, Some("aws"), Some("gcp"), Some("azure"), Some("kubernetes")];

/// The read routes of the mix, each drawn with the same chance.
#[derive(Copy, Clone, Debug)]
enum Read {
    GraphStats,
    GraphNodes,
    Nodes,
    Node,
    NodeEdges,
    BlastRadius,
    GraphAt,
    GraphDiff,
    GraphView,
    History,
    HistoryScans,
    HistorySummary,
    HistoryResource,
    WasteLedger,
    HeuristicsStatus,
    SolverResults,
    Anomalies,
    RemediationQueue,
    Plan,
}

/// The mix: the reads of the present first, then [`PAST`].
const MIX: [Read; 19] = [
    Read::GraphStats,
    Read::GraphNodes,
    Read::Nodes,
    Read::Node,
    Read::NodeEdges,
    Read::BlastRadius,
    Read::GraphView,
    Read::History,
    Read::HistoryScans,
    Read::HistorySummary,
    Read::HistoryResource,
    Read::WasteLedger,
    Read::HeuristicsStatus,
    Read::SolverResults,
    Read::Anomalies,
    Read::RemediationQueue,
    Read::Plan,
    Read::GraphAt,
    Read::GraphDiff,
];

/// The questions about the past, last in [`MIX`]: each replays the whole
/// graph as it was (seconds and a gigabyte or two at a million nodes), so
/// a reader asks one at most every `--past-every` (its first at once).
const PAST: [Read; 2] = [Read::GraphAt, Read::GraphDiff];

impl Read {
    fn is_past(self) -> bool {
        matches!(self, Read::GraphAt | Read::GraphDiff)
    }

    /// The label its figures are kept under: the route, and what sets
    /// this read apart from another of the same route.
    fn label(self) -> &'static str {
        match self {
            Read::GraphStats => "GET /api/v1/graph/stats",
            Read::GraphNodes => "GET /api/v1/graph/nodes (pages of 100)",
            Read::Nodes => "GET /api/v1/nodes (pages of 1000)",
            Read::Node => "GET /api/v1/graph/nodes/{crn}",
            Read::NodeEdges => "GET /api/v1/graph/nodes/{crn}/edges",
            Read::BlastRadius => "GET /api/v1/graph/blast-radius/{crn}",
            Read::GraphAt => "GET /api/v1/graph/at (2 min ago, 1000)",
            Read::GraphDiff => "GET /api/v1/graph/diff (last 10 min, 1000)",
            Read::GraphView => "GET /api/v1/graph",
            Read::History => "GET /api/v1/history (pages of 100)",
            Read::HistoryScans => "GET /api/v1/history?type=SCAN_COMPLETED",
            Read::HistorySummary => "GET /api/v1/history/summary",
            Read::HistoryResource => "GET /api/v1/history/resource",
            Read::WasteLedger => "GET /api/v1/waste-ledger",
            Read::HeuristicsStatus => "GET /api/v1/heuristics/status",
            Read::SolverResults => "GET /api/v1/solver/results",
            Read::Anomalies => "GET /api/v1/anomalies",
            Read::RemediationQueue => "GET /api/v1/remediation/queue",
            Read::Plan => "GET /api/v1/plan",
        }
    }
}

/// Figures of one label.
#[derive(Default)]
struct RouteStats {
    ok: u64,
    client_errors: u64,
    failures: u64,
    millis: Vec<u32>,
}

/// What every task of the run shares.
struct Shared {
    http: reqwest::Client,
    base: String,
    token: String,
    routes: Mutex<BTreeMap<&'static str, RouteStats>>,
    failures: AtomicU64,
    requests: AtomicU64,
    ws_events: AtomicU64,
    ws_connects: AtomicU64,
    scans: AtomicU64,
    scan_millis: Mutex<Vec<u64>>,
    /// Resources for the detail routes, refreshed from the listing pages.
    crns: RwLock<Vec<String>>,
    /// Resources in the remediation pipeline, for `/api/v1/plan`.
    waste: RwLock<Vec<String>>,
}

impl Shared {
    fn fail(&self, what: String) {
        let n = self.failures.fetch_add(1, Ordering::Relaxed);
        if (n as usize) < FAILURES_SHOWN {
            eprintln!("failure: {what}");
        } else if n as usize == FAILURES_SHOWN {
            eprintln!("failure: (further failures are only counted)");
        }
    }

    fn record(&self, label: &'static str, status: Option<StatusCode>, took: Duration) {
        self.requests.fetch_add(1, Ordering::Relaxed);
        let mut routes = self.routes.lock();
        let r = routes.entry(label).or_default();
        match status {
            Some(s) if s.is_success() => r.ok += 1,
            Some(s) if s.is_client_error() => r.client_errors += 1,
            _ => r.failures += 1,
        }
        r.millis.push(u32::try_from(took.as_millis()).unwrap_or(u32::MAX));
    }

    /// Sends one GET; the body of a 2xx answer, `None` otherwise. A
    /// 4xx is counted (a resource gone since it was listed answers 404);
    /// a 5xx or no answer is a failure.
    async fn get(&self, label: &'static str, path: &str, query: &[(&str, String)]) -> Option<bytes::Bytes> {
        let req = self
            .http
            .get(format!("{}{path}", self.base))
            .query(query)
            .bearer_auth(&self.token);
        let started = Instant::now();
        let answer = answer_of(req).await;
        let took = started.elapsed();
        match answer {
            Ok((status, body)) => {
                self.record(label, Some(status), took);
                if status.is_server_error() {
                    let text = String::from_utf8_lossy(&body[..body.len().min(300)]).into_owned();
                    self.fail(format!("{label}: {} {path}: {text}", status.as_u16()));
                    None
                } else if status.is_success() {
                    Some(body)
                } else {
                    None
                }
            }
            Err(e) => {
                self.record(label, None, took);
                self.fail(format!("{label}: {path}: no answer: {e}"));
                None
            }
        }
    }

    async fn get_json(&self, label: &'static str, path: &str, query: &[(&str, String)]) -> Option<Value> {
        let body = self.get(label, path, query).await?;
        serde_json::from_slice(&body).ok()
    }

    fn pick(&self, from: &RwLock<Vec<String>>, rng: &mut Rng) -> Option<String> {
        let list = from.read();
        (!list.is_empty()).then(|| list[rng.below(list.len())].clone())
    }
}

/// xorshift64*: each reader draws its own sequence, the same every run.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// A reader's place in the paged listings.
#[derive(Default)]
struct Cursors {
    graph_nodes: String,
    nodes: String,
    history: String,
    provider: usize,
}

fn rfc3339_ago(ago: Duration) -> String {
    let at = chrono::Utc::now() - chrono::Duration::from_std(ago).unwrap_or_default();
    at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// The `crn` strings anywhere in `v`.
fn crns_in(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                match x {
                    Value::String(s) if k == "crn" => out.push(s.clone()),
                    _ => crns_in(x, out),
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|x| crns_in(x, out)),
        _ => {}
    }
}

fn next_cursor(v: &Value) -> String {
    v.get("next_cursor")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

impl Shared {
    /// One read of the mix.
    async fn read(&self, read: Read, rng: &mut Rng, c: &mut Cursors) {
        let label = read.label();
        match read {
            Read::GraphStats => {
                self.get(label, "/api/v1/graph/stats", &[]).await;
            }
            Read::GraphNodes => {
                let mut q = vec![("limit", "100".to_owned())];
                if let Some(p) = PROVIDERS[c.provider % PROVIDERS.len()] {
                    q.push(("provider", p.to_owned()));
                }
                if !c.graph_nodes.is_empty() {
                    q.push(("cursor", c.graph_nodes.clone()));
                }
                let page = self.get_json(label, "/api/v1/graph/nodes", &q).await;
                c.graph_nodes = page.as_ref().map(next_cursor).unwrap_or_default();
                if c.graph_nodes.is_empty() {
                    c.provider += 1;
                }
                if let Some(page) = page {
                    let mut seen = Vec::new();
                    crns_in(&page, &mut seen);
                    let mut pool = self.crns.write();
                    for s in seen.into_iter().take(10) {
                        let i = rng.below(POOL);
                        if i < pool.len() {
                            pool[i] = s;
                        } else {
                            pool.push(s);
                        }
                    }
                }
            }
            Read::Nodes => {
                let mut q = vec![("limit", "1000".to_owned())];
                if !c.nodes.is_empty() {
                    q.push(("cursor", c.nodes.clone()));
                }
                let page = self.get_json(label, "/api/v1/nodes", &q).await;
                c.nodes = page.as_ref().map(next_cursor).unwrap_or_default();
            }
            Read::Node | Read::NodeEdges | Read::BlastRadius => {
                let Some(crn) = self.pick(&self.crns, rng) else { return };
                let path = match read {
                    Read::Node => format!("/api/v1/graph/nodes/{}", encode_segment(&crn)),
                    Read::NodeEdges => format!("/api/v1/graph/nodes/{}/edges", encode_segment(&crn)),
                    _ => format!("/api/v1/graph/blast-radius/{}", encode_segment(&crn)),
                };
                self.get(label, &path, &[]).await;
            }
            Read::GraphAt => {
                let q = [("ts", rfc3339_ago(Duration::from_secs(120))), ("limit", "1000".into())];
                self.get(label, "/api/v1/graph/at", &q).await;
            }
            Read::GraphDiff => {
                let q = [
                    ("from", rfc3339_ago(Duration::from_secs(600))),
                    ("to", rfc3339_ago(Duration::ZERO)),
                    ("limit", "1000".into()),
                ];
                self.get(label, "/api/v1/graph/diff", &q).await;
            }
            Read::GraphView => {
                self.get(label, "/api/v1/graph", &[]).await;
            }
            Read::History => {
                let mut q = vec![("limit", "100".to_owned())];
                if !c.history.is_empty() {
                    q.push(("cursor", c.history.clone()));
                }
                let page = self.get_json(label, "/api/v1/history", &q).await;
                c.history = page.as_ref().map(next_cursor).unwrap_or_default();
            }
            Read::HistoryScans => {
                let q = [("type", "SCAN_COMPLETED".to_owned()), ("limit", "20".into())];
                self.get(label, "/api/v1/history", &q).await;
            }
            Read::HistorySummary => {
                self.get(label, "/api/v1/history/summary", &[]).await;
            }
            Read::HistoryResource => {
                let Some(crn) = self.pick(&self.waste, rng).or_else(|| self.pick(&self.crns, rng)) else {
                    return;
                };
                let q = [("crn", crn)];
                self.get(label, "/api/v1/history/resource", &q).await;
            }
            Read::WasteLedger => {
                let q = [("top", "20".to_owned())];
                self.get(label, "/api/v1/waste-ledger", &q).await;
            }
            Read::HeuristicsStatus => {
                self.get(label, "/api/v1/heuristics/status", &[]).await;
            }
            Read::SolverResults => {
                let q = [("limit", "100".to_owned())];
                self.get(label, "/api/v1/solver/results", &q).await;
            }
            Read::Anomalies => {
                let q = [("limit", "100".to_owned())];
                self.get(label, "/api/v1/anomalies", &q).await;
            }
            Read::RemediationQueue => {
                let q = [("limit", "100".to_owned())];
                if let Some(v) = self.get_json(label, "/api/v1/remediation/queue", &q).await {
                    let mut seen = Vec::new();
                    crns_in(&v, &mut seen);
                    if !seen.is_empty() {
                        seen.truncate(POOL);
                        *self.waste.write() = seen;
                    }
                }
            }
            Read::Plan => {
                let Some(crn) = self.pick(&self.waste, rng) else { return };
                let q = [("crn", crn)];
                self.get(label, "/api/v1/plan", &q).await;
            }
        }
    }
}

/// Waits `d`, or less if the run stops meanwhile; whether it stopped.
/// A request's status and whole body, or the error that cut it short.
async fn answer_of(req: reqwest::RequestBuilder) -> Result<(StatusCode, bytes::Bytes), reqwest::Error> {
    let resp = req.send().await?;
    let status = resp.status();
    Ok((status, resp.bytes().await?))
}

async fn pause(d: Duration, stop: &mut watch::Receiver<bool>) -> bool {
    if *stop.borrow() {
        return true;
    }
    tokio::select! {
        () = tokio::time::sleep(d) => *stop.borrow(),
        _ = stop.changed() => true,
    }
}

/// How a reader paces itself.
#[derive(Copy, Clone)]
struct Pace {
    /// Pause between two requests.
    gap: Duration,
    /// Least time between two questions about the past.
    past_every: Duration,
}

async fn reader(shared: Arc<Shared>, seed: u64, pace: Pace, mut stop: watch::Receiver<bool>) {
    let mut rng = Rng::new(seed);
    let mut cursors = Cursors {
        provider: rng.below(PROVIDERS.len()),
        ..Cursors::default()
    };
    let mut last_past: Option<Instant> = None;
    let gap = pace.gap;
    while !*stop.borrow() {
        let mut read = MIX[rng.below(MIX.len())];
        if read.is_past() {
            if last_past.is_some_and(|t| t.elapsed() < pace.past_every) {
                // Another route instead: the past is asked about now and then.
                read = MIX[rng.below(MIX.len() - PAST.len())];
            } else {
                last_past = Some(Instant::now());
            }
        }
        shared.read(read, &mut rng, &mut cursors).await;
        if !gap.is_zero() && pause(gap, &mut stop).await {
            break;
        }
    }
}

async fn scanner(shared: Arc<Shared>, gap: Duration, mut stop: watch::Receiver<bool>) {
    const LABEL: &str = "POST /api/v1/engine/scan (wait)";
    while !*stop.borrow() {
        let started = Instant::now();
        let mut req = shared
            .http
            .post(format!("{}/api/v1/engine/scan", shared.base))
            .bearer_auth(&shared.token)
            .json(&json!({ "wait": true }));
        req = req.timeout(START_DEADLINE);
        let answer = answer_of(req).await;
        let took = started.elapsed();
        let again = match answer {
            Ok((status, _)) if status == StatusCode::CONFLICT => {
                // Another scan runs (the daemon's own): try again shortly.
                shared.record(LABEL, Some(status), took);
                Duration::from_secs(1)
            }
            Ok((status, body)) => {
                shared.record(LABEL, Some(status), took);
                if status.is_success() {
                    shared.scans.fetch_add(1, Ordering::Relaxed);
                    let ms = serde_json::from_slice::<Value>(&body)
                        .ok()
                        .and_then(|v| v.get("duration_ms").and_then(Value::as_u64));
                    shared.scan_millis.lock().push(ms.unwrap_or(took.as_millis() as u64));
                } else {
                    let text = String::from_utf8_lossy(&body[..body.len().min(300)]).into_owned();
                    shared.fail(format!("{LABEL}: {}: {text}", status.as_u16()));
                }
                gap
            }
            Err(e) => {
                shared.record(LABEL, None, took);
                shared.fail(format!("{LABEL}: no answer: {e}"));
                gap
            }
        };
        if pause(again, &mut stop).await {
            break;
        }
    }
}

fn ws_url(base: &str) -> String {
    let rest = base
        .strip_prefix("https://")
        .map(|r| format!("wss://{r}"))
        .or_else(|| base.strip_prefix("http://").map(|r| format!("ws://{r}")))
        .unwrap_or_else(|| format!("ws://{base}"));
    format!("{rest}/events")
}

/// Why a WebSocket session ended.
enum SessionEnd {
    /// Its time was up, or the run stopped.
    Done,
    /// Something is wrong (said in the string).
    Broken(String),
}

/// A client of `/events`: connected for `session` at a time, each time
/// asking for the events after the last it saw minus [`WS_REPLAY`]; each
/// event must follow the one before it (no gap, no duplicate).
async fn ws_client(shared: Arc<Shared>, session: Duration, mut stop: watch::Receiver<bool>) {
    let mut seen = 0u64;
    while !*stop.borrow() {
        shared.ws_connects.fetch_add(1, Ordering::Relaxed);
        match ws_session(&shared, session, &mut seen, &mut stop).await {
            SessionEnd::Done => {}
            SessionEnd::Broken(why) => {
                shared.fail(format!("/events: {why}"));
                if pause(Duration::from_secs(1), &mut stop).await {
                    break;
                }
            }
        }
    }
}

async fn ws_session(
    shared: &Shared,
    session: Duration,
    seen: &mut u64,
    stop: &mut watch::Receiver<bool>,
) -> SessionEnd {
    let mut req = match ws_url(&shared.base).into_client_request() {
        Ok(r) => r,
        Err(e) => return SessionEnd::Broken(format!("bad url: {e}")),
    };
    match format!("Bearer {}", shared.token).parse() {
        Ok(v) => {
            req.headers_mut().insert("authorization", v);
        }
        Err(e) => return SessionEnd::Broken(format!("bad token: {e}")),
    }
    let mut ws = match tokio_tungstenite::connect_async(req).await {
        Ok((ws, _)) => ws,
        Err(e) => return SessionEnd::Broken(format!("connect: {e}")),
    };
    let since = seen.saturating_sub(WS_REPLAY);
    if let Err(e) = ws.send(Message::text(json!({ "since": since }).to_string())).await {
        return SessionEnd::Broken(format!("send: {e}"));
    }
    let mut last = since;
    let end = tokio::time::sleep(session);
    tokio::pin!(end);
    let outcome = loop {
        let msg = tokio::select! {
            () = &mut end => break SessionEnd::Done,
            _ = stop.changed() => break SessionEnd::Done,
            msg = ws.next() => msg,
        };
        let text = match msg {
            Some(Ok(Message::Text(t))) => t,
            Some(Ok(Message::Close(frame))) => {
                return SessionEnd::Broken(format!("closed by the daemon: {frame:?}"));
            }
            Some(Ok(_)) => continue,
            Some(Err(e)) => return SessionEnd::Broken(format!("read: {e}")),
            None => return SessionEnd::Broken("stream ended".into()),
        };
        let v: Value = match serde_json::from_str(text.as_str()) {
            Ok(v) => v,
            Err(e) => return SessionEnd::Broken(format!("not JSON: {e}")),
        };
        if let Some(err) = v.get("error") {
            return SessionEnd::Broken(format!("error frame: {err}"));
        }
        let Some(seq) = v.get("seq").and_then(Value::as_u64) else {
            return SessionEnd::Broken(format!("frame without seq: {text}"));
        };
        if seq != last + 1 {
            return SessionEnd::Broken(format!("event {seq} after {last}: a gap or a duplicate"));
        }
        last = seq;
        *seen = (*seen).max(seq);
        shared.ws_events.fetch_add(1, Ordering::Relaxed);
    };
    let _ = ws.close(None).await;
    outcome
}

/// The daemon under load.
struct Target {
    pid: u32,
    child: Option<tokio::process::Child>,
    /// The data directory made for the run, removed at the end.
    made_dir: Option<PathBuf>,
    log: Option<PathBuf>,
}

impl Target {
    fn alive(&mut self) -> bool {
        match &mut self.child {
            Some(c) => matches!(c.try_wait(), Ok(None)),
            None => Path::new(&format!("/proc/{}", self.pid)).exists(),
        }
    }

    /// The end of the daemon's log, for a daemon that died.
    fn log_tail(&self) -> String {
        let Some(path) = &self.log else { return String::new() };
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }

    /// Stops a daemon this run started (SIGTERM, then SIGKILL past the
    /// deadline) and removes the data directory made for it.
    async fn finish(mut self, keep: bool) {
        if let Some(child) = &mut self.child {
            if let Ok(pid) = i32::try_from(self.pid) {
                let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGTERM);
            }
            if tokio::time::timeout(STOP_DEADLINE, child.wait()).await.is_err() {
                eprintln!("the daemon did not stop within {STOP_DEADLINE:?}; killing it");
                let _ = child.kill().await;
            }
        }
        if let Some(dir) = self.made_dir.take() {
            if keep {
                println!("data directory kept: {}", dir.display());
            } else if let Err(e) = std::fs::remove_dir_all(&dir) {
                eprintln!("cannot remove {}: {e}", dir.display());
            }
        }
    }
}

/// Starts `svc daemon --mock` on an ephemeral port with its own data
/// directory; returns it with its address and token.
async fn start_daemon(args: &SoakArgs) -> anyhow::Result<(Target, String, String)> {
    let (dir, made) = match &args.data_dir {
        Some(d) => (d.clone(), false),
        None => {
            let d = std::env::temp_dir().join(format!("svc-soak-{}", std::process::id()));
            (d, true)
        }
    };
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let config = dir.join(paths::CONFIG_FILE);
    if !config.exists() {
        // The driver scans; the daemon's own scheduler only scans at start.
        std::fs::write(&config, "[daemon]\nscan_interval = \"24h\"\n")
            .with_context(|| format!("cannot write {}", config.display()))?;
    }
    let log_path = dir.join("daemon.log");
    let log = std::fs::File::create(&log_path).with_context(|| format!("cannot create {}", log_path.display()))?;
    let exe = std::env::current_exe().context("cannot find this program to start the daemon")?;
    let mut child = tokio::process::Command::new(exe)
        .args(["daemon", "--mock", "--mock-scale", &args.scale.to_string()])
        .args(["--listen", "127.0.0.1:0", "--log-format", "text"])
        .env("SVC_DATA_DIR", &dir)
        .env("NO_COLOR", "1")
        .env_remove("SVC_URL")
        .env_remove("SVC_TOKEN")
        .stdin(std::process::Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .kill_on_drop(true)
        .spawn()
        .context("cannot start the daemon")?;
    let pid = child.id().context("the daemon exited at once")?;
    let deadline = Instant::now() + START_DEADLINE;
    let addr = loop {
        let text = std::fs::read_to_string(&log_path).unwrap_or_default();
        if let Some(addr) = text.lines().find_map(listen_address) {
            break addr;
        }
        if !matches!(child.try_wait(), Ok(None)) {
            bail!("the daemon exited while starting:\n{text}");
        }
        if Instant::now() > deadline {
            bail!("the daemon did not listen within {START_DEADLINE:?}:\n{text}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let token = std::fs::read_to_string(dir.join(paths::TOKEN_FILE))
        .context("the daemon wrote no token")?
        .trim()
        .to_owned();
    let target = Target {
        pid,
        child: Some(child),
        made_dir: made.then_some(dir),
        log: Some(log_path),
    };
    Ok((target, format!("http://{addr}"), token))
}

/// `ADDR` of a line with `listening on http://ADDR`.
fn listen_address(line: &str) -> Option<String> {
    const MARK: &str = "listening on http://";
    let rest = &line[line.find(MARK)? + MARK.len()..];
    let end = rest
        .find(|c: char| c.is_whitespace() || c == '"' || c == '\\' || c.is_control())
        .unwrap_or(rest.len());
    Some(rest[..end].to_owned())
}

/// One reading of the daemon's memory and of the run so far.
#[derive(Clone)]
struct Sample {
    at: Duration,
    phase: &'static str,
    rss_kib: u64,
    /// Lowest and highest `VmRSS` polled (every second) since the sample before.
    low_kib: u64,
    high_kib: u64,
    anon_kib: u64,
    threads: u64,
    metric_rss: Option<u64>,
    nodes: Option<u64>,
    edges: Option<u64>,
    scans: u64,
    requests: u64,
    failures: u64,
    ws_events: u64,
}

impl Sample {
    /// Whether the graph's rows and the daemon's metric were read too
    /// (every sample period; the burst's samples in between are memory only).
    fn full(&self) -> bool {
        self.nodes.is_some() || self.metric_rss.is_some()
    }
}

/// The lowest and highest `VmRSS` polled over a stretch of time.
#[derive(Copy, Clone)]
struct Range {
    low: u64,
    high: u64,
}

impl Range {
    fn new(kib: u64) -> Range {
        Range { low: kib, high: kib }
    }

    fn add(&mut self, kib: u64) {
        self.low = self.low.min(kib);
        self.high = self.high.max(kib);
    }
}

/// `VmRSS`, `RssAnon` and `Threads` of `/proc/<pid>/status`.
fn proc_status(pid: u32) -> Option<(u64, u64, u64)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse::<u64>().ok())
    };
    Some((
        field("VmRSS:")?,
        field("RssAnon:").unwrap_or(0),
        field("Threads:").unwrap_or(0),
    ))
}

/// The value of the unlabelled metric `name` in a Prometheus text body.
fn metric(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .find_map(|l| l.strip_prefix(name).and_then(|r| r.strip_prefix(' ')))
        .and_then(|v| v.trim().parse().ok())
}

async fn take_sample(
    shared: &Shared,
    pid: u32,
    at: Duration,
    phase: &'static str,
    full: bool,
    range: Range,
) -> Option<Sample> {
    let (rss_kib, anon_kib, threads) = proc_status(pid)?;
    let (mut metric_rss, mut nodes, mut edges) = (None, None, None);
    if full {
        let metrics = shared
            .http
            .get(format!("{}/metrics", shared.base))
            .timeout(READ_TIMEOUT)
            .send()
            .await;
        if let Ok(resp) = metrics
            && let Ok(text) = resp.text().await
        {
            metric_rss = metric(&text, "process_resident_memory_bytes").map(|v| v as u64);
        }
        if let Some(stats) = shared
            .get_json("GET /api/v1/graph/stats", "/api/v1/graph/stats", &[])
            .await
        {
            nodes = stats.get("total_nodes").and_then(Value::as_u64);
            edges = stats.get("total_edges").and_then(Value::as_u64);
        }
    }
    let mut range = range;
    range.add(rss_kib);
    Some(Sample {
        at,
        phase,
        rss_kib,
        low_kib: range.low,
        high_kib: range.high,
        anon_kib,
        threads,
        metric_rss,
        nodes,
        edges,
        scans: shared.scans.load(Ordering::Relaxed),
        requests: shared.requests.load(Ordering::Relaxed),
        failures: shared.failures.load(Ordering::Relaxed),
        ws_events: shared.ws_events.load(Ordering::Relaxed),
    })
}

fn mb(kib: u64) -> String {
    format!("{:.0}", kib as f64 / 1024.0)
}

/// The change from `a` to `b`, in MB with a sign.
fn delta(a: u64, b: u64) -> String {
    format!("{:+.0}", (b as f64 - a as f64) / 1024.0)
}

fn opt(v: Option<u64>) -> String {
    v.map_or_else(|| "-".into(), |v| v.to_string())
}

fn clock(d: Duration) -> String {
    format!("{}:{:02}", d.as_secs() / 60, d.as_secs() % 60)
}

const HEADER: &str = "  min:s  phase     VmRSS MB  low MB  high MB  RssAnon MB  metric MB  threads  node rows  edge rows  scans  requests  failures  ws events";

fn print_sample(s: &Sample) {
    println!(
        "{:>7}  {:<8}  {:>8}  {:>6}  {:>7}  {:>10}  {:>9}  {:>7}  {:>9}  {:>9}  {:>5}  {:>8}  {:>8}  {:>9}",
        clock(s.at),
        s.phase,
        mb(s.rss_kib),
        mb(s.low_kib),
        mb(s.high_kib),
        mb(s.anon_kib),
        s.metric_rss
            .map_or_else(|| "-".into(), |b| format!("{:.0}", b as f64 / 1048576.0)),
        s.threads,
        opt(s.nodes),
        opt(s.edges),
        s.scans,
        s.requests,
        s.failures,
        s.ws_events,
    );
}

fn percentile(sorted: &[u32], p: f64) -> u32 {
    if sorted.is_empty() {
        return 0;
    }
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn check(args: &SoakArgs) -> anyhow::Result<()> {
    let tail = args.burst + args.after_burst;
    if tail > args.duration {
        bail!(
            "--burst ({:?}) and --after-burst ({:?}) do not fit in --duration ({:?})",
            args.burst,
            args.after_burst,
            args.duration
        );
    }
    if args.warmup + tail > args.duration {
        bail!("--warmup leaves no steady part before the burst");
    }
    if args.sample.is_zero() {
        bail!("--sample must be more than zero");
    }
    Ok(())
}

pub async fn run(args: SoakArgs) -> anyhow::Result<ExitCode> {
    check(&args)?;
    let (mut target, base, token) = match &args.attach {
        Some(url) => {
            let token = match &args.token {
                Some(t) => t.clone(),
                None => std::fs::read_to_string(paths::data_dir().join(paths::TOKEN_FILE))
                    .context("no token: pass --token or set SVC_DATA_DIR")?
                    .trim()
                    .to_owned(),
            };
            let pid = args.pid.context("--attach needs --pid")?;
            let target = Target {
                pid,
                child: None,
                made_dir: None,
                log: None,
            };
            (target, url.trim_end_matches('/').to_owned(), token)
        }
        None => start_daemon(&args).await?,
    };
    let http = reqwest::Client::builder()
        .user_agent(concat!("svc-bench-soak/", env!("CARGO_PKG_VERSION")))
        .connect_timeout(Duration::from_secs(10))
        .timeout(READ_TIMEOUT)
        .pool_max_idle_per_host(args.readers + args.burst_readers + 4)
        .build()
        .context("cannot build the HTTP client")?;
    let shared = Arc::new(Shared {
        http,
        base,
        token,
        routes: Mutex::default(),
        failures: AtomicU64::new(0),
        requests: AtomicU64::new(0),
        ws_events: AtomicU64::new(0),
        ws_connects: AtomicU64::new(0),
        scans: AtomicU64::new(0),
        scan_millis: Mutex::default(),
        crns: RwLock::default(),
        waste: RwLock::default(),
    });
    let outcome = match settle(&shared, &mut target).await {
        Ok(()) => soak(&args, &shared, &mut target).await,
        Err(e) => Err(e),
    };
    let died = !target.alive();
    if died {
        eprintln!("the daemon died; the end of its log:\n{}", target.log_tail());
    }
    target.finish(args.keep).await;
    let clean = outcome?;
    Ok(if clean && !died {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Waits until the daemon is ready and a scan of the driver's own has
/// completed, then fills the pools of resources the readers ask about.
async fn settle(shared: &Shared, target: &mut Target) -> anyhow::Result<()> {
    let started = Instant::now();
    let deadline = started + START_DEADLINE;
    let ready = format!("{}/readyz", shared.base);
    loop {
        if !target.alive() {
            bail!("the daemon exited while starting:\n{}", target.log_tail());
        }
        if let Ok(r) = shared.http.get(&ready).send().await
            && r.status().is_success()
        {
            break;
        }
        if Instant::now() > deadline {
            bail!("the daemon was not ready within {START_DEADLINE:?}");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    loop {
        let resp = shared
            .http
            .post(format!("{}/api/v1/engine/scan", shared.base))
            .bearer_auth(&shared.token)
            .json(&json!({ "wait": true }))
            .timeout(START_DEADLINE)
            .send()
            .await
            .context("the first scan got no answer")?;
        match resp.status() {
            s if s.is_success() => break,
            StatusCode::CONFLICT => {}
            s => bail!("the first scan failed: {s}: {}", resp.text().await.unwrap_or_default()),
        }
        if Instant::now() > deadline {
            bail!("no scan completed within {START_DEADLINE:?}");
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    let mut cursor = String::new();
    let mut crns = Vec::new();
    while crns.len() < POOL {
        let mut q = vec![("limit", "1000".to_owned())];
        if !cursor.is_empty() {
            q.push(("cursor", cursor.clone()));
        }
        let Some(page) = shared
            .get_json("GET /api/v1/graph/nodes (pages of 1000)", "/api/v1/graph/nodes", &q)
            .await
        else {
            bail!("cannot list the graph's nodes");
        };
        crns_in(&page, &mut crns);
        cursor = next_cursor(&page);
        if cursor.is_empty() {
            break;
        }
    }
    crns.truncate(POOL);
    *shared.crns.write() = crns;
    let q = [("limit", "100".to_owned())];
    if let Some(v) = shared
        .get_json("GET /api/v1/remediation/queue", "/api/v1/remediation/queue", &q)
        .await
    {
        let mut waste = Vec::new();
        crns_in(&v, &mut waste);
        *shared.waste.write() = waste;
    }
    println!(
        "daemon pid {} at {} ready, first scans done in {:.0} s",
        target.pid,
        shared.base,
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// The run itself; whether it was clean (no failure).
async fn soak(args: &SoakArgs, shared: &Arc<Shared>, target: &mut Target) -> anyhow::Result<bool> {
    let burst_at = args.duration - args.burst - args.after_burst;
    let burst_end = burst_at + args.burst;
    println!(
        "soak: {:?} ({} readers, {} WebSocket clients, a scan every {:?} after the last; burst of {} readers at {}:{:02} for {:?}); memory every {:?}",
        args.duration,
        args.readers,
        args.ws_clients,
        args.scan_pause,
        args.burst_readers,
        burst_at.as_secs() / 60,
        burst_at.as_secs() % 60,
        args.burst,
        args.sample,
    );
    let (stop_tx, stop_rx) = watch::channel(false);
    let (scan_stop_tx, scan_stop_rx) = watch::channel(false);
    let mut tasks = Vec::new();
    tasks.push(tokio::spawn(scanner(shared.clone(), args.scan_pause, scan_stop_rx)));
    for i in 0..args.readers {
        let pace = Pace {
            gap: args.reader_pause,
            past_every: args.past_every,
        };
        tasks.push(tokio::spawn(reader(
            shared.clone(),
            i as u64 + 1,
            pace,
            stop_rx.clone(),
        )));
    }
    for _ in 0..args.ws_clients {
        tasks.push(tokio::spawn(ws_client(
            shared.clone(),
            args.ws_session,
            stop_rx.clone(),
        )));
    }
    println!("{HEADER}");
    let start = Instant::now();
    let mut samples = Vec::new();
    let mut next_full = Duration::ZERO;
    let mut next_burst = burst_at;
    let mut burst: Option<(watch::Sender<bool>, Vec<tokio::task::JoinHandle<()>>)> = None;
    let mut died = false;
    // `VmRSS` polled every second: since the last sample, and the burst's highest.
    let mut period: Option<Range> = None;
    let mut burst_peak: Option<(Duration, u64)> = None;
    loop {
        let now = start.elapsed();
        let Some((rss, _, _)) = proc_status(target.pid).filter(|_| target.alive()) else {
            died = true;
            break;
        };
        match &mut period {
            Some(p) => p.add(rss),
            None => period = Some(Range::new(rss)),
        }
        if now >= burst_at && now < burst_end + BURST_SAMPLE && burst_peak.is_none_or(|(_, k)| rss > k) {
            burst_peak = Some((now, rss));
        }
        if burst.is_none() && now >= burst_at && now < burst_end {
            let (tx, rx) = watch::channel(false);
            let pace = Pace {
                gap: Duration::ZERO,
                past_every: args.past_every,
            };
            let handles = (0..args.burst_readers)
                .map(|i| tokio::spawn(reader(shared.clone(), 1000 + i as u64, pace, rx.clone())))
                .collect();
            burst = Some((tx, handles));
            if args.no_scans_from_burst {
                let _ = scan_stop_tx.send(true);
            }
        }
        if now >= burst_end
            && let Some((tx, handles)) = burst.take()
        {
            // The burst's readers stop after the request each has in
            // flight; they are joined with the others at the end.
            let _ = tx.send(true);
            tasks.extend(handles);
        }
        let phase = if now < args.warmup {
            "warm-up"
        } else if now < burst_at {
            "steady"
        } else if now < burst_end {
            "burst"
        } else {
            "after"
        };
        if now >= next_full {
            let range = period.take().unwrap_or(Range::new(rss));
            if let Some(s) = take_sample(shared, target.pid, now, phase, true, range).await {
                print_sample(&s);
                samples.push(s);
            }
            // A sample late by more than a period (a slow `/metrics`
            // under load) does not bring on a run of samples to catch up.
            while next_full <= start.elapsed() {
                next_full += args.sample;
            }
            if next_full > args.duration {
                break;
            }
            next_burst = next_burst.max(now + BURST_SAMPLE);
        } else if now >= next_burst && now < burst_end {
            let range = period.unwrap_or(Range::new(rss));
            if let Some(s) = take_sample(shared, target.pid, now, phase, false, range).await {
                print_sample(&s);
                samples.push(s);
            }
            while next_burst <= start.elapsed() {
                next_burst += BURST_SAMPLE;
            }
        }
        let wake = if now < burst_end {
            next_full.min(next_burst)
        } else {
            next_full
        };
        let wait = wake.saturating_sub(start.elapsed()).min(Duration::from_secs(1));
        tokio::time::sleep(wait).await;
    }
    let _ = stop_tx.send(true);
    let _ = scan_stop_tx.send(true);
    if let Some((tx, handles)) = burst.take() {
        let _ = tx.send(true);
        tasks.extend(handles);
    }
    for t in tasks {
        // A scan in flight is answered before its task ends.
        let _ = tokio::time::timeout(START_DEADLINE, t).await;
    }
    report(args, shared, &samples, burst_at, burst_end, burst_peak);
    Ok(!died && shared.failures.load(Ordering::Relaxed) == 0)
}

fn report(
    args: &SoakArgs,
    shared: &Shared,
    samples: &[Sample],
    burst_at: Duration,
    burst_end: Duration,
    burst_peak: Option<(Duration, u64)>,
) {
    println!();
    println!(
        "{:<46}  {:>8}  {:>5}  {:>5}  {:>7}  {:>7}  {:>7}",
        "route", "requests", "4xx", "fail", "p50 ms", "p99 ms", "max ms"
    );
    let routes = shared.routes.lock();
    for (label, r) in routes.iter() {
        let mut ms = r.millis.clone();
        ms.sort_unstable();
        println!(
            "{label:<46}  {:>8}  {:>5}  {:>5}  {:>7}  {:>7}  {:>7}",
            r.ok + r.client_errors + r.failures,
            r.client_errors,
            r.failures,
            percentile(&ms, 0.5),
            percentile(&ms, 0.99),
            ms.last().copied().unwrap_or(0),
        );
    }
    drop(routes);
    let mut scan_ms = shared.scan_millis.lock().clone();
    scan_ms.sort_unstable();
    println!(
        "scans {} (duration_ms median {}, max {}); WebSocket events received {} over {} connections",
        scan_ms.len(),
        scan_ms.get(scan_ms.len() / 2).copied().unwrap_or(0),
        scan_ms.last().copied().unwrap_or(0),
        shared.ws_events.load(Ordering::Relaxed),
        shared.ws_connects.load(Ordering::Relaxed),
    );
    let full: Vec<&Sample> = samples.iter().filter(|s| s.full()).collect();
    let warm = full.iter().find(|s| s.at >= args.warmup);
    let pre = full.iter().rev().find(|s| s.at <= burst_at);
    let last = full.last();
    println!();
    if let (Some(warm), Some(pre)) = (warm, pre) {
        let steady: Vec<&&Sample> = full.iter().filter(|s| s.at >= warm.at && s.at <= pre.at).collect();
        let lowest = steady.iter().map(|s| s.low_kib).min().unwrap_or(0);
        let highest = steady.iter().map(|s| s.high_kib).max().unwrap_or(0);
        println!(
            "RSS after warm-up ({}): {} MB (the period before it: low {} MB, high {} MB)",
            clock(warm.at),
            mb(warm.rss_kib),
            mb(warm.low_kib),
            mb(warm.high_kib)
        );
        println!(
            "RSS drift over the steady part ({} to {}): {} MB sample to sample, {} MB low to low, {} MB high to high (lowest {} MB, highest {} MB); node rows {} -> {}, edge rows {} -> {}",
            clock(warm.at),
            clock(pre.at),
            delta(warm.rss_kib, pre.rss_kib),
            delta(warm.low_kib, pre.low_kib),
            delta(warm.high_kib, pre.high_kib),
            mb(lowest),
            mb(highest),
            opt(warm.nodes),
            opt(pre.nodes),
            opt(warm.edges),
            opt(pre.edges),
        );
        if let Some((at, peak)) = burst_peak {
            println!(
                "RSS peak under the burst ({} readers more): {} MB at {} ({} MB over the last sample before it, {} MB over that period's low)",
                args.burst_readers,
                mb(peak),
                clock(at),
                delta(pre.rss_kib, peak),
                delta(pre.low_kib, peak),
            );
            if let Some(last) = last {
                let grown = peak.saturating_sub(pre.low_kib) as f64;
                let back = peak.saturating_sub(last.low_kib) as f64;
                let given = if grown > 0.0 {
                    format!(
                        "{:.0}% of what the burst added given back",
                        (back / grown * 100.0).min(100.0)
                    )
                } else {
                    "the burst added nothing over it".to_owned()
                };
                println!(
                    "RSS after the burst ({} after it ended): {} MB, the period's low {} MB ({} MB over the low before the burst; {given})",
                    clock(last.at.saturating_sub(burst_end)),
                    mb(last.rss_kib),
                    mb(last.low_kib),
                    delta(pre.low_kib, last.low_kib),
                );
            }
        }
    }
    println!(
        "requests {}, failures {}",
        shared.requests.load(Ordering::Relaxed),
        shared.failures.load(Ordering::Relaxed)
    );
}
