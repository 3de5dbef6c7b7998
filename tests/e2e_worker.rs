//! Scan workers end to end: real `svc worker` processes running the real
//! `svc-plugin-mock`, a real daemon dialling them over mutual TLS with
//! certificates made here (a CA, the workers' server certificates, the
//! daemon's client certificate, and a stranger's from another CA).
//!
//! A scan lands every worker's sources; a client without a certificate,
//! or with one another CA signed, is refused; a worker killed with
//! SIGKILL mid-scan fails its sources only (nothing they staged lands,
//! nothing of theirs is retired) while the other worker's sources land;
//! with the sources moved to a live worker the next scan is complete.
//!
//! In a cluster, workers join through a real etcd and the daemon assigns
//! its sources over the live ones; a worker killed with SIGKILL loses its
//! sources to the other within the lease time, and the next scan is
//! complete.

mod common;
#[allow(
    clippy::unwrap_used,
    reason = "the cluster crate's etcd helper, test code: a failed unwrap is a failed test"
)]
#[path = "../cluster/tests/common/mod.rs"]
mod etcd;

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use common::workers::{ClusterConfig, Pair, Pki, Worker, complete_scan, outcomes, pki};
use common::{Daemon, SCAN_DEADLINE, Sources};
use serde_json::json;
use svc_proto::provider::v1::HandshakeRequest;
use svc_proto::provider::v1::provider_client::ProviderClient;
use tonic::transport::{Certificate, ClientTlsConfig, Endpoint, Identity};

/// A TLS client of `worker`, presenting `identity` (none: no certificate).
async fn handshake(worker: &Worker, ca: &Path, identity: Option<&Pair>) -> Result<String, String> {
    let mut tls = ClientTlsConfig::new()
        .ca_certificate(Certificate::from_pem(std::fs::read(ca).expect("read CA")))
        .domain_name("localhost");
    if let Some(pair) = identity {
        tls = tls.identity(Identity::from_pem(
            std::fs::read(&pair.cert).expect("cert"),
            std::fs::read(&pair.key).expect("key"),
        ));
    }
    let endpoint = Endpoint::from_shared(format!("https://{}", worker.addr))
        .expect("endpoint")
        .tls_config(tls)
        .expect("tls")
        .connect_timeout(Duration::from_secs(10))
        .timeout(Duration::from_secs(10));
    let channel = endpoint.connect().await.map_err(|e| format!("connect: {e:?}"))?;
    let reply = ProviderClient::new(channel)
        .handshake(HandshakeRequest {
            daemon_version: env!("CARGO_PKG_VERSION").to_owned(),
        })
        .await
        .map_err(|e| format!("handshake: {e:?}"))?;
    Ok(reply.into_inner().message)
}

fn workers_config(pki: &Pki, members: &[&Worker], sources: &[(&str, &str, u64)]) -> String {
    let mut text = format!(
        "[daemon]\nscan_interval = \"1h\"\n\n[workers]\ntls_cert = {:?}\ntls_key = {:?}\ntls_ca = {:?}\n\n[workers.members]\n",
        pki.daemon.cert, pki.daemon.key, pki.ca
    );
    for w in members {
        text.push_str(&format!("{} = \"{}\"\n", w.id, w.addr));
    }
    for (name, worker, seed) in sources {
        text.push_str(&format!(
            "\n[workers.sources.{name}]\nplugin = \"mock\"\nworker = \"{worker}\"\nconfig = {{ seed = \"{seed}\", scale = \"300\" }}\n"
        ));
    }
    text
}

async fn crns_and_accounts(daemon: &Daemon) -> (BTreeSet<String>, BTreeSet<String>) {
    let nodes = daemon.api().all_nodes(None).await;
    let crns = nodes
        .iter()
        .map(|n| n["crn"].as_str().unwrap_or_default().to_owned())
        .collect();
    let accounts = nodes
        .iter()
        .map(|n| n["account"].as_str().unwrap_or_default().to_owned())
        .collect();
    (crns, accounts)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_scan_over_mutual_tls_and_a_dead_worker_fails_only_its_sources() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pki = pki(dir.path());
    let w1 = Worker::start("w1", &pki, &dir.path().join("w1"), &[]).await;
    let w2 = Worker::start("w2", &pki, &dir.path().join("w2"), &[]).await;

    // Only a client with a certificate from the workers' CA gets an answer.
    let answer = handshake(&w1, &pki.ca, Some(&pki.daemon)).await;
    assert_eq!(answer.as_deref(), Ok("svc worker w1"), "{}", w1.log.text());
    let refused = handshake(&w1, &pki.ca, None).await;
    assert!(
        refused.is_err(),
        "a client without a certificate was answered: {refused:?}"
    );
    let refused = handshake(&w1, &pki.ca, Some(&pki.stranger)).await;
    assert!(
        refused.is_err(),
        "a certificate from another CA was accepted: {refused:?}"
    );

    // A daemon whose four sources run on the two workers.
    let data = dir.path().join("daemon");
    std::fs::create_dir_all(&data).expect("data dir");
    std::fs::write(
        data.join("config.toml"),
        workers_config(
            &pki,
            &[&w1, &w2],
            &[("a1", "w1", 1), ("a2", "w1", 2), ("b1", "w2", 3), ("b2", "w2", 4)],
        ),
    )
    .expect("config");
    let mut daemon = Daemon::configure(&data, 300);
    daemon.sources = Sources::Fallback;
    daemon.launch().await;
    daemon.wait_scan_after(0).await;
    let first = daemon.api().scan_wait().await;
    let got = outcomes(&first);
    assert_eq!(got.len(), 4, "{got:?}");
    for (name, ok, nodes, error) in &got {
        assert!(
            *ok && *nodes > 0,
            "source {name}: ok {ok}, {nodes} nodes, {error}\n{}",
            daemon.log.text()
        );
    }
    // No simulated estate stands in beside the workers' sources.
    let names: Vec<&str> = got.iter().map(|(name, ..)| name.as_str()).collect();
    assert_eq!(names, ["a1", "a2", "b1", "b2"]);
    let (before, accounts_before) = crns_and_accounts(&daemon).await;
    assert!(before.len() > 300, "{} nodes", before.len());

    // w1's sources move to a third worker whose plugins stall after their
    // first response; a1 now scans an estate of a new seed (new accounts).
    let mut w3 = Worker::start(
        "w3",
        &pki,
        &dir.path().join("w3"),
        &[("SVC_MOCK_FAIL", "stall_mid_scan")],
    )
    .await;
    let moved = json!({ "workers": {
        "members": { "w3": w3.addr.to_string() },
        "sources": { "a1": { "worker": "w3", "config": { "seed": "101" } }, "a2": { "worker": "w3" } },
    }});
    daemon.api().put_json("/api/v1/config", &moved).await.expect(200);
    let scan = {
        let api = daemon.api();
        tokio::spawn(async move { api.scan_wait().await })
    };
    // Both of w3's plugins have sent their first response: kill it.
    let deadline = tokio::time::Instant::now() + SCAN_DEADLINE;
    while w3.log.text().matches("stalling mid-scan").count() < 2 {
        assert!(
            !scan.is_finished(),
            "the scan ended before w3's plugins stalled\n{}\n{}",
            w3.log.text(),
            daemon.log.text()
        );
        assert!(
            tokio::time::Instant::now() < deadline,
            "w3's plugins never stalled\n{}\n{}",
            w3.log.text(),
            daemon.log.text()
        );
        tokio::time::sleep(common::POLL_PAUSE).await;
    }
    w3.kill_9();
    let second = scan.await.expect("scan task");
    let got = outcomes(&second);
    // How much of a dead worker's source the daemon staged depends on what
    // was still in flight through the worker when it died; whatever it was,
    // none of it lands (checked below).
    for (name, ok, nodes, error) in &got {
        if name.starts_with('a') {
            assert!(
                !ok,
                "source {name} of the dead worker did not fail ({nodes} nodes staged)"
            );
            assert!(error.contains("worker w3"), "source {name}: {error}");
        } else {
            assert!(*ok && *nodes > 0, "source {name}: {error}");
        }
    }
    let (after, accounts_after) = crns_and_accounts(&daemon).await;
    let lost: Vec<&String> = before.difference(&after).take(5).collect();
    assert!(lost.is_empty(), "resources retired while their source failed: {lost:?}");
    let new_accounts: Vec<&String> = accounts_after.difference(&accounts_before).collect();
    assert!(
        new_accounts.is_empty(),
        "a1's staged rows of seed 101 landed: {new_accounts:?}"
    );

    // With its sources on the live worker the next scan is complete, and
    // a1's new estate lands.
    let back = json!({ "workers": { "sources": { "a1": { "worker": "w2" }, "a2": { "worker": "w2" } } } });
    daemon.api().put_json("/api/v1/config", &back).await.expect(200);
    let third = daemon.api().scan_wait().await;
    let got = outcomes(&third);
    assert_eq!(got.len(), 4, "{got:?}");
    for (name, ok, nodes, error) in &got {
        assert!(*ok && *nodes > 0, "source {name}: ok {ok}, {nodes} nodes, {error}");
    }
    let (_, accounts_last) = crns_and_accounts(&daemon).await;
    assert!(
        accounts_last.difference(&accounts_before).count() > 0,
        "a1's estate of seed 101 is not in the graph after a complete scan"
    );
    drop((w1, w2));
}

/// The sources the cluster test spreads over its workers.
const CLUSTER_SOURCES: [&str; 6] = ["c1", "c2", "c3", "c4", "c5", "c6"];
const LEASE_TTL_S: u64 = 2;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_joined_through_etcd_share_the_sources_and_a_dead_ones_move_within_the_lease() {
    let mut etcd = etcd::EtcdServer::start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let pki = pki(dir.path());
    let url = etcd.url();
    let ttl = format!("{LEASE_TTL_S}s");
    let join = [
        "--join",
        url.as_str(),
        "--cluster-prefix",
        "e2e",
        "--lease-ttl",
        ttl.as_str(),
    ];
    let mut workers = vec![
        Worker::start_with("w1", &pki, &dir.path().join("w1"), &[], &join).await,
        Worker::start_with("w2", &pki, &dir.path().join("w2"), &[], &join).await,
    ];
    // Both are registered, each with its address and the plugin it runs.
    let membership = svc_cluster::Membership::new(&etcd.client(), "e2e/workers");
    etcd::eventually(Duration::from_secs(10), "both workers registered", || async {
        membership.list().await.map(|m| m.len() == 2).unwrap_or(false)
    })
    .await;
    let members = membership.list().await.expect("members");
    for (m, w) in members.iter().zip(&workers) {
        assert_eq!((m.id.as_str(), m.addr.clone()), (w.id.as_str(), w.addr.to_string()));
        assert_eq!(m.sources, ["mock"]);
    }

    let data = dir.path().join("daemon");
    std::fs::create_dir_all(&data).expect("data dir");
    let config = ClusterConfig {
        etcd: &url,
        prefix: "e2e",
        node_id: "d1",
        lease_ttl_s: LEASE_TTL_S,
        shared: &dir.path().join("shared"),
        sources: &CLUSTER_SOURCES,
        scale: 200,
    };
    std::fs::write(data.join("config.toml"), config.text(&pki)).expect("config");
    let mut daemon = Daemon::configure(&data, 300);
    daemon.sources = Sources::Fallback;
    daemon.launch().await;
    let election = svc_cluster::Election::new(&etcd.client(), "e2e/leader");
    etcd::eventually(Duration::from_secs(30), "the daemon leads", || async {
        election.leader().await.ok().flatten().is_some_and(|l| l.id == "d1")
    })
    .await;

    // A scan lands every source, spread over both workers as svc-cluster's
    // assignment places them.
    complete_scan(&daemon, CLUSTER_SOURCES.len(), Duration::from_secs(60)).await;
    let sources: Vec<svc_cluster::Source> = CLUSTER_SOURCES
        .iter()
        .map(|s| svc_cluster::Source {
            provider: "mock".into(),
            key: (*s).into(),
        })
        .collect();
    let placed = svc_cluster::assign(&sources, &members);
    let (on_w1, on_w2) = (placed.sources_of("w1").len(), placed.sources_of("w2").len());
    assert!(on_w1 > 0 && on_w2 > 0, "w1 runs {on_w1}, w2 {on_w2}");
    let (_, accounts_before) = crns_and_accounts(&daemon).await;

    // w1 dies: within the lease TTL it leaves the live set, its sources
    // move to w2, and the next scan is complete.
    let killed = tokio::time::Instant::now();
    workers[0].kill_9();
    let gone = etcd::eventually(Duration::from_secs(LEASE_TTL_S + 3), "w1 left the live set", || async {
        membership
            .list()
            .await
            .map(|m| m.iter().map(|m| m.id.clone()).collect::<Vec<_>>() == ["w2"])
            .unwrap_or(false)
    })
    .await;
    eprintln!("w1 killed; gone from etcd after {gone:?} (lease TTL {LEASE_TTL_S}s)");
    complete_scan(&daemon, CLUSTER_SOURCES.len(), Duration::from_secs(LEASE_TTL_S + 30)).await;
    let moved = killed.elapsed();
    eprintln!("w1 killed; first complete scan after {moved:?}");
    assert!(
        daemon.log.text().contains("sources assigned to the live workers"),
        "{}",
        daemon.log.text()
    );
    // The estate moves on between scans (the mock's epochs), so the graph
    // is checked for every source's accounts rather than for the same CRNs.
    let (_, accounts_after) = crns_and_accounts(&daemon).await;
    let missing: Vec<&String> = accounts_before.difference(&accounts_after).take(5).collect();
    assert!(
        missing.is_empty(),
        "accounts gone after w1's sources moved: {missing:?}"
    );
    // w2 now runs every source: its plugins answered for w1's too.
    for name in placed.sources_of("w1") {
        assert!(
            workers[1].log.text().contains(&format!("source={name} ")),
            "w2 never ran {name}\n{}",
            workers[1].log.text()
        );
    }

    // etcd is gone beyond the lease time: w2's lease is lost; when etcd
    // returns it registers again, and the next scan is complete.
    etcd.kill();
    let w2_log = workers[1].log.clone();
    etcd::eventually(Duration::from_secs(LEASE_TTL_S + 15), "w2 sees its lease lost", || {
        let lost = w2_log.text().contains("etcd lease was lost");
        async move { lost }
    })
    .await;
    etcd.restart().await;
    etcd::eventually(Duration::from_secs(30), "w2 registered again", || async {
        w2_log.text().contains("registered with the cluster again")
            && membership
                .list()
                .await
                .is_ok_and(|m| m.iter().map(|m| m.id.as_str()).eq(["w2"]))
    })
    .await;
    // The daemon lost its leadership with etcd too; it scans once it leads.
    etcd::eventually(Duration::from_secs(30), "the daemon leads again", || async {
        election.leader().await.ok().flatten().is_some_and(|l| l.id == "d1")
    })
    .await;
    complete_scan(&daemon, CLUSTER_SOURCES.len(), Duration::from_secs(60)).await;
    drop(workers);
}
