//! State records between two real stores: a follower applying a leader's
//! records holds the leader's tables byte for byte; seqs are gap-free and
//! applied once; a refused record leaves the leader unchanged; malformed
//! records are errors that apply nothing.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use parking_lot::Mutex;
use proptest::prelude::*;
use svc_graph::graph::Graph;
use svc_graph::intern::Interner;

use super::*;
use crate::graph_store::tests::scan;
use crate::{StoredEvaluation, StoredRule};

type Shipped = Arc<Mutex<Vec<(u64, Vec<u8>)>>>;

/// A store in a directory of its own.
fn store() -> (tempfile::TempDir, GraphStore) {
    let dir = tempfile::tempdir().unwrap();
    let store = GraphStore::open(&dir.path().join("graph.redb")).unwrap();
    (dir, store)
}

/// A shipper keeping every `(seq, record)` it is handed.
fn collecting(store: &GraphStore) -> Shipped {
    let shipped: Shipped = Arc::default();
    let into = Arc::clone(&shipped);
    store.set_shipper(Some(Arc::new(move |seq, record: &[u8]| {
        into.lock().push((seq, record.to_vec()));
        Ok(())
    })));
    shipped
}

/// Every table of the store and its rows, as stored bytes.
fn tables(store: &GraphStore) -> BTreeMap<String, Rows> {
    contents(&store.database().unwrap()).unwrap()
}

fn rule(id: &str) -> StoredRule {
    StoredRule {
        id: id.into(),
        condition: "kind == \"volume\"".into(),
        action: "flag".into(),
        message: "unattached".into(),
        mode: "shadow".into(),
        origin: "api".into(),
        created_us: 7,
    }
}

fn providers(ps: &[&str]) -> BTreeSet<String> {
    ps.iter().map(|p| (*p).to_owned()).collect()
}

/// Graph commits (a first one, a delta, a checkpoint), a prune of the
/// history, policy rules put and one deleted, source providers: the
/// follower, applying the records in order, holds every table the leader
/// holds with the same rows, at the same seq, and replays the same graph.
#[test]
fn a_follower_applying_every_record_holds_the_leaders_tables() {
    let (_l, leader) = store();
    let (_f, follower) = store();
    let shipped = collecting(&leader);
    let mut g = Graph::new(Arc::new(Interner::new()));

    scan(&leader, &mut g, 1_000, 1, 300, "available");
    scan(&leader, &mut g, 2_000, 2, 300, "stopped");
    leader.set_max_checkpoint_age(Some(1_500));
    scan(&leader, &mut g, 4_000, 3, 280, "available");
    assert_eq!(
        leader.stats().unwrap().checkpoints,
        2,
        "a first commit and a checkpoint"
    );
    let pruned = leader.prune_history(4_000).unwrap();
    assert!(pruned.commits == 2 && pruned.segments > 0, "{pruned:?}");
    leader.put_policies(&[rule("r1"), rule("r2")]).unwrap();
    leader.put_policies(&[rule("r2")]).unwrap();
    leader
        .put_policy_evaluations(&[StoredEvaluation {
            id: "r2".into(),
            matches: 3,
            ..StoredEvaluation::default()
        }])
        .unwrap();
    leader
        .put_source_providers("mock", &providers(&["aws", "mock"]))
        .unwrap();
    leader.put_source_providers("aws-dev", &providers(&["aws"])).unwrap();

    let records = shipped.lock().clone();
    let seqs: Vec<u64> = records.iter().map(|(s, _)| *s).collect();
    assert_eq!(seqs, (1..=9).collect::<Vec<u64>>(), "one record a write, gap-free");
    assert_eq!(leader.state_seq().unwrap(), 9);
    for (seq, record) in &records {
        assert!(follower.apply_record(*seq, record).unwrap(), "record {seq}");
        assert_eq!(follower.state_seq().unwrap(), *seq);
    }
    assert_eq!(follower.state_seq().unwrap(), leader.state_seq().unwrap());
    let (ours, theirs) = (tables(&leader), tables(&follower));
    assert!(ours.contains_key("policies") && ours.contains_key("source_providers"));
    assert_eq!(ours, theirs);

    let (a, b) = (leader.load().unwrap(), follower.load().unwrap());
    assert_eq!((a.nodes.len(), a.edges.len()), (b.nodes.len(), b.edges.len()));
    assert_eq!(a.symbols, b.symbols);
    assert_eq!(a.meta, b.meta);
    assert_eq!(follower.history_start().unwrap(), 4_000);
    assert_eq!(follower.load_policies().unwrap(), vec![rule("r2")]);
    assert_eq!(
        follower.load_source_providers().unwrap(),
        leader.load_source_providers().unwrap()
    );
}

/// A store far behind (its own rows, an older seq) installs a copy of the
/// leader's whole store made in small records: it then holds the leader's
/// tables at the leader's seq, follows the leader's next record, and
/// replays the same graph. A copy with a bad record changes nothing.
#[test]
fn a_copy_of_the_whole_store_replaces_a_stale_one() {
    let (_l, leader) = store();
    let (_f, behind) = store();
    let shipped = collecting(&leader);
    let mut g = Graph::new(Arc::new(Interner::new()));
    scan(&leader, &mut g, 1_000, 1, 300, "available");
    leader.put_policies(&[rule("r1"), rule("r2")]).unwrap();
    scan(&leader, &mut g, 2_000, 2, 300, "stopped");
    leader.put_source_providers("mock", &providers(&["aws"])).unwrap();
    behind.apply_record(1, &shipped.lock()[0].1).unwrap();
    behind.put_source_providers("stale", &providers(&["gcp"])).unwrap();

    let mut records = Vec::new();
    let seq = leader
        .copy_out(4_096, &mut |r| {
            records.push(r);
            Ok(())
        })
        .unwrap();
    assert_eq!(seq, leader.state_seq().unwrap());
    assert!(records.len() > 3, "cut into records of about 4 KiB: {}", records.len());

    // A record that does not decode: the whole install is refused.
    let mut broken = records.clone();
    let half = broken[1].len() / 2;
    broken[1].truncate(half);
    let before = tables(&behind);
    let e = behind.install_copy(seq, &mut broken.into_iter().map(Ok)).unwrap_err();
    assert!(matches!(e, StoreError::BadRecord { .. }), "{e}");
    let e = behind
        .install_copy(
            seq,
            &mut [Ok(records[0].clone()), Err("fetch failed".to_owned())].into_iter(),
        )
        .unwrap_err();
    assert!(e.to_string().contains("fetch failed"), "{e}");
    assert_eq!(tables(&behind), before, "nothing changed");

    behind.install_copy(seq, &mut records.into_iter().map(Ok)).unwrap();
    assert_eq!(tables(&behind), tables(&leader));
    assert_eq!(behind.state_seq().unwrap(), seq);
    leader.put_policies(&[rule("r3")]).unwrap();
    let (next, record) = shipped.lock().last().cloned().unwrap();
    assert!(behind.apply_record(next, &record).unwrap());
    assert_eq!(tables(&behind), tables(&leader));
    let (a, b) = (leader.load().unwrap(), behind.load().unwrap());
    assert_eq!((a.nodes.len(), a.edges.len()), (b.nodes.len(), b.edges.len()));

    // A sink that refuses stops the copy, naming why.
    let e = leader.copy_out(4_096, &mut |_| Err("no space".to_owned())).unwrap_err();
    assert!(e.to_string().contains("no space"), "{e}");
}

/// A record applied already is skipped; one after a missing record is
/// refused; neither changes the store. The follower's own writes go on
/// from the seq it applied.
#[test]
fn old_records_are_skipped_and_gaps_refused() {
    let (_l, leader) = store();
    let (_f, follower) = store();
    let shipped = collecting(&leader);
    leader.put_policies(&[rule("r1")]).unwrap();
    leader.put_source_providers("mock", &providers(&["aws"])).unwrap();
    leader.put_policies(&[]).unwrap();
    let records = shipped.lock().clone();

    assert!(follower.apply_record(1, &records[0].1).unwrap());
    let before = tables(&follower);
    assert!(!follower.apply_record(1, &records[0].1).unwrap(), "applied already");
    assert!(!follower.apply_record(1, &records[2].1).unwrap(), "whatever it holds");
    let gap = follower.apply_record(3, &records[2].1);
    assert!(
        matches!(
            gap,
            Err(StoreError::RecordGap {
                seq: 3,
                state_seq: 1,
                ..
            })
        ),
        "{gap:?}"
    );
    assert_eq!(tables(&follower), before);
    assert_eq!(follower.state_seq().unwrap(), 1);

    assert!(follower.apply_record(2, &records[1].1).unwrap());
    assert!(follower.apply_record(3, &records[2].1).unwrap());
    assert_eq!(tables(&follower), tables(&leader));
    follower.put_source_providers("aws-dev", &providers(&["aws"])).unwrap();
    assert_eq!(follower.state_seq().unwrap(), 4, "a write of its own follows");
}

/// A shipper that refuses fails the write: nothing is stored, the seq
/// does not move, and the next write shipped takes that seq.
#[test]
fn a_refused_record_fails_the_write_and_stores_nothing() {
    let (_l, leader) = store();
    let shipped = collecting(&leader);
    let mut g = Graph::new(Arc::new(Interner::new()));
    scan(&leader, &mut g, 1_000, 1, 50, "available");
    let before = tables(&leader);

    leader.set_shipper(Some(Arc::new(|_, _: &[u8]| Err("no quorum".to_owned()))));
    let refused = leader.put_policies(&[rule("r1")]);
    assert!(
        matches!(&refused, Err(StoreError::NotShipped { seq: 2, reason, .. }) if reason == "no quorum"),
        "{refused:?}"
    );
    assert!(refused.unwrap_err().to_string().contains("record 2 not shipped"));
    assert!(leader.put_source_providers("mock", &providers(&["aws"])).is_err());
    assert_eq!(tables(&leader), before);
    assert_eq!(leader.state_seq().unwrap(), 1);
    assert!(leader.load_policies().unwrap().is_empty());

    let shipped_again = collecting(&leader);
    leader.put_policies(&[rule("r1")]).unwrap();
    assert_eq!(shipped.lock().len(), 1);
    assert_eq!(shipped_again.lock()[0].0, 2);
    assert_eq!(leader.state_seq().unwrap(), 2);

    leader.set_shipper(None);
    leader.put_policies(&[]).unwrap();
    assert_eq!(leader.state_seq().unwrap(), 3, "the seq moves with no shipper too");
}

/// A record decodes to its table groups and encodes to the same bytes.
#[test]
fn a_record_decodes_to_its_ops_and_encodes_back() {
    let (_l, leader) = store();
    let shipped = collecting(&leader);
    leader
        .put_source_providers("mock", &providers(&["aws", "gcp"]))
        .unwrap();
    let (_, bytes) = shipped.lock()[0].clone();
    let record = StateRecord::decode(&bytes).unwrap();
    assert_eq!(
        record.tables,
        vec![TableOps {
            name: "source_providers",
            shape: 5,
            ops: vec![Op::Insert(b"mock", b"aws\ngcp")],
        }]
    );
    assert_eq!(record.encode(), bytes);
}

/// Every cut of a real record, a wrong version, a table without a name,
/// an unknown shape or op, a key or value not of the table's types, a
/// table that exists with other types: each an error that applies nothing.
#[test]
fn malformed_records_are_errors_that_apply_nothing() {
    let (_l, leader) = store();
    let (_f, follower) = store();
    let shipped = collecting(&leader);
    let mut g = Graph::new(Arc::new(Interner::new()));
    scan(&leader, &mut g, 1_000, 1, 20, "available");
    let (_, commit) = shipped.lock()[0].clone();
    let before = tables(&follower);
    let refused = |record: &[u8]| {
        let e = follower.apply_record(1, record).expect_err("malformed");
        assert!(matches!(e, StoreError::BadRecord { seq: 1, .. }), "{e}");
        e.to_string()
    };
    for cut in 0..commit.len() {
        // A cut between two table groups is itself a whole record.
        if StateRecord::decode(&commit[..cut]).is_err() {
            refused(&commit[..cut]);
        }
    }
    refused(&[2]);
    let group = |name: &str, shape: u8, op: Op<'_>| {
        let mut ops = Vec::new();
        record::write_op(&mut ops, op);
        let mut out = vec![RECORD_V1];
        record::write_group(&mut out, name, shape, 1, &ops);
        out
    };
    assert!(refused(&group("", 6, Op::Remove(b"rules"))).contains("without a name"));
    let e = refused(&group("policies", 99, Op::Remove(b"rules")));
    assert!(e.contains("unknown shape 99"), "{e}");
    assert!(refused(&group("commits", 2, Op::Insert(&[1, 2, 3], &[0]))).contains("key type"));
    assert!(refused(&group("commits", 2, Op::Insert(&[0; 8], &[0, 0]))).contains("value type"));
    assert!(refused(&group("policies", 6, Op::Remove(&[0xff, 0xfe]))).contains("key type"));
    let mut bad_op = group("policies", 6, Op::Remove(b"rules"));
    let kind_at = bad_op.len() - 4 - b"rules".len() - 1;
    bad_op[kind_at] = 7;
    assert!(refused(&bad_op).contains("unknown op kind 7"));
    // `symbols` is `u32 -> &str` here: a record writing it as `&str -> u64` does not fit.
    let e = refused(&group("symbols", 4, Op::Insert(b"x", &[0; 8])));
    assert!(e.contains("symbols"), "{e}");
    assert_eq!(tables(&follower), before);
    assert_eq!(follower.state_seq().unwrap(), 0);
    assert!(follower.apply_record(1, &commit).unwrap(), "the record itself applies");
}

proptest! {
    // Each case writes two durable transactions to a file of its own.
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Arbitrary bytes, alone or behind the version byte, never panic
    /// the decoder or the store: an error leaves the store as it was.
    #[test]
    fn arbitrary_bytes_are_an_error_not_a_panic(tail in proptest::collection::vec(any::<u8>(), 0..200)) {
        let _ = StateRecord::decode(&tail);
        let versioned = [&[RECORD_V1][..], &tail].concat();
        if let Ok(record) = StateRecord::decode(&versioned) {
            prop_assert_eq!(record.encode(), versioned.clone());
        }
        let (_f, follower) = store();
        for bytes in [&tail, &versioned] {
            let seq = follower.state_seq().unwrap();
            match follower.apply_record(seq + 1, bytes) {
                Ok(applied) => prop_assert!(applied && follower.state_seq().unwrap() == seq + 1),
                Err(StoreError::BadRecord { .. }) => prop_assert_eq!(follower.state_seq().unwrap(), seq),
                Err(e) => prop_assert!(false, "{}", e),
            }
        }
    }
}
