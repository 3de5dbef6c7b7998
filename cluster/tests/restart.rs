//! etcd stopped and started again: calls fail with a clear error while it
//! is down and work again once it is back; a lease, a live copy of a prefix
//! and a log follower outlive a short outage; an unreachable endpoint fails
//! over to the next.

#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

mod common;

use std::time::Duration;

use common::{EtcdServer, config, eventually};
use svc_cluster::{Election, Entry, Error, Etcd, LeaderInfo, Lease, Mirror, ReplicatedLog};

#[tokio::test]
async fn calls_fail_clearly_while_etcd_is_down_and_recover_when_it_returns() {
    let mut etcd = EtcdServer::start().await;
    let client = etcd.client();
    client.put("svc/k", "v1", 0).await.unwrap();
    // A lease long enough to outlive the outage.
    let lease = Lease::grant(&client, Duration::from_secs(15)).await.unwrap();
    let leader = Election::new(&client, "svc/leader")
        .campaign(
            &lease,
            &LeaderInfo {
                id: "a".into(),
                url: "https://a:8443".into(),
            },
        )
        .await
        .unwrap();
    let log = ReplicatedLog::new(&client, "svc/ledger");
    log.append(
        &leader,
        &[Entry {
            seq: 1,
            bytes: b"one".to_vec(),
        }],
    )
    .await
    .unwrap();
    let mirror = Mirror::start(&client, b"svc/");
    let mut follower = ReplicatedLog::new(&etcd.client(), "svc/ledger").follow(0);
    let first = tokio::time::timeout(Duration::from_secs(5), follower.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(first.last_seq(), 1);
    eventually(Duration::from_secs(5), "mirror synced", || {
        let synced = mirror.is_synced();
        async move { synced }
    })
    .await;

    etcd.kill();
    let err = client.get("svc/k").await.unwrap_err();
    assert!(
        matches!(err, Error::Unavailable { .. } | Error::Timeout { .. }),
        "{err}"
    );
    let text = err.to_string();
    assert!(
        text.contains("Range") && text.contains(&etcd.url()),
        "the error names the call and endpoint: {text}"
    );
    let err = client.put("svc/k", "v2", 0).await.unwrap_err();
    assert!(
        matches!(err, Error::Unavailable { .. } | Error::Timeout { .. }),
        "{err}"
    );
    assert!(matches!(
        client.watch_prefix(b"svc/", 0).await,
        Err(Error::Unavailable { .. } | Error::Timeout { .. })
    ));

    etcd.restart().await;
    assert_eq!(client.get("svc/k").await.unwrap().unwrap().value, b"v1");
    client.put("svc/k", "v3", 0).await.unwrap();
    assert!(lease.is_alive(), "the lease outlived a short outage");
    assert!(leader.is_leader());
    // The mirror and the follower pick up what was written after the restart.
    eventually(
        Duration::from_secs(10),
        "mirror sees the write after the restart",
        || {
            let v = mirror.current().get(b"svc/k".as_slice()).map(|kv| kv.value.clone());
            async move { v.as_deref() == Some(b"v3".as_slice()) }
        },
    )
    .await;
    log.append(
        &leader,
        &[Entry {
            seq: 2,
            bytes: b"two".to_vec(),
        }],
    )
    .await
    .unwrap();
    let next = tokio::time::timeout(Duration::from_secs(10), follower.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(
        next.entries,
        [Entry {
            seq: 2,
            bytes: b"two".to_vec()
        }]
    );
    // The lease is still kept alive by etcd (not merely believed alive).
    assert!(client.lease_time_to_live(lease.id()).await.unwrap().is_some());
}

#[tokio::test]
async fn a_lease_is_lost_when_etcd_stays_away_beyond_its_ttl() {
    let mut etcd = EtcdServer::start().await;
    let client = etcd.client();
    let lease = Lease::grant(&client, Duration::from_secs(2)).await.unwrap();
    etcd.kill();
    tokio::time::timeout(Duration::from_secs(5), lease.lost())
        .await
        .expect("lost within the TTL and a margin");
    assert!(!lease.is_alive());
}

#[tokio::test]
async fn an_unreachable_endpoint_fails_over_to_the_next() {
    let etcd = EtcdServer::start().await;
    // Nothing listens on the first endpoint.
    let dead = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let client = Etcd::connect(&config(vec![format!("http://{dead}"), etcd.url()])).unwrap();
    client.put("svc/failover", "ok", 0).await.unwrap();
    assert_eq!(client.get("svc/failover").await.unwrap().unwrap().value, b"ok");
    let lease = Lease::grant(&client, Duration::from_secs(2)).await.unwrap();
    let mut watch = client.watch_prefix(b"svc/", 0).await.unwrap();
    client.put("svc/failover", "again", lease.id()).await.unwrap();
    let batch = tokio::time::timeout(Duration::from_secs(5), watch.next())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(batch.events[0].kv.as_ref().unwrap().value, b"again");
    assert!(client.status().await.unwrap().version.starts_with('3'));
}

#[test]
fn bad_configuration_is_a_clear_error() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let _guard = rt.enter();
    let err = Etcd::connect(&config(vec![])).unwrap_err();
    assert!(err.to_string().contains("no endpoints"), "{err}");
    let err = Etcd::connect(&config(vec!["http://[::1".into()])).unwrap_err();
    assert!(err.to_string().contains("[::1"), "{err}");
    let mut tls = config(vec!["127.0.0.1:2379".into()]);
    tls.tls = Some(svc_cluster::TlsFiles {
        ca: "/nonexistent/ca.pem".into(),
        cert: None,
        key: None,
        server_name: None,
    });
    let err = Etcd::connect(&tls).unwrap_err();
    assert!(err.to_string().contains("/nonexistent/ca.pem"), "{err}");
}
