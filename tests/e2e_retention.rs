//! Retention through a real daemon in mock mode, its wall clock moved on an
//! hour before each scan by libfaketime (the daemon's monotonic clock, which
//! its timers use, is left alone): with `graph.history_retention` set,
//! `graph.redb` reaches a steady size, time travel before the history kept
//! answers 410 `before_retention` naming the earliest time available and
//! answers the graph from then on; with `ledger.retention` set (applied by
//! `PUT /api/v1/config` without a restart), old events are pruned by the
//! actor `retention` in one audited `HISTORY_PRUNED` record and the chain
//! still verifies, through the API and `svc ledger verify`.

#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::{Daemon, run_cli};
use serde_json::{Value, json};
use svc_api::routes::{parse_rfc3339, rfc3339};

const SCALE: usize = 2000;
const SCANS: u64 = 30;
const LIBFAKETIME: &str = "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1";
const HOUR_US: u64 = 3_600_000_000;

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not an unsigned integer: {v}"))
}

fn ts_us(event: &Value) -> u64 {
    parse_rfc3339(event["ts"].as_str().unwrap()).unwrap_or_else(|| panic!("no time: {event}"))
}

/// The daemon's clock: the wall clock plus the offset in `file`
/// (`+5h`), read again at every call.
fn faked_clock(d: &mut Daemon, file: &Path) {
    std::fs::write(file, "+0\n").unwrap();
    for (k, v) in [
        ("LD_PRELOAD", LIBFAKETIME.to_owned()),
        ("FAKETIME_TIMESTAMP_FILE", file.display().to_string()),
        ("FAKETIME_NO_CACHE", "1".to_owned()),
        ("FAKETIME_DONT_FAKE_MONOTONIC", "1".to_owned()),
    ] {
        d.env.push((k.to_owned(), v));
    }
}

#[tokio::test]
async fn old_history_goes_and_the_stores_reach_a_steady_size() {
    assert!(
        Path::new(LIBFAKETIME).exists(),
        "{LIBFAKETIME} is missing: apt-get install faketime (scripts/test installs it)"
    );
    let dir = common::data_dir();
    let clock = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(
        dir.path().join("config.toml"),
        "[daemon]\nscan_interval = \"1h\"\n\n[graph]\nhistory_retention = \"3h\"\n",
    )
    .unwrap();
    let mut d = Daemon::configure(dir.path(), SCALE);
    faked_clock(&mut d, clock.path());
    d.launch().await;
    d.wait_scan_after(0).await;
    let api = d.api();
    let first_us = ts_us(&api.history_all(&[("type", "SCAN_COMPLETED")]).await[0]);

    let config = api.get_ok("/api/v1/config").await;
    assert_eq!(config["graph"]["history_retention"], "3h", "{config}");

    let graph = dir.path().join("graph.redb");
    let mut sizes = Vec::new();
    let mut last_us = first_us;
    for hour in 1..=SCANS {
        std::fs::write(clock.path(), format!("+{hour}h\n")).unwrap();
        let report = api.scan_wait().await;
        assert!(report.is_object(), "{report}");
        sizes.push(std::fs::metadata(&graph).unwrap().len());
    }
    let events = api.history_all(&[("type", "SCAN_COMPLETED")]).await;
    last_us = last_us.max(ts_us(&events[0]));
    assert!(
        last_us >= first_us + SCANS * HOUR_US,
        "the daemon's clock moved {} h",
        (last_us - first_us) / HOUR_US
    );

    // The file stops growing: a checkpoint a window, two windows kept, and
    // the pages of what was dropped reused.
    let settled = sizes[(SCANS as usize) / 2 - 1];
    let late_max = *sizes[SCANS as usize / 2..].iter().max().unwrap();
    assert!(
        late_max <= settled + settled / 4,
        "graph.redb grew from {settled} to {late_max} bytes over the last {} scans: {sizes:?}",
        SCANS / 2
    );

    // Before the history kept: 410, naming the earliest time available.
    let gone = api
        .get_query("/api/v1/graph/at", &[("ts", rfc3339(first_us + 1).as_str())])
        .await
        .expect_error(410, "before_retention");
    let earliest = gone["error"]["details"]["earliest"].as_str().unwrap().to_owned();
    let earliest_us = u(&gone["error"]["details"]["earliest_us"]);
    assert_eq!(parse_rfc3339(&earliest), Some(earliest_us));
    assert!(
        earliest_us >= last_us - 2 * 3 * HOUR_US - HOUR_US && earliest_us <= last_us - 3 * HOUR_US + HOUR_US,
        "earliest {earliest} against the last scan at {}",
        rfc3339(last_us)
    );
    assert!(gone["error"]["message"].as_str().unwrap().contains(&earliest), "{gone}");
    api.get_query(
        "/api/v1/graph/diff",
        &[
            ("from", rfc3339(earliest_us - 1).as_str()),
            ("to", rfc3339(last_us).as_str()),
        ],
    )
    .await
    .expect_error(410, "before_retention");
    // From the earliest time on, the graph.
    for at in [earliest_us, last_us - HOUR_US, last_us] {
        let page = api
            .get_query_ok("/api/v1/graph/at", &[("ts", rfc3339(at).as_str()), ("limit", "10")])
            .await;
        assert!(u(&page["total_nodes"]) > SCALE as u64 / 2, "at {}: {page}", rfc3339(at));
    }
    api.get_query_ok(
        "/api/v1/graph/diff",
        &[
            ("from", earliest.as_str()),
            ("to", rfc3339(last_us).as_str()),
            ("limit", "5"),
        ],
    )
    .await;

    // The ledger keeps everything until its setting says otherwise.
    let before = api.get_ok("/api/v1/ledger/verify").await;
    assert_eq!(
        (before["ok"].clone(), before["first_seq"].clone()),
        (json!(true), json!(1))
    );
    assert!(api.history_all(&[("type", "HISTORY_PRUNED")]).await.is_empty());
    // Too short a window is refused and changes nothing.
    let refused = api
        .put_json("/api/v1/config", &json!({"ledger": {"retention": "10m"}}))
        .await
        .expect_error(422, "invalid");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("ledger.retention must be at least 1h"),
        "{refused}"
    );
    api.put_json("/api/v1/config", &json!({"ledger.retention": "5h"}))
        .await
        .expect(200);
    let deadline = Instant::now() + Duration::from_secs(30);
    let pruned = loop {
        let found = api.history_all(&[("type", "HISTORY_PRUNED")]).await;
        if let Some(e) = found.first() {
            break e.clone();
        }
        assert!(
            Instant::now() < deadline,
            "no HISTORY_PRUNED after setting ledger.retention"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(pruned["actor"], "retention", "{pruned}");
    assert!(
        pruned["message"].as_str().unwrap().contains("(ledger.retention = 5h)"),
        "{pruned}"
    );
    let cutoff_us = u(&pruned["meta"]["cutoff_us"]);
    assert!(cutoff_us >= last_us - 5 * HOUR_US, "{pruned}");
    assert_eq!(pruned["meta"]["reason"], "ledger.retention = 5h");
    let removed = u(&pruned["meta"]["pruned"]);
    assert!(removed >= SCANS - 6, "{pruned}");
    let remaining = api.history_all(&[]).await;
    assert!(
        remaining.iter().all(|e| ts_us(e) >= cutoff_us),
        "an event older than the cutoff is left"
    );
    let after = api.get_ok("/api/v1/ledger/verify").await;
    assert_eq!(after["ok"], true, "{after}");
    assert_eq!(u(&after["first_seq"]), u(&pruned["meta"]["through_seq"]) + 1, "{after}");
    let env = [("SVC_URL", d.base()), ("SVC_TOKEN", d.token.clone())];
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let (code, out, err) = run_cli(&["ledger", "verify"], &env).await;
    assert_eq!(code, Some(0), "{out}{err}");

    // Applied again with nothing old left: nothing pruned, nothing recorded.
    api.put_json("/api/v1/config", &json!({"ledger.retention": "6h"}))
        .await
        .expect(200);
    let scan = api.scan_wait().await;
    assert!(scan.is_object());
    assert_eq!(api.history_all(&[("type", "HISTORY_PRUNED")]).await.len(), 1);
    let config = api.get_ok("/api/v1/config").await;
    assert_eq!(config["ledger"]["retention"], "6h", "{config}");
}
