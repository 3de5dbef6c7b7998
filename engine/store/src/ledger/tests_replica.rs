//! Replication: the hook every append passes through before it commits,
//! and the import of another node's events, byte for byte.

use std::sync::Arc;

use parking_lot::Mutex;

use super::tests::{Fixture, ev, with_savings};
use super::*;

type Captured = Arc<Mutex<Vec<(u64, Vec<u8>)>>>;

fn capturing(l: &Ledger) -> Captured {
    let seen: Captured = Arc::default();
    let s = seen.clone();
    l.set_replicator(Some(Arc::new(move |events: &[(u64, Vec<u8>)]| {
        s.lock().extend_from_slice(events);
        Ok(())
    })));
    seen
}

#[test]
fn a_standby_importing_the_leaders_events_holds_the_same_chain() {
    let (leader_file, standby_file) = (Fixture::new(), Fixture::new());
    let leader = leader_file.open("leader-session");
    let seen = capturing(&leader);
    leader
        .append_one(with_savings(
            ev("QUARANTINE", Some("crn:svc:aws:us-east-1:ec2:volume:1:vol-1")),
            4.5,
        ))
        .unwrap();
    leader_file.clock.advance(1000);
    leader
        .append(vec![
            ev("APPROVAL", Some("crn:svc:aws:us-east-1:ec2:volume:1:vol-1")),
            ev("SCAN_COMPLETED", None),
        ])
        .unwrap();
    let captured = seen.lock().clone();
    assert_eq!(captured.iter().map(|(s, _)| *s).collect::<Vec<_>>(), [1, 2, 3]);
    // As stored, read back later: the same bytes.
    assert_eq!(leader.stored_after(0, 10).unwrap(), captured);
    assert_eq!(leader.stored_after(1, 1).unwrap(), captured[1..2]);
    assert!(leader.stored_after(u64::MAX, 10).unwrap().is_empty());

    let standby = standby_file.open("standby-session");
    let heard: Arc<Mutex<Vec<u64>>> = Arc::default();
    let h = heard.clone();
    standby.add_listener(Box::new(move |e| h.lock().push(e.seq)));
    let imported = standby.import(captured[..1].to_vec()).unwrap();
    assert_eq!(imported[0].session_id, "leader-session");
    standby.import(captured[1..].to_vec()).unwrap();
    assert_eq!(*heard.lock(), [1, 2, 3], "listeners see imported events");
    assert_eq!(standby.last_seq(), 3);
    for seq in 1..=3 {
        assert_eq!(standby.get(seq).unwrap(), leader.get(seq).unwrap(), "event {seq}");
    }
    let report = standby.verify().unwrap();
    assert!(report.ok && report.checked == 3, "{report:?}");
    let (a, b) = (leader.summary().unwrap(), standby.summary().unwrap());
    assert_eq!(
        (b.total_events, b.approved, b.total_savings_usd),
        (a.total_events, a.approved, a.total_savings_usd)
    );
    assert_eq!(
        standby
            .resource("crn:svc:aws:us-east-1:ec2:volume:1:vol-1", 10)
            .unwrap()
            .0
            .len(),
        2
    );
    // The standby's own appends continue the same chain.
    let next = standby.append_one(ev("POLICY_CHANGE", None)).unwrap();
    assert_eq!((next.seq, next.prev_hash), (4, leader.get(3).unwrap().unwrap().hash));
    assert!(standby.verify().unwrap().ok);
}

#[test]
fn a_refused_replication_stores_nothing() {
    let f = Fixture::new();
    let l = f.open("s1");
    l.append_one(ev("QUARANTINE", None)).unwrap();
    l.set_replicator(Some(Arc::new(
        |_: &[(u64, Vec<u8>)]| Err("etcd unavailable".to_owned()),
    )));
    let err = l.append_one(ev("APPROVAL", None)).unwrap_err();
    assert_eq!(err.to_string(), "ledger write failed: not replicated: etcd unavailable");
    assert_eq!(l.last_seq(), 1);
    assert_eq!(l.get(2).unwrap(), None);
    l.set_replicator(None);
    assert_eq!(l.append_one(ev("APPROVAL", None)).unwrap().seq, 2);
    assert!(l.verify().unwrap().ok);
}

#[test]
fn an_import_that_does_not_continue_the_chain_is_refused_and_stores_nothing() {
    let (a_file, b_file) = (Fixture::new(), Fixture::new());
    let a = a_file.open("a");
    let seen = capturing(&a);
    a.append(vec![ev("QUARANTINE", None), ev("APPROVAL", None)]).unwrap();
    let events = seen.lock().clone();
    let b = b_file.open("b");

    let refused = |r: Result<Vec<Event>, LedgerError>, says: &str| {
        let e = r.unwrap_err().to_string();
        assert!(e.contains(says), "{e}");
    };
    refused(b.import(vec![events[1].clone()]), "last event is 0");
    let mut tampered = events[0].clone();
    // A timestamp byte: the event still decodes, its hash no longer holds.
    tampered.1[2] ^= 1;
    refused(b.import(vec![tampered]), "hash is wrong");
    refused(b.import(vec![(1, vec![9, 9, 9])]), "cannot import event 1");
    // A batch with one bad event stores none of it.
    refused(
        b.import(vec![events[0].clone(), (2, events[0].1.clone())]),
        "previous hash differs",
    );
    assert_eq!(b.last_seq(), 0);
    // A ledger with its own history cannot take another chain.
    let other = b.append_one(ev("POLICY_CHANGE", None)).unwrap();
    assert_eq!(other.seq, 1);
    refused(b.import(vec![events[1].clone()]), "previous hash differs");
    assert_eq!(b.last_seq(), 1);
}
