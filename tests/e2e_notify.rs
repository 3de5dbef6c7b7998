//! Notifications end to end: a real daemon in mock mode sends to a real
//! HTTP receiver in this test process: a Slack message and a signed
//! webhook after a scan, retried through a receiver that fails (500) and
//! one that does not answer in time, then recovers; a scan completes while
//! the receiver hangs; `slack-test` reports what the receiver answered;
//! failures are counted in `/metrics`, which promtool accepts.

#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

mod common;

use std::collections::{HashMap, VecDeque};
use std::io::Write;
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use common::Daemon;
use serde_json::{Value, json};

/// How the receiver answers one request.
#[derive(Clone, Debug)]
enum Answer {
    Status(u16, &'static str),
    /// Never answers (the sender's timeout cuts it).
    Hang,
}

/// One request the receiver got.
#[derive(Clone, Debug)]
struct Received {
    path: String,
    headers: HashMap<String, String>,
    body: String,
    /// What it was answered: a status, or 0 for no answer.
    answered: u16,
}

impl Received {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or(Value::Null)
    }
}

#[derive(Default)]
struct Receiver {
    /// Answers to give, per path, in order; then 200 "ok".
    script: Mutex<HashMap<String, VecDeque<Answer>>>,
    got: Mutex<Vec<Received>>,
    /// Requests being held without an answer now.
    hanging: AtomicUsize,
}

/// Decrements the hanging count when the held request is dropped (the
/// sender gave up and closed the connection).
struct Held(Arc<Receiver>);

impl Drop for Held {
    fn drop(&mut self) {
        self.0.hanging.fetch_sub(1, Ordering::SeqCst);
    }
}

async fn receive(
    State(r): State<Arc<Receiver>>,
    Path(path): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> axum::response::Response {
    let answer = r
        .script
        .lock()
        .unwrap()
        .get_mut(&path)
        .and_then(VecDeque::pop_front)
        .unwrap_or(Answer::Status(200, "ok"));
    let headers: HashMap<String, String> = headers
        .iter()
        .map(|(k, v)| (k.as_str().to_owned(), v.to_str().unwrap_or_default().to_owned()))
        .collect();
    let mut record = Received {
        path,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
        answered: 0,
    };
    match answer {
        Answer::Status(code, text) => {
            record.answered = code;
            r.got.lock().unwrap().push(record);
            (StatusCode::from_u16(code).unwrap(), text).into_response()
        }
        Answer::Hang => {
            r.got.lock().unwrap().push(record);
            r.hanging.fetch_add(1, Ordering::SeqCst);
            let _held = Held(r.clone());
            std::future::pending::<()>().await;
            StatusCode::OK.into_response()
        }
    }
}

impl Receiver {
    async fn start() -> (Arc<Receiver>, SocketAddr) {
        let r = Arc::new(Receiver::default());
        let app = Router::new()
            .route("/{path}", axum::routing::post(receive))
            .with_state(r.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        (r, addr)
    }

    fn script(&self, path: &str, answers: &[Answer]) {
        self.script
            .lock()
            .unwrap()
            .insert(path.to_owned(), answers.iter().cloned().collect());
    }

    fn got(&self, path: &str) -> Vec<Received> {
        self.got
            .lock()
            .unwrap()
            .iter()
            .filter(|r| r.path == path)
            .cloned()
            .collect()
    }

    /// Waits until `path` has received a request that `pred` accepts and
    /// that was answered 200; returns every request to `path` by then.
    async fn wait_delivered(&self, path: &str, what: &str, pred: impl Fn(&Received) -> bool) -> Vec<Received> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
        loop {
            let got = self.got(path);
            if got.iter().any(|r| r.answered == 200 && pred(r)) {
                return got;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "no {what} delivered to /{path}; got {got:#?}"
            );
            tokio::time::sleep(common::POLL_PAUSE).await;
        }
    }

    async fn wait_hanging(&self) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
        while self.hanging.load(Ordering::SeqCst) == 0 {
            assert!(
                tokio::time::Instant::now() < deadline,
                "the sender never reached the receiver"
            );
            tokio::time::sleep(common::POLL_PAUSE).await;
        }
    }
}

fn kind_is(kind: &'static str) -> impl Fn(&Received) -> bool {
    move |r| {
        let v = r.json();
        v["kind"] == kind || r.headers.get("x-svc-event").is_some_and(|e| e == kind) || slack_kind(&v) == kind
    }
}

/// The kind a Slack message names in its context block (`svc · waste · ...`).
fn slack_kind(v: &Value) -> String {
    v["blocks"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|b| b["type"] == "context")
        .flat_map(|b| b["elements"].as_array().cloned().unwrap_or_default())
        .filter_map(|e| e["text"].as_str().map(str::to_owned))
        .find_map(|t| {
            t.strip_prefix("svc · ")
                .map(|rest| rest.split(" · ").next().unwrap_or_default().to_owned())
        })
        .unwrap_or_default()
}

/// HMAC-SHA256 of `body` with `secret`, in hex, by Python's `hmac` module:
/// an implementation independent of the daemon's.
fn python_hmac(secret: &str, body: &str) -> String {
    let mut child = Command::new("python3")
        .args([
            "-c",
            "import hmac,hashlib,sys; k=sys.argv[1].encode(); print(hmac.new(k, sys.stdin.buffer.read(), hashlib.sha256).hexdigest())",
            secret,
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 runs");
    child.stdin.take().unwrap().write_all(body.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// The value of the sample `name{labels}` (labels in any order).
fn sample(text: &str, name: &str, labels: &[(&str, &str)]) -> f64 {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .find_map(|line| {
            let (series, value) = line.rsplit_once(' ')?;
            let (n, rest) = series.split_once('{').unwrap_or((series, "}"));
            if n != name {
                return None;
            }
            let inside = rest.strip_suffix('}')?;
            let all = labels
                .iter()
                .all(|(k, v)| inside.split(',').any(|p| p == format!("{k}=\"{v}\"")));
            all.then(|| value.parse().ok()).flatten()
        })
        .unwrap_or(0.0)
}

async fn metrics(d: &Daemon) -> String {
    common::http_client()
        .get(format!("{}/metrics", d.base()))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

const SECRET: &str = "s3cret-for-tests";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notifications_survive_failing_and_hanging_receivers() {
    let (rx, addr) = Receiver::start().await;
    // The first Slack message meets a server error, the first webhook
    // delivery a receiver that does not answer within the timeout.
    rx.script("slack", &[Answer::Status(500, "internal error")]);
    rx.script("hook", &[Answer::Hang]);
    let dir = common::data_dir();
    std::fs::write(
        dir.path().join("config.toml"),
        format!(
            r#"[daemon]
scan_interval = "1h"

[notify]
slack_webhook = "http://{addr}/slack"
waste_threshold_usd = 0
timeout = "500ms"
backoff = "50ms"
backoff_max = "200ms"
max_attempts = 5
dashboard_url = "http://svc.example:8080"

[[notify.webhooks]]
name = "ops"
url = "http://{addr}/hook"
secret = "{SECRET}"
events = ["waste"]
"#
        ),
    )
    .unwrap();
    let mut d = Daemon::configure(dir.path(), 300);
    d.env.push(("NO_PROXY".into(), "127.0.0.1,localhost".into()));
    let launched = std::time::Instant::now();
    d.launch().await;
    let first = d.wait_scan_after(0).await;
    let first_seq = first["payload"]["scan_seq"].as_u64().unwrap();
    assert!(first["payload"]["waste_usd_mo"].as_f64().unwrap() > 0.0, "{first}");

    // Slack: a 500, then the message, with a link to the waste view.
    let slack = rx.wait_delivered("slack", "waste message", kind_is("waste")).await;
    eprintln!(
        "first waste message delivered {:?} after the daemon started",
        launched.elapsed()
    );
    let waste: Vec<&Received> = slack.iter().filter(|r| kind_is("waste")(r)).collect();
    assert!(waste.len() >= 2, "a failed attempt, then a delivered one: {waste:#?}");
    assert_eq!(waste[0].answered, 500);
    let message = waste.iter().find(|r| r.answered == 200).unwrap().json();
    assert!(message["text"].as_str().unwrap().starts_with("Waste up $"), "{message}");
    assert_eq!(message["blocks"][0]["type"], "header");
    assert!(
        message
            .to_string()
            .contains("<http://svc.example:8080/#/waste|Open in the dashboard>"),
        "{message}"
    );
    assert!(
        message["blocks"][1]["text"]["text"]
            .as_str()
            .unwrap()
            .contains(&format!("Scan {first_seq} found")),
        "{message}"
    );

    // The webhook: no answer in time, then delivered, signed, the same
    // delivery id on both attempts.
    let hook = rx.wait_delivered("hook", "waste webhook", kind_is("waste")).await;
    assert!(hook.len() >= 2, "{hook:#?}");
    assert_eq!(hook[0].answered, 0, "the first attempt was held past the timeout");
    let delivered = hook.iter().find(|r| r.answered == 200).unwrap();
    let body = delivered.json();
    assert_eq!(body["kind"], "waste");
    assert_eq!(body["event_type"], "SCAN_COMPLETED");
    assert_eq!(body["payload"]["scan_seq"], first_seq);
    assert!(body["payload"]["new_waste_usd_mo"].as_f64().unwrap() > 0.0, "{body}");
    assert!(body["summary"].as_str().unwrap().contains("wasted resources"), "{body}");
    let keys: Vec<&String> = body.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["event_type", "kind", "payload", "summary", "timestamp"]);
    assert_eq!(
        delivered.headers["x-svc-signature"],
        format!("sha256={}", python_hmac(SECRET, &delivered.body))
    );
    assert_eq!(delivered.headers["x-svc-timestamp"], body["timestamp"].to_string());
    assert_eq!(delivered.headers["x-svc-delivery"], hook[0].headers["x-svc-delivery"]);
    assert_eq!(delivered.headers["content-type"], "application/json");
    // The webhook takes waste only.
    assert!(hook.iter().all(|r| kind_is("waste")(r)), "{hook:#?}");

    // Both failures are counted; promtool accepts the exposition.
    let text = metrics(&d).await;
    let failed = |dest, reason| {
        sample(
            &text,
            "svc_notification_failures_total",
            &[("destination", dest), ("kind", "waste"), ("reason", reason)],
        )
    };
    assert!(failed("slack", "server_error") >= 1.0, "{text}");
    assert!(failed("ops", "timeout") >= 1.0, "{text}");
    for dest in ["slack", "ops"] {
        let n = sample(
            &text,
            "svc_notifications_total",
            &[("destination", dest), ("kind", "waste"), ("outcome", "delivered")],
        );
        assert_eq!(n, 1.0, "{dest}: {text}");
    }
    assert!(text.contains("# TYPE svc_notification_queue_depth gauge"), "{text}");
    promtool(&text);

    // The engine does not wait for a receiver: with no waste the next scan
    // sends nothing, and when waste comes back the Slack receiver hangs,
    // yet another scan completes while it holds the request.
    let api = d.api();
    api.put_json(
        "/api/v1/config",
        &json!({"heuristics": {"builtin": false}, "notify": {"timeout": "5s"}}),
    )
    .await
    .expect(200);
    api.scan_wait().await;
    rx.script("slack", &[Answer::Hang]);
    api.put_json("/api/v1/config", &json!({"heuristics.builtin": true}))
        .await
        .expect(200);
    let back = api.scan_wait().await;
    rx.wait_hanging().await;
    let started = std::time::Instant::now();
    let during = api.scan_wait().await;
    assert!(
        rx.hanging.load(Ordering::SeqCst) > 0,
        "the scan finished in {:?}, while the receiver held the request",
        started.elapsed()
    );
    assert!(during["scan_seq"].as_u64() > back["scan_seq"].as_u64(), "{during}");
    eprintln!(
        "scan while the receiver hung: {:?} wall, {} ms in the engine",
        started.elapsed(),
        during["duration_ms"]
    );
    // Then the receiver recovers, and the message comes through.
    let back_seq = back["scan_seq"].as_u64().unwrap();
    rx.wait_delivered("slack", "waste message after the hang", |r| {
        kind_is("waste")(r)
            && r.json()["blocks"][1]["text"]["text"]
                .as_str()
                .is_some_and(|t| t.contains(&format!("Scan {back_seq} found")))
    })
    .await;

    // slack-test reports the receiver's answer, refusal included.
    api.put_json("/api/v1/config", &json!({"notify.timeout": "2s"}))
        .await
        .expect(200);
    rx.script("slack", &[Answer::Status(404, "no_service")]);
    let refused = api.post_json("/api/v1/config/slack-test", &json!({})).await.expect(200);
    assert_eq!(refused["delivered"], false, "{refused}");
    let r = &refused["results"][0];
    assert_eq!(
        (r["destination"].as_str(), r["status"].as_u64(), r["body"].as_str()),
        (Some("slack"), Some(404), Some("no_service")),
        "{refused}"
    );
    assert_eq!(r["error"], "the receiver answered 404");
    let ok = api
        .post_json("/api/v1/config/slack-test?all=true", &json!({}))
        .await
        .expect(200);
    assert_eq!(ok["delivered"], true, "{ok}");
    let results: Vec<(&str, u64, &str)> = ok["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["destination"].as_str().unwrap(),
                r["status"].as_u64().unwrap(),
                r["body"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(results, [("slack", 200, "ok"), ("ops", 200, "ok")]);
    let test_hook = rx
        .got("hook")
        .into_iter()
        .rfind(|r| r.json()["kind"] == "test")
        .unwrap();
    assert_eq!(
        test_hook.headers["x-svc-signature"],
        format!("sha256={}", python_hmac(SECRET, &test_hook.body))
    );
    // The CLI verb says the same.
    let (code, out, err) = common::run_cli(
        &["notify", "test", "--url", &d.base()],
        &[
            ("SVC_DATA_DIR", dir.path().to_str().unwrap()),
            ("NO_PROXY", "127.0.0.1"),
        ],
    )
    .await;
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("slack") && out.contains("200"), "{out}");

    // Secrets are not shown; a bad URL is refused and changes nothing.
    let shown = api.get_ok("/api/v1/config").await;
    assert_eq!(shown["notify"]["slack_webhook"], "(hidden)");
    assert_eq!(shown["notify"]["webhooks"], "(hidden)");
    assert!(
        !shown.to_string().contains(SECRET) && !shown.to_string().contains("/slack"),
        "{shown}"
    );
    let bad = api
        .put_json(
            "/api/v1/config",
            &json!({"notify.slack_webhook": "hooks.slack.com/services/x"}),
        )
        .await
        .expect_error(422, "invalid");
    assert!(
        bad["error"]["message"]
            .as_str()
            .unwrap()
            .contains("notify.slack_webhook"),
        "{bad}"
    );
    let unknown = api
        .put_json("/api/v1/config", &json!({"notify.events": ["waste", "wasted"]}))
        .await
        .expect_error(422, "invalid");
    assert!(
        unknown["error"]["message"].as_str().unwrap().contains("\"wasted\""),
        "{unknown}"
    );
    // Without a destination the test has nowhere to go.
    api.put_json(
        "/api/v1/config",
        &json!({"notify": {"slack_webhook": null, "webhooks": null}}),
    )
    .await
    .expect(200);
    api.post_json("/api/v1/config/slack-test", &json!({}))
        .await
        .expect_error(409, "conflict");

    let text = metrics(&d).await;
    assert_eq!(
        sample(
            &text,
            "svc_notifications_total",
            &[("destination", "slack"), ("kind", "test"), ("outcome", "failed")]
        ),
        1.0,
        "{text}"
    );
    assert_eq!(sample(&text, "svc_notification_queue_depth", &[]), 0.0, "{text}");
    promtool(&text);
    d.stop().await;
}

fn promtool(text: &str) {
    let mut child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool runs");
    child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "promtool: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A ledger whose chain is found broken at start sends one `ledger_chain`
/// notice to the webhook that selects that kind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_ledger_chain_is_notified() {
    let (rx, addr) = Receiver::start().await;
    let dir = common::data_dir();
    std::fs::write(
        dir.path().join("config.toml"),
        format!(
            "[daemon]\nscan_interval = \"1h\"\n\n[notify]\nevents = []\n\n[[notify.webhooks]]\nname = \"audit\"\n\
             url = \"http://{addr}/audit\"\nsecret = \"{SECRET}\"\nevents = [\"ledger_chain\"]\n"
        ),
    )
    .unwrap();
    let mut d = Daemon::configure(dir.path(), 200);
    d.env.push(("NO_PROXY".into(), "127.0.0.1,localhost".into()));
    d.launch().await;
    d.wait_scan_after(0).await;
    // Two more events: the head of the chain must stay intact for the
    // ledger to open at all.
    d.api().scan_wait().await;
    d.api().scan_wait().await;
    assert!(d.stop().await.success());
    assert!(rx.got("audit").is_empty(), "an intact chain sends nothing");

    common::tamper_payload(&dir.path().join("events.redb"), 1, "tampered", json!(true));
    d.launch_listening().await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while !rx.got("audit").iter().any(|r| r.answered == 200) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "no notice; daemon log:\n{}",
            d.log.text()
        );
        tokio::time::sleep(common::POLL_PAUSE).await;
    }
    let got = rx
        .wait_delivered("audit", "ledger_chain notice", kind_is("ledger_chain"))
        .await;
    let body = got[0].json();
    assert_eq!(body["event_type"], "LEDGER_VERIFY");
    assert_eq!(body["payload"]["first_broken_seq"], 1, "{body}");
    assert!(body["summary"].as_str().unwrap().contains("event 1 broken"), "{body}");
    assert_eq!(
        got[0].headers["x-svc-signature"],
        format!("sha256={}", python_hmac(SECRET, &got[0].body))
    );
    let text = metrics(&d).await;
    assert_eq!(
        sample(
            &text,
            "svc_notifications_total",
            &[
                ("destination", "audit"),
                ("kind", "ledger_chain"),
                ("outcome", "delivered")
            ]
        ),
        1.0,
        "{text}"
    );
    d.stop().await;
}
