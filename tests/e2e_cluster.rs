//! Two daemons sharing an estate through a real etcd (`[cluster]`) and a
//! shared store (S3 on a real moto_server; a directory for the other
//! tests): one leads and scans, the other is a standby
//! that refuses requests naming the leader and follows the leader's ledger
//! and graph store; when the leader is killed (-9) the standby takes over
//! within the lease TTL with the leader's graph, policies and every event
//! acknowledged before the kill, continues the same chain and answers
//! writes.

#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

mod common;
// The cluster crate's etcd helper: a real etcd on loopback.
#[path = "../cluster/tests/common/mod.rs"]
mod etcd;

use std::path::Path;
use std::time::{Duration, Instant};

use common::moto::Moto;
use common::{Daemon, data_dir};
use serde_json::json;
use svc_cluster::{Election, Lease, Locks};

const SCALE: usize = 200;
const TTL_S: u64 = 2;

/// The shared store of the cluster with etcd key prefix `prefix`: a
/// directory beside the etcd's.
fn shared_dir(prefix: &str) -> String {
    let dir = std::env::temp_dir().join(format!("svc-e2e-shared-{}-{prefix}", std::process::id()));
    format!("file://{}", dir.display())
}

fn cluster_config_at(dir: &Path, etcd: &str, id: &str, prefix: &str, shared_store: &str) {
    std::fs::create_dir_all(dir).unwrap();
    let config = format!(
        "{}\n[cluster]\nendpoints = [\"{etcd}\"]\nnode_id = \"{id}\"\n\
         advertise_url = \"http://{id}.example:8080\"\nlease_ttl = \"{TTL_S}s\"\nprefix = \"{prefix}\"\n\
         shared_store = \"{shared_store}\"\n",
        common::QUIET_CONFIG,
    );
    std::fs::write(dir.join("config.toml"), config).unwrap();
}

/// Waits until etcd names `id` the leader.
async fn leader_is(election: &Election, id: &str, within: Duration) -> Duration {
    etcd::eventually(within, &format!("{id} leads"), || async {
        election.leader().await.ok().flatten().is_some_and(|l| l.id == id)
    })
    .await
}

#[tokio::test]
async fn a_standby_refuses_writes_and_takes_over_when_the_leader_dies() {
    let etcd = etcd::EtcdServer::start().await;
    let election = Election::new(&etcd.client(), "e2e/leader");
    // The shared store is S3 (a real moto_server).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let moto = Moto::start_on(port).await;
    moto.create_bucket("svc-shared").await;
    let aws = [
        ("AWS_ACCESS_KEY_ID", "testing"),
        ("AWS_SECRET_ACCESS_KEY", "testing"),
        ("AWS_REGION", "us-east-1"),
        ("AWS_ENDPOINT_URL", moto.endpoint.as_str()),
    ]
    .map(|(k, v)| (k.to_owned(), v.to_owned()));
    let (dir_a, dir_b) = (data_dir(), data_dir());
    cluster_config_at(dir_a.path(), &etcd.url(), "a", "e2e", "s3://svc-shared/e2e");
    cluster_config_at(dir_b.path(), &etcd.url(), "b", "e2e", "s3://svc-shared/e2e");

    let mut a = Daemon::configure(dir_a.path(), SCALE);
    a.env = aws.to_vec();
    a.launch().await;
    leader_is(&election, "a", Duration::from_secs(30)).await;
    // Only the leader scans: a scans at start.
    a.wait_scan_after(0).await;
    let mut b = Daemon::configure(dir_b.path(), SCALE);
    b.env = aws.to_vec();
    b.launch_listening().await;
    assert!(
        b.log
            .wait_for("joining the cluster as a standby", Duration::from_secs(10))
            .await
    );

    // The standby refuses reads and writes, naming the leader: it opens no
    // engine while it follows.
    for refused in [
        b.api().get("/api/v1/graph/stats").await.expect_error(503, "not_ready"),
        b.api()
            .post_json("/api/v1/tokens", &json!({"name": "ci", "role": "viewer"}))
            .await
            .expect_error(503, "not_ready"),
    ] {
        assert_eq!(
            refused["error"]["details"]["leader"],
            json!({"id": "a", "url": "http://a.example:8080"}),
            "{refused}"
        );
    }
    // The leader takes writes: a policy lives in its graph store.
    a.api()
        .post_json("/api/v1/tokens", &json!({"name": "ci", "role": "viewer"}))
        .await
        .expect(201);
    let policy = json!({"rules": [{"id": "kept", "condition": "cost > 0.0", "action": "warn", "message": "kept"}]});
    a.api().post_json("/api/v1/policies", &policy).await.expect(200);
    let policies = a.api().get_ok("/api/v1/policies").await;
    let stats = a.api().get_ok("/api/v1/graph/stats").await;

    // The standby applies the leader's ledger events and graph store
    // writes, and says so in etcd (so the leader may compact).
    let leader_history = a.api().history_all(&[]).await;
    let last = leader_history.iter().filter_map(|e| e["seq"].as_u64()).max().unwrap();
    let client = etcd.client();
    let applied = |log: &'static str| {
        let client = client.clone();
        async move {
            let key = format!("e2e/{log}/applied/b");
            let kv = client.get(key.into_bytes()).await.unwrap();
            kv.and_then(|kv| String::from_utf8(kv.value).ok()?.parse::<u64>().ok())
        }
    };
    let state_head = || async {
        let kv = client.get(b"e2e/state/head".to_vec()).await.unwrap();
        kv.and_then(|kv| String::from_utf8(kv.value).ok()?.parse::<u64>().ok())
    };
    etcd::eventually(
        Duration::from_secs(20),
        "the standby applied the leader's events and graph store writes",
        || async { applied("ledger").await == Some(last) && applied("state").await == state_head().await },
    )
    .await;
    assert!(state_head().await.unwrap() > 0);
    // The records went through the bucket (those applied by both nodes may
    // be deleted already; the last one stays until the next is applied).
    let objects = moto.objects("svc-shared", "e2e/state").await;
    assert!(!objects.is_empty(), "no state record in the bucket");
    // Once both nodes applied them, the leader deletes the old batches
    // from etcd (keeping the last).
    etcd::eventually(Duration::from_secs(30), "the replicated log is compacted", || async {
        let batches = client.get_prefix(b"e2e/ledger/log/").await.unwrap().0;
        let first = batches
            .first()
            .map(|kv| svc_cluster::decode(&kv.key, &kv.value).unwrap().first_seq());
        batches.len() == 1 && first > Some(1)
    })
    .await;

    // The standby keeps a snapshot of the graph store it follows.
    assert!(
        b.log
            .wait_for("snapshot of the followed graph store written", Duration::from_secs(30))
            .await,
        "{}",
        b.log.text()
    );

    // The leader dies: b leads within the lease TTL and takes writes.
    let killed = Instant::now();
    a.kill_9().await;
    leader_is(&election, "b", Duration::from_secs(TTL_S + 5)).await;
    etcd::eventually(Duration::from_secs(TTL_S + 10), "b answers a write", || async {
        let r = b
            .api()
            .post_json("/api/v1/tokens", &json!({"name": "ci-b", "role": "viewer"}))
            .await;
        r.status.as_u16() == 201
    })
    .await;
    let failover = killed.elapsed();
    eprintln!("failover: leader killed to first answered write on the new leader: {failover:?} (lease TTL {TTL_S}s)");
    assert!(failover <= Duration::from_secs(TTL_S + 3), "failover took {failover:?}");
    // b opened its engine on the graph store it followed (mapping the
    // snapshot it kept): the leader's graph and policies, before any scan
    // of its own.
    let log = b.log.text();
    let loaded = log
        .lines()
        .find(|l| l.contains("graph loaded"))
        .expect("b loaded its graph");
    assert!(
        loaded.contains("from=\"snapshot\"") && !loaded.contains(" nodes=0 "),
        "b did not open on the leader's graph: {loaded}"
    );
    assert_eq!(b.api().get_ok("/api/v1/policies").await, policies);
    assert_eq!(
        b.api().get_ok("/api/v1/graph/stats").await["active_nodes"],
        stats["active_nodes"],
        "the standby's graph is the leader's"
    );
    // The new leader scans, and its chain continues the old leader's with
    // every event acknowledged before the kill.
    b.wait_scan_after(last).await;
    let verified = b.api().get_ok("/api/v1/ledger/verify").await;
    assert_eq!(verified["ok"], true, "{verified}");
    assert!(verified["last_seq"].as_u64().unwrap() > last);
    let after = b.api().history_all(&[]).await;
    for event in &leader_history {
        assert!(
            after.contains(event),
            "event {} acknowledged by the old leader is missing",
            event["seq"]
        );
    }
}

/// A saga locks its CRN in etcd as well: while another holder has it, the
/// quarantine waits 30 s and ends in `LOCK_TIMEOUT`; once released, it runs
/// and lets the lock go after.
#[tokio::test]
async fn a_saga_waits_for_its_crns_lock_in_etcd() {
    let etcd = etcd::EtcdServer::start().await;
    let dir = data_dir();
    cluster_config_at(dir.path(), &etcd.url(), "solo", "e2e-locks", &shared_dir("e2e-locks"));
    let d = Daemon::start(dir.path(), SCALE).await;
    d.wait_scan_after(0).await;
    let nodes = d.api().all_nodes(None).await;
    let crn = nodes
        .iter()
        .filter_map(|n| n["crn"].as_str())
        .find(|c| c.contains(":volume:"))
        .expect("a volume in the mock estate")
        .to_owned();
    let quarantine = json!({"crn": crn, "action": "ISOLATE", "reason": "suspected leak"});

    // Another holder has the CRN's lock.
    let client = etcd.client();
    let lease = Lease::grant(&client, Duration::from_secs(60)).await.unwrap();
    let held = Locks::new(&client, "e2e-locks/locks", &lease)
        .acquire(&crn, Duration::from_secs(5))
        .await
        .unwrap();
    let started = Instant::now();
    let refused = d
        .api()
        .post_json("/api/v1/remediation/quarantine", &quarantine)
        .await
        .expect_error(409, "conflict");
    assert!(
        started.elapsed() >= Duration::from_secs(30),
        "gave up after {:?}",
        started.elapsed()
    );
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("not acquired within 30s"),
        "{refused}"
    );
    let timeouts = d.api().history_all(&[("type", "LOCK_TIMEOUT")]).await;
    assert!(timeouts.iter().any(|e| e["crn"] == crn.as_str()), "{timeouts:?}");

    // Released, the quarantine runs, and lets the lock go after.
    held.release().await.unwrap();
    d.api()
        .post_json("/api/v1/remediation/quarantine", &quarantine)
        .await
        .expect(200);
    etcd::eventually(Duration::from_secs(10), "the saga's lock is released", || async {
        client.get_prefix(b"e2e-locks/locks/").await.unwrap().0.is_empty()
    })
    .await;
}

/// etcd stops: the leader keeps answering reads, stops acting once its
/// lease is gone (writes refused), and leads again when etcd returns.
#[tokio::test]
async fn without_etcd_the_leader_serves_reads_stops_acting_and_resumes_when_etcd_returns() {
    let mut etcd = etcd::EtcdServer::start().await;
    let election = Election::new(&etcd.client(), "e2e-outage/leader");
    let dir = data_dir();
    cluster_config_at(dir.path(), &etcd.url(), "solo", "e2e-outage", &shared_dir("e2e-outage"));
    let d = Daemon::start(dir.path(), SCALE).await;
    leader_is(&election, "solo", Duration::from_secs(30)).await;
    d.wait_scan_after(0).await;
    let token = |name: &str| json!({"name": name, "role": "viewer"});
    d.api().post_json("/api/v1/tokens", &token("before")).await.expect(201);

    etcd.kill();
    assert!(
        d.log
            .wait_for("lost the leadership", Duration::from_secs(TTL_S + 10))
            .await,
        "the leader did not notice etcd was gone\n{}",
        d.log.text()
    );
    d.api().get_ok("/api/v1/graph/stats").await;
    d.api()
        .post_json("/api/v1/tokens", &token("during"))
        .await
        .expect_error(503, "not_ready");

    etcd.restart().await;
    etcd::eventually(
        Duration::from_secs(TTL_S + 20),
        "the node leads again and takes writes",
        || async {
            d.api()
                .post_json("/api/v1/tokens", &token("after"))
                .await
                .status
                .as_u16()
                == 201
        },
    )
    .await;
    let verified = d.api().get_ok("/api/v1/ledger/verify").await;
    assert_eq!(verified["ok"], true, "{verified}");
}
