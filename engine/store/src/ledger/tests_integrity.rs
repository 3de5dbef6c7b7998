//! Tampered chains and files that are not a readable ledger.

use std::path::Path;
use std::sync::Arc;

use redb::{Database, ReadableTable};

use super::tests::{Fixture, T0, ev, ledger_of};
use super::*;
use svc_graph::clock::ManualClock;

/// Rewrites stored event `seq` through redb, bypassing the ledger.
fn rewrite(path: &Path, seq: u64, edit: impl FnOnce(&mut codec::Stored<'_>, &mut String)) {
    let db = Database::open(path).unwrap();
    let txn = db.begin_write().unwrap();
    {
        let mut events = txn.open_table(tables::EVENTS).unwrap();
        let bytes = events.get(seq).unwrap().unwrap().value().to_vec();
        let mut stored = codec::decode(&bytes).unwrap();
        let mut message = stored.message.to_owned();
        edit(&mut stored, &mut message);
        stored.message = &message;
        events.insert(seq, stored.encode().as_slice()).unwrap();
    }
    txn.commit().unwrap();
}

fn remove_event(path: &Path, seq: u64) {
    let db = Database::open(path).unwrap();
    let txn = db.begin_write().unwrap();
    txn.open_table(tables::EVENTS).unwrap().remove(seq).unwrap();
    txn.commit().unwrap();
}

#[test]
fn tampered_message_is_reported_with_its_seq() {
    let f = ledger_of(5);
    rewrite(&f.path, 3, |_, m| m.push_str(" (edited)"));
    let expect = Some("event 3: hash mismatch".to_owned());
    let r = Ledger::verify_file(&f.path).unwrap();
    assert_eq!((r.ok, r.checked, r.problem.clone()), (false, 2, expect.clone()));
    let broken = r.first_broken.unwrap();
    assert_eq!(broken.seq, 3);
    assert!(broken.reason.starts_with("hash mismatch"), "{}", broken.reason);
    let l = f.open("s2");
    assert_eq!(l.verify().unwrap().problem, expect);
}

#[test]
fn tampered_hash_breaks_the_next_link() {
    let f = ledger_of(5);
    rewrite(&f.path, 3, |s, m| {
        m.push_str(" (edited)");
        let copy = codec::Stored {
            message: m.as_str(),
            ..s.clone()
        };
        s.hash = copy.compute_hash(3);
    });
    let r = Ledger::verify_file(&f.path).unwrap();
    assert_eq!(r.problem.as_deref(), Some("event 4: prev_hash does not match event 3"));
    assert_eq!(r.first_broken.map(|b| b.seq), Some(4));
}

#[test]
fn removed_event_is_reported_as_a_gap() {
    let f = ledger_of(6);
    remove_event(&f.path, 5);
    let r = Ledger::verify_file(&f.path).unwrap();
    assert_eq!(r.problem.as_deref(), Some("gap between 4 and 6"));
    assert_eq!(r.checked, 4);
    let broken = r.first_broken.unwrap();
    assert_eq!(
        (broken.seq, broken.reason.as_str()),
        (5, "missing: the sequence jumps from 4 to 6")
    );
}

#[test]
fn removed_last_event_fails_open_and_verify() {
    let f = ledger_of(4);
    remove_event(&f.path, 4);
    let r = Ledger::verify_file(&f.path).unwrap();
    assert_eq!(
        r.problem.as_deref(),
        Some("head records event 4 but the chain ends at event 3")
    );
    assert_eq!(r.first_broken.map(|b| b.seq), Some(4));
    let err = Ledger::open(&f.path, "s2", f.clock.clone()).err().unwrap();
    assert!(err.to_string().contains(&f.path.display().to_string()), "{err}");
}

fn assert_open_fails_naming(path: &Path) {
    let clock = Arc::new(ManualClock::new(T0));
    let err = Ledger::open(path, "s", clock).err().expect("open must fail");
    let msg = err.to_string();
    assert!(msg.starts_with("cannot open ledger "), "{msg}");
    assert!(msg.contains(&path.display().to_string()), "{msg}");
    let err = Ledger::verify_file(path).expect_err("verify_file must fail");
    assert!(err.to_string().contains(&path.display().to_string()), "{err}");
}

#[test]
fn garbage_file_is_an_error_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("events.redb");
    let garbage: Vec<u8> = (0..10_000u32).map(|i| (i * 7919 % 251) as u8).collect();
    std::fs::write(&path, &garbage).unwrap();
    assert_open_fails_naming(&path);
    assert_eq!(std::fs::read(&path).unwrap(), garbage);
}

#[test]
fn empty_file_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("events.redb");
    std::fs::write(&path, b"").unwrap();
    assert_open_fails_naming(&path);
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 0);
}

#[test]
fn truncated_ledger_is_an_error() {
    let f = Fixture::new();
    {
        let l = f.open("s1");
        for _ in 0..20 {
            l.append(
                (0..200)
                    .map(|i| ev("SCAN_COMPLETED", Some(&format!("crn:{i}"))))
                    .collect(),
            )
            .unwrap();
        }
    }
    let len = std::fs::metadata(&f.path).unwrap().len();
    let file = std::fs::OpenOptions::new().write(true).open(&f.path).unwrap();
    file.set_len(len / 2).unwrap();
    drop(file);
    assert_open_fails_naming(&f.path);
}

#[test]
fn other_redb_file_is_not_a_ledger() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("graph.redb");
    {
        let db = Database::create(&path).unwrap();
        let txn = db.begin_write().unwrap();
        let def: redb::TableDefinition<u64, u64> = redb::TableDefinition::new("nodes");
        txn.open_table(def).unwrap().insert(1, 2).unwrap();
        txn.commit().unwrap();
    }
    assert_open_fails_naming(&path);
    let err = Ledger::open(&path, "s", Arc::new(ManualClock::new(0))).err().unwrap();
    assert!(err.to_string().ends_with("not a ledger file"), "{err}");
}

#[test]
fn missing_directory_is_an_error_naming_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("absent").join("events.redb");
    let err = Ledger::open(&path, "s", Arc::new(ManualClock::new(0))).err().unwrap();
    assert!(err.to_string().contains(&path.display().to_string()), "{err}");
}

#[test]
fn export_mark_is_durable_and_only_moves_forward() {
    let f = ledger_of(10);
    {
        let l = f.open("s2");
        assert_eq!(l.exported_through().unwrap(), 0);
        l.mark_exported(6).unwrap();
        l.mark_exported(4).unwrap();
        assert_eq!(l.exported_through().unwrap(), 6);
        let err = l.mark_exported(11).unwrap_err();
        assert!(err.to_string().contains("ends at event 10"), "{err}");
    }
    let l = f.open("s3");
    assert_eq!(l.exported_through().unwrap(), 6);
    assert!(l.verify().unwrap().ok);
}

/// Replaces stored event `seq`'s bytes with `bytes`, bypassing the ledger.
fn overwrite(path: &Path, seq: u64, bytes: &[u8]) {
    let db = Database::open(path).unwrap();
    let txn = db.begin_write().unwrap();
    txn.open_table(tables::EVENTS).unwrap().insert(seq, bytes).unwrap();
    txn.commit().unwrap();
}

/// Sets the first ordinal of every type-index block of `event_type`,
/// through redb, bypassing the ledger.
fn set_first_ordinal(path: &Path, event_type: &str, ordinal: u64) {
    let db = Database::open(path).unwrap();
    let txn = db.begin_write().unwrap();
    {
        let mut index = txn.open_table(tables::BY_TYPE).unwrap();
        let blocks: Vec<(u64, Vec<u8>)> = index
            .range((event_type, 0)..=(event_type, u64::MAX))
            .unwrap()
            .map(|item| {
                let (k, v) = item.unwrap();
                (k.value().1, v.value().to_vec())
            })
            .collect();
        assert!(!blocks.is_empty());
        for (key, mut block) in blocks {
            block[..8].copy_from_slice(&ordinal.to_le_bytes());
            index.insert((event_type, key), block.as_slice()).unwrap();
        }
    }
    txn.commit().unwrap();
}

#[test]
fn a_broken_chain_found_by_verify_stops_appends_and_prunes() {
    let f = ledger_of(7);
    rewrite(&f.path, 6, |_, m| m.push('!'));
    let l = f.open("s2");
    assert!(l.broken().is_none(), "not known before a walk");
    let report = l.verify().unwrap();
    assert!(!report.ok);
    let broken = l.broken().expect("the walk's finding is kept");
    assert_eq!(broken.seq, 6);

    let refused = l.append_one(ev("APPROVAL", Some("crn:a"))).unwrap_err();
    assert!(matches!(&refused, LedgerError::Broken(b) if b.seq == 6), "{refused:?}");
    assert!(refused.to_string().contains("broken at event 6"), "{refused}");
    assert!(matches!(l.prune(u64::MAX, "tester"), Err(LedgerError::Broken(_))));
    assert_eq!(l.last_seq(), 7, "nothing was appended onto the broken chain");
    // Recording what the export holds changes no event.
    l.mark_exported(5).unwrap();
    assert_eq!(l.exported_through().unwrap(), 5);
}

#[test]
fn an_event_that_does_not_decode_is_shown_as_unreadable_and_stops_a_replay() {
    let f = ledger_of(7);
    overwrite(&f.path, 6, &[1, 2, 3]);
    let l = f.open("s2");

    let page = l
        .query(&HistoryQuery {
            limit: 10,
            ..HistoryQuery::default()
        })
        .unwrap();
    let seqs: Vec<u64> = page.events.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, [7, 6, 5, 4, 3, 2, 1], "no event is hidden");
    let stand_in = &page.events[1];
    assert_eq!(stand_in.event_type, UNREADABLE);
    assert!(
        stand_in.message.starts_with("event 6 cannot be read"),
        "{}",
        stand_in.message
    );
    assert_eq!(l.get(6).unwrap().map(|e| e.event_type), Some(UNREADABLE.to_owned()));
    // A type filter reads the type from the index; the stand-in has none.
    let typed = l
        .query(&HistoryQuery {
            event_type: Some("SCAN_COMPLETED".into()),
            limit: 10,
            ..HistoryQuery::default()
        })
        .unwrap();
    assert_eq!(typed.events.len(), 7);

    // A replay (the export, a WebSocket catch-up) takes everything up to
    // the damage, then is refused at it.
    let before: Vec<u64> = l.events_after(0, 100).unwrap().iter().map(|e| e.seq).collect();
    assert_eq!(before, [1, 2, 3, 4, 5]);
    let at = l.events_after(5, 100).unwrap_err();
    assert!(
        matches!(&at, LedgerError::Corrupt(m) if m.starts_with("event 6 cannot be read")),
        "{at:?}"
    );
}

#[test]
fn the_highest_recorded_scan_is_kept_in_the_head_records() {
    let f = Fixture::new();
    let l = f.open("s1");
    assert_eq!(l.recorded_scan_seq().unwrap(), 0);
    let scan = |kind: &str, n: u64| NewEvent {
        payload: serde_json::json!({ "scan_seq": n }),
        ..ev(kind, None)
    };
    l.append(vec![scan("SCAN_COMPLETED", 3), ev("APPROVAL", Some("crn:a"))])
        .unwrap();
    assert_eq!(l.recorded_scan_seq().unwrap(), 3);
    l.append_one(scan("SCAN_RECOVERED", 5)).unwrap();
    assert_eq!(l.recorded_scan_seq().unwrap(), 5);
    // Another type's scan_seq, or a lower one, does not move it.
    l.append(vec![scan("APPROVAL", 9), scan("SCAN_COMPLETED", 4)]).unwrap();
    assert_eq!(l.recorded_scan_seq().unwrap(), 5);
    drop(l);
    assert_eq!(f.open("s2").recorded_scan_seq().unwrap(), 5, "durable");
}

#[test]
fn a_type_index_ordinal_with_no_room_left_is_reported_as_corrupt() {
    let f = ledger_of(3);
    set_first_ordinal(&f.path, "SCAN_COMPLETED", u64::MAX - 1);
    let l = f.open("s2");
    let corrupt = |e: &LedgerError| e.to_string().contains("type index");
    // An append of the type counts on from the last ordinal.
    match l.append(vec![ev("SCAN_COMPLETED", None)]) {
        Err(e @ LedgerError::Write(_)) if corrupt(&e) => {}
        other => panic!("an append past the last ordinal: {other:?}"),
    }
    // A count of the type reads ordinals inside the block.
    let q = HistoryQuery {
        event_type: Some("SCAN_COMPLETED".into()),
        limit: 10,
        ..HistoryQuery::default()
    };
    match l.query(&q) {
        Err(e @ LedgerError::Corrupt(_)) if corrupt(&e) => {}
        other => panic!("a count past the last ordinal: {other:?}"),
    }
    // Other types, and the chain, are untouched.
    assert_eq!(l.append(vec![ev("POLICY_CHANGED", None)]).unwrap()[0].seq, 4);
    assert!(l.verify().unwrap().ok);
}
