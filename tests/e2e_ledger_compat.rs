//! A ledger written by an earlier daemon (`tests/fixtures/ledger-v1/events.redb`:
//! two scans, policy changes, an approval with its saga step, a rejection,
//! an operator move and an override, a quarantine and its revert, ignore
//! entries added and removed) keeps verifying byte for byte, from the file
//! and through a daemon that appends to it; its events answer history
//! queries by type and status with the kinds' statuses; and a WebSocket
//! replay from 0 returns every one of them in order before the new ones.

#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

mod common;

use std::collections::BTreeMap;

use common::{Daemon, SCAN_DEADLINE, seqs};
use serde_json::Value;

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/ledger-v1/events.redb");
/// Events in the fixture, and how many of each type.
const FIXTURE_EVENTS: u64 = 17;
const FIXTURE_TYPES: &[(&str, usize)] = &[
    ("APPROVAL", 1),
    ("EXECUTION_COMMIT", 1),
    ("ISOLATION", 3),
    ("PIPELINE_MOVE", 2),
    ("POLICY_CHANGE", 4),
    ("QUARANTINE", 1),
    ("QUARANTINE_REVERTED", 1),
    ("REJECTION", 1),
    ("SCAN_COMPLETED", 2),
    ("s.a.u_OVERRIDE", 1),
];

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not an unsigned integer: {v}"))
}

fn counts<'a>(events: impl Iterator<Item = &'a Value>, field: &str) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for e in events {
        let t = e[field].as_str().unwrap_or_else(|| panic!("{field} is a string: {e}"));
        *out.entry(t.to_owned()).or_default() += 1;
    }
    out
}

fn expected_types() -> BTreeMap<String, usize> {
    FIXTURE_TYPES.iter().map(|(t, n)| ((*t).to_owned(), *n)).collect()
}

#[tokio::test]
async fn a_ledger_of_the_previous_format_verifies_answers_queries_and_replays() {
    let dir = common::data_dir();
    let file = dir.path().join("events.redb");
    std::fs::copy(FIXTURE, &file).expect("copy the fixture ledger");

    // From the file, before any daemon touches it.
    let file_arg = file.display().to_string();
    let (code, out, err) = common::run_cli(&["ledger", "verify", "--file", &file_arg, "--json"], &[]).await;
    assert_eq!(code, Some(0), "verify of the fixture: {out}{err}");
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("verify --json: {e}: {out}"));
    assert_eq!(v["ok"], true, "{v}");
    assert_eq!(u(&v["last_seq"]), FIXTURE_EVENTS, "{v}");

    // A daemon opens it, appends its own scans after it and still verifies.
    let d = Daemon::start_scanned(dir.path(), 300).await;
    let api = d.api();
    let scanned = api.scan_wait().await;
    let last = u(&scanned["event_seq"]);
    assert!(
        last > FIXTURE_EVENTS,
        "the daemon appended after the fixture: {scanned}"
    );
    let v = api.get_ok("/api/v1/ledger/verify").await;
    assert_eq!(v["ok"], true, "{v}");
    assert_eq!(u(&v["last_seq"]), last, "{v}");

    // History: every fixture event, by type, with its status.
    let old: Vec<Value> = api
        .history_all(&[])
        .await
        .into_iter()
        .filter(|e| u(&e["seq"]) <= FIXTURE_EVENTS)
        .collect();
    assert_eq!(counts(old.iter(), "type"), expected_types());
    for e in &old {
        let want = match e["type"].as_str() {
            Some("APPROVAL") => "APPROVED",
            Some("REJECTION") => "REJECTED",
            Some("QUARANTINE") => "QUARANTINED",
            _ => "OK",
        };
        assert_eq!(e["status"], want, "{e}");
    }
    let sau: Vec<Value> = api
        .history_all(&[("type", "s.a.u_ACTION")])
        .await
        .into_iter()
        .filter(|e| u(&e["seq"]) <= FIXTURE_EVENTS)
        .collect();
    assert_eq!(
        counts(sau.iter(), "type"),
        expected_types()
            .into_iter()
            .filter(|(t, _)| {
                [
                    "QUARANTINE",
                    "QUARANTINE_REVERTED",
                    "APPROVAL",
                    "REJECTION",
                    "EXECUTION_COMMIT",
                    "EXECUTION_ROLLBACK",
                    "s.a.u_OVERRIDE",
                ]
                .contains(&t.as_str())
            })
            .collect()
    );
    let approved = api.history_all(&[("status", "APPROVED")]).await;
    assert_eq!(approved.len(), 1, "{approved:?}");
    assert_eq!(approved[0]["type"], "APPROVAL");

    // The stream replays the fixture's events in order, then the daemon's own.
    let mut ws = d.ws().await;
    ws.send_since(0).await;
    let got = ws.collect_through(last, SCAN_DEADLINE).await;
    assert_eq!(seqs(&got), (1..=last).collect::<Vec<_>>());
    assert_eq!(
        counts(got.iter().filter(|e| u(&e["seq"]) <= FIXTURE_EVENTS), "event_type"),
        expected_types()
    );
    for w in got.windows(2) {
        assert_eq!(
            w[1]["prev_hash"], w[0]["hash"],
            "event {} links to {}",
            w[1]["seq"], w[0]["seq"]
        );
    }
    ws.close().await;
}
