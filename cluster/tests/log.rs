//! The ledger's replicated log on a real etcd: only the leader appends, a
//! stale leader is refused, a standby receives every batch in order, a new
//! leader reads the tail, large appends are split under etcd's request
//! limit, and applied batches are compacted.

#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

mod common;

use std::time::Duration;

use common::EtcdServer;
use svc_cluster::{Election, Entry, Error, Follower, LeaderInfo, Leadership, Lease, ReplicatedLog};

const TTL: Duration = Duration::from_secs(3);
const LOG: &str = "svc/ledger";
const ELECTION: &str = "svc/leader";

fn entries(first: u64, n: u64) -> Vec<Entry> {
    (first..first + n)
        .map(|seq| Entry {
            seq,
            bytes: format!("{{\"seq\":{seq},\"type\":\"QUARANTINE\"}}").into_bytes(),
        })
        .collect()
}

async fn lead(etcd: &EtcdServer, id: &str) -> (Lease, Leadership, ReplicatedLog) {
    let client = etcd.client();
    let lease = Lease::grant(&client, TTL).await.unwrap();
    let me = LeaderInfo {
        id: id.into(),
        url: format!("https://{id}:8443"),
    };
    let leadership = tokio::time::timeout(
        Duration::from_secs(10),
        Election::new(&client, ELECTION).campaign(&lease, &me),
    )
    .await
    .unwrap()
    .unwrap();
    (lease, leadership, ReplicatedLog::new(&client, LOG))
}

/// Receives batches until `last` was delivered; checks they come in order
/// with no gap from `first`.
async fn receive_through(follower: &mut Follower, first: u64, last: u64) -> Vec<Entry> {
    let mut got: Vec<Entry> = Vec::new();
    while got.last().map_or(first - 1, |e| e.seq) < last {
        let batch = tokio::time::timeout(Duration::from_secs(10), follower.next())
            .await
            .unwrap_or_else(|_| panic!("no batch after seq {:?}", got.last().map(|e| e.seq)))
            .unwrap()
            .unwrap();
        let expected = got.last().map_or(first, |e| e.seq + 1);
        assert_eq!(batch.first_seq(), expected, "batches arrive in order without gap");
        got.extend(batch.entries);
    }
    assert_eq!(got.last().unwrap().seq, last);
    got
}

#[tokio::test]
async fn a_standby_follows_every_batch_and_a_new_leader_reads_the_tail() {
    let etcd = EtcdServer::start().await;
    let (lease_a, a, log_a) = lead(&etcd, "a").await;
    let standby = ReplicatedLog::new(&etcd.client(), LOG);
    let mut follower = standby.follow(0);
    assert_eq!(log_a.head().await.unwrap(), 0);

    log_a.append(&a, &entries(1, 3)).await.unwrap();
    log_a.append(&a, &entries(4, 1)).await.unwrap();
    log_a.append(&a, &entries(5, 20)).await.unwrap();
    assert_eq!(log_a.head().await.unwrap(), 24);
    assert_eq!(receive_through(&mut follower, 1, 24).await, entries(1, 24));

    // A gap or an overlap is refused, and changes nothing.
    let err = log_a.append(&a, &entries(26, 1)).await.unwrap_err();
    assert!(
        matches!(
            err,
            Error::LogConflict {
                first: 26,
                expected: 25,
                found: 24
            }
        ),
        "{err}"
    );
    assert!(matches!(
        log_a.append(&a, &entries(20, 2)).await,
        Err(Error::LogConflict { .. })
    ));
    assert!(matches!(
        log_a.append(&a, &[entries(25, 1), entries(27, 1)].concat()).await,
        Err(Error::InvalidAppend(_))
    ));

    // A standby that was at seq 10 catches up from there.
    let mut late = standby.follow(10);
    assert_eq!(receive_through(&mut late, 11, 24).await, entries(11, 14));

    // a dies; b is elected and reads everything after its own last seq.
    let standby_election = etcd.client();
    let waiting = tokio::spawn(async move {
        let lease = Lease::grant(&standby_election, TTL).await.unwrap();
        let me = LeaderInfo {
            id: "b".into(),
            url: "https://b:8443".into(),
        };
        let l = Election::new(&standby_election, ELECTION)
            .campaign(&lease, &me)
            .await
            .unwrap();
        (lease, l)
    });
    lease_a.revoke().await.unwrap();
    let (_lease_b, b) = tokio::time::timeout(Duration::from_secs(10), waiting)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(standby.read_after(17).await.unwrap(), entries(18, 7));
    assert!(standby.read_after(24).await.unwrap().is_empty());
    standby.append(&b, &entries(25, 2)).await.unwrap();
    assert_eq!(receive_through(&mut follower, 25, 26).await, entries(25, 2));

    // The old leader's append is refused by etcd, whatever it believes.
    let err = log_a.append(&a, &entries(27, 1)).await.unwrap_err();
    assert!(matches!(err, Error::NotLeader { .. }), "{err}");
    assert_eq!(standby.head().await.unwrap(), 26);
}

#[tokio::test]
async fn a_leader_whose_key_vanished_is_refused_before_it_notices() {
    let etcd = EtcdServer::start().await;
    let (_lease_a, a, log) = lead(&etcd, "a").await;
    log.append(&a, &entries(1, 2)).await.unwrap();
    // The key goes (as when etcd expires the lease) and b is elected at
    // once; a appends straight away, before its watch can tell it.
    let admin = etcd.client();
    admin.delete(a.key().to_vec()).await.unwrap();
    let (_lease_b, b, log_b) = lead(&etcd, "b").await;
    let err = log.append(&a, &entries(3, 1)).await.unwrap_err();
    assert!(matches!(err, Error::NotLeader { .. }), "{err}");
    log_b.append(&b, &entries(3, 1)).await.unwrap();
    assert_eq!(log_b.read_after(0).await.unwrap(), entries(1, 3));
}

#[tokio::test]
async fn appends_larger_than_etcds_request_limit_are_split() {
    let etcd = EtcdServer::start().await;
    let (_lease, a, log) = lead(&etcd, "a").await;
    let mut follower = ReplicatedLog::new(&etcd.client(), LOG).follow(0);
    // 40 events of 100 KiB: 4 MB, beyond etcd's 1.5 MiB request limit.
    let big: Vec<Entry> = (1..=40)
        .map(|seq| Entry {
            seq,
            bytes: vec![u8::try_from(seq).unwrap(); 100 * 1024],
        })
        .collect();
    log.append(&a, &big).await.unwrap();
    assert_eq!(receive_through(&mut follower, 1, 40).await, big);
    let batches = etcd
        .client()
        .get_prefix(format!("{LOG}/log/").as_bytes())
        .await
        .unwrap()
        .0;
    assert!(batches.len() >= 4, "{} batches", batches.len());
    assert!(
        batches
            .iter()
            .all(|kv| kv.value.len() <= svc_cluster::DEFAULT_MAX_BATCH_BYTES)
    );

    // One event larger than a batch may hold is refused with its size.
    let huge = [Entry {
        seq: 41,
        bytes: vec![0; 2 * 1024 * 1024],
    }];
    let err = log.append(&a, &huge).await.unwrap_err();
    assert!(
        matches!(err, Error::InvalidAppend(_)) && err.to_string().contains("2097152"),
        "{err}"
    );

    // A smaller limit splits finer.
    let small = ReplicatedLog::new(&etcd.client(), LOG).with_max_batch_bytes(4096);
    let many: Vec<Entry> = (41..=140)
        .map(|seq| Entry {
            seq,
            bytes: vec![7; 1000],
        })
        .collect();
    small.append(&a, &many).await.unwrap();
    assert_eq!(receive_through(&mut follower, 41, 140).await, many);
}

#[tokio::test]
async fn batches_every_member_applied_are_compacted() {
    let etcd = EtcdServer::start().await;
    let (lease_a, a, log) = lead(&etcd, "a").await;
    for first in (1..=50).step_by(10) {
        log.append(&a, &entries(first, 10)).await.unwrap();
    }
    let client = etcd.client();
    let lease_s1 = Lease::grant(&client, TTL).await.unwrap();
    let lease_s2 = Lease::grant(&client, TTL).await.unwrap();
    assert_eq!(log.compact(&a).await.unwrap(), None, "nobody published: nothing goes");
    log.publish_applied("a", &lease_a, 50).await.unwrap();
    log.publish_applied("s1", &lease_s1, 35).await.unwrap();
    log.publish_applied("s2", &lease_s2, 20).await.unwrap();
    assert_eq!(log.applied_by_all().await.unwrap(), Some(20));
    // Batches 1-10 and 11-20 are applied by all; 21-30 must stay.
    assert_eq!(log.compact(&a).await.unwrap(), Some(21));
    assert_eq!(log.read_after(20).await.unwrap(), entries(21, 30));
    let err = log.read_after(5).await.unwrap_err();
    assert!(matches!(err, Error::Compacted(_)), "{err}");
    let mut from_start = log.follow(0);
    assert!(matches!(from_start.next().await, Some(Err(Error::Compacted(_)))));

    // s2 dies: its applied seq goes with its lease and holds nothing back.
    lease_s2.revoke().await.unwrap();
    assert_eq!(log.compact(&a).await.unwrap(), Some(31));
    assert_eq!(log.read_after(30).await.unwrap(), entries(31, 20));
}
