//! The WebSocket ledger stream `/events` of a running daemon: live events in
//! order, replay with `{"since": N}` joined to live events without a gap or a
//! duplicate, several clients, bad client messages.

#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

mod common;

use common::{Daemon, SCAN_DEADLINE, seqs};
use serde_json::{Value, json};

const SCALE: usize = 300;

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not an unsigned integer: {v}"))
}

/// Checks the envelope fields and that each event links to the one before.
#[track_caller]
fn check_chain(events: &[Value]) {
    for e in events {
        for k in [
            "event_type",
            "timestamp",
            "payload",
            "seq",
            "id",
            "crn",
            "actor",
            "session_id",
            "hash",
            "prev_hash",
        ] {
            assert!(e.get(k).is_some(), "envelope lacks {k}: {e}");
        }
        assert!(e["timestamp"].is_u64(), "timestamp is Unix seconds: {e}");
        assert!(e["payload"].is_object(), "payload is an object: {e}");
        assert_eq!(e["id"], u(&e["seq"]).to_string().as_str(), "id is the seq");
        assert_eq!(e["hash"].as_str().map(str::len), Some(64), "hash: {e}");
    }
    for w in events.windows(2) {
        assert_eq!(
            w[1]["prev_hash"], w[0]["hash"],
            "event {} links to event {}",
            w[1]["seq"], w[0]["seq"]
        );
        assert!(
            u(&w[1]["timestamp"]) >= u(&w[0]["timestamp"]),
            "time never goes backwards"
        );
    }
}

async fn head(d: &Daemon) -> u64 {
    u(&d.api().get_ok("/api/v1/ledger/verify").await["last_seq"])
}

#[tokio::test]
async fn scan_events_reach_every_client_in_order() {
    let dir = common::data_dir();
    let d = Daemon::start_scanned(dir.path(), SCALE).await;
    let api = d.api();
    let start = head(&d).await;
    let mut a = d.ws().await;
    let mut b = d.ws().await;
    a.send_since(start).await;
    b.send_since(start).await;

    let mut reports = Vec::new();
    for _ in 0..3 {
        reports.push(api.scan_wait().await);
    }
    let last = u(&reports[2]["event_seq"]);
    let got_a = a.collect_through(last, SCAN_DEADLINE).await;
    let got_b = b.collect_through(last, SCAN_DEADLINE).await;
    assert_eq!(
        seqs(&got_a),
        (start + 1..=last).collect::<Vec<_>>(),
        "client A gets every event once, in order"
    );
    assert_eq!(got_a, got_b, "both clients get the same events");
    check_chain(&got_a);

    let scans: Vec<&Value> = got_a.iter().filter(|e| e["event_type"] == "SCAN_COMPLETED").collect();
    assert_eq!(scans.len(), 3, "one SCAN_COMPLETED per scan");
    for (ev, report) in scans.iter().zip(&reports) {
        assert_eq!(ev["seq"], report["event_seq"], "the report names its event");
        assert_eq!(ev["payload"]["scan_seq"], report["scan_seq"]);
        assert_eq!(ev["payload"]["node_count"], report["node_count"]);
        assert_eq!(ev["actor"], "engine");
    }
    let scan_seqs: Vec<u64> = scans.iter().map(|e| u(&e["payload"]["scan_seq"])).collect();
    assert!(
        scan_seqs.windows(2).all(|w| w[1] == w[0] + 1),
        "scans in order: {scan_seqs:?}"
    );

    // The stream and the history agree on every field they share.
    let history = api.history_all(&[]).await;
    for ev in &got_a {
        let h = history
            .iter()
            .find(|h| h["seq"] == ev["seq"])
            .expect("event in history");
        assert_eq!(h["hash"], ev["hash"]);
        assert_eq!(h["type"], ev["event_type"]);
        assert_eq!(h["meta"], ev["payload"]);
        assert_eq!(h["session_id"], ev["session_id"]);
    }

    // A client that sends nothing gets the live events from its connection on.
    let mut c = d.ws().await;
    let r = api.scan_wait().await;
    let first = c.next(SCAN_DEADLINE).await;
    assert_eq!(
        first["seq"], r["event_seq"],
        "a fresh client starts with the next live event"
    );
    assert_eq!(a.next(SCAN_DEADLINE).await, first, "the other clients see it too");
    assert_eq!(b.next(SCAN_DEADLINE).await, first);
    a.close().await;
    b.close().await;
    c.close().await;
}

#[tokio::test]
async fn since_zero_replays_everything_then_live_events_without_gap_or_duplicate() {
    let dir = common::data_dir();
    let d = Daemon::start_scanned(dir.path(), SCALE).await;
    let api = d.api();
    api.scan_wait().await;
    api.scan_wait().await;

    // Replay while events keep being appended: a scan and a burst of prunes
    // (each prune records a HISTORY_PRUNED event) race with the replay.
    let mut ws = d.ws().await;
    ws.send_since(0).await;
    let started = api.scan_start().await;
    let burst = {
        let api = api.clone();
        tokio::spawn(async move {
            for _ in 0..40 {
                api.post_json("/api/v1/history/prune", &json!({"max_age_days": 3650}))
                    .await
                    .expect(200);
            }
        })
    };
    burst.await.expect("prune burst");
    // Waiting for the scan's event on a second stream keeps this one's order untouched.
    let mut watch = d.ws().await;
    watch.send_since(0).await;
    let done = watch
        .next_matching(SCAN_DEADLINE, |e| {
            e["event_type"] == "SCAN_COMPLETED" && e["payload"]["scan_seq"] == started["scan_seq"]
        })
        .await;
    watch.close().await;
    let last = head(&d).await.max(u(&done["seq"]));
    let got = ws.collect_through(last, SCAN_DEADLINE).await;
    assert_eq!(
        seqs(&got),
        (1..=last).collect::<Vec<_>>(),
        "every event from 1 to {last} exactly once, in order"
    );
    check_chain(&got);
    assert_eq!(got.iter().filter(|e| e["event_type"] == "HISTORY_PRUNED").count(), 40);
    assert_eq!(got.iter().filter(|e| e["event_type"] == "SCAN_COMPLETED").count(), 4);

    // Live events follow the replay directly.
    let r = api.scan_wait().await;
    let next = ws.next(SCAN_DEADLINE).await;
    assert_eq!(u(&next["seq"]), last + 1, "the next live event follows the replay");
    assert_eq!(next["seq"], r["event_seq"]);
    assert_eq!(next["prev_hash"], got.last().expect("events")["hash"]);
    ws.close().await;

    // A later `since` replays only what follows it.
    let mut mid = d.ws().await;
    mid.send_since(last - 5).await;
    let tail = mid.collect_through(last + 1, SCAN_DEADLINE).await;
    assert_eq!(seqs(&tail), (last - 4..=last + 1).collect::<Vec<_>>());
    assert_eq!(tail[..5], got[got.len() - 5..], "replayed events are the stored ones");
    mid.close().await;

    // A `since` beyond the head waits for the next event instead of hanging.
    let mut ahead = d.ws().await;
    ahead.send_since(1_000_000).await;
    let r = api.scan_wait().await;
    let ev = ahead.next(SCAN_DEADLINE).await;
    assert_eq!(
        ev["seq"], r["event_seq"],
        "a client ahead of the ledger resumes at its head"
    );
    ahead.close().await;
}

#[tokio::test]
async fn bad_client_messages_get_an_error_frame_and_the_stream_goes_on() {
    let dir = common::data_dir();
    let d = Daemon::start_scanned(dir.path(), SCALE).await;
    let mut ws = d.ws().await;
    for bad in ["hello", "{\"since\": -1}", "{\"since\": \"0\"}", "{\"from\": 0}"] {
        ws.send_text(bad).await;
        let reply = ws.next(SCAN_DEADLINE).await;
        assert_eq!(reply["error"]["code"], "bad_request", "reply to {bad:?}: {reply}");
        assert!(reply["error"]["message"].as_str().is_some_and(|m| !m.is_empty()));
    }
    ws.send_since(0).await;
    let first = ws.next(SCAN_DEADLINE).await;
    assert_eq!(first["seq"], 1, "the stream still works: {first}");
    assert_eq!(first["event_type"], "SCAN_COMPLETED");
    ws.close().await;
    d.api().get_ok("/api/v1/graph/stats").await;
}

/// `daemon.scan_interval` from `config.toml`: with no trigger at all, scans
/// keep arriving, numbered one after the other.
#[tokio::test]
async fn scheduled_scans_follow_the_configured_interval() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("config.toml"), "[daemon]\nscan_interval = \"1s\"\n").unwrap();
    let d = Daemon::start(dir.path(), SCALE).await;
    let mut ws = d.ws().await;
    ws.send_since(0).await;
    let mut scans = Vec::new();
    while scans.len() < 3 {
        let e = ws
            .next_matching(SCAN_DEADLINE, |e| e["event_type"] == "SCAN_COMPLETED")
            .await;
        scans.push(u(&e["payload"]["scan_seq"]));
    }
    ws.close().await;
    assert_eq!(
        scans,
        vec![1, 2, 3],
        "the scan at start, then one a second, none triggered"
    );
    let history = d
        .api()
        .get_query_ok("/api/v1/history", &[("type", "SCAN_COMPLETED")])
        .await;
    assert!(u(&history["total"]) >= 3);
}
