//! Per-CRN locks on a real etcd: exclusive across clients, fenced, released
//! explicitly, on drop and with the holder's lease, and timing out.

#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

mod common;

use std::time::{Duration, Instant};

use common::{EtcdServer, eventually};
use svc_cluster::{Error, Lease, Locks, ops};

const TTL: Duration = Duration::from_secs(2);
const CRN: &str = "crn:svc:aws:123456789012:eu-west-1:ec2:volume/vol-1";

async fn holder(etcd: &EtcdServer) -> (svc_cluster::Etcd, Lease, Locks) {
    let client = etcd.client();
    let lease = Lease::grant(&client, TTL).await.unwrap();
    let locks = Locks::new(&client, "svc/locks", &lease);
    (client, lease, locks)
}

async fn keys_under(client: &svc_cluster::Etcd, prefix: &str) -> usize {
    client.get_prefix(prefix.as_bytes()).await.unwrap().0.len()
}

#[tokio::test]
async fn a_lock_is_exclusive_across_clients_and_fenced() {
    let etcd = EtcdServer::start().await;
    let (client_a, _lease_a, a) = holder(&etcd).await;
    let (_client_b, _lease_b, b) = holder(&etcd).await;

    let guard = a.acquire(CRN, Duration::from_secs(5)).await.unwrap();
    assert_eq!(guard.crn(), CRN);
    guard.check().await.unwrap();

    // b times out while a holds it, and leaves nothing queued behind.
    let started = Instant::now();
    let err = b.acquire(CRN, Duration::from_millis(500)).await.unwrap_err();
    let waited = started.elapsed();
    assert!(
        matches!(&err, Error::LockTimeout { crn, waited } if crn == CRN && *waited == Duration::from_millis(500)),
        "{err}"
    );
    assert!(err.to_string().contains("not acquired within"), "{err}");
    assert!(
        waited >= Duration::from_millis(500) && waited < Duration::from_secs(3),
        "waited {waited:?}"
    );
    eventually(Duration::from_secs(5), "b's queued key withdrawn", || {
        let c = client_a.clone();
        async move { keys_under(&c, "svc/locks/").await == 1 }
    })
    .await;

    // Another CRN is independent, also one whose name extends this one's.
    let other = b.acquire(&format!("{CRN}/x"), Duration::from_secs(5)).await.unwrap();

    // A write fenced by the lock succeeds while it is held...
    let fenced =
        |g: &svc_cluster::LockGuard| ops::txn(vec![g.fence()], vec![ops::put(b"svc/step", b"1".to_vec(), 0)], vec![]);
    assert!(client_a.txn(fenced(&guard)).await.unwrap().succeeded);
    let old_fence = fenced(&guard);
    let first_revision = guard.revision();

    // ...b gets the lock once a releases it...
    let waiting = tokio::spawn({
        let b = b.clone();
        async move { b.acquire(CRN, Duration::from_secs(10)).await }
    });
    guard.release().await.unwrap();
    let guard_b = tokio::time::timeout(Duration::from_secs(5), waiting)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(guard_b.revision() > first_revision, "fencing tokens grow");
    guard_b.check().await.unwrap();
    // ...and a's fence no longer holds.
    assert!(!client_a.txn(old_fence).await.unwrap().succeeded);
    drop(other);
}

#[tokio::test]
async fn a_dead_holders_lock_goes_with_its_lease() {
    let etcd = EtcdServer::start().await;
    let (_ca, lease_a, a) = holder(&etcd).await;
    let (_cb, _lease_b, b) = holder(&etcd).await;
    let guard = a.acquire(CRN, Duration::from_secs(5)).await.unwrap();
    let waiting = tokio::spawn({
        let b = b.clone();
        async move { b.acquire(CRN, Duration::from_secs(20)).await }
    });

    // a's keep-alive stops (a hung or cut-off process): the lock moves to b
    // within the lease TTL, and a learns it no longer holds it.
    let stopped = Instant::now();
    lease_a.stop_keep_alive();
    let guard_b = tokio::time::timeout(Duration::from_secs(10), waiting)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(
        stopped.elapsed() <= lease_a.ttl() + Duration::from_secs(2),
        "took {:?}",
        stopped.elapsed()
    );
    assert!(!guard.is_held());
    assert!(matches!(guard.check().await, Err(Error::Lost { .. })));
    guard_b.check().await.unwrap();
}

#[tokio::test]
async fn a_dropped_guard_releases_and_one_holder_cannot_take_a_lock_twice() {
    let etcd = EtcdServer::start().await;
    let (client, _lease, a) = holder(&etcd).await;
    let guard = a.acquire(CRN, Duration::from_secs(5)).await.unwrap();
    assert!(matches!(
        a.acquire(CRN, Duration::from_secs(1)).await,
        Err(Error::LockHeldHere { .. })
    ));
    drop(guard);
    eventually(Duration::from_secs(5), "the dropped lock's key is deleted", || {
        let c = client.clone();
        async move { keys_under(&c, "svc/locks/").await == 0 }
    })
    .await;
    let again = a.acquire(CRN, Duration::from_secs(5)).await.unwrap();
    again.check().await.unwrap();
}

#[tokio::test]
async fn a_lock_wait_ends_when_the_waiters_own_lease_is_lost() {
    let etcd = EtcdServer::start().await;
    let (client, _lease_a, a) = holder(&etcd).await;
    let (_cb, lease_b, b) = holder(&etcd).await;
    let _guard = a.acquire(CRN, Duration::from_secs(5)).await.unwrap();
    let waiting = tokio::spawn({
        let b = b.clone();
        async move { b.acquire(CRN, Duration::from_secs(30)).await }
    });
    eventually(Duration::from_secs(5), "b queued", || {
        let c = client.clone();
        async move { keys_under(&c, "svc/locks/").await == 2 }
    })
    .await;
    lease_b.revoke().await.unwrap();
    let err = tokio::time::timeout(Duration::from_secs(5), waiting)
        .await
        .unwrap()
        .unwrap()
        .unwrap_err();
    assert!(matches!(err, Error::LeaseLost { .. }), "{err}");
}
