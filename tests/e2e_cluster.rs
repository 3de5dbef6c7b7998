//! Two daemons sharing an estate through a real etcd (`[cluster]`): one
//! leads and scans, the other is a standby that answers reads and refuses
//! writes naming the leader; when the leader is killed (-9) the standby
//! takes over within the lease TTL and answers writes.

#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

mod common;
#[path = "../cluster/tests/common/mod.rs"]
mod etcd;

use std::path::Path;
use std::time::{Duration, Instant};

use common::{Daemon, data_dir};
use serde_json::json;
use svc_cluster::Election;

const SCALE: usize = 200;
const TTL_S: u64 = 2;

fn cluster_config(dir: &Path, etcd: &str, id: &str) {
    std::fs::create_dir_all(dir).unwrap();
    let config = format!(
        "{}\n[cluster]\nendpoints = [\"{etcd}\"]\nnode_id = \"{id}\"\n\
         advertise_url = \"http://{id}.example:8080\"\nlease_ttl = \"{TTL_S}s\"\nprefix = \"e2e\"\n",
        common::QUIET_CONFIG
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
    let (dir_a, dir_b) = (data_dir(), data_dir());
    cluster_config(dir_a.path(), &etcd.url(), "a");
    cluster_config(dir_b.path(), &etcd.url(), "b");

    let mut a = Daemon::start(dir_a.path(), SCALE).await;
    leader_is(&election, "a", Duration::from_secs(30)).await;
    // Only the leader scans: a scans at start.
    a.wait_scan_after(0).await;
    let b = Daemon::start(dir_b.path(), SCALE).await;
    assert!(
        b.log
            .wait_for("joining the cluster as a standby", Duration::from_secs(10))
            .await
    );

    // The standby answers reads and refuses writes, naming the leader.
    b.api().get_ok("/api/v1/graph/stats").await;
    let refused = b
        .api()
        .post_json("/api/v1/tokens", &json!({"name": "ci", "role": "viewer"}))
        .await
        .expect_error(503, "not_ready");
    assert_eq!(
        refused["error"]["details"]["leader"],
        json!({"id": "a", "url": "http://a.example:8080"}),
        "{refused}"
    );
    // The standby did not scan: its ledger holds no scan.
    let history = b.api().history_all(&[("type", "SCAN_COMPLETED")]).await;
    assert!(history.is_empty(), "a standby scanned: {history:?}");
    // The leader takes writes.
    a.api()
        .post_json("/api/v1/tokens", &json!({"name": "ci", "role": "viewer"}))
        .await
        .expect(201);

    // The leader dies: b leads within the lease TTL and takes writes.
    let killed = Instant::now();
    a.kill_9().await;
    leader_is(&election, "b", Duration::from_secs(TTL_S + 5)).await;
    let write = etcd::eventually(Duration::from_secs(TTL_S + 10), "b answers a write", || async {
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
    let _ = write;
    // The new leader scans.
    b.wait_scan_after(0).await;
}
