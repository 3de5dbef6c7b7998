//! A cluster on loopback: a real etcd, a shared store (a directory), three
//! daemons and two `svc worker`s joined through etcd, running the mock
//! estate's sources in real `svc-plugin-mock` processes.
//!
//! The leader is killed (-9) during a scan, and the next one during a
//! saga: each time a standby takes over within the lease time, holds every
//! event acknowledged before the kill, and `svc ledger verify` holds on it;
//! the interrupted saga is compensated exactly once by the leader after.
//! A worker is killed: its sources move and the next scan is complete.
//! etcd stops: the leader answers reads, stops acting, and acts again when
//! etcd returns. The shared store fails: scans do not commit, reads go on,
//! and scans commit again once it is back. A token made on one leader works on the next; one revoked
//! is refused there. The first leader, started again once the logs were
//! compacted past its files, catches up from the leader's copy and leads
//! last, holding every acknowledged event.

mod common;
#[allow(
    clippy::unwrap_used,
    reason = "the cluster crate's etcd helper, test code: a failed unwrap is a failed test"
)]
#[path = "../cluster/tests/common/mod.rs"]
mod etcd;

use std::time::{Duration, Instant};

use common::workers::{ClusterConfig, Worker, complete_scan, pki};
use common::{Api, Daemon, POLL_PAUSE, Sources};
use serde_json::{Value, json};
use svc_cluster::{Election, Error as EtcdError, ReplicatedLog};

const SOURCES: [&str; 4] = ["s1", "s2", "s3", "s4"];
const TTL_S: u64 = 2;
const NODES: [&str; 3] = ["a", "b", "c"];

/// The node etcd names the leader, once it is not one of `not`.
async fn new_leader(election: &Election, not: &[&str]) -> String {
    let deadline = Instant::now() + Duration::from_secs(TTL_S + 10);
    loop {
        if let Some(l) = election.leader().await.ok().flatten()
            && !not.contains(&l.id.as_str())
        {
            return l.id;
        }
        assert!(Instant::now() < deadline, "no leader other than {not:?}");
        tokio::time::sleep(POLL_PAUSE).await;
    }
}

fn index(id: &str) -> usize {
    NODES.iter().position(|n| *n == id).expect("a node of the cluster")
}

/// Waits until `daemon` answers a write (it leads and has opened its engine).
async fn takes_writes(daemon: &Daemon, name: &str) {
    let deadline = Instant::now() + Duration::from_secs(TTL_S + 60);
    loop {
        let reply = daemon
            .api()
            .post_json("/api/v1/tokens", &json!({"name": name, "role": "viewer"}))
            .await;
        if reply.status.as_u16() == 201 {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the new leader answers no write: {} {}\n{}",
            reply.status,
            reply.text,
            daemon.log.text()
        );
        tokio::time::sleep(POLL_PAUSE).await;
    }
}

/// A new operator token named `name`: its plaintext.
async fn new_token(api: &Api, name: &str) -> String {
    let created = api
        .post_json("/api/v1/tokens", &json!({"name": name, "role": "operator"}))
        .await
        .expect(201);
    created["token"].as_str().expect("the token's plaintext").to_owned()
}

/// Every event in `acked` is in `api`'s ledger, and the chain verifies.
async fn holds_every_acknowledged_event(api: &Api, acked: &[Value]) {
    let verified = api.get_ok("/api/v1/ledger/verify").await;
    assert_eq!(verified["ok"], true, "{verified}");
    let after = api.history_all(&[]).await;
    for event in acked {
        assert!(
            after.contains(event),
            "event {} ({}) acknowledged by the old leader is missing",
            event["seq"],
            event["type"]
        );
    }
}

/// A pending item whose plan has two steps (stop, then delete).
async fn two_step_item(api: &Api) -> (String, String) {
    let q = api
        .get_query_ok("/api/v1/remediation/queue", &[("stage", "pending"), ("limit", "1000")])
        .await;
    for item in q["stages"]["pending"].as_array().expect("pending list") {
        let crn = item["crn"].as_str().expect("crn");
        let plan = api.get_query_ok("/api/v1/plan", &[("crn", crn)]).await;
        if plan["steps"].as_array().is_some_and(|s| s.len() == 2) {
            return (crn.to_owned(), plan["plan_hash"].as_str().expect("hash").to_owned());
        }
    }
    panic!("the mock estate has a pending machine to stop and delete");
}

async fn events_of(api: &Api, kind: &str, crn: &str) -> Vec<Value> {
    api.history_all(&[("type", kind)])
        .await
        .into_iter()
        .filter(|e| e["crn"] == crn)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_daemons_and_two_workers_survive_a_dead_leader_a_dead_worker_and_an_etcd_outage() {
    let mut etcd = etcd::EtcdServer::start().await;
    let url = etcd.url();
    let dir = tempfile::tempdir().expect("tempdir");
    let pki = pki(dir.path());
    let shared = dir.path().join("shared");
    let ttl = format!("{TTL_S}s");
    let join = [
        "--join",
        url.as_str(),
        "--cluster-prefix",
        "ha",
        "--lease-ttl",
        ttl.as_str(),
    ];
    // A delete never answers: a saga is caught between its two steps.
    let hang = [("SVC_MOCK_HANG_ACTIONS", "delete")];
    let mut workers = vec![
        Worker::start_with("w1", &pki, &dir.path().join("w1"), &hang, &join).await,
        Worker::start_with("w2", &pki, &dir.path().join("w2"), &hang, &join).await,
    ];
    let election = Election::new(&etcd.client(), "ha/leader");

    // a starts first and leads; b and c follow it as standbys.
    let mut daemons: Vec<Daemon> = NODES
        .iter()
        .map(|id| {
            let data = dir.path().join(id);
            std::fs::create_dir_all(&data).expect("data dir");
            let config = ClusterConfig {
                etcd: &url,
                prefix: "ha",
                node_id: id,
                lease_ttl_s: TTL_S,
                shared: &shared,
                sources: &SOURCES,
                scale: 150,
            };
            std::fs::write(data.join("config.toml"), config.text(&pki)).expect("config");
            let mut d = Daemon::configure(&data, 150);
            d.sources = Sources::Fallback;
            d
        })
        .collect();
    daemons[0].launch().await;
    assert_eq!(new_leader(&election, &[]).await, "a");
    for d in &mut daemons[1..] {
        d.launch_listening().await;
    }
    complete_scan(&daemons[0], SOURCES.len(), Duration::from_secs(90)).await;
    let first_token = new_token(&daemons[0].api(), "ci").await;

    // The leader dies during a scan.
    let acked = daemons[0].api().history_all(&[]).await;
    let scanned = || daemons[0].log.text().matches("source scanned").count();
    let sources_before = scanned();
    daemons[0].api().scan_start().await;
    let deadline = Instant::now() + Duration::from_secs(60);
    while scanned() == sources_before {
        assert!(
            Instant::now() < deadline,
            "no source scanned\n{}",
            daemons[0].log.text()
        );
        tokio::time::sleep(POLL_PAUSE).await;
    }
    let killed = Instant::now();
    daemons[0].kill_9().await;
    // What a can hold at most: the logs' heads.
    let logs = ["ha/ledger", "ha/state"].map(|p| ReplicatedLog::new(&etcd.client(), p));
    let mut heads = Vec::new();
    for log in &logs {
        heads.push(log.head().await.expect("the log's head"));
    }
    let second = index(&new_leader(&election, &["a"]).await);
    takes_writes(&daemons[second], "after-a").await;
    eprintln!(
        "failover during a scan: leader killed to first answered write on {}: {:?} (lease TTL {TTL_S}s)",
        NODES[second],
        killed.elapsed()
    );
    daemons[second].wait_ready().await;
    let api = daemons[second].api();
    holds_every_acknowledged_event(&api, &acked).await;
    // The cluster's tokens came with the leadership.
    api.with_token(Some(&first_token)).get_ok("/api/v1/graph/stats").await;
    api.delete("/api/v1/tokens/ci").await.expect(200);
    let second_token = new_token(&api, "ci-2").await;
    complete_scan(&daemons[second], SOURCES.len(), Duration::from_secs(90)).await;

    // The next leader dies during a saga: its stop committed, its delete
    // never answers.
    let (crn, hash) = two_step_item(&api).await;
    let approving = api.post_unanswered("/api/v1/remediation/approve", json!({"crn": crn, "plan_hash": hash}));
    let deadline = Instant::now() + Duration::from_secs(60);
    while events_of(&api, "EXECUTION_COMMIT", &crn).await.is_empty() {
        assert!(Instant::now() < deadline, "the saga's first step never committed");
        tokio::time::sleep(POLL_PAUSE).await;
    }
    let acked = api.history_all(&[]).await;
    let before = acked.iter().filter_map(|e| e["seq"].as_u64()).max().expect("events");
    let killed = Instant::now();
    daemons[second].kill_9().await;
    approving.abort();
    let third = index(&new_leader(&election, &["a", NODES[second]]).await);
    takes_writes(&daemons[third], "after-second").await;
    eprintln!(
        "failover during a saga: leader killed to first answered write on {}: {:?}",
        NODES[third],
        killed.elapsed()
    );
    daemons[third].wait_ready().await;
    let api = daemons[third].api();
    holds_every_acknowledged_event(&api, &acked).await;
    api.with_token(Some(&second_token)).get_ok("/api/v1/graph/stats").await;
    api.with_token(Some(&first_token))
        .get("/api/v1/graph/stats")
        .await
        .expect_error(401, "unauthorized");
    // The new leader's first scan compensates the saga it found
    // interrupted, once: one rollback of the committed step.
    let scan = daemons[third].wait_scan_after(before).await;
    assert_eq!(scan["payload"]["remediation"]["recovered_sagas"], 1, "{scan}");
    // (The delete in flight may have acted too: it is compensated as well.)
    let rollbacks = events_of(&api, "EXECUTION_ROLLBACK", &crn).await;
    let mut steps: Vec<u64> = rollbacks
        .iter()
        .map(|r| r["meta"]["step_index"].as_u64().expect("step_index"))
        .collect();
    steps.sort_unstable();
    assert!(steps == [0] || steps == [0, 1], "{rollbacks:?}");
    assert_eq!(events_of(&api, "EXECUTION_COMMIT", &crn).await.len(), 1);
    complete_scan(&daemons[third], SOURCES.len(), Duration::from_secs(90)).await;
    let rollbacks_later = events_of(&api, "EXECUTION_ROLLBACK", &crn).await;
    assert_eq!(rollbacks_later, rollbacks, "the saga was compensated again");

    // The shared store fails: the leader's graph store writes are refused,
    // so a scan does not commit, while reads go on; once it is back, scans
    // commit again (and the standbys follow them: a leads last, below).
    let away = dir.path().join("shared.away");
    std::fs::rename(&shared, &away).expect("move the shared store away");
    std::fs::write(&shared, b"not a directory").expect("a file in its place");
    let refused = api
        .trigger("/api/v1/engine/scan", &json!({"wait": true}))
        .await
        .expect_error(503, "not_ready");
    let why = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(why.contains("not shipped, nothing written"), "{refused}");
    api.get_ok("/api/v1/graph/stats").await;
    std::fs::remove_file(&shared).expect("remove the file");
    std::fs::rename(&away, &shared).expect("the shared store back");
    complete_scan(&daemons[third], SOURCES.len(), Duration::from_secs(90)).await;

    // A worker dies: its sources move to the other within the lease, and
    // the next scan is complete.
    workers[0].kill_9();
    complete_scan(&daemons[third], SOURCES.len(), Duration::from_secs(TTL_S + 60)).await;

    // etcd stops: the leader answers reads, refuses writes once its lease
    // is gone, and acts again when etcd returns.
    etcd.kill();
    let leader = &daemons[third];
    assert!(
        leader
            .log
            .wait_for("lost the leadership", Duration::from_secs(TTL_S + 15))
            .await,
        "the leader did not notice etcd was gone\n{}",
        leader.log.text()
    );
    leader.api().get_ok("/api/v1/graph/stats").await;
    leader
        .api()
        .post_json("/api/v1/tokens", &json!({"name": "during", "role": "viewer"}))
        .await
        .expect_error(503, "not_ready");
    etcd.restart().await;
    takes_writes(leader, "after-etcd").await;
    complete_scan(leader, SOURCES.len(), Duration::from_secs(90)).await;
    let verified = leader.api().get_ok("/api/v1/ledger/verify").await;
    assert_eq!(verified["ok"], true, "{verified}");

    // The live members applied what was written since a died; the leader
    // compacts both logs past everything a held, and a, started again,
    // catches up from copies. (Started only now: after the etcd outage,
    // any live node may have won the election.)
    let deadline = Instant::now() + Duration::from_secs(60);
    for (log, head) in logs.iter().zip(&heads) {
        while !matches!(log.read_after(*head).await, Err(EtcdError::Compacted(_))) {
            assert!(Instant::now() < deadline, "the log was not compacted past {head}");
            tokio::time::sleep(POLL_PAUSE).await;
        }
    }
    daemons[0].launch_listening().await;
    for copied in [
        "installed the leader's copy of the graph store",
        "imported the leader's copy of the ledger",
    ] {
        assert!(
            daemons[0].log.wait_for(copied, Duration::from_secs(60)).await,
            "a did not catch up ({copied})\n{}",
            daemons[0].log.text()
        );
    }

    // a, which caught up from the copies, leads last with everything.
    let acked = daemons[third].api().history_all(&[]).await;
    daemons[third].kill_9().await;
    assert_eq!(new_leader(&election, &[NODES[second], NODES[third]]).await, "a");
    takes_writes(&daemons[0], "after-third").await;
    daemons[0].wait_ready().await;
    let api = daemons[0].api();
    holds_every_acknowledged_event(&api, &acked).await;
    api.with_token(Some(&second_token)).get_ok("/api/v1/graph/stats").await;
    complete_scan(&daemons[0], SOURCES.len(), Duration::from_secs(90)).await;
    drop(workers);
}
