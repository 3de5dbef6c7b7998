//! The CRN postings and the type index across commits, runs and prunes,
//! and format 1 files, whose indexes hold a key per event.

use redb::{Database, ReadableDatabase, ReadableTable, ReadableTableMetadata};

use super::postings::{self, COMPACT_ROWS};
use super::tests::{Fixture, ev};
use super::tests_query::{TYPES, check_paging};
use super::*;

const CRNS: usize = 40;

fn crn_of(i: usize) -> Option<String> {
    (i % 9 != 8).then(|| format!("crn:svc:aws:us-east-1:ec2:volume:1:vol-{}", i % CRNS))
}

fn mixed(i: usize) -> NewEvent {
    ev(TYPES[(i / 9) % TYPES.len()], crn_of(i).as_deref())
}

/// Every posting in both tables as (hash, seq), and the number of
/// `crn_recent` values.
fn stored_postings(path: &std::path::Path) -> (Vec<(u64, u64)>, u64) {
    let db = Database::open(path).unwrap();
    let txn = db.begin_read().unwrap();
    let mut out = Vec::new();
    let mut read = |bytes: &[u8]| {
        for c in bytes.chunks_exact(16) {
            let hash = u64::from_le_bytes(c[..8].try_into().unwrap());
            let seq = u64::from_le_bytes(c[8..].try_into().unwrap());
            out.push((hash, seq));
        }
    };
    let runs = txn.open_table(tables::CRN_RUNS).unwrap();
    for item in runs.iter().unwrap() {
        read(item.unwrap().1.value());
    }
    let recent = txn.open_table(tables::CRN_RECENT).unwrap();
    let recent_rows = recent.len().unwrap();
    for item in recent.iter().unwrap() {
        read(item.unwrap().1.value());
    }
    out.sort_unstable();
    (out, recent_rows)
}

/// The postings the stored events call for.
fn expected_postings(all: &[Event]) -> Vec<(u64, u64)> {
    let mut out: Vec<(u64, u64)> = all
        .iter()
        .filter(|e| !e.crn.is_empty())
        .map(|e| (postings::crn_hash(&e.crn), e.seq))
        .collect();
    out.sort_unstable();
    out
}

fn check_crn_queries(l: &Ledger, all: &[Event]) {
    for c in [0, 1, 7, CRNS - 1] {
        let crn = crn_of(c).unwrap();
        for event_type in [None, Some("APPROVAL"), Some(SAU_ACTION)] {
            check_paging(
                l,
                all,
                &HistoryQuery {
                    crn: Some(crn.clone()),
                    event_type: event_type.map(str::to_owned),
                    limit: 97,
                    ..Default::default()
                },
            );
        }
        let (events, total) = l.resource(&crn, 5).unwrap();
        let expected: Vec<&Event> = all.iter().rev().filter(|e| e.crn == crn).collect();
        assert_eq!(total, expected.len() as u64);
        assert_eq!(events.iter().collect::<Vec<_>>(), expected[..5]);
    }
}

/// Eight commits of 10,000 events at distinct times (8 in 9 name a
/// resource: the eighth passes 65,536 postings, so the first run holds
/// them all), then 620 commits of one event (~551 values: a second run by
/// value count at 512, ~39 values left in `crn_recent`).
fn ledger_with_runs(f: &Fixture) -> (Ledger, Vec<Event>) {
    let l = f.open("s1");
    let mut all = Vec::new();
    let mut i = 0usize;
    for _ in 0..8 {
        all.extend(l.append((i..i + 10_000).map(mixed).collect()).unwrap());
        i += 10_000;
        f.clock.advance(1_000);
    }
    for _ in 0..620 {
        all.extend(l.append(vec![mixed(i)]).unwrap());
        i += 1;
        f.clock.advance(10);
    }
    (l, all)
}

#[test]
fn crn_history_pages_across_runs_and_recent_commits() {
    let f = Fixture::new();
    let (l, all) = ledger_with_runs(&f);
    check_crn_queries(&l, &all);
    check_type_queries(&l, &all);
    // Time bounds that cut through the first run and through the second.
    let crn = crn_of(3).unwrap();
    for (since, until) in [(2_000, 5_500), (6_000, 8_100), (8_050, 20_000), (0, 1)] {
        check_paging(
            &l,
            &all,
            &HistoryQuery {
                crn: Some(crn.clone()),
                since_us: Some(tests::T0 + since),
                until_us: Some(tests::T0 + until),
                limit: 50,
                ..Default::default()
            },
        );
    }
    drop(l);
    let (stored, recent_rows) = stored_postings(&f.path);
    assert_eq!(stored, expected_postings(&all));
    assert!((25..=50).contains(&recent_rows), "{recent_rows} values in crn_recent");
    let l = f.open("s2");
    check_crn_queries(&l, &all);
}

#[test]
fn prune_through_the_middle_of_a_run_drops_exactly_the_pruned_postings() {
    let f = Fixture::new();
    let (l, mut all) = ledger_with_runs(&f);
    // The first three 10,000-event commits, in the middle of the first run.
    let cutoff = tests::T0 + 3_000;
    let pruned = l.prune(cutoff, "tester").unwrap();
    assert_eq!(pruned, 30_000);
    all.retain(|e| e.ts_us >= cutoff);
    all.push(l.get(l.last_seq()).unwrap().unwrap());
    check_crn_queries(&l, &all);
    check_type_queries(&l, &all);
    // Appends after the prune still post and compact.
    for i in 0..COMPACT_ROWS as usize {
        all.extend(l.append(vec![mixed(i)]).unwrap());
    }
    check_crn_queries(&l, &all);
    check_type_queries(&l, &all);
    assert!(l.verify().unwrap().ok);
    drop(l);
    assert_eq!(stored_postings(&f.path).0, expected_postings(&all));
    // Pruning everything leaves no postings.
    let l = f.open("s2");
    f.clock.advance(1_000_000);
    l.prune(tests::T0 + 1_000_000, "tester").unwrap();
    let audit = l.get(l.last_seq()).unwrap().unwrap();
    check_type_queries(&l, std::slice::from_ref(&audit));
    drop(l);
    assert_eq!(stored_postings(&f.path).0, Vec::new());
}

/// The CRN index a format 1 file may hold.
#[derive(Clone, Copy)]
enum V1Crn {
    /// (crn, seq) -> ordinal.
    ByCrn,
    /// (bucket, seq) -> hash in 256 buckets.
    KeyPerPosting,
}

/// Rewrites a ledger file into format 1: a type index and a CRN index with
/// one key per event, no postings blocks.
fn downgrade_to_v1(path: &std::path::Path, crn_index: V1Crn) {
    let db = Database::open(path).unwrap();
    let txn = db.begin_write().unwrap();
    txn.delete_table(tables::BY_TYPE).unwrap();
    txn.delete_table(tables::CRN_RECENT).unwrap();
    txn.delete_table(tables::CRN_RUNS).unwrap();
    {
        let events = txn.open_table(tables::EVENTS).unwrap();
        let mut by_type = txn.open_table(tables::LEGACY_BY_TYPE).unwrap();
        let mut by_crn = txn.open_table(tables::LEGACY_BY_CRN).unwrap();
        let mut key_per_posting = txn.open_table(tables::LEGACY_CRN_POSTINGS).unwrap();
        let mut ordinals: std::collections::HashMap<String, u64> = Default::default();
        for item in events.iter().unwrap() {
            let (k, v) = item.unwrap();
            let seq = k.value();
            let s = codec::decode(v.value()).unwrap();
            let ord = ordinals.entry(s.event_type.to_owned()).or_default();
            *ord += 1;
            by_type.insert((s.event_type, seq), *ord).unwrap();
            if s.crn.is_empty() {
                continue;
            }
            match crn_index {
                V1Crn::ByCrn => {
                    let ord = ordinals.entry(format!("crn {}", s.crn)).or_default();
                    *ord += 1;
                    by_crn.insert((s.crn, seq), *ord).unwrap();
                }
                V1Crn::KeyPerPosting => {
                    let hash = postings::crn_hash(s.crn);
                    key_per_posting.insert(((hash % 256) as u16, seq), hash).unwrap();
                }
            }
        }
        let mut meta = txn.open_table(tables::META).unwrap();
        meta.insert(tables::FORMAT_KEY, 1u64.to_le_bytes().as_slice()).unwrap();
        meta.remove("crn_recent").unwrap();
    }
    txn.commit().unwrap();
}

fn check_type_queries(l: &Ledger, all: &[Event]) {
    for (event_type, status) in [(Some("APPROVAL"), None), (Some(SAU_ACTION), None), (None, Some("OK"))] {
        check_paging(
            l,
            all,
            &HistoryQuery {
                event_type: event_type.map(str::to_owned),
                status: status.map(str::to_owned),
                limit: HISTORY_MAX_LIMIT,
                ..Default::default()
            },
        );
    }
    let s = l.summary().unwrap();
    let count = |t: &str| all.iter().filter(|e| e.event_type == t).count() as u64;
    assert_eq!(
        (s.total_events, s.quarantined, s.approved, s.rejected),
        (
            all.len() as u64,
            count("QUARANTINE"),
            count("APPROVAL"),
            count("REJECTION")
        )
    );
}

#[test]
fn a_format_1_file_gets_its_indexes_rebuilt_on_open() {
    for crn_index in [V1Crn::ByCrn, V1Crn::KeyPerPosting] {
        let f = Fixture::new();
        let (l, mut all) = ledger_with_runs(&f);
        drop(l);
        downgrade_to_v1(&f.path, crn_index);
        let l = f.open("s2");
        check_crn_queries(&l, &all);
        check_type_queries(&l, &all);
        assert!(l.verify().unwrap().ok);
        // The upgraded file takes appends and prunes like a new one.
        for i in 0..100 {
            all.extend(l.append(vec![mixed(i)]).unwrap());
        }
        check_crn_queries(&l, &all);
        check_type_queries(&l, &all);
        drop(l);
        assert_eq!(stored_postings(&f.path).0, expected_postings(&all));
        let db = Database::open(&f.path).unwrap();
        let txn = db.begin_read().unwrap();
        assert!(
            txn.open_table(tables::LEGACY_BY_TYPE).is_err(),
            "the old type index is gone"
        );
        assert!(txn.open_table(tables::LEGACY_BY_CRN).is_err(), "by_crn is gone");
        assert!(
            txn.open_table(tables::LEGACY_CRN_POSTINGS).is_err(),
            "crn_postings is gone"
        );
        let meta = txn.open_table(tables::META).unwrap();
        assert_eq!(tables::read_format(&meta).unwrap(), Some(tables::FORMAT_VERSION));
    }
}

#[test]
fn a_file_of_an_unknown_format_is_refused() {
    let f = Fixture::new();
    drop(f.open("s1"));
    {
        let db = Database::open(&f.path).unwrap();
        let txn = db.begin_write().unwrap();
        txn.open_table(tables::META)
            .unwrap()
            .insert(tables::FORMAT_KEY, 3u64.to_le_bytes().as_slice())
            .unwrap();
        txn.commit().unwrap();
    }
    let err = Ledger::open(&f.path, "s2", f.clock.clone()).err().unwrap();
    assert!(err.to_string().contains("unsupported ledger format 3"), "{err}");
}

/// A postings count in `meta` with no room left to count on (the file
/// altered or damaged): the next commit compacts early and starts the
/// count over; nothing is lost and every posting is still found.
#[test]
fn a_postings_count_at_its_largest_only_brings_the_compaction_forward() {
    let f = Fixture::new();
    let l = f.open("s1");
    l.append((0..20).map(mixed).collect()).unwrap();
    drop(l);
    {
        let db = Database::open(&f.path).unwrap();
        let txn = db.begin_write().unwrap();
        tables::write_crn_recent(&mut txn.open_table(tables::META).unwrap(), u64::MAX).unwrap();
        txn.commit().unwrap();
    }
    let l = f.open("s2");
    l.append((20..30).map(mixed).collect()).unwrap();
    let all = l.events_after(0, usize::MAX).unwrap();
    for c in [0, 7, 25] {
        let crn = crn_of(c).unwrap();
        let expected: Vec<&Event> = all.iter().rev().filter(|e| e.crn == crn).collect();
        let (events, total) = l.resource(&crn, 5).unwrap();
        assert_eq!((events.iter().collect::<Vec<_>>(), total), (expected, 1));
    }
    assert!(l.verify().unwrap().ok);
    drop(l);
    let (stored, recent_rows) = stored_postings(&f.path);
    assert_eq!(stored, expected_postings(&all));
    assert_eq!(recent_rows, 0, "the commit compacted crn_recent into a run");
}
