//! Crash consistency: the real daemon is killed with SIGKILL at seeded
//! random moments while scans, sagas (approvals, quarantines), bulk
//! decisions, isolations, exports and prunes run, then started again.
//! After every restart:
//! - the ledger verifies, and every event acknowledged before the kill is
//!   still there with the same hash (totals never go down);
//! - every committed scan is recorded exactly once (SCAN_COMPLETED, or
//!   SCAN_RECOVERED for the ones the kill cut off);
//! - every saga step committed or compensated is recorded once;
//! - the export bucket holds each event once, without a gap.
//!
//! `SVC_CRASH_SEED`, `SVC_CRASH_ITERATIONS` and `SVC_CRASH_SCALE` change
//! the run; a failure prints the seed and iteration that reproduce it.

#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::Path;
use std::time::Duration;

use common::{Api, Daemon};
use serde_json::{Value, json};

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// xorshift64*: a small seeded generator, so a run can be repeated.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not an unsigned integer: {v}"))
}

/// One batch of work, sent without waiting for the answers; the daemon is
/// killed while it runs.
fn fire(api: &Api, rng: &mut Rng, pending: &[Value], round: u64) -> Vec<tokio::task::JoinHandle<()>> {
    let mut tasks = Vec::new();
    let mut spawn = |f: std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>| tasks.push(tokio::spawn(f));
    if rng.chance(70) {
        let api = api.clone();
        spawn(Box::pin(async move {
            let _ = api.post_json("/api/v1/engine/scan", &json!({"wait": true})).await;
        }));
    }
    let mut items = pending.iter().skip(rng.below(pending.len() as u64 + 1) as usize);
    if rng.chance(60)
        && let Some(item) = items.next()
    {
        let (api, body) = (
            api.clone(),
            json!({"crn": item["crn"], "plan_hash": item["plan_hash"], "actor": "crash"}),
        );
        spawn(Box::pin(async move {
            let _ = api.post_json("/api/v1/remediation/approve", &body).await;
        }));
    }
    if rng.chance(50) {
        let picked: Vec<Value> = items
            .by_ref()
            .take(1 + rng.below(8) as usize)
            .map(|i| json!({"crn": i["crn"], "plan_hash": i["plan_hash"]}))
            .collect();
        let action = if rng.chance(50) { "approve" } else { "reject" };
        let (api, body) = (
            api.clone(),
            json!({"action": action, "reason": format!("round {round}"), "items": picked}),
        );
        spawn(Box::pin(async move {
            let _ = api.post_json("/api/v1/remediation/bulk", &body).await;
        }));
    }
    if rng.chance(40)
        && let Some(item) = items.next()
    {
        let (api, body) = (
            api.clone(),
            json!({"crn": item["crn"], "action": "ISOLATE", "reason": "crash test", "actor": "sec"}),
        );
        spawn(Box::pin(async move {
            let _ = api.post_json("/api/v1/remediation/quarantine", &body).await;
        }));
    }
    if rng.chance(50)
        && let Some(item) = items.next()
    {
        let (api, body) = (
            api.clone(),
            json!({"crn": item["crn"], "reason_code": format!("round-{round}"), "ttl_seconds": 0}),
        );
        spawn(Box::pin(async move {
            let _ = api.post_json("/api/v1/isolation", &body).await;
        }));
    }
    if rng.chance(50) {
        let api = api.clone();
        spawn(Box::pin(async move {
            let _ = api.post_json("/api/v1/ledger/export", &json!({})).await;
        }));
    }
    if rng.chance(30) {
        let api = api.clone();
        spawn(Box::pin(async move {
            let _ = api
                .post_json("/api/v1/history/prune", &json!({"max_age_days": 1}))
                .await;
        }));
    }
    tasks
}

/// Every line of the `ledger-*.jsonl.gz` objects in `dir`: (object, event_idx).
fn exported(dir: &Path) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if !name.ends_with(".jsonl.gz") {
            continue;
        }
        let bytes = std::fs::read(&path).unwrap();
        let mut text = String::new();
        flate2::read::MultiGzDecoder::new(bytes.as_slice())
            .read_to_string(&mut text)
            .unwrap_or_else(|e| panic!("{name} is not whole gzip: {e}"));
        for line in text.lines() {
            let v: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{name}: {e}"));
            out.push((name.clone(), u(&v["event_idx"])));
        }
    }
    out
}

/// Checks every invariant; returns the events now stored (seq -> hash).
async fn check(d: &Daemon, bucket: &Path, acknowledged: &BTreeMap<u64, String>, at: &str) -> BTreeMap<u64, String> {
    let api = d.api();
    let verify = api.get_ok("/api/v1/ledger/verify").await;
    assert_eq!(verify["ok"], true, "{at}: {verify}");

    // A scan after the restart: every scan before it must be recorded.
    let scan = api.scan_wait().await;
    let last_scan = u(&scan["scan_seq"]);
    let events = api.history_all(&[]).await;
    let stored: BTreeMap<u64, String> = events
        .iter()
        .map(|e| (u(&e["seq"]), e["hash"].as_str().unwrap().to_owned()))
        .collect();
    for (seq, hash) in acknowledged {
        assert_eq!(
            stored.get(seq),
            Some(hash),
            "{at}: acknowledged event {seq} lost or changed"
        );
    }

    let mut scans: BTreeMap<u64, u32> = BTreeMap::new();
    let mut steps: BTreeMap<(String, String, u64), u32> = BTreeMap::new();
    for e in &events {
        let m = &e["meta"];
        match e["type"].as_str().unwrap() {
            "SCAN_COMPLETED" => *scans.entry(u(&m["scan_seq"])).or_default() += 1,
            "SCAN_RECOVERED" => {
                for s in u(&m["first_scan_seq"])..=u(&m["scan_seq"]) {
                    *scans.entry(s).or_default() += 1;
                }
            }
            t @ ("EXECUTION_COMMIT" | "EXECUTION_ROLLBACK") => {
                let key = (
                    t.to_owned(),
                    m["saga_id"].as_str().unwrap().to_owned(),
                    u(&m["step_index"]),
                );
                *steps.entry(key).or_default() += 1;
            }
            _ => {}
        }
    }
    let expect: BTreeMap<u64, u32> = (1..=last_scan).map(|s| (s, 1)).collect();
    assert_eq!(scans, expect, "{at}: every committed scan recorded exactly once");
    for (step, n) in &steps {
        assert_eq!(*n, 1, "{at}: saga step {step:?} recorded {n} times");
    }

    let run = api.post_json("/api/v1/ledger/export", &json!({})).await.expect(200);
    let through = u(&run["exported_through"]);
    let lines = exported(bucket);
    let mut seqs: Vec<u64> = lines.iter().map(|(_, s)| *s).collect();
    seqs.sort_unstable();
    let unique: BTreeSet<u64> = seqs.iter().copied().collect();
    assert_eq!(unique.len(), seqs.len(), "{at}: an event exported twice: {lines:?}");
    let first = seqs.first().copied().unwrap_or(1);
    assert!(
        seqs.iter().copied().eq(first..=through),
        "{at}: the bucket has a gap: {seqs:?} through {through}"
    );
    stored
}

#[tokio::test]
async fn killed_at_random_moments_the_daemon_loses_and_hides_nothing() {
    let seed = env_or("SVC_CRASH_SEED", 0x5eed_0042);
    let iterations = env_or("SVC_CRASH_ITERATIONS", 8);
    let scale = env_or("SVC_CRASH_SCALE", 3000) as usize;
    let mut rng = Rng(seed | 1);
    let dir = common::data_dir();
    let bucket = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("config.toml"),
        format!(
            "{}[sau]\naudit_bucket = \"file://{}\"\naudit_export_interval = \"1h\"\naudit_export_max_events = 50\n",
            common::QUIET_CONFIG,
            bucket.path().display()
        ),
    )
    .unwrap();
    let mut d = Daemon::start_scanned(dir.path(), scale).await;
    let mut acknowledged = check(&d, bucket.path(), &BTreeMap::new(), "before the first kill").await;
    for round in 0..iterations {
        let at = format!("seed {seed:#x}, iteration {round}");
        let api = d.api();
        let pending: Vec<Value> = api
            .get_query_ok("/api/v1/remediation/queue", &[("stage", "pending"), ("limit", "200")])
            .await["stages"]["pending"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let tasks = fire(&api, &mut rng, &pending, round);
        // The crash point: somewhere in the first 1.5 s of the work.
        tokio::time::sleep(Duration::from_millis(rng.below(1500))).await;
        d.kill_9().await;
        for t in tasks {
            t.abort();
        }
        d.launch().await;
        acknowledged = check(&d, bucket.path(), &acknowledged, &at).await;
        eprintln!("{at}: {} events, all invariants hold", acknowledged.len());
    }
}
