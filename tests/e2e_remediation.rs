//! The remediation pipeline end to end against a real daemon on the mock
//! estate: flagged to applied with the estate following, a failing second
//! step compensated, a held item released by override, quarantine then
//! revert, an ignore entry that expires, a daemon killed mid-saga that
//! compensates on restart, and bad input.

#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

mod common;

use std::time::{Duration, Instant};

use common::{Api, Daemon, data_dir};
use serde_json::{Value, json};

const SCALE: usize = 300;

/// The pending items of the queue.
async fn pending(api: &Api) -> Vec<Value> {
    let q = api
        .get_query_ok("/api/v1/remediation/queue", &[("stage", "pending"), ("limit", "1000")])
        .await;
    q["stages"]["pending"].as_array().expect("pending list").clone()
}

/// The item of `crn` if it is listed at `stage`.
async fn at_stage(api: &Api, stage: &str, crn: &str) -> Option<Value> {
    let q = api
        .get_query_ok("/api/v1/remediation/queue", &[("stage", stage), ("limit", "1000")])
        .await;
    q["stages"][stage].as_array()?.iter().find(|i| i["crn"] == crn).cloned()
}

/// A pending item whose plan has two steps (a machine: stop, then delete).
async fn two_step_item(api: &Api) -> (String, String) {
    for item in pending(api).await {
        let crn = item["crn"].as_str().expect("crn").to_owned();
        let plan = api.get_query_ok("/api/v1/plan", &[("crn", &crn)]).await;
        if plan["steps"].as_array().is_some_and(|s| s.len() == 2) {
            assert_eq!(plan["plan_hash"], item["plan_hash"], "queue and plan agree");
            return (crn, plan["plan_hash"].as_str().expect("hash").to_owned());
        }
    }
    panic!("the mock estate has a pending machine to delete");
}

/// A pending item with a one-step plan.
async fn one_step_item(api: &Api) -> (String, String) {
    for item in pending(api).await {
        let crn = item["crn"].as_str().expect("crn").to_owned();
        let plan = api.get_query_ok("/api/v1/plan", &[("crn", &crn)]).await;
        if plan["steps"].as_array().is_some_and(|s| s.len() == 1) {
            return (crn, plan["plan_hash"].as_str().expect("hash").to_owned());
        }
    }
    panic!("the mock estate has a pending one-step item");
}

async fn events_of(api: &Api, kind: &str, crn: &str) -> Vec<Value> {
    api.history_all(&[("type", kind)])
        .await
        .into_iter()
        .filter(|e| e["crn"] == crn)
        .collect()
}

/// The simulated estate's record of what remediation changed.
fn effects(d: &Daemon) -> Value {
    match std::fs::read(d.data_dir.join("mock-estate.json")) {
        Ok(bytes) => serde_json::from_slice(&bytes).expect("effects JSON"),
        Err(_) => json!({}),
    }
}

fn meta(e: &Value) -> &Value {
    &e["meta"]
}

#[tokio::test]
async fn flagged_to_applied_and_the_estate_follows() {
    let dir = data_dir();
    let d = Daemon::start_scanned(dir.path(), SCALE).await;
    let api = d.api();
    let q = api.get_ok("/api/v1/remediation/queue").await;
    for stage in [
        "flagged", "analyzed", "codegen", "sau_gate", "pending", "applied", "rejected",
    ] {
        assert!(q["counts"][stage].is_u64(), "{stage}: {q}");
    }
    assert!(q["counts"]["pending"].as_u64().unwrap() > 10, "{q}");

    let (crn, hash) = two_step_item(&api).await;
    let plan = api.get_query_ok("/api/v1/plan", &[("crn", &crn)]).await;
    assert_eq!(plan["steps"][0]["action"], "stop");
    assert_eq!(plan["steps"][1]["inverse"], "restore");
    assert!(
        plan["terraform"].as_str().unwrap().contains("will be destroyed"),
        "{plan}"
    );
    assert!(!plan["cli"][1].as_str().unwrap().is_empty());

    // A plan the operator did not see is refused.
    api.post_json(
        "/api/v1/remediation/approve",
        &json!({"crn": crn, "plan_hash": "0".repeat(64), "actor": "alice"}),
    )
    .await
    .expect_error(409, "conflict");

    let done = api
        .post_json(
            "/api/v1/remediation/approve",
            &json!({"crn": crn, "plan_hash": hash, "actor": "alice"}),
        )
        .await
        .expect(200);
    assert_eq!(done["applied"], true, "{done}");
    assert_eq!(done["stage"], "applied");
    let approvals = events_of(&api, "APPROVAL", &crn).await;
    assert_eq!(approvals.len(), 1);
    assert_eq!(approvals[0]["status"], "APPROVED");
    // The actor is the token's name; the body's `actor` is only a note.
    assert_eq!(approvals[0]["actor"], "admin");
    let commits = events_of(&api, "EXECUTION_COMMIT", &crn).await;
    assert_eq!(commits.len(), 2, "{commits:?}");
    for c in &commits {
        let p = meta(c);
        for k in ["saga_id", "crn", "intent", "compensating_payload_hash"] {
            assert!(p[k].as_str().is_some_and(|s| !s.is_empty()), "{k}: {c}");
        }
        assert!(p["step_index"].is_u64() && p["blast_radius"].is_u64() && p["duration_ms"].is_u64());
        assert_eq!(p["status"], "SUCCESS");
    }
    assert_eq!(effects(&d)[&crn], "deleted");
    // Approving twice is a conflict; the item is applied.
    api.post_json("/api/v1/remediation/approve", &json!({"crn": crn, "plan_hash": hash}))
        .await
        .expect_error(409, "conflict");

    // The next scan no longer finds the resource: it leaves the pipeline, recorded.
    let scan = api.scan_wait().await;
    // Only items that changed are stored again: the estate's churn, not the queue.
    let r = &scan["remediation"];
    let items: u64 = r["stages"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum();
    let written = r["written"].as_u64().unwrap();
    assert!(items > 20 && written < items / 2, "{r}");
    let enc = common::encode_segment(&crn);
    let gone = api.get_ok(&format!("/api/v1/graph/nodes/{enc}")).await;
    assert!(gone["valid_to"].as_u64().unwrap() > 0, "logically deleted: {gone}");
    let moves = events_of(&api, "PIPELINE_MOVE", &crn).await;
    assert!(
        moves.iter().any(|m| meta(m)["to"] == "removed"),
        "recorded as leaving: {moves:?}"
    );
    api.get_query("/api/v1/plan", &[("crn", &crn)]).await.expect(404);
}

#[tokio::test]
async fn a_failing_second_step_is_compensated() {
    let dir = data_dir();
    let mut d = Daemon::configure(dir.path(), SCALE);
    d.env.push(("SVC_MOCK_FAIL_ACTIONS".into(), "delete".into()));
    d.launch().await;
    d.wait_scan_after(0).await;
    let api = d.api();
    let (crn, hash) = two_step_item(&api).await;
    let out = api
        .post_json("/api/v1/remediation/approve", &json!({"crn": crn, "plan_hash": hash}))
        .await
        .expect(200);
    assert_eq!(out["applied"], false, "{out}");
    assert_eq!(out["stage"], "pending");
    assert!(
        out["failure"].as_str().unwrap().contains("step 1 (delete) failed"),
        "{out}"
    );
    assert_eq!(out["steps"][0]["status"], "COMPENSATED");
    assert_eq!(out["steps"][1]["status"], "FAILED");

    let commits = events_of(&api, "EXECUTION_COMMIT", &crn).await;
    assert_eq!(commits.len(), 1, "only the stop committed");
    let rollbacks = events_of(&api, "EXECUTION_ROLLBACK", &crn).await;
    assert_eq!(rollbacks.len(), 1, "{rollbacks:?}");
    let p = meta(&rollbacks[0]);
    assert_eq!(p["step_index"], 0);
    assert_eq!(p["compensating_action"], "start");
    assert_eq!(p["status"], "COMPENSATED");
    assert_eq!(p["saga_id"], meta(&commits[0])["saga_id"]);
    assert!(p["reason"].as_str().unwrap().contains("delete"));
    // The estate is as it was: the stop was undone.
    assert!(effects(&d).get(&crn).is_none(), "{}", effects(&d));
    let item = pending(&api)
        .await
        .into_iter()
        .find(|i| i["crn"] == crn)
        .expect("back in pending");
    assert!(item["failure"].as_str().is_some_and(|f| f.contains("delete")));
}

#[tokio::test]
async fn a_held_item_waits_at_the_gate_until_an_override() {
    let dir = data_dir();
    let d = Daemon::start_scanned(dir.path(), SCALE).await;
    let api = d.api();
    let (crn, hash) = one_step_item(&api).await;
    let held = api
        .post_json(
            "/api/v1/remediation/move",
            &json!({"crn": crn, "plan_hash": hash, "to": "sau_gate", "actor": "bob", "reason": "check with the owner"}),
        )
        .await
        .expect(200);
    assert_eq!(held["stage"], "sau_gate");
    // Held items are not approved, and survive a scan at the gate.
    api.post_json("/api/v1/remediation/approve", &json!({"crn": crn, "plan_hash": hash}))
        .await
        .expect_error(409, "conflict");
    api.scan_wait().await;
    let item = at_stage(&api, "sau_gate", &crn).await.expect("still at the gate");
    assert!(
        item["blockers"]
            .as_array()
            .unwrap()
            .iter()
            .any(|b| b == "held by admin"),
        "{item}"
    );
    // Illegal moves are conflicts; an override needs a reason.
    api.post_json(
        "/api/v1/remediation/move",
        &json!({"crn": crn, "plan_hash": hash, "to": "applied"}),
    )
    .await
    .expect_error(409, "conflict");
    api.post_json("/api/v1/remediation/override", &json!({"crn": crn, "plan_hash": hash}))
        .await
        .expect_error(422, "invalid");
    let released = api
        .post_json(
            "/api/v1/remediation/override",
            &json!({"crn": crn, "plan_hash": hash, "reason": "owner agreed, ticket 42", "actor": "carol"}),
        )
        .await
        .expect(200);
    assert_eq!(released["stage"], "pending");
    let ov = events_of(&api, "s.a.u_OVERRIDE", &crn).await;
    assert_eq!(ov.len(), 1);
    assert_eq!(meta(&ov[0])["reason"], "owner agreed, ticket 42 (actor note: carol)");
    assert_eq!(ov[0]["actor"], "admin");
    let moves = events_of(&api, "PIPELINE_MOVE", &crn).await;
    assert_eq!(meta(&moves[0])["to"], "sau_gate");
    let done = api
        .post_json("/api/v1/remediation/approve", &json!({"crn": crn, "plan_hash": hash}))
        .await
        .expect(200);
    assert_eq!(done["applied"], true, "{done}");
}

#[tokio::test]
async fn quarantine_then_revert() {
    let dir = data_dir();
    let d = Daemon::start_scanned(dir.path(), SCALE).await;
    let api = d.api();
    let (crn, _) = one_step_item(&api).await;
    let q = api
        .post_json(
            "/api/v1/remediation/quarantine",
            &json!({"crn": crn, "action": "ISOLATE", "reason": "suspected leak", "actor": "sec"}),
        )
        .await
        .expect(200);
    let hash = q["compensating_payload_hash"].as_str().unwrap().to_owned();
    assert_eq!(hash.len(), 64);
    assert_eq!(effects(&d)[&crn], "isolated");
    let ev = events_of(&api, "QUARANTINE", &crn).await;
    assert_eq!(ev.len(), 1);
    assert_eq!(ev[0]["status"], "QUARANTINED");
    assert_eq!(meta(&ev[0])["compensating_payload_hash"], hash);
    api.scan_wait().await;
    let enc = common::encode_segment(&crn);
    let node = api.get_ok(&format!("/api/v1/graph/nodes/{enc}")).await;
    assert_eq!(node["state"], "isolated", "{node}");

    let r = api
        .post_json("/api/v1/remediation/revert", &json!({"hash": hash}))
        .await
        .expect(200);
    assert_eq!(r["crn"], crn);
    assert!(effects(&d).get(&crn).is_none());
    assert_eq!(events_of(&api, "QUARANTINE_REVERTED", &crn).await.len(), 1);
    api.post_json("/api/v1/remediation/revert", &json!({"hash": hash}))
        .await
        .expect_error(409, "conflict");
    api.post_json("/api/v1/remediation/revert", &json!({"hash": "f".repeat(64)}))
        .await
        .expect_error(404, "not_found");
    api.post_json("/api/v1/remediation/revert", &json!({"hash": "nope"}))
        .await
        .expect_error(422, "invalid");
    api.post_json(
        "/api/v1/remediation/quarantine",
        &json!({"crn": crn, "action": "NUKE", "reason": "x"}),
    )
    .await
    .expect_error(422, "invalid");
}

#[tokio::test]
async fn ignore_entries_keep_resources_out_and_expire() {
    let dir = data_dir();
    let d = Daemon::start_scanned(dir.path(), SCALE).await;
    let api = d.api();
    let items = pending(&api).await;
    let (a, b) = (items[0]["crn"].as_str().unwrap(), items[1]["crn"].as_str().unwrap());
    api.post_json(
        "/api/v1/isolation",
        &json!({"crn": a, "reason_code": "owner-request", "ttl_seconds": 0, "actor": "dana"}),
    )
    .await
    .expect(200);
    let short = api
        .post_json(
            "/api/v1/isolation",
            &json!({"crn": b, "reason_code": "migration", "ttl_seconds": 2}),
        )
        .await
        .expect(200);
    assert!(short["expires_at"].is_u64());
    api.scan_wait().await;
    let now = pending(&api).await;
    assert!(
        !now.iter().any(|i| i["crn"] == a),
        "an ignored resource leaves the pipeline"
    );
    let isolation = events_of(&api, "ISOLATION", a).await;
    assert_eq!(meta(&isolation[0])["author_identifier"], "admin");
    assert_eq!(meta(&isolation[0])["ttl_seconds"], 0);

    // The TTL entry expires by itself, recorded; the permanent one stays.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let list = api.get_ok("/api/v1/isolation").await;
        let crns: Vec<&str> = list["entries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["crn"].as_str().unwrap())
            .collect();
        assert!(crns.contains(&a));
        if !crns.contains(&b) {
            break;
        }
        assert!(Instant::now() < deadline, "the 2 s entry expired within 20 s");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let expired = events_of(&api, "ISOLATION", b).await;
    assert!(expired.iter().any(|e| meta(e)["action"] == "EXPIRED"), "{expired:?}");
    let enc = common::encode_segment(a);
    api.delete(&format!("/api/v1/isolation/{enc}")).await.expect(200);
    api.delete(&format!("/api/v1/isolation/{enc}"))
        .await
        .expect_error(404, "not_found");
    api.post_json(
        "/api/v1/isolation",
        &json!({"crn": "not-a-crn", "reason_code": "x", "ttl_seconds": 0}),
    )
    .await
    .expect_error(422, "invalid");
    // A resource the graph never had: an entry would protect nothing.
    api.post_json(
        "/api/v1/isolation",
        &json!({"crn": "crn:svc:aws:us-east-1:ec2:volume:1:vol-nowhere", "reason_code": "x", "ttl_seconds": 0}),
    )
    .await
    .expect_error(404, "not_found");
    api.post_json(
        "/api/v1/isolation",
        &json!({"crn": a, "reason_code": "x", "ttl_seconds": -1}),
    )
    .await
    .expect_error(400, "bad_request");
}

#[tokio::test]
async fn a_daemon_killed_mid_saga_compensates_on_restart() {
    let dir = data_dir();
    let mut d = Daemon::configure(dir.path(), SCALE);
    d.env.push(("SVC_MOCK_HANG_ACTIONS".into(), "delete".into()));
    d.launch().await;
    d.wait_scan_after(0).await;
    let api = d.api();
    let (crn, hash) = two_step_item(&api).await;
    let before = api.history_all(&[("type", "SCAN_COMPLETED")]).await[0]["seq"]
        .as_u64()
        .unwrap();
    // The request never gets an answer: the daemon dies under it.
    let approving = api.post_unanswered("/api/v1/remediation/approve", json!({"crn": crn, "plan_hash": hash}));
    // The stop commits; the delete never returns.
    let deadline = Instant::now() + Duration::from_secs(30);
    while events_of(&api, "EXECUTION_COMMIT", &crn).await.is_empty() {
        assert!(Instant::now() < deadline, "step 0 committed");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(effects(&d)[&crn], "stopped");
    d.kill_9().await;
    approving.abort();

    d.env.clear();
    d.launch().await;
    let scan = d.wait_scan_after(before).await;
    assert_eq!(scan["payload"]["remediation"]["recovered_sagas"], 1, "{scan}");
    let api = d.api();
    let rollbacks = events_of(&api, "EXECUTION_ROLLBACK", &crn).await;
    let steps: Vec<u64> = rollbacks
        .iter()
        .map(|r| meta(r)["step_index"].as_u64().unwrap())
        .collect();
    assert!(steps.contains(&0), "{rollbacks:?}");
    assert!(
        rollbacks
            .iter()
            .all(|r| meta(r)["reason"].as_str().unwrap().contains("daemon stopped"))
    );
    // The ledger and the estate agree: every committed step was undone.
    assert!(effects(&d).get(&crn).is_none(), "{}", effects(&d));
    let item = pending(&api)
        .await
        .into_iter()
        .find(|i| i["crn"] == crn)
        .expect("back in pending");
    assert!(item["failure"].as_str().unwrap().contains("daemon stopped"));
}

#[tokio::test]
async fn bad_decisions_get_clear_errors_and_change_nothing() {
    let dir = data_dir();
    let d = Daemon::start_scanned(dir.path(), SCALE).await;
    let api = d.api();
    let before = api.get_ok("/api/v1/remediation/queue").await["counts"].clone();
    let unknown = "crn:svc:aws:us-east-1:ec2:volume:123456789012:vol-nothere";
    api.post_json(
        "/api/v1/remediation/approve",
        &json!({"crn": unknown, "plan_hash": "a"}),
    )
    .await
    .expect_error(404, "not_found");
    api.post_json(
        "/api/v1/remediation/reject",
        &json!({"crn": "bad crn", "plan_hash": "a"}),
    )
    .await
    .expect_error(422, "invalid");
    api.post_raw("/api/v1/remediation/approve", "{not json")
        .await
        .expect_error(400, "bad_request");
    api.post_json("/api/v1/remediation/approve", &json!({"crn": unknown}))
        .await
        .expect_error(400, "bad_request");
    api.post_json(
        "/api/v1/remediation/move",
        &json!({"crn": unknown, "plan_hash": "a", "to": "nowhere"}),
    )
    .await
    .expect_error(400, "bad_request");
    api.get_query("/api/v1/remediation/queue", &[("stage", "limbo")])
        .await
        .expect_error(400, "bad_request");
    api.get_query("/api/v1/plan", &[("crn", unknown)])
        .await
        .expect_error(404, "not_found");

    // Bulk: one result per item, good and bad together.
    let items = pending(&api).await;
    let (c1, h1) = (
        items[0]["crn"].as_str().unwrap(),
        items[0]["plan_hash"].as_str().unwrap(),
    );
    let bulk = api
        .post_json(
            "/api/v1/remediation/bulk",
            &json!({"action": "reject", "reason": "keep for now", "items": [
                {"crn": c1, "plan_hash": h1},
                {"crn": unknown, "plan_hash": "x"},
            ]}),
        )
        .await
        .expect(200);
    assert_eq!(bulk["succeeded"], 1, "{bulk}");
    assert_eq!(bulk["results"][1]["status"], 404);
    api.post_json("/api/v1/remediation/bulk", &json!({"action": "explode", "items": []}))
        .await
        .expect_error(400, "bad_request");
    let after = api.get_ok("/api/v1/remediation/queue").await["counts"].clone();
    assert_eq!(after["rejected"], 1);
    assert_eq!(
        after["pending"].as_u64().unwrap() + 1,
        before["pending"].as_u64().unwrap()
    );
    let rej = events_of(&api, "REJECTION", c1).await;
    assert_eq!(rej[0]["status"], "REJECTED");
    // A rejected item stays out across a scan.
    api.scan_wait().await;
    let again = api.get_ok("/api/v1/remediation/queue").await["counts"].clone();
    assert_eq!(again["rejected"], 1, "{again}");
}

#[tokio::test]
async fn a_policy_block_holds_an_item_until_an_override() {
    let dir = data_dir();
    let d = Daemon::start_scanned(dir.path(), SCALE).await;
    let api = d.api();
    let (crn, hash) = one_step_item(&api).await;
    api.post_json(
        "/api/v1/policies",
        &json!({"rules": [{"id": "keep-this-one", "condition": format!("crn == \"{crn}\""), "action": "block",
                           "message": "owner asked to keep it"}]}),
    )
    .await
    .expect(200);
    // The policy pass runs after engine.sau: approval checks it at once,
    // and the next scan's pass holds the item at the gate.
    api.scan_wait().await;
    api.post_json("/api/v1/remediation/approve", &json!({"crn": crn, "plan_hash": hash}))
        .await
        .expect_error(409, "conflict");
    api.scan_wait().await;
    let item = at_stage(&api, "sau_gate", &crn)
        .await
        .expect("held at the gate by the block rule");
    assert_eq!(item["blockers"], json!(["policy:keep-this-one"]), "{item}");
    api.post_json(
        "/api/v1/remediation/override",
        &json!({"crn": crn, "plan_hash": hash, "reason": "approved by the owner after all"}),
    )
    .await
    .expect(200);
    api.scan_wait().await;
    let done = api
        .post_json("/api/v1/remediation/approve", &json!({"crn": crn, "plan_hash": hash}))
        .await
        .expect(200);
    assert_eq!(
        done["applied"], true,
        "the override holds while the rule still matches: {done}"
    );
}

#[tokio::test]
async fn cli_verbs_decide_and_undo() {
    let dir = data_dir();
    let d = Daemon::start_scanned(dir.path(), SCALE).await;
    let api = d.api();
    let base = d.base();
    let data = dir.path().to_str().expect("utf-8 path").to_owned();
    let env = [
        ("SVC_URL", base.as_str()),
        ("SVC_DATA_DIR", data.as_str()),
        ("USER", "erin"),
    ];
    let run = |args: &[&str]| {
        let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
        async move {
            let a: Vec<&str> = args.iter().map(String::as_str).collect();
            common::run_cli(&a, &env).await
        }
    };
    let (code, out, err) = run(&["remediation", "queue", "--stage", "pending"]).await;
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("pending") && out.contains("crn:svc:"), "{out}");
    let (a, _) = one_step_item(&api).await;
    let (code, out, _) = run(&["remediation", "plan", &a]).await;
    assert_eq!(code, Some(0));
    assert!(out.contains("undone by") && out.contains("Plan:"), "{out}");
    let (code, out, err) = run(&["remediation", "approve", &a]).await;
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("applied"), "{out}");
    assert!(
        err.contains("deciding on plan"),
        "the plan decided on is printed: {err}"
    );
    let commit = events_of(&api, "EXECUTION_COMMIT", &a).await;
    // The CLI sends the token file's admin token: the actor is its name.
    assert_eq!(commit[0]["actor"], "admin");
    let hash = meta(&commit[0])["compensating_payload_hash"]
        .as_str()
        .unwrap()
        .to_owned();
    let (code, out, err) = run(&["revert", &hash]).await;
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(effects(&d).get(&a).is_none(), "the step was undone: {}", effects(&d));
    let back = pending(&api)
        .await
        .into_iter()
        .find(|i| i["crn"] == a)
        .expect("back in pending");
    assert!(
        back["failure"].as_str().unwrap().contains("reverted by admin"),
        "{back}"
    );
    let (code, _, err) = run(&["revert", &hash]).await;
    assert_ne!(code, Some(0), "a second revert is refused: {err}");

    let (b, _) = one_step_item(&api).await;
    let (code, out, _) = run(&["ignore", &b, "--reason", "owner", "--ttl", "600"]).await;
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("ignored until"), "{out}");
    let (code, _, _) = run(&["ignore", &b, "--remove"]).await;
    assert_eq!(code, Some(0));
    let (code, _, err) = run(&["remediation", "approve", "crn:svc:aws:us-east-1:ec2:volume:1:vol-none"]).await;
    assert_ne!(code, Some(0));
    assert!(err.contains("not in the remediation pipeline"), "{err}");
}
