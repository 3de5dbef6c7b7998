//! Membership on a real etcd: workers register on their leases, the live
//! set follows, and when a worker dies its sources, and only those, move.

#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

mod common;

use std::time::{Duration, Instant};

use common::EtcdServer;
use svc_cluster::{Lease, Member, Membership, Source, assign};

const TTL: Duration = Duration::from_secs(2);

fn sources() -> Vec<Source> {
    let mut out = Vec::new();
    for account in 0..8 {
        for region in ["eu-west-1", "us-east-1", "ap-south-1"] {
            out.push(Source {
                provider: "aws".into(),
                key: format!("aws/{account:012}/{region}"),
            });
        }
    }
    for cluster in 0..6 {
        out.push(Source {
            provider: "mock".into(),
            key: format!("mock/cluster-{cluster}"),
        });
    }
    out
}

async fn wait_for_ids(live: &svc_cluster::LiveMembers, ids: &[&str]) -> Vec<Member> {
    let mut rx = live.subscribe();
    tokio::time::timeout(
        Duration::from_secs(10),
        rx.wait_for(|m| m.iter().map(|m| m.id.as_str()).collect::<Vec<_>>() == ids),
    )
    .await
    .unwrap_or_else(|_| panic!("live set never became {ids:?}, last {:?}", live.current()))
    .unwrap()
    .clone()
}

#[tokio::test]
async fn the_live_set_follows_workers_and_a_dead_workers_sources_move() {
    let etcd = EtcdServer::start().await;
    let observer = Membership::new(&etcd.client(), "svc/members");
    let live = observer.watch();

    let mut leases = Vec::new();
    for (id, can) in [("w1", vec!["*"]), ("w2", vec!["aws"]), ("w3", vec!["aws", "mock"])] {
        let client = etcd.client();
        let lease = Lease::grant(&client, TTL).await.unwrap();
        let member = Member {
            id: id.into(),
            addr: format!("https://{id}:7443"),
            sources: can.into_iter().map(String::from).collect(),
        };
        Membership::new(&client, "svc/members")
            .register(&lease, &member)
            .await
            .unwrap();
        leases.push(lease);
    }
    let members = wait_for_ids(&live, &["w1", "w2", "w3"]).await;
    assert_eq!(members[1].addr, "https://w2:7443");
    assert_eq!(observer.list().await.unwrap(), members);

    let srcs = sources();
    let before = assign(&srcs, &members);
    assert!(before.unassigned.is_empty());
    for id in ["w1", "w2", "w3"] {
        assert!(!before.sources_of(id).is_empty(), "{id} got nothing");
    }
    for s in before.sources_of("w2") {
        assert!(s.starts_with("aws/"), "w2 runs only aws, got {s}");
    }

    // w3 dies (its keep-alive stops): it leaves the live set within the TTL.
    let died = Instant::now();
    leases[2].stop_keep_alive();
    let members = wait_for_ids(&live, &["w1", "w2"]).await;
    assert!(
        died.elapsed() <= TTL + Duration::from_secs(2),
        "took {:?}",
        died.elapsed()
    );
    let after = assign(&srcs, &members);
    assert!(after.unassigned.is_empty(), "w1 runs everything");
    let w3_had: Vec<&str> = before.sources_of("w3");
    for (source, owner) in &before.owner {
        if owner == "w3" {
            assert_ne!(after.owner[source], "w3");
        } else {
            assert_eq!(&after.owner[source], owner, "{source} moved from a live worker");
        }
    }
    assert!(w3_had.iter().any(|s| s.starts_with("mock/")));
    for s in w3_had.iter().filter(|s| s.starts_with("mock/")) {
        assert_eq!(after.owner[*s], "w1", "only w1 can run {s}");
    }

    // A worker that leaves cleanly goes at once.
    observer.leave("w2").await.unwrap();
    wait_for_ids(&live, &["w1"]).await;
}

#[tokio::test]
async fn bad_member_records_are_skipped_and_bad_ids_refused() {
    let etcd = EtcdServer::start().await;
    let client = etcd.client();
    let membership = Membership::new(&client, "svc/m2");
    let live = membership.watch();
    let lease = Lease::grant(&client, TTL).await.unwrap();
    client.put("svc/m2/garbage", "not json", 0).await.unwrap();
    let good = Member {
        id: "w1".into(),
        addr: "https://w1:7443".into(),
        sources: vec!["*".into()],
    };
    membership.register(&lease, &good).await.unwrap();
    wait_for_ids(&live, &["w1"]).await;
    let bad = Member {
        id: "a/b".into(),
        ..good
    };
    assert!(
        membership
            .register(&lease, &bad)
            .await
            .unwrap_err()
            .to_string()
            .contains("a/b")
    );
}
