//! The history endpoints through the real router: every query parameter,
//! every error, paging, summary, sessions, prune and verify.

#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

use std::path::Path;
use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use svc_api::AppState;
use svc_api::routes::parse_rfc3339;
use svc_engine::Engine;
use svc_engine::clock::{ManualClock, SystemClock};
use svc_engine::store::ledger::NewEvent;
use tower::ServiceExt;

const VOL_A: &str = "crn:svc:aws:us-east-1:ec2:volume:123456789012:vol-0abc";
const VOL_A_NO_NS: &str = "crn:aws:us-east-1:ec2:volume:123456789012:vol-0abc";
const VOL_A_PLUGIN: &str = "crn:svc:aws:us-east-1:123456789012:volume:vol-0abc";
const DB_B: &str = "crn:svc:aws:eu-west-1:rds:db:123456789012:orders";
const T0: &str = "2026-01-10T00:00:00Z";
const S: u64 = 1_000_000;

fn event(event_type: &str, crn: Option<&str>, payload: Value) -> NewEvent {
    NewEvent {
        event_type: event_type.to_owned(),
        crn: crn.map(str::to_owned),
        actor: "tester".to_owned(),
        message: format!("{event_type} happened"),
        payload,
    }
}

fn app_for(engine: Arc<Engine>) -> Router {
    let state = AppState::new("tok".into());
    state.set_engine(engine);
    svc_api::router(state)
}

fn open(dir: &Path, session: &str, clock: Arc<ManualClock>) -> Arc<Engine> {
    Arc::new(Engine::open(dir, session, clock).unwrap())
}

async fn call(app: &Router, method: &str, uri: &str, token: Option<&str>, body: Option<&str>) -> (StatusCode, Value) {
    let mut req = Request::builder().method(method).uri(uri);
    if let Some(t) = token {
        req = req.header("authorization", format!("Bearer {t}"));
    }
    if body.is_some() {
        req = req.header("content-type", "application/json");
    }
    let req = req
        .body(body.map(|b| Body::from(b.to_owned())).unwrap_or_else(Body::empty))
        .unwrap();
    let resp = app.clone().oneshot(req).await.unwrap();
    let status = resp.status();
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

async fn get(app: &Router, uri: &str) -> (StatusCode, Value) {
    call(app, "GET", uri, Some("tok"), None).await
}

async fn get_ok(app: &Router, uri: &str) -> Value {
    let (status, body) = get(app, uri).await;
    assert_eq!(status, StatusCode::OK, "{uri}: {body}");
    body
}

/// Asserts the DESIGN error body and returns its message.
fn error_message(status: StatusCode, body: &Value, want: StatusCode, code: &str) -> String {
    assert_eq!(status, want, "{body}");
    assert_eq!(body["error"]["code"], code, "{body}");
    assert!(body["error"]["details"].is_object(), "{body}");
    body["error"]["message"].as_str().unwrap().to_owned()
}

fn types(body: &Value) -> Vec<String> {
    body["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["type"].as_str().unwrap().to_owned())
        .collect()
}

/// Six events at known times before T0, then the clock at T0.
struct Fixture {
    _dir: tempfile::TempDir,
    app: Router,
    t0: u64,
}

async fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let t0 = parse_rfc3339(T0).unwrap();
    let clock = Arc::new(ManualClock::new(t0));
    let engine = open(dir.path(), "s1", clock.clone());
    let rows = [
        (5 * 86_400, event("SCAN_COMPLETED", None, json!({"nodes": 10}))),
        (2 * 86_400, event("APPROVAL", Some(VOL_A), json!({"savings_usd": 12.5}))),
        (86_400, event("REJECTION", Some(DB_B), json!({}))),
        (
            6 * 3_600,
            event("QUARANTINE", Some(VOL_A), json!({"action": "ISOLATE"})),
        ),
        (
            20 * 60,
            event(
                "EXECUTION_COMMIT",
                Some(VOL_A),
                json!({"saga_id": "sg-1", "crn": VOL_A, "step_index": 0, "status": "SUCCESS", "savings_usd": 7.5}),
            ),
        ),
        (10, event("POLICY_CHANGE", None, Value::Null)),
    ];
    for (ago_s, e) in rows {
        clock.set(t0 - ago_s * S);
        engine.ledger().append_one(e).unwrap();
    }
    clock.set(t0);
    Fixture {
        _dir: dir,
        app: app_for(engine),
        t0,
    }
}

#[tokio::test]
async fn event_objects_have_the_history_shape() {
    let f = fixture().await;
    let body = get_ok(&f.app, "/api/v1/history").await;
    assert_eq!(body["total"], 6);
    assert_eq!(body["next_cursor"], "");
    assert_eq!(
        types(&body),
        [
            "POLICY_CHANGE",
            "EXECUTION_COMMIT",
            "QUARANTINE",
            "REJECTION",
            "APPROVAL",
            "SCAN_COMPLETED"
        ],
        "newest first"
    );
    let ec = &body["events"][1];
    assert_eq!(ec["id"], "5");
    assert_eq!(ec["seq"], 5);
    assert_eq!(ec["ts"], "2026-01-09T23:40:00Z");
    assert_eq!(parse_rfc3339(ec["ts"].as_str().unwrap()), Some(f.t0 - 20 * 60 * S));
    assert_eq!(ec["type"], "EXECUTION_COMMIT");
    assert_eq!(ec["crn"], VOL_A);
    assert_eq!(ec["status"], "OK");
    assert_eq!(ec["message"], "EXECUTION_COMMIT happened");
    assert_eq!(ec["actor"], "tester");
    assert_eq!(ec["session_id"], "s1");
    assert_eq!(ec["meta"]["savings_usd"], 7.5);
    assert_eq!(ec["meta"]["saga_id"], "sg-1");
    let hash = ec["hash"].as_str().unwrap();
    assert_eq!(hash.len(), 64);
    assert!(hash.bytes().all(|b| b.is_ascii_hexdigit()));
    // No crn is the empty string; a null payload is an empty meta object.
    assert_eq!(body["events"][0]["crn"], "");
    assert_eq!(body["events"][0]["meta"], json!({}));
    let statuses: Vec<&str> = body["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["OK", "OK", "QUARANTINED", "REJECTED", "APPROVED", "OK"]);
}

#[tokio::test]
async fn filters_by_type_status_and_crn() {
    let f = fixture().await;
    let all = [
        "POLICY_CHANGE",
        "EXECUTION_COMMIT",
        "QUARANTINE",
        "REJECTION",
        "APPROVAL",
        "SCAN_COMPLETED",
    ];
    let vol_a = ["EXECUTION_COMMIT", "QUARANTINE", "APPROVAL"];
    let cases: Vec<(String, &[&str])> = vec![
        ("type=APPROVAL".into(), &["APPROVAL"]),
        (
            "type=s.a.u_ACTION".into(),
            &["EXECUTION_COMMIT", "QUARANTINE", "REJECTION", "APPROVAL"],
        ),
        ("type=NO_SUCH_TYPE".into(), &[]),
        ("status=APPROVED".into(), &["APPROVAL"]),
        ("status=REJECTED".into(), &["REJECTION"]),
        ("status=QUARANTINED".into(), &["QUARANTINE"]),
        (
            "status=OK".into(),
            &["POLICY_CHANGE", "EXECUTION_COMMIT", "SCAN_COMPLETED"],
        ),
        ("status=approved".into(), &["APPROVAL"]),
        ("type=s.a.u_ACTION&status=OK".into(), &["EXECUTION_COMMIT"]),
        (format!("crn={VOL_A}"), &vol_a),
        (format!("crn={VOL_A_NO_NS}"), &vol_a),
        (format!("crn={VOL_A_PLUGIN}"), &vol_a),
        (format!("crn={VOL_A}&status=QUARANTINED"), &["QUARANTINE"]),
        (format!("crn={DB_B}&type=s.a.u_ACTION"), &["REJECTION"]),
        ("crn=crn:svc:aws:us-east-1:ec2:volume:123456789012:vol-none".into(), &[]),
        ("type=&crn=&status=&since=&until=&limit=&cursor=".into(), &all),
        ("unknown=1".into(), &all),
    ];
    for (query, want) in cases {
        let body = get_ok(&f.app, &format!("/api/v1/history?{query}")).await;
        assert_eq!(types(&body), want, "{query}");
        assert_eq!(body["total"], want.len(), "{query}");
    }
}

#[tokio::test]
async fn filters_by_time() {
    let f = fixture().await;
    let cases: &[(&str, &[&str])] = &[
        (
            "since=3d",
            &[
                "POLICY_CHANGE",
                "EXECUTION_COMMIT",
                "QUARANTINE",
                "REJECTION",
                "APPROVAL",
            ],
        ),
        ("since=12h", &["POLICY_CHANGE", "EXECUTION_COMMIT", "QUARANTINE"]),
        ("since=30m", &["POLICY_CHANGE", "EXECUTION_COMMIT"]),
        ("since=45s", &["POLICY_CHANGE"]),
        (
            "since=2026-01-09T00:00:00Z",
            &["POLICY_CHANGE", "EXECUTION_COMMIT", "QUARANTINE", "REJECTION"],
        ),
        (
            "since=2026-01-09T01:00:00%2B01:00",
            &["POLICY_CHANGE", "EXECUTION_COMMIT", "QUARANTINE", "REJECTION"],
        ),
        ("until=2026-01-09T00:00:00Z", &["APPROVAL", "SCAN_COMPLETED"]),
        (
            "since=3d&until=2026-01-09T18:00:01Z",
            &["QUARANTINE", "REJECTION", "APPROVAL"],
        ),
        ("since=1h&type=s.a.u_ACTION", &["EXECUTION_COMMIT"]),
    ];
    for (query, want) in cases {
        let body = get_ok(&f.app, &format!("/api/v1/history?{query}")).await;
        assert_eq!(types(&body), *want, "{query}");
        assert_eq!(body["total"], want.len(), "{query}");
    }
}

#[tokio::test]
async fn bad_parameters_are_400_and_bad_crns_422() {
    let f = fixture().await;
    for query in [
        "status=DONE",
        "since=yesterday",
        "since=3",
        "since=-3d",
        "until=3d",
        "until=2026-13-01T00:00:00Z",
        "limit=0",
        "limit=-1",
        "limit=ten",
        "limit=1.5",
        "limit=501",
        "cursor=!!!",
        "cursor=YWJj",
        "cursor=MA",
        "limit=1&limit=2",
    ] {
        let (status, body) = get(&f.app, &format!("/api/v1/history?{query}")).await;
        let message = error_message(status, &body, StatusCode::BAD_REQUEST, "bad_request");
        if query.starts_with("limit=") && !query.contains('&') {
            assert!(
                message.contains("limit") && message.contains("1 to 500"),
                "{query}: {message}"
            );
        }
    }
    for query in [
        "crn=nope",
        "crn=crn:svc:aws",
        "crn=crn:svc:aws:us-east-1:ec2:volume:1:has%20space",
    ] {
        let (status, body) = get(&f.app, &format!("/api/v1/history?{query}")).await;
        error_message(status, &body, StatusCode::UNPROCESSABLE_ENTITY, "invalid");
    }
    let body = get_ok(&f.app, "/api/v1/history?limit=500").await;
    assert_eq!(body["events"].as_array().unwrap().len(), 6);
}

#[tokio::test]
async fn needs_a_token() {
    let f = fixture().await;
    for uri in [
        "/api/v1/history",
        "/api/v1/history/summary",
        "/api/v1/history/resource?crn=crn:svc:aws:us-east-1:ec2:volume:123456789012:vol-0abc",
        "/api/v1/history/sessions",
        "/api/v1/ledger/verify",
    ] {
        let (status, body) = call(&f.app, "GET", uri, None, None).await;
        error_message(status, &body, StatusCode::UNAUTHORIZED, "unauthorized");
        let (status, body) = call(&f.app, "GET", uri, Some("wrong"), None).await;
        error_message(status, &body, StatusCode::UNAUTHORIZED, "unauthorized");
    }
    let (status, body) = call(
        &f.app,
        "POST",
        "/api/v1/history/prune",
        None,
        Some(r#"{"max_age_days":1}"#),
    )
    .await;
    error_message(status, &body, StatusCode::UNAUTHORIZED, "unauthorized");
}

#[tokio::test]
async fn not_ready_before_the_engine() {
    let app = svc_api::router(AppState::new("tok".into()));
    let (status, body) = get(&app, "/api/v1/history").await;
    error_message(status, &body, StatusCode::SERVICE_UNAVAILABLE, "not_ready");
}

#[tokio::test]
async fn cursor_pages_visit_every_event_once() {
    let dir = tempfile::tempdir().unwrap();
    let engine = Arc::new(Engine::open(dir.path(), "s1", Arc::new(SystemClock::default())).unwrap());
    let batch: Vec<NewEvent> = (0..250)
        .map(|i| {
            let t = if i % 2 == 0 { "APPROVAL" } else { "SCAN_COMPLETED" };
            event(t, None, json!({"i": i}))
        })
        .collect();
    engine.ledger().append(batch).unwrap();
    let app = app_for(engine);

    let mut seen = Vec::new();
    let mut sizes = Vec::new();
    let mut uri = "/api/v1/history?limit=100".to_owned();
    loop {
        let body = get_ok(&app, &uri).await;
        assert_eq!(body["total"], 250);
        let events = body["events"].as_array().unwrap();
        sizes.push(events.len());
        seen.extend(events.iter().map(|e| e["seq"].as_u64().unwrap()));
        let cursor = body["next_cursor"].as_str().unwrap();
        if cursor.is_empty() {
            break;
        }
        assert!(sizes.len() < 10, "paging does not end");
        uri = format!("/api/v1/history?limit=100&cursor={cursor}");
    }
    assert_eq!(sizes, [100, 100, 50]);
    assert_eq!(seen, (1..=250).rev().collect::<Vec<u64>>());

    // Paging with a filter keeps the filtered total.
    let mut seen = 0;
    let mut uri = "/api/v1/history?limit=100&status=APPROVED".to_owned();
    loop {
        let body = get_ok(&app, &uri).await;
        assert_eq!(body["total"], 125);
        seen += body["events"].as_array().unwrap().len();
        let cursor = body["next_cursor"].as_str().unwrap();
        if cursor.is_empty() {
            break;
        }
        uri = format!("/api/v1/history?limit=100&status=APPROVED&cursor={cursor}");
    }
    assert_eq!(seen, 125);
}

#[tokio::test]
async fn summary_counts_and_sums() {
    let f = fixture().await;
    let body = get_ok(&f.app, "/api/v1/history/summary").await;
    assert_eq!(body["total_events"], 6);
    assert_eq!(body["quarantined"], 1);
    assert_eq!(body["approved"], 1);
    assert_eq!(body["rejected"], 1);
    assert_eq!(body["session_count"], 1);
    assert_eq!(body["total_savings_usd"], 20.0);
    assert_eq!(body["first_event"], "2026-01-05T00:00:00Z");
    assert_eq!(body["last_event"], "2026-01-09T23:59:50Z");

    let dir = tempfile::tempdir().unwrap();
    let empty = app_for(Arc::new(
        Engine::open(dir.path(), "s1", Arc::new(SystemClock::default())).unwrap(),
    ));
    let body = get_ok(&empty, "/api/v1/history/summary").await;
    assert_eq!(
        body,
        json!({
            "total_events": 0, "quarantined": 0, "approved": 0, "rejected": 0, "session_count": 0,
            "total_savings_usd": 0.0, "first_event": "", "last_event": ""
        })
    );
}

#[tokio::test]
async fn resource_timeline() {
    let f = fixture().await;
    for crn in [VOL_A, VOL_A_NO_NS, VOL_A_PLUGIN] {
        let body = get_ok(&f.app, &format!("/api/v1/history/resource?crn={crn}")).await;
        assert_eq!(body["crn"], VOL_A, "{crn}");
        assert_eq!(body["total"], 3);
        assert_eq!(types(&body), ["EXECUTION_COMMIT", "QUARANTINE", "APPROVAL"]);
        assert!(body["events"].as_array().unwrap().iter().all(|e| e["crn"] == VOL_A));
    }
    let body = get_ok(&f.app, &format!("/api/v1/history/resource?crn={VOL_A}&limit=2")).await;
    assert_eq!(types(&body), ["EXECUTION_COMMIT", "QUARANTINE"]);
    assert_eq!(body["total"], 3);

    let body = get_ok(
        &f.app,
        "/api/v1/history/resource?crn=crn:svc:gcp:us-central1:compute:disk:p:d1",
    )
    .await;
    assert_eq!(body["total"], 0);
    assert_eq!(body["events"], json!([]));

    for uri in [
        "/api/v1/history/resource",
        "/api/v1/history/resource?crn=",
        &format!("/api/v1/history/resource?crn={VOL_A}&limit=0"),
    ] {
        let (status, body) = get(&f.app, uri).await;
        error_message(status, &body, StatusCode::BAD_REQUEST, "bad_request");
    }
    let (status, body) = get(&f.app, "/api/v1/history/resource?crn=vol-0abc").await;
    error_message(status, &body, StatusCode::UNPROCESSABLE_ENTITY, "invalid");
}

#[tokio::test]
async fn sessions_list_every_daemon_run() {
    let dir = tempfile::tempdir().unwrap();
    let t0 = parse_rfc3339(T0).unwrap();
    let clock = Arc::new(ManualClock::new(t0));
    {
        let first = open(dir.path(), "s0", clock.clone());
        first
            .ledger()
            .append(vec![event("SCAN_COMPLETED", None, json!({})); 2])
            .unwrap();
    }
    clock.set(t0 + 3_600 * S);
    let engine = open(dir.path(), "s1", clock.clone());
    engine
        .ledger()
        .append_one(event("APPROVAL", Some(VOL_A), json!({})))
        .unwrap();
    let app = app_for(engine);

    let body = get_ok(&app, "/api/v1/history/sessions").await;
    assert_eq!(body["current"], "s1");
    assert_eq!(
        body["sessions"],
        json!([
            {"session_id": "s0", "first_event": "2026-01-10T00:00:00Z", "last_event": "2026-01-10T00:00:00Z", "event_count": 2},
            {"session_id": "s1", "first_event": "2026-01-10T01:00:00Z", "last_event": "2026-01-10T01:00:00Z", "event_count": 1},
        ])
    );
    let body = get_ok(&app, "/api/v1/history").await;
    let sessions: Vec<&str> = body["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["session_id"].as_str().unwrap())
        .collect();
    assert_eq!(sessions, ["s1", "s0", "s0"]);
    let body = get_ok(&app, "/api/v1/history/summary").await;
    assert_eq!(body["session_count"], 2);
}

#[tokio::test]
async fn prune_removes_old_events_and_keeps_the_chain() {
    let f = fixture().await;
    for body in [
        "",
        "{}",
        r#"{"max_age_days":"3"}"#,
        r#"{"max_age_days":1.5}"#,
        r#"{"max_age_days":-1}"#,
        r#"{"max_age_days":null}"#,
        "not json",
    ] {
        let (status, resp) = call(&f.app, "POST", "/api/v1/history/prune", Some("tok"), Some(body)).await;
        error_message(status, &resp, StatusCode::BAD_REQUEST, "bad_request");
    }
    let (status, resp) = call(
        &f.app,
        "POST",
        "/api/v1/history/prune",
        Some("tok"),
        Some(r#"{"max_age_days":1}"#),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{resp}");
    // Older than one day: the scan and the approval; the rejection, exactly one day old, stays.
    assert_eq!(resp, json!({"pruned": 2, "max_age_days": 1}));

    let body = get_ok(&f.app, "/api/v1/history").await;
    assert_eq!(
        types(&body),
        [
            "HISTORY_PRUNED",
            "POLICY_CHANGE",
            "EXECUTION_COMMIT",
            "QUARANTINE",
            "REJECTION"
        ]
    );
    assert_eq!(body["events"][0]["actor"], "admin");
    assert_eq!(body["total"], 5);

    let report = get_ok(&f.app, "/api/v1/ledger/verify").await;
    assert_eq!(report["ok"], true, "{report}");
    // It starts from the checkpoint the prune recorded.
    let pruned = &body["events"][0]["meta"];
    assert_eq!(
        report["checkpoint"],
        json!({"through_seq": 2, "hash": pruned["last_hash"]}),
        "{report}"
    );
    assert_eq!(pruned["through_seq"], 2);
    assert_eq!(report["first_seq"], 3);
    assert_eq!(report["last_seq"], 7);
    assert_eq!(report["events"], 5);

    // The ledger keeps at least a day.
    let (status, resp) = call(
        &f.app,
        "POST",
        "/api/v1/history/prune",
        Some("tok"),
        Some(r#"{"max_age_days":0}"#),
    )
    .await;
    error_message(status, &resp, StatusCode::UNPROCESSABLE_ENTITY, "invalid");
    assert_eq!(get_ok(&f.app, "/api/v1/history").await["total"], 5);
}

/// With an export bucket set, nothing leaves the ledger before it is in
/// the bucket: a prune that would remove an unexported event removes
/// nothing; once exported, the same prune goes ahead.
#[tokio::test]
async fn prune_never_removes_what_is_not_exported() {
    let dir = tempfile::tempdir().unwrap();
    let t0 = parse_rfc3339(T0).unwrap();
    let clock = Arc::new(ManualClock::new(t0));
    let engine = open(dir.path(), "s1", clock.clone());
    for ago_days in [5, 3, 2] {
        clock.set(t0 - ago_days * 86_400 * S);
        engine
            .ledger()
            .append_one(event("APPROVAL", Some(VOL_A), json!({})))
            .unwrap();
    }
    clock.set(t0);
    let bucket = dir.path().join("audit");
    let settings = svc_api::export::ExportSettings {
        bucket: Some(svc_api::export::Bucket::parse(&format!("file://{}", bucket.display())).unwrap()),
        ..Default::default()
    };
    let exporter = Arc::new(svc_api::export::Exporter::new(
        engine.clone(),
        settings,
        svc_api::export::Identity::new("d-1".into()),
    ));
    let state = AppState::new("tok".into());
    state.set_exporter(exporter.clone());
    state.set_engine(engine.clone());
    let app = svc_api::router(state);
    let prune = || {
        call(
            &app,
            "POST",
            "/api/v1/history/prune",
            Some("tok"),
            Some(r#"{"max_age_days":1}"#),
        )
    };

    let (status, resp) = prune().await;
    let message = error_message(status, &resp, StatusCode::CONFLICT, "conflict");
    assert!(
        message.starts_with("event 1 and later are older than the cutoff but not yet exported"),
        "{message}"
    );
    assert_eq!(engine.ledger().verify().unwrap().checked, 3, "nothing removed");

    exporter.export_now().await.unwrap();
    let (status, resp) = prune().await;
    assert_eq!(status, StatusCode::OK, "{resp}");
    assert_eq!(resp["pruned"], 3);
}

#[tokio::test]
async fn verify_reports_the_chain() {
    let f = fixture().await;
    let report = get_ok(&f.app, "/api/v1/ledger/verify").await;
    assert_eq!(
        report,
        json!({"ok": true, "first_seq": 1, "last_seq": 6, "events": 6, "first_broken": null, "checkpoint": null})
    );

    let dir = tempfile::tempdir().unwrap();
    let empty = app_for(Arc::new(
        Engine::open(dir.path(), "s1", Arc::new(SystemClock::default())).unwrap(),
    ));
    let report = get_ok(&empty, "/api/v1/ledger/verify").await;
    assert_eq!(report["ok"], true);
    assert_eq!(report["events"], 0);
}
