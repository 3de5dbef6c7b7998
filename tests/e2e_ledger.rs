//! The audit ledger of a running daemon: `svc ledger verify` through the API
//! and from the file (a tampered event found at its seq), `svc ledger tail`
//! with `--follow`, `since` replay while events are appended, and the
//! compliance export to a directory and to S3 (a real `moto_server`),
//! including a `kill -9` in the middle of an export.

#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

mod common;

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::moto::Moto;
use common::{Daemon, POLL_PAUSE, SCAN_DEADLINE, run_cli, seqs};
use serde_json::{Value, json};
use svc_engine::clock::SystemClock;
use svc_engine::store::ledger::{Ledger, NewEvent};
use tokio::io::AsyncBufReadExt;

const SCALE: usize = 50;
const DEADLINE: Duration = Duration::from_secs(120);

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not an unsigned integer: {v}"))
}

fn cli_env(d: &Daemon) -> Vec<(&'static str, String)> {
    vec![
        ("SVC_URL", d.base()),
        ("SVC_TOKEN", d.token.clone()),
        ("SVC_DATA_DIR", d.data_dir.display().to_string()),
    ]
}

async fn cli(args: &[&str], env: &[(&'static str, String)]) -> (Option<i32>, String, String) {
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    run_cli(args, &env).await
}

/// Appends `n` events through the API (each prune records one).
async fn append_through_api(d: &Daemon, n: usize) {
    let api = d.api();
    for _ in 0..n {
        api.post_json("/api/v1/history/prune", &json!({"max_age_days": 3650}))
            .await
            .expect(200);
    }
}

async fn head(d: &Daemon) -> u64 {
    u(&d.api().get_ok("/api/v1/ledger/verify").await["last_seq"])
}

/// Writes `n` events into `data_dir/events.redb` before the daemon starts.
fn prefill(data_dir: &Path, n: usize) {
    std::fs::create_dir_all(data_dir).expect("data dir");
    let ledger = Ledger::open(
        &data_dir.join("events.redb"),
        "prefill",
        Arc::new(SystemClock::default()),
    )
    .expect("open ledger");
    let mut i = 0;
    while i < n {
        let end = (i + 5000).min(n);
        let batch = (i..end)
            .map(|i| NewEvent {
                event_type: if i % 7 == 0 { "APPROVAL" } else { "EXECUTION_COMMIT" }.to_owned(),
                crn: Some(format!(
                    "crn:svc:aws:us-east-1:ec2:volume:123456789012:vol-{:06}",
                    i % 997
                )),
                actor: "prefill".to_owned(),
                message: format!("event {i}"),
                payload: json!({"saga_id": format!("saga-{i}"), "step_index": 0, "status": "SUCCESS"}),
            })
            .collect();
        ledger.append(batch).expect("append");
        i = end;
    }
}

// ---------------------------------------------------------------- verify

#[tokio::test]
async fn verify_finds_a_tampered_payload_through_the_api_and_from_the_file() {
    let dir = common::data_dir();
    let mut d = Daemon::start_scanned(dir.path(), SCALE).await;
    append_through_api(&d, 5).await;
    let env = cli_env(&d);

    let v = d.api().get_ok("/api/v1/ledger/verify").await;
    assert_eq!(
        (v["ok"].clone(), v["first_broken"].clone()),
        (json!(true), Value::Null),
        "{v}"
    );
    let last = u(&v["last_seq"]);
    assert_eq!(u(&v["events"]), last);
    let (code, out, err) = cli(&["ledger", "verify"], &env).await;
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains(&format!("{last} events verified")), "{out}");

    // Stopped cleanly, the file can be verified without a daemon.
    assert!(d.stop().await.success());
    let file = dir.path().join("events.redb");
    let file_arg = file.display().to_string();
    let (code, out, err) = cli(&["ledger", "verify", "--file", &file_arg, "--json"], &env).await;
    assert_eq!(code, Some(0), "{out}{err}");
    let r: Value = serde_json::from_str(&out).expect("json report");
    assert_eq!((r["ok"].clone(), u(&r["events"])), (json!(true), last));

    let bad = 3;
    common::tamper_payload(&file, bad, "savings_usd", json!(1_000_000));
    let (code, out, err) = cli(&["ledger", "verify", "--file", &file_arg, "--json"], &env).await;
    assert_eq!(code, Some(5), "a broken chain exits 5: {out}{err}");
    let r: Value = serde_json::from_str(&out).expect("json report");
    assert_eq!(r["ok"], false);
    assert_eq!(u(&r["first_broken"]["seq"]), bad, "{r}");
    assert_eq!(u(&r["events"]), bad - 1, "events before the broken one verified: {r}");
    assert!(
        r["first_broken"]["reason"]
            .as_str()
            .is_some_and(|s| s.contains("hash mismatch")),
        "{r}"
    );

    // No daemon: without --file the CLI falls back to the data directory's file.
    let (code, out, err) = cli(&["ledger", "verify"], &env).await;
    assert_eq!(code, Some(5), "{out}{err}");
    assert!(err.contains("verifying") && err.contains("events.redb"), "{err}");
    assert!(out.contains(&format!("BROKEN at seq {bad}")), "{out}");

    // The daemon still opens the file and reports the same link; it is not
    // ready while the chain is broken.
    d.launch_listening().await;
    d.wait_unready(&format!("broken at event {bad}")).await;
    let v = d.api().get_ok("/api/v1/ledger/verify").await;
    assert_eq!(v["ok"], false, "{v}");
    assert_eq!(u(&v["first_broken"]["seq"]), bad, "{v}");
    let (code, out, err) = cli(&["ledger", "verify"], &cli_env(&d)).await;
    assert_eq!(code, Some(5), "{out}{err}");
    assert!(out.contains(&format!("BROKEN at seq {bad}")), "{out}");
    assert!(err.is_empty(), "asked the daemon, no fallback: {err}");
}

// ---------------------------------------------------------------- tail

#[tokio::test]
async fn tail_prints_the_newest_events_and_follows_new_ones() {
    let dir = common::data_dir();
    let d = Daemon::start_scanned(dir.path(), SCALE).await;
    append_through_api(&d, 4).await;
    let last = head(&d).await;
    let env = cli_env(&d);

    let (code, out, err) = cli(&["ledger", "tail", "-n", "3", "--json"], &env).await;
    assert_eq!(code, Some(0), "{out}{err}");
    let lines: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).expect("json line"))
        .collect();
    assert_eq!(
        seqs(&lines),
        vec![last - 2, last - 1, last],
        "oldest first, newest last"
    );
    let (code, out, _) = cli(&["ledger", "tail", "-n", "2"], &env).await;
    assert_eq!(code, Some(0));
    assert_eq!(out.lines().count(), 2, "{out}");
    assert!(out.contains("HISTORY_PRUNED"), "{out}");

    // --follow: one old event, then the new ones as they are committed.
    let mut child = tokio::process::Command::new(common::SVC)
        .args(["ledger", "tail", "-n", "1", "--follow", "--json"])
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn svc ledger tail --follow");
    let mut lines = tokio::io::BufReader::new(child.stdout.take().expect("stdout")).lines();
    let mut got = Vec::new();
    let end = Instant::now() + DEADLINE;
    let first = tokio::time::timeout(DEADLINE, lines.next_line())
        .await
        .expect("first line");
    got.push(serde_json::from_str::<Value>(&first.expect("read").expect("a line")).expect("json"));
    append_through_api(&d, 3).await;
    while got.len() < 4 {
        let left = end.saturating_duration_since(Instant::now());
        let line = tokio::time::timeout(left, lines.next_line())
            .await
            .unwrap_or_else(|_| panic!("tail --follow printed {} of 4 events", got.len()))
            .expect("read")
            .expect("tail --follow ended early");
        got.push(serde_json::from_str(&line).expect("json line"));
    }
    assert_eq!(seqs(&got), (last..=last + 3).collect::<Vec<_>>());
    assert!(got[1..].iter().all(|e| e["event_type"] == "HISTORY_PRUNED"));
    child.kill().await.expect("stop tail");
}

// ---------------------------------------------------------------- replay

#[tokio::test]
async fn since_replay_of_a_large_ledger_with_appends_during_it_has_no_gap_and_no_duplicate() {
    let dir = common::data_dir();
    prefill(dir.path(), 30_000);
    let d = Daemon::start(dir.path(), SCALE).await;
    let at_connect = head(&d).await;
    assert!(at_connect >= 30_000);

    let mut ws = d.ws().await;
    ws.send_since(0).await;
    // The client reads nothing yet: 30,000 frames (~15 MB) fill the socket
    // buffers, so the daemon is in the middle of the replay while these
    // events are appended.
    append_through_api(&d, 25).await;
    let api = d.api();
    let scan = api.scan_wait().await;
    let last = head(&d).await;
    assert!(last >= at_connect + 26, "the appends landed: {at_connect} -> {last}");
    assert!(u(&scan["event_seq"]) <= last);

    let got = ws.collect_through(last, SCAN_DEADLINE).await;
    assert_eq!(
        seqs(&got),
        (1..=last).collect::<Vec<_>>(),
        "every event from 1 to {last} exactly once, in order"
    );
    for w in got.windows(2) {
        assert_eq!(
            w[1]["prev_hash"], w[0]["hash"],
            "event {} links to its predecessor",
            w[1]["seq"]
        );
    }
    assert_eq!(got.iter().filter(|e| e["event_type"] == "HISTORY_PRUNED").count(), 25);

    // Live events follow directly.
    append_through_api(&d, 1).await;
    let next = ws.next(SCAN_DEADLINE).await;
    assert_eq!(u(&next["seq"]), last + 1);
    ws.close().await;
}

// ---------------------------------------------------------------- export

/// Every line of every `ledger-*.jsonl.gz` object, keyed by object name.
fn read_objects(objects: &BTreeMap<String, Vec<u8>>) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for (name, bytes) in objects {
        let mut text = String::new();
        flate2::read::MultiGzDecoder::new(bytes.as_slice())
            .read_to_string(&mut text)
            .unwrap_or_else(|e| {
                let head: Vec<u8> = bytes.iter().take(64).copied().collect();
                panic!(
                    "{name} ({} bytes) is not gzip: {e}; starts {:?}",
                    bytes.len(),
                    String::from_utf8_lossy(&head)
                )
            });
        for line in text.lines() {
            let v: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{name}: line is not JSON ({e})"));
            out.push((name.clone(), v));
        }
    }
    out
}

fn dir_objects(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return BTreeMap::new();
    };
    entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            (name.starts_with("ledger-") && name.ends_with(".jsonl.gz"))
                .then(|| (name, std::fs::read(e.path()).expect("read object")))
        })
        .collect()
}

/// Checks the SPEC 6.2 envelope of every line and that the lines hold
/// exactly the events `1..=last`, each once, with a whole chain.
#[track_caller]
fn assert_exactly_once(lines: &[(String, Value)], last: u64) {
    let mut by_seq: BTreeMap<u64, &Value> = BTreeMap::new();
    for (name, l) in lines {
        for k in ["daemon_uuid", "daemon_version", "os_arch", "event_idx", "event"] {
            assert!(l.get(k).is_some(), "{name}: line lacks {k}: {l}");
        }
        assert!(l["daemon_uuid"].as_str().is_some_and(|s| s.len() == 36), "{l}");
        let e = &l["event"];
        for k in ["event_type", "timestamp", "payload"] {
            assert!(e.get(k).is_some(), "{name}: event lacks {k}");
        }
        let seq = u(&l["event_idx"]);
        assert_eq!(u(&e["seq"]), seq);
        assert!(
            by_seq.insert(seq, e).is_none(),
            "event {seq} exported twice (again in {name})"
        );
    }
    let got: Vec<u64> = by_seq.keys().copied().collect();
    assert_eq!(got, (1..=last).collect::<Vec<_>>(), "every event exported once");
    let events: Vec<&&Value> = by_seq.values().collect();
    for w in events.windows(2) {
        assert_eq!(w[1]["prev_hash"], w[0]["hash"]);
    }
}

#[tokio::test]
async fn export_to_a_directory_on_request_and_on_schedule() {
    let dir = common::data_dir();
    let out = dir.path().join("audit");
    let d = Daemon::start_scanned(dir.path(), SCALE).await;
    let api = d.api();

    api.post_json("/api/v1/ledger/export", &json!({}))
        .await
        .expect_error(409, "conflict");
    // A bad bucket is refused and changes nothing.
    for bad in [json!("ftp://x"), json!("s3://NO"), json!("file://relative"), json!(7)] {
        api.put_json("/api/v1/config", &json!({"sau": {"audit_bucket": bad}}))
            .await
            .expect_error(422, "invalid");
    }
    api.put_json("/api/v1/config", &json!({"sau.audit_export_interval": "soon"}))
        .await
        .expect_error(422, "invalid");
    assert!(api.get_ok("/api/v1/config").await["sau"]["audit_bucket"].is_null());

    let url = format!("file://{}", out.display());
    let cfg = api
        .put_json(
            "/api/v1/config",
            &json!({"sau": {"audit_bucket": url, "audit_export_interval": "1h"}}),
        )
        .await
        .expect(200);
    assert_eq!(cfg["sau"]["audit_bucket"], url.as_str());
    assert_eq!(cfg["daemon"]["scan_interval"], "1h", "siblings kept by the merge");
    let text = std::fs::read_to_string(dir.path().join("config.toml")).expect("config written");
    assert!(text.contains("audit_bucket"), "{text}");

    append_through_api(&d, 3).await;
    let last = head(&d).await;
    let r = api.post_json("/api/v1/ledger/export", &json!({})).await.expect(200);
    assert_eq!(
        (u(&r["first_seq"]), u(&r["last_seq"]), u(&r["events"])),
        (1, last, last),
        "{r}"
    );
    assert_eq!(u(&r["exported_through"]), last);
    let name = r["file"].as_str().expect("file name").to_owned();
    assert!(name.starts_with("ledger-") && name.ends_with(".jsonl.gz"), "{name}");
    assert!(out.join(&name).is_file());

    // Nothing new: nothing written.
    let r = api.post_json("/api/v1/ledger/export", &json!({})).await.expect(200);
    assert_eq!((u(&r["events"]), r["file"].clone()), (0, Value::Null), "{r}");

    // New events go to a new object, through the CLI.
    append_through_api(&d, 2).await;
    let (code, text, err) = cli(&["ledger", "export"], &cli_env(&d)).await;
    assert_eq!(code, Some(0), "{text}{err}");
    assert!(text.contains(&format!("seq {}..{}", last + 1, last + 2)), "{text}");
    let last = last + 2;
    assert_eq!(dir_objects(&out).len(), 2);
    assert_exactly_once(&read_objects(&dir_objects(&out)), last);

    // On schedule: a short interval exports new events by itself.
    api.put_json("/api/v1/config", &json!({"sau": {"audit_export_interval": "1s"}}))
        .await
        .expect(200);
    append_through_api(&d, 1).await;
    let end = Instant::now() + DEADLINE;
    loop {
        let lines = read_objects(&dir_objects(&out));
        if lines.len() as u64 == last + 1 {
            assert_exactly_once(&lines, last + 1);
            break;
        }
        assert!(
            Instant::now() < end,
            "the scheduled export did not write event {}",
            last + 1
        );
        tokio::time::sleep(POLL_PAUSE).await;
    }
    // The metric is set when the run ends, just after its object is written.
    let exported = format!("svc_ledger_exported_seq {}", last + 1);
    loop {
        let metrics = d.anonymous().get("/metrics").await.text;
        if metrics.contains(&exported) {
            break;
        }
        assert!(Instant::now() < end, "{metrics}");
        tokio::time::sleep(POLL_PAUSE).await;
    }
}

#[tokio::test]
async fn kill_9_during_an_export_then_restart_exports_every_event_exactly_once() {
    let dir = common::data_dir();
    let out = dir.path().join("audit");
    prefill(dir.path(), 40_000);
    std::fs::write(
        dir.path().join("config.toml"),
        format!(
            "[daemon]\nscan_interval = \"1h\"\n[sau]\naudit_bucket = \"file://{}\"\naudit_export_interval = \"1h\"\naudit_export_max_events = 1000\n",
            out.display()
        ),
    )
    .expect("config");
    let mut d = Daemon::start(dir.path(), SCALE).await;
    // The schedule exports at start; a request waits for it and goes on.
    let api = d.api();
    let export = tokio::spawn(async move { api.post_json("/api/v1/ledger/export", &json!({})).await });
    let end = Instant::now() + DEADLINE;
    while dir_objects(&out).len() < 3 {
        assert!(Instant::now() < end, "the export wrote no objects");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    d.kill_9().await;
    let written = dir_objects(&out).len();
    assert!(written < 40, "killed in the middle: {written} of 40+ objects written");
    let _ = export.await;

    d.launch().await;
    let api = d.api();
    api.post_json("/api/v1/ledger/export", &json!({})).await.expect(200);
    let last = head(&d).await;
    let r = api.post_json("/api/v1/ledger/export", &json!({})).await.expect(200);
    assert_eq!(u(&r["exported_through"]), last);
    let objects = dir_objects(&out);
    assert!(objects.len() >= 40, "{}", objects.len());
    assert_exactly_once(&read_objects(&objects), last);
    assert!(
        !std::fs::read_dir(&out)
            .expect("dir")
            .flatten()
            .any(|e| e.file_name().to_string_lossy().contains(".tmp")),
        "no temporary file left behind"
    );
}

// ---------------------------------------------------------------- S3

#[tokio::test]
async fn export_to_s3_survives_an_unreachable_bucket_and_loses_nothing() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port();
    let dir = common::data_dir();
    let mut d = Daemon::configure(dir.path(), SCALE);
    d.env = [
        ("AWS_ACCESS_KEY_ID", "testing"),
        ("AWS_SECRET_ACCESS_KEY", "testing"),
        ("AWS_REGION", "us-east-1"),
        ("AWS_ENDPOINT_URL", &format!("http://127.0.0.1:{port}")),
    ]
    .iter()
    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
    .collect();
    d.launch().await;
    d.wait_scan_after(0).await;
    let api = d.api();
    api.put_json(
        "/api/v1/config",
        &json!({"sau.audit_bucket": "s3://svc-audit/prod/ledger"}),
    )
    .await
    .expect(200);
    append_through_api(&d, 2).await;

    // Nothing listens on the endpoint yet: a clear error, nothing marked.
    let e = api
        .post_json("/api/v1/ledger/export", &json!({}))
        .await
        .expect_error(502, "bad_gateway");
    assert!(
        e["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("s3://svc-audit/prod/ledger")),
        "{e}"
    );

    let moto = Moto::start_on(port).await;
    moto.create_bucket("svc-audit").await;
    append_through_api(&d, 1).await;
    let last = head(&d).await;
    let r = api.post_json("/api/v1/ledger/export", &json!({})).await.expect(200);
    assert_eq!(
        (u(&r["first_seq"]), u(&r["last_seq"])),
        (1, last),
        "the failed range is retried: {r}"
    );
    append_through_api(&d, 2).await;
    let r = api.post_json("/api/v1/ledger/export", &json!({})).await.expect(200);
    assert_eq!((u(&r["first_seq"]), u(&r["last_seq"])), (last + 1, last + 2), "{r}");

    let objects = moto.objects("svc-audit", "prod/ledger").await;
    assert_eq!(objects.len(), 2, "{:?}", objects.keys().collect::<Vec<_>>());
    assert_exactly_once(&read_objects(&objects), last + 2);
    let metrics = d.anonymous().get("/metrics").await.text;
    assert!(
        metrics.contains("svc_ledger_exports_total{outcome=\"failure\"} 1"),
        "{metrics}"
    );
}
