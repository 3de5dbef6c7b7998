//! `svc tui` end to end: the real binary in a detached tmux pane of 80x24
//! against a real daemon on the mock estate, driven with keys and read
//! from the screen. It lists the nodes, filters them, opens a detail pane,
//! approves the first pending item by its plan hash after confirming, sees
//! the EXECUTION_COMMIT arrive in the live ledger, shows the disconnected
//! state while the daemon restarts and reconnects by itself, and quits
//! leaving the alternate screen.
//!
//! The daemon listens on a new port at each start; the UI talks to it
//! through a relay on a port that stays, as a daemon restarted on its
//! configured address would.

#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

mod common;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::tmux::{EXITED, Tmux};
use common::{Daemon, SVC, data_dir};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

const SCALE: usize = 300;
/// How long the UI may take to show something in a debug build on a busy
/// two-core machine.
const SHOW: Duration = Duration::from_secs(60);

/// Forwards every connection on its own port to the daemon's current
/// address; a connection the daemon refuses is closed at once. While
/// `stale` is true it forwards nothing and answers nothing, keeping every
/// connection open: a socket to a host that went silent.
async fn relay(target: Arc<Mutex<SocketAddr>>) -> (SocketAddr, watch::Sender<bool>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stale, watching) = watch::channel(false);
    tokio::spawn(async move {
        while let Ok((mut inbound, _)) = listener.accept().await {
            let to = *target.lock().unwrap();
            let mut stale = watching.clone();
            tokio::spawn(async move {
                if !*stale.borrow() {
                    let Ok(mut outbound) = TcpStream::connect(to).await else {
                        return;
                    };
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound) => return,
                        _ = stale.wait_for(|s| *s) => {}
                    }
                }
                // Silent until the relay is live again, then closed.
                let _ = stale.wait_for(|s| !*s).await;
                drop(inbound);
            });
        }
    });
    (addr, stale)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tui_navigates_approves_and_survives_a_restart() {
    let dir = data_dir();
    let mut d = Daemon::start_scanned(dir.path(), SCALE).await;
    let api = d.api();
    let target = Arc::new(Mutex::new(d.addr));
    let (relayed, _stale) = relay(target.clone()).await;

    // The first pending item, as the UI lists it (the queue's own order).
    let q = api.get_ok("/api/v1/remediation/queue").await;
    let item = q["stages"]["pending"][0].clone();
    let crn = item["crn"]
        .as_str()
        .expect("a pending item after the first scan")
        .to_owned();
    let hash = item["plan_hash"].as_str().unwrap().to_owned();
    assert_eq!(hash.len(), 64, "{item}");
    let name = crn.rsplit(':').next().unwrap().to_owned();
    let total = api.get_ok("/api/v1/nodes?limit=1").await["total"].as_u64().unwrap();

    let tui = Tmux::start(&format!("{SVC} tui --url http://{relayed} --token {}", d.token), 80, 24);
    tui.wait_for("● connected", SHOW).await;
    tui.wait_for(&format!("[1/{total}]"), SHOW).await;
    assert_eq!(
        tui.display("#{alternate_on}"),
        "1",
        "the UI draws on the alternate screen"
    );

    // Workspaces, then the filter narrows the table to the item.
    tui.keys(&["2"]);
    tui.wait_for(" compute [", SHOW).await;
    tui.keys(&["1", "/"]);
    let ty = item["type"].as_str().unwrap();
    tui.type_text(&format!("{name} type:{ty}"));
    tui.keys(&["Enter"]);
    let s = tui.wait_for("[1/1]", SHOW).await;
    assert!(s.contains(&name), "the filtered table lists {name}:\n{s}");

    // The detail pane: properties, edges, blast radius, reachability proof.
    tui.keys(&["Enter"]);
    tui.wait_until("the detail pane, loaded", SHOW, |s| {
        s.contains("── node") && !s.contains("loading…") && s.contains("── properties")
    })
    .await;
    tui.keys(&["G"]);
    let s = tui.wait_for("── reachability proof", SHOW).await;
    assert!(s.contains("reachability"), "{s}");
    tui.keys(&["q"]);
    tui.wait_until("the pane closed", SHOW, |s| !s.contains("── node"))
        .await;
    tui.keys(&["Escape"]);
    tui.wait_for(&format!("[1/{total}]"), SHOW).await;

    // The last row, past the window the UI first asked for: the one the
    // daemon puts last in the same order.
    assert!(total > 300, "the table is larger than one window: {total}");
    let last = api
        .get_ok(&format!(
            "/api/v1/nodes?sort=cost&order=desc&offset={}&limit=1",
            total - 1
        ))
        .await;
    let last_name = last["rows"][0]["crn"]
        .as_str()
        .unwrap()
        .rsplit(':')
        .next()
        .unwrap()
        .to_owned();
    tui.keys(&["G"]);
    tui.wait_until("the last row, loaded", SHOW, |s| {
        s.contains(&format!("[{total}/{total}]"))
            && !s.contains("loading…")
            && s.contains(&last_name[..last_name.len().min(20)])
    })
    .await;
    tui.keys(&["g"]);
    tui.wait_for(&format!("[1/{total}]"), SHOW).await;

    // The queue with the plan; approve it behind the confirmation.
    tui.keys(&["Q"]);
    tui.wait_for(&hash, SHOW).await;
    tui.keys(&["a"]);
    let s = tui.wait_for("Approve remediation?", SHOW).await;
    assert!(s.contains(&hash), "the confirmation names the plan hash:\n{s}");
    tui.keys(&["y"]);
    tui.wait_for(&format!("approved {name}"), SHOW).await;
    let approvals = api.get_ok(&format!("/api/v1/history?type=APPROVAL&crn={crn}")).await;
    assert_eq!(approvals["total"], 1, "one approval recorded: {approvals}");

    // The saga's commit arrives in the live ledger.
    tui.keys(&["l"]);
    tui.wait_until("EXECUTION_COMMIT of the item", SHOW, |s| {
        s.lines()
            .any(|l| l.contains("EXECUTION_COMMIT") && l.contains(&name[..name.len().min(20)]))
    })
    .await;

    // The daemon goes away: the UI says so, then comes back by itself.
    let status = d.stop().await;
    assert!(status.success(), "daemon exit: {status}");
    tui.wait_for("DISCONNECTED", SHOW).await;
    tui.wait_for("✕ disconnected", SHOW).await;
    d.launch().await;
    *target.lock().unwrap() = d.addr;
    tui.wait_until("the reconnected state", SHOW, |s| {
        s.contains("● connected") && !s.contains("DISCONNECTED")
    })
    .await;
    // The restarted daemon's scan reaches the ledger through the resumed stream.
    tui.wait_until("a SCAN_COMPLETED after the commit", SHOW, |s| {
        let lines: Vec<&str> = s.lines().collect();
        let scan = lines.iter().position(|l| l.contains("SCAN_COMPLETED"));
        let commit = lines.iter().position(|l| l.contains("EXECUTION_COMMIT"));
        matches!((scan, commit), (Some(a), Some(b)) if a < b)
    })
    .await;
    tui.keys(&["n"]);
    tui.wait_for("sort:cost", SHOW).await;

    // `q` on the node table quits and leaves the alternate screen.
    tui.keys(&["q"]);
    tui.wait_for(&format!("{EXITED}0"), SHOW).await;
    assert_eq!(tui.display("#{alternate_on}"), "0", "the terminal is restored");
}

/// A viewer's token: the UI shows no decision keys, refuses to ask for a
/// decision, and still reads everything; at 160x40 without colour.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tui_for_a_viewer_is_read_only() {
    let dir = data_dir();
    let d = Daemon::start_scanned(dir.path(), SCALE).await;
    let api = d.api();
    let created = api
        .post_json(
            "/api/v1/tokens",
            &serde_json::json!({"name": "watcher", "role": "viewer"}),
        )
        .await
        .expect(201);
    let viewer = created["token"].as_str().unwrap().to_owned();
    let q = api.get_ok("/api/v1/remediation/queue").await;
    let hash = q["stages"]["pending"][0]["plan_hash"].as_str().unwrap().to_owned();

    let tui = Tmux::start(
        &format!("NO_COLOR=1 {SVC} tui --url {} --token {viewer}", d.base()),
        160,
        40,
    );
    tui.wait_for("● connected  viewer", SHOW).await;
    let s = tui.wait_for("│crn:svc:", SHOW).await;
    assert!(
        s.contains("REACH"),
        "a wide table shows whole CRNs and more columns:\n{s}"
    );
    tui.keys(&["Q"]);
    let s = tui.wait_for(&hash, SHOW).await;
    assert!(s.contains("viewer: read only") && !s.contains("a approve"), "{s}");
    tui.keys(&["a"]);
    tui.wait_for("may not change anything", SHOW).await;
    assert!(!tui.screen().contains("Approve remediation?"));
    tui.keys(&["?"]);
    let s = tui.wait_for("help: ? or Esc closes", SHOW).await;
    assert!(s.contains("may only read") && !s.contains("approve, reject"), "{s}");
    // Escape goes alone: followed at once by another key it reads as Alt.
    tui.keys(&["Escape"]);
    tui.wait_until("the help closed", SHOW, |s| !s.contains("help: ? or Esc"))
        .await;
    tui.keys(&[":"]);
    tui.type_text("q");
    tui.wait_for(":q█", SHOW).await;
    tui.keys(&["Enter"]);
    tui.wait_for(&format!("{EXITED}0"), SHOW).await;
    let approvals = api.get_ok("/api/v1/history?type=APPROVAL").await;
    assert_eq!(approvals["total"], 0, "{approvals}");
}

/// A socket that goes silent (the daemon's host unreachable, nothing
/// closed) is noticed by the UI's pings, shown as disconnected, and does
/// not keep the UI from connecting again once the daemon answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tui_drops_a_stale_socket_and_reconnects() {
    let dir = data_dir();
    let d = Daemon::start_scanned(dir.path(), SCALE).await;
    let (relayed, stale) = relay(Arc::new(Mutex::new(d.addr))).await;
    let tui = Tmux::start(&format!("{SVC} tui --url http://{relayed} --token {}", d.token), 80, 24);
    tui.wait_for("● connected", SHOW).await;
    tui.wait_for("sort:cost", SHOW).await;
    stale.send(true).unwrap();
    tui.wait_for("DISCONNECTED", SHOW).await;
    stale.send(false).unwrap();
    tui.wait_until("the reconnected state", SHOW, |s| {
        s.contains("● connected") && !s.contains("DISCONNECTED")
    })
    .await;
    tui.keys(&["q"]);
    tui.wait_for(&format!("{EXITED}0"), SHOW).await;
}

/// Quarantine from the queue, revert from the ledger by the event's undo
/// hash, and ignore: each behind its confirmation, each in the ledger.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tui_quarantines_reverts_and_ignores() {
    let dir = data_dir();
    let d = Daemon::start_scanned(dir.path(), SCALE).await;
    let api = d.api();
    let q = api.get_ok("/api/v1/remediation/queue").await;
    let crn = q["stages"]["pending"][0]["crn"].as_str().unwrap().to_owned();
    let name = crn.rsplit(':').next().unwrap().to_owned();
    let tui = Tmux::start(&format!("{SVC} tui --url {} --token {}", d.base(), d.token), 80, 24);
    tui.wait_for("● connected  admin", SHOW).await;
    tui.keys(&["Q"]);
    tui.wait_for("sha256 ", SHOW).await;

    tui.keys(&["x"]);
    let s = tui.wait_for("Quarantine resource?", SHOW).await;
    assert!(s.contains(&name), "{s}");
    tui.keys(&["y"]);
    tui.wait_for("undo hash", SHOW).await;
    tui.keys(&["l"]);
    tui.wait_until("the QUARANTINE event on top", SHOW, |s| {
        s.lines().nth(3).is_some_and(|l| l.contains("QUARANTINE "))
    })
    .await;

    tui.keys(&["u"]);
    let s = tui.wait_for("Revert?", SHOW).await;
    let quarantine = api.get_ok("/api/v1/history?type=QUARANTINE").await;
    let hash = quarantine["events"][0]["meta"]["compensating_payload_hash"]
        .as_str()
        .unwrap();
    assert!(s.contains(hash), "the revert names the undo hash {hash}:\n{s}");
    tui.keys(&["y"]);
    tui.wait_for("QUARANTINE_REVERTED", SHOW).await;

    tui.keys(&["i"]);
    tui.wait_for("ignore for (7d, 12h, 30m; empty: permanently):", SHOW)
        .await;
    tui.type_text("2h");
    tui.keys(&["Enter"]);
    let s = tui.wait_for("Ignore resource?", SHOW).await;
    assert!(s.contains("for 2h"), "{s}");
    tui.keys(&["y"]);
    tui.wait_until("the ISOLATION event", SHOW, |s| s.contains("ISOLATION"))
        .await;
    let isolation = api.get_ok("/api/v1/isolation").await;
    assert!(isolation.to_string().contains(&crn), "{isolation}");
    let entry = isolation["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["crn"] == crn.as_str())
        .unwrap();
    assert_eq!(entry["ttl_seconds"], 7200, "ignored for the two hours typed: {entry}");
    let reverted = api.get_ok("/api/v1/history?type=QUARANTINE_REVERTED").await;
    assert_eq!(reverted["total"], 1, "{reverted}");
}

/// Two pending items marked with space and approved in one bulk request,
/// each on its plan hash; a third held at the gate (moved to `sau_gate`),
/// and a move the pipeline does not allow refused with the daemon's reason.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tui_approves_marked_items_in_bulk_and_moves_one() {
    let dir = data_dir();
    let d = Daemon::start_scanned(dir.path(), SCALE).await;
    let api = d.api();
    let q = api.get_ok("/api/v1/remediation/queue").await;
    let pending: Vec<String> = q["stages"]["pending"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["crn"].as_str().unwrap().to_owned())
        .collect();
    assert!(pending.len() >= 3, "three pending items after the first scan: {q}");
    let name = |crn: &str| crn.rsplit(':').next().unwrap().to_owned();
    let tui = Tmux::start(&format!("{SVC} tui --url {} --token {}", d.base(), d.token), 80, 24);
    tui.wait_for("● connected  admin", SHOW).await;
    tui.keys(&["Q"]);
    tui.wait_for("sha256 ", SHOW).await;

    tui.keys(&["Space"]);
    tui.keys(&["Space"]);
    tui.wait_for("marked 2", SHOW).await;
    tui.keys(&["A"]);
    let s = tui.wait_for("Approve the marked remediations?", SHOW).await;
    assert!(s.contains("2 items"), "{s}");
    tui.keys(&["y"]);
    tui.wait_for("approved 2", SHOW).await;
    for crn in &pending[..2] {
        let approvals = api.get_ok(&format!("/api/v1/history?type=APPROVAL&crn={crn}")).await;
        assert_eq!(approvals["total"], 1, "{crn} approved once: {approvals}");
    }

    // The third item is now the first pending one.
    let third = &pending[2];
    tui.wait_until("the third item selected", SHOW, |s| {
        s.lines().any(|l| l.contains(&name(third)[..name(third).len().min(20)]))
    })
    .await;
    tui.keys(&["g", "m"]);
    tui.wait_for("move to (flagged", SHOW).await;
    tui.type_text("analyzed");
    tui.keys(&["Enter"]);
    tui.wait_for("Move remediation?", SHOW).await;
    tui.keys(&["y"]);
    tui.wait_for("illegal move", SHOW).await;
    tui.keys(&["g", "m"]);
    tui.wait_for("move to (flagged", SHOW).await;
    tui.type_text("sau_gate");
    tui.keys(&["Enter"]);
    tui.wait_for("Move remediation?", SHOW).await;
    tui.keys(&["y"]);
    tui.wait_for("to sau_gate", SHOW).await;
    let q = api.get_ok("/api/v1/remediation/queue").await;
    let held = q["stages"]["sau_gate"].to_string();
    assert!(held.contains(third.as_str()), "{third} held at the gate: {q}");
}
