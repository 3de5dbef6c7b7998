//! Leader election on a real etcd: three contenders, one leader, observed
//! with its id and URL; a leader whose lease is revoked or whose keep-alive
//! stops learns it, and another is elected within the lease TTL.

#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

mod common;

use std::time::{Duration, Instant};

use common::{EtcdServer, eventually};
use svc_cluster::{Election, LeaderInfo, Leadership, Lease};
use tokio::task::JoinHandle;

const TTL: Duration = Duration::from_secs(2);

fn info(id: &str) -> LeaderInfo {
    LeaderInfo {
        id: id.into(),
        url: format!("https://{id}.example:8443"),
    }
}

struct Contender {
    id: String,
    lease: Lease,
    campaign: JoinHandle<svc_cluster::Result<Leadership>>,
}

/// Starts a contender on its own connection and lease, and waits until its
/// key is queued (so the order of the contenders is the order of the calls).
async fn contend(etcd: &EtcdServer, prefix: &str, id: &str) -> Contender {
    let client = etcd.client();
    let lease = Lease::grant(&client, TTL).await.unwrap();
    let election = Election::new(&client, prefix);
    let (l, me) = (lease.clone(), info(id));
    let campaign = tokio::spawn(async move { election.campaign(&l, &me).await });
    let queued = format!("{prefix}/{:016x}", lease.id());
    eventually(Duration::from_secs(5), "candidate queued", || {
        let (c, k) = (client.clone(), queued.clone());
        async move { c.get(k).await.unwrap().is_some() }
    })
    .await;
    Contender {
        id: id.into(),
        lease,
        campaign,
    }
}

async fn elected(c: &mut Contender) -> Leadership {
    tokio::time::timeout(Duration::from_secs(10), &mut c.campaign)
        .await
        .unwrap()
        .unwrap()
        .unwrap()
}

#[tokio::test]
async fn three_contenders_elect_one_leader_in_turn() {
    let etcd = EtcdServer::start().await;
    let election = Election::new(&etcd.client(), "svc/election");
    let observer = election.observe();
    let mut a = contend(&etcd, "svc/election", "a").await;
    let mut b = contend(&etcd, "svc/election", "b").await;
    let mut c = contend(&etcd, "svc/election", "c").await;

    let leader = elected(&mut a).await;
    assert!(leader.is_leader());
    assert_eq!(leader.info(), &info("a"));
    assert_eq!(election.leader().await.unwrap(), Some(info("a")));
    let mut seen = observer.subscribe();
    tokio::time::timeout(
        Duration::from_secs(5),
        seen.wait_for(|l| l.as_ref() == Some(&info("a"))),
    )
    .await
    .unwrap()
    .unwrap();
    // The others wait while a leads.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !b.campaign.is_finished() && !c.campaign.is_finished(),
        "only one leader at a time"
    );

    // a resigns: b, queued next, leads; its fencing revision is newer.
    let a_revision = leader.revision();
    leader.resign().await.unwrap();
    let leader = elected(&mut b).await;
    assert_eq!(leader.info().id, b.id);
    assert!(leader.revision() > a_revision);
    tokio::time::timeout(
        Duration::from_secs(5),
        seen.wait_for(|l| l.as_ref() == Some(&info("b"))),
    )
    .await
    .unwrap()
    .unwrap();
    assert!(!c.campaign.is_finished());

    // b's process ends its lease: c leads.
    b.lease.revoke().await.unwrap();
    let leader_c = elected(&mut c).await;
    assert_eq!(leader_c.info().id, "c");
    assert!(!leader.is_leader(), "b knows it no longer leads");
    assert_eq!(election.leader().await.unwrap(), Some(info("c")));
    drop(a);
}

#[tokio::test]
async fn a_leader_whose_lease_is_revoked_learns_it_and_another_takes_over() {
    let etcd = EtcdServer::start().await;
    let mut a = contend(&etcd, "svc/e2", "a").await;
    let leader = elected(&mut a).await;
    let mut b = contend(&etcd, "svc/e2", "b").await;

    let killed = Instant::now();
    a.lease.revoke().await.unwrap();
    assert!(!a.lease.is_alive());
    tokio::time::timeout(Duration::from_secs(2), leader.lost())
        .await
        .expect("the old leader learns it lost");
    assert!(!leader.is_leader());
    let next = elected(&mut b).await;
    assert!(next.is_leader());
    assert!(
        killed.elapsed() < TTL,
        "a revoked lease hands over at once, took {:?}",
        killed.elapsed()
    );
}

#[tokio::test]
async fn a_leader_whose_keep_alive_stops_loses_and_another_is_elected_within_the_ttl() {
    let etcd = EtcdServer::start().await;
    let mut a = contend(&etcd, "svc/e3", "a").await;
    let leader = elected(&mut a).await;
    let mut b = contend(&etcd, "svc/e3", "b").await;
    let granted = a.lease.ttl();

    let stopped = Instant::now();
    a.lease.stop_keep_alive();
    let next = elected(&mut b).await;
    let took = stopped.elapsed();
    // The old leader must know before (or as) the new one is elected.
    assert!(
        !leader.is_leader(),
        "the old leader still believes it leads after {took:?}"
    );
    assert!(next.is_leader());
    // etcd expires a lease between TTL and TTL + 1 s after the last
    // keep-alive, and keep-alives go every TTL/3.
    assert!(
        took <= granted + Duration::from_secs(2),
        "took {took:?} with a TTL of {granted:?}"
    );
}

#[tokio::test]
async fn a_cancelled_campaign_withdraws_its_candidacy() {
    let etcd = EtcdServer::start().await;
    let client = etcd.client();
    let mut a = contend(&etcd, "svc/e4", "a").await;
    let leader = elected(&mut a).await;
    let b = contend(&etcd, "svc/e4", "b").await;
    b.campaign.abort();
    let key = format!("svc/e4/{:016x}", b.lease.id());
    eventually(
        Duration::from_secs(5),
        "the cancelled candidate's key is deleted",
        || {
            let (c, k) = (client.clone(), key.clone());
            async move { c.get(k).await.unwrap().is_none() }
        },
    )
    .await;
    leader.resign().await.unwrap();
    assert_eq!(Election::new(&client, "svc/e4").leader().await.unwrap(), None);
}
