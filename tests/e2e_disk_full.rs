//! A full disk under the real daemon: the data directory (or only the
//! ledger) on a small tmpfs, filled while the daemon runs. Reads keep
//! working, writes fail cleanly with 507, `/readyz` says which store and
//! why, and once space is freed the daemon recovers by itself, without a
//! restart and without losing an event.
//!
//! Mounting a tmpfs needs root, as CI runs; elsewhere these tests fail
//! saying so.

#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::Daemon;
use serde_json::{Value, json};

/// How long recovery may take once space is freed (the daemon retries every second).
const RECOVERY: Duration = Duration::from_secs(30);

/// A tmpfs of `size` mounted on a fresh directory, unmounted on drop.
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    fn mount(size: &str) -> Tmpfs {
        let dir = tempfile::Builder::new().prefix("svc-full-").tempdir().unwrap();
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size},mode=0700"), "tmpfs"])
            .arg(dir.path())
            .output()
            .expect("run mount");
        assert!(
            out.status.success(),
            "mounting a tmpfs needs root (CI runs as root): {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Tmpfs { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Writes a file until the disk refuses more; returns its path.
    fn fill(&self) -> PathBuf {
        let path = self.path().join("filler");
        let mut f = std::fs::File::create(&path).unwrap();
        let chunk = vec![0u8; 64 * 1024];
        loop {
            if let Err(e) = f.write_all(&chunk).and_then(|()| f.sync_data()) {
                assert_eq!(e.kind(), std::io::ErrorKind::StorageFull, "{e}");
                break;
            }
        }
        // The last chunk may have gone in part: whatever is left is too
        // small for a page.
        let mut byte = [0u8; 1];
        while f.write_all(&byte).is_ok() {
            byte[0] = byte[0].wrapping_add(1);
        }
        path
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(self.dir.path()).status();
    }
}

/// Polls `/readyz` until it answers `status`; returns the last body.
async fn wait_readyz(d: &Daemon, status: u16) -> Value {
    let deadline = Instant::now() + RECOVERY;
    loop {
        let r = d.anonymous().get("/readyz").await;
        if r.status.as_u16() == status {
            return r.json;
        }
        assert!(
            Instant::now() < deadline,
            "/readyz still {} ({}) after {RECOVERY:?}\n{}",
            r.status,
            r.text,
            d.log.text()
        );
        tokio::time::sleep(common::POLL_PAUSE).await;
    }
}

/// What the graph store holds of each node: CRN, state, validity, properties.
fn stored_view(nodes: Vec<Value>) -> std::collections::BTreeSet<String> {
    nodes
        .iter()
        .map(|n| {
            format!(
                "{} {} {} {} {}",
                n["crn"], n["state"], n["valid_from"], n["valid_to"], n["properties"]
            )
        })
        .collect()
}

fn message(v: &Value) -> &str {
    v["error"]["message"].as_str().unwrap_or_default()
}

/// The scan seqs the ledger records, oldest first, from SCAN_COMPLETED and
/// SCAN_RECOVERED events.
async fn recorded_scans(d: &Daemon) -> Vec<u64> {
    let mut seqs: Vec<u64> = d
        .api()
        .history_all(&[])
        .await
        .iter()
        .filter(|e| matches!(e["type"].as_str(), Some("SCAN_COMPLETED" | "SCAN_RECOVERED")))
        .map(|e| e["meta"]["scan_seq"].as_u64().unwrap())
        .collect();
    seqs.sort_unstable();
    seqs
}

#[tokio::test]
async fn a_full_disk_fails_writes_cleanly_and_the_daemon_recovers_without_a_restart() {
    let disk = Tmpfs::mount("64m");
    let data = disk.path().join("data");
    let mut d = Daemon::start_scanned(&data, 300).await;
    let api = d.api();
    let filler = disk.fill();

    // Reads go on.
    api.get_ok("/api/v1/graph/stats").await;
    assert_eq!(api.history_all(&[]).await.len(), 1);
    // A scan is refused with what to do, and nothing of it lands.
    let r = api.trigger("/api/v1/engine/scan", &json!({"wait": true})).await;
    assert_eq!(r.status, 507, "{}\n{}", r.text, d.log.text());
    let refused = r.expect_error(507, "insufficient_storage");
    assert!(message(&refused).contains("the disk is full"), "{refused}");
    assert!(message(&refused).contains("graph.redb"), "{refused}");
    let unready = wait_readyz(&d, 503).await;
    assert!(message(&unready).contains("graph store:"), "{unready}");
    assert!(message(&unready).contains("the disk is full"), "{unready}");
    let metrics = d.anonymous().get("/metrics").await.text;
    assert!(metrics.contains("\nsvc_ready 0\n"), "{metrics}");
    api.get_ok("/api/v1/graph/stats").await;

    std::fs::remove_file(&filler).unwrap();
    wait_readyz(&d, 200).await;
    let scanned = api.scan_wait().await;
    assert_eq!(scanned["scan_seq"], 2, "the refused scan committed nothing");
    let verify = api.get_ok("/api/v1/ledger/verify").await;
    assert_eq!(verify["ok"], true, "{verify}");
    assert_eq!(recorded_scans(&d).await, [1, 2]);

    // What memory held when the commit failed is on disk too: a restart
    // loads the same estate.
    let nodes = stored_view(api.all_nodes(None).await);
    // No source at the restart: no scan changes what was loaded.
    d.sources = common::Sources::None;
    d.restart().await;
    let after = stored_view(d.api().all_nodes(None).await);
    let differ: Vec<_> = nodes.symmetric_difference(&after).collect();
    assert!(
        differ.is_empty(),
        "{} of {} differ: {differ:?}",
        differ.len(),
        nodes.len()
    );
    let scans = recorded_scans(&d).await;
    assert!(scans.iter().copied().eq(1..=scans.len() as u64), "{scans:?}");
}

/// The ledger's disk fills while the graph store's does not: the scan
/// commits, its SCAN_COMPLETED cannot be appended (507, saying so), the
/// daemon is not ready, and once space is back the event is appended late,
/// by itself, with the chain whole.
#[tokio::test]
async fn a_scan_committed_while_the_ledger_disk_is_full_is_recorded_once_it_has_room() {
    let ledger_disk = Tmpfs::mount("16m");
    let dir = common::data_dir();
    std::os::unix::fs::symlink(ledger_disk.path().join("events.redb"), dir.path().join("events.redb")).unwrap();
    let d = Daemon::start_scanned(dir.path(), 300).await;
    let api = d.api();
    let filler = ledger_disk.fill();

    let refused = api
        .trigger("/api/v1/engine/scan", &json!({"wait": true}))
        .await
        .expect_error(507, "insufficient_storage");
    assert!(
        message(&refused).contains("scan 2 committed, but its SCAN_COMPLETED is not recorded yet"),
        "{refused}"
    );
    let unready = wait_readyz(&d, 503).await;
    assert!(message(&unready).contains("ledger:"), "{unready}");
    assert_eq!(recorded_scans(&d).await, [1], "not yet");

    std::fs::remove_file(&filler).unwrap();
    wait_readyz(&d, 200).await;
    let late = api
        .history_all(&[("type", "SCAN_COMPLETED")])
        .await
        .into_iter()
        .find(|e| e["meta"]["scan_seq"] == 2)
        .unwrap_or_else(|| panic!("no SCAN_COMPLETED for scan 2\n{}", d.log.text()));
    assert!(late["message"].as_str().unwrap().contains("recorded late"), "{late}");
    let next = api.scan_wait().await;
    assert_eq!(next["scan_seq"], 3);
    assert_eq!(recorded_scans(&d).await, [1, 2, 3]);
    assert_eq!(api.get_ok("/api/v1/ledger/verify").await["ok"], true);
}
