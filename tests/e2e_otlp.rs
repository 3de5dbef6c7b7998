//! OTLP/HTTP trace export (SPEC 4.9) end to end: a real OTLP/HTTP receiver
//! on loopback in this process decodes the protobuf export requests
//! (`opentelemetry-proto`'s types) of a real daemon scanning through the
//! real `svc-plugin-mock` process, and a daemon whose collector cannot be
//! reached scans as fast as one that exports nothing.

#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

mod common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::post;
use common::{Daemon, POLL_PAUSE, QUIET_CONFIG, SCAN_DEADLINE, SVC, Sources};
use opentelemetry_proto::tonic::collector::trace::v1::{ExportTraceServiceRequest, ExportTraceServiceResponse};
use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use prost::Message;

/// The ten phases, in SPEC 4.9's order.
const PHASES: [&str; 10] = [
    "engine.init",
    "engine.time_travel",
    "engine.plugin_scan",
    "engine.heuristics",
    "engine.pattern",
    "engine.ghost_linker",
    "engine.formal_verify",
    "engine.sau",
    "engine.policy",
    "engine.signal_analysis",
];

/// One received span, flattened.
#[derive(Clone, Debug)]
struct Span {
    service: String,
    scope: String,
    trace_id: Vec<u8>,
    span_id: Vec<u8>,
    parent: Vec<u8>,
    name: String,
    start: u64,
    end: u64,
    attrs: HashMap<String, String>,
}

fn text(kvs: &[KeyValue]) -> HashMap<String, String> {
    kvs.iter()
        .map(|kv| {
            let v = match kv.value.as_ref().and_then(|v| v.value.as_ref()) {
                Some(AnyValue::StringValue(s)) => s.clone(),
                Some(AnyValue::IntValue(i)) => i.to_string(),
                Some(AnyValue::BoolValue(b)) => b.to_string(),
                Some(AnyValue::DoubleValue(d)) => d.to_string(),
                other => format!("{other:?}"),
            };
            (kv.key.clone(), v)
        })
        .collect()
}

/// What the receiver got: spans, and the export requests that were not
/// protobuf `ExportTraceServiceRequest`s.
#[derive(Clone, Default)]
struct Received {
    spans: Arc<Mutex<Vec<Span>>>,
    bad: Arc<Mutex<Vec<String>>>,
}

impl Received {
    fn spans(&self) -> Vec<Span> {
        self.spans.lock().unwrap().clone()
    }
}

async fn traces(State(got): State<Received>, headers: axum::http::HeaderMap, body: Bytes) -> impl IntoResponse {
    let ct = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if ct != "application/x-protobuf" {
        got.bad.lock().unwrap().push(format!("content type {ct:?}"));
        return (StatusCode::UNSUPPORTED_MEDIA_TYPE, Vec::new());
    }
    let req = match ExportTraceServiceRequest::decode(body) {
        Ok(r) => r,
        Err(e) => {
            got.bad.lock().unwrap().push(e.to_string());
            return (StatusCode::BAD_REQUEST, Vec::new());
        }
    };
    let mut spans = got.spans.lock().unwrap();
    for rs in req.resource_spans {
        let resource = text(&rs.resource.map(|r| r.attributes).unwrap_or_default());
        let service = resource.get("service.name").cloned().unwrap_or_default();
        for ss in rs.scope_spans {
            let scope = ss.scope.map(|s| s.name).unwrap_or_default();
            for s in ss.spans {
                spans.push(Span {
                    service: service.clone(),
                    scope: scope.clone(),
                    trace_id: s.trace_id,
                    span_id: s.span_id,
                    parent: s.parent_span_id,
                    name: s.name,
                    start: s.start_time_unix_nano,
                    end: s.end_time_unix_nano,
                    attrs: text(&s.attributes),
                });
            }
        }
    }
    (StatusCode::OK, ExportTraceServiceResponse::default().encode_to_vec())
}

/// A loopback OTLP/HTTP receiver: its base address and what it receives.
async fn receiver() -> (String, Received) {
    let got = Received::default();
    let app = axum::Router::new()
        .route("/v1/traces", post(traces))
        .with_state(got.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{addr}"), got)
}

fn mock_plugin() -> PathBuf {
    let path = PathBuf::from(SVC).with_file_name("svc-plugin-mock");
    assert!(
        path.exists(),
        "{} is missing: run `cargo build -p svc-plugin-mock` first",
        path.display()
    );
    path
}

fn install_mock_plugin(dir: &Path) {
    let out = Command::new(SVC)
        .args(["plugins", "install-local", "--name", "mock"])
        .arg(mock_plugin())
        .env("SVC_DATA_DIR", dir)
        .output()
        .expect("run svc plugins install-local");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// Polls `spans` until `done` holds of them.
async fn wait_spans(got: &Received, d: &Daemon, done: impl Fn(&[Span]) -> bool) -> Vec<Span> {
    let deadline = Instant::now() + SCAN_DEADLINE;
    loop {
        let spans = got.spans();
        if done(&spans) {
            return spans;
        }
        assert!(
            got.bad.lock().unwrap().is_empty(),
            "bad requests: {:?}",
            got.bad.lock().unwrap()
        );
        assert!(
            Instant::now() < deadline,
            "spans not received within {SCAN_DEADLINE:?}: {:?}\n{}",
            spans.iter().map(|s| (&s.service, &s.name)).collect::<Vec<_>>(),
            d.log.text()
        );
        tokio::time::sleep(POLL_PAUSE).await;
    }
}

fn one<'a>(spans: &'a [Span], what: &str, f: impl Fn(&Span) -> bool) -> &'a Span {
    let found: Vec<&Span> = spans.iter().filter(|s| f(s)).collect();
    assert_eq!(found.len(), 1, "{what}: {found:#?}");
    found[0]
}

#[tokio::test]
async fn a_scan_is_one_trace_with_the_phases_and_the_plugins_spans() {
    let (endpoint, got) = receiver().await;
    let dir = tempfile::tempdir().unwrap();
    install_mock_plugin(dir.path());
    std::fs::write(
        dir.path().join("config.toml"),
        format!("{QUIET_CONFIG}[plugins]\nactive = [\"mock\"]\n[plugins.config.mock]\nscale = 200\n"),
    )
    .unwrap();
    let mut d = Daemon::configure(dir.path(), 200);
    d.sources = Sources::Fallback;
    d.args = vec!["--otlp-endpoint".into(), endpoint];
    // Batches leave every 100 ms instead of every 5 s (the daemon's and the plugin's).
    d.env = vec![("OTEL_BSP_SCHEDULE_DELAY".into(), "100".into())];
    d.launch().await;
    d.wait_scan_after(0).await;
    let scan = d.api().scan_wait().await;
    assert_eq!(scan["sources"][0]["ok"], true, "{scan}");

    // The scan asked for over HTTP: its engine.run, the plugin's own spans and the request's span.
    let spans = wait_spans(&got, &d, |spans| {
        let runs: Vec<&Span> = spans.iter().filter(|s| s.name == "engine.run").collect();
        runs.len() >= 2
            && runs.iter().all(|run| {
                spans
                    .iter()
                    .any(|s| s.trace_id == run.trace_id && s.service == "svc-plugin-mock" && s.name == "plugin.scan")
            })
            && spans.iter().any(|s| s.name == "POST /api/v1/engine/scan")
    })
    .await;

    for run in spans.iter().filter(|s| s.name == "engine.run") {
        let trace: Vec<&Span> = spans.iter().filter(|s| s.trace_id == run.trace_id).collect();
        let trace: Vec<Span> = trace.into_iter().cloned().collect();
        // The root: no parent, the daemon's, scope svc/engine.
        assert!(run.parent.is_empty(), "engine.run is a root: {run:?}");
        assert_eq!((run.service.as_str(), run.scope.as_str()), ("svc", "svc/engine"));
        assert_eq!(
            one(&trace, "one engine.run per trace", |s| s.name == "engine.run").span_id,
            run.span_id
        );

        // The ten phases: children of engine.run, in SPEC order by start time.
        let mut phases: Vec<&Span> = trace.iter().filter(|s| s.parent == run.span_id).collect();
        phases.sort_by_key(|s| s.start);
        let names: Vec<&str> = phases.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, PHASES, "children of engine.run");
        for p in &phases {
            assert_eq!(p.scope, "svc/engine", "{p:?}");
            assert!(
                p.start >= run.start && p.end <= run.end && p.start <= p.end,
                "{p:?} inside {run:?}"
            );
        }
        for w in phases.windows(2) {
            assert!(w[0].end <= w[1].start, "phases run one after another: {w:?}");
        }

        // The host's plugin.scan under engine.plugin_scan, the plugin's under it.
        let plugin_phase = phases[2];
        let host = one(&trace, "the host's plugin.scan", |s| {
            s.service == "svc" && s.name == "plugin.scan"
        });
        assert_eq!(host.parent, plugin_phase.span_id, "{host:?}");
        assert_eq!(host.scope, "svc/plugin-host");
        assert_eq!(host.attrs.get("plugin").map(String::as_str), Some("mock"));
        let inner = one(&trace, "the plugin's plugin.scan", |s| {
            s.service == "svc-plugin-mock" && s.name == "plugin.scan"
        });
        assert_eq!(inner.parent, host.span_id, "{inner:?}");
        assert_eq!(inner.scope, "svc/plugin");
        assert!(inner.start >= host.start, "{inner:?} starts inside {host:?}");
        // Every span of the trace hangs off engine.run.
        let ids: Vec<&Vec<u8>> = trace.iter().map(|s| &s.span_id).collect();
        for s in &trace {
            assert!(s.span_id == run.span_id || ids.contains(&&s.parent), "orphan {s:?}");
        }
    }

    // The plugin's handshake joined the trace of the scan that launched it.
    let handshake = one(&spans, "the plugin's handshake", |s| {
        s.service == "svc-plugin-mock" && s.name == "plugin.handshake"
    });
    assert!(
        spans
            .iter()
            .any(|s| s.span_id == handshake.parent && s.name == "plugin.handshake")
    );

    // A span per HTTP request, with route and status.
    let req = spans.iter().find(|s| s.name == "POST /api/v1/engine/scan").unwrap();
    assert_eq!(req.scope, "svc/http");
    assert_eq!(
        req.attrs.get("http.route").map(String::as_str),
        Some("/api/v1/engine/scan")
    );
    assert_eq!(req.attrs.get("http.request.method").map(String::as_str), Some("POST"));
    assert_eq!(
        req.attrs.get("http.response.status_code").map(String::as_str),
        Some("200")
    );
    let ready = spans.iter().find(|s| s.name == "GET /readyz").unwrap();
    assert_eq!(ready.attrs.get("http.route").map(String::as_str), Some("/readyz"));
    d.stop().await;
}

/// Median scan duration (ms) of `n` scans asked for over the API.
async fn scan_ms(d: &Daemon, n: usize) -> u64 {
    let mut ms = Vec::new();
    for _ in 0..n {
        let r = d.api().scan_wait().await;
        ms.push(r["duration_ms"].as_u64().unwrap());
    }
    ms.sort_unstable();
    ms[n / 2]
}

#[tokio::test]
async fn an_unreachable_collector_costs_a_log_line_not_a_slower_scan() {
    // A port nobody listens on.
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let base_dir = tempfile::tempdir().unwrap();
    let mut baseline = Daemon::configure(base_dir.path(), 300);
    baseline.launch().await;
    baseline.wait_scan_after(0).await;
    let base_ms = scan_ms(&baseline, 3).await;
    baseline.stop().await;

    let dir = tempfile::tempdir().unwrap();
    let mut d = Daemon::configure(dir.path(), 300);
    d.args = vec!["--otlp-endpoint".into(), format!("http://{closed}")];
    d.env = vec![("OTEL_BSP_SCHEDULE_DELAY".into(), "50".into())];
    d.launch().await;
    d.wait_scan_after(0).await;
    let dead_ms = scan_ms(&d, 3).await;
    eprintln!("median scan: {base_ms} ms without export, {dead_ms} ms with an unreachable collector");
    // Export happens on the batch processor's thread: a scan takes what it
    // takes without export (the slack covers a busy machine).
    assert!(
        dead_ms <= base_ms * 2 + 1000,
        "scan with an unreachable collector {dead_ms} ms, without export {base_ms} ms"
    );
    assert!(
        d.log.wait_for("trace export failed", Duration::from_secs(30)).await,
        "no line about the exporter\n{}",
        d.log.text()
    );
    // Many failed exports since (one per 50 ms batch), still one line.
    scan_ms(&d, 1).await;
    let lines = d.log.text().matches("trace export failed").count();
    assert_eq!(lines, 1, "{}", d.log.text());
    // The daemon answers as before.
    d.api().get_ok("/api/v1/graph/stats").await;
    let status = d.stop().await;
    assert!(status.success(), "{status}\n{}", d.log.text());
}

#[test]
fn an_endpoint_that_is_not_a_url_stops_the_start_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let out = common::daemon_command(dir.path(), 50)
        .args(["--otlp-endpoint", "collector:4318"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("invalid --otlp-endpoint \"collector:4318\": expected an http:// or https:// URL"),
        "{stderr}"
    );
}

/// An answer with a model is traced: the tier chosen, each tool call with
/// its name, argument size, round and tier, and the escalation with why.
#[tokio::test]
async fn an_answer_with_a_model_traces_its_tier_tool_calls_and_escalation() {
    let (endpoint, got) = receiver().await;
    let (model, _fake) = common::models::fake_provider().await;
    let dir = common::data_dir();
    let mut d = Daemon::configure(dir.path(), 200);
    d.args = vec!["--otlp-endpoint".into(), endpoint];
    d.env = vec![
        ("OTEL_BSP_SCHEDULE_DELAY".into(), "100".into()),
        ("SVC_E2E_AI_KEY".into(), "sk-e2e".into()),
    ];
    d.launch().await;
    d.wait_scan_after(0).await;
    let api = d.api();
    let ai = serde_json::json!({"ai": {
        "provider": "vllm", "base_url": format!("{model}/v1"), "model": "big",
        "router_model": "small", "api_key_env": "SVC_E2E_AI_KEY"
    }});
    api.put_json("/api/v1/config", &ai).await.expect(200);
    for question in ["how many resources are there?", "please say you cannot"] {
        let r = api
            .post_json(
                "/api/v1/cortex/assimilate",
                &serde_json::json!({ "question": question }),
            )
            .await;
        assert!(r.text.ends_with("{\"type\":\"done\"}\n"), "{}", r.text);
    }
    let spans = wait_spans(&got, &d, |spans| {
        ["agent.tool_call", "agent.escalation"]
            .iter()
            .all(|n| spans.iter().any(|s| s.name == *n))
            && spans.iter().filter(|s| s.name == "agent.tier_selected").count() >= 2
    })
    .await;
    let call = one(&spans, "the tool call", |s| s.name == "agent.tool_call");
    let attr = |s: &Span, k: &str| s.attrs.get(k).cloned().unwrap_or_default();
    assert_eq!(attr(call, "tool.name"), "graph_stats", "{call:?}");
    assert_eq!(attr(call, "tool.args_bytes"), "2", "{call:?}");
    assert_eq!(
        (attr(call, "agent.round"), attr(call, "agent.active_tier")),
        ("1".into(), "router".into())
    );
    let tiers: Vec<String> = spans
        .iter()
        .filter(|s| s.name == "agent.tier_selected")
        .map(|s| attr(s, "tier"))
        .collect();
    assert_eq!(tiers, ["router", "router"]);
    let esc = one(&spans, "the escalation", |s| s.name == "agent.escalation");
    assert_eq!((attr(esc, "from"), attr(esc, "to")), ("router".into(), "deep".into()));
    assert!(attr(esc, "reason").contains("cannot answer"), "{esc:?}");
    assert!(
        spans
            .iter()
            .any(|s| s.name == "agent.model_call" && attr(s, "model") == "big")
    );
}
