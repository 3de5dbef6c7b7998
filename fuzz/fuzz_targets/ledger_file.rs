//! `events.redb` with one stored record replaced by arbitrary bytes (or
//! removed): an event, a type-index block, a CRN-postings block or run, a
//! session row or a meta record (format, head, anchor, savings, postings
//! count). The ledger opens it or refuses it with an error; once open,
//! every reader (verify, history with each filter, a resource's events,
//! summary, sessions, paging), an append, an export mark and a prune
//! answer or fail without a panic. And a change to what an event says, or
//! a missing event, is never hidden: the ledger refuses to open, or verify
//! reports the chain broken.
//!
//! Input: byte 0 picks the table (and, at 0x80 and above, removal instead
//! of replacement), byte 1 the record, the rest is the new value.

#![no_main]

use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock};

use libfuzzer_sys::fuzz_target;
use redb::{Database, ReadableTable, TableDefinition};
use serde_json::json;
use svc_engine::clock::{Clock, ManualClock};
use svc_engine::store::ledger::codec::decode;
use svc_engine::store::ledger::{HistoryQuery, Ledger, NewEvent, SAU_ACTION};

/// `events.redb`'s tables, as the ledger declares them.
const EVENTS: TableDefinition<u64, &[u8]> = TableDefinition::new("events");
const BY_TYPE: TableDefinition<(&str, u64), &[u8]> = TableDefinition::new("by_type_blocks");
const CRN_RECENT: TableDefinition<u64, &[u8]> = TableDefinition::new("crn_recent");
const CRN_RUNS: TableDefinition<(u16, u64), &[u8]> = TableDefinition::new("crn_runs");
const SESSIONS: TableDefinition<&str, (u64, u64, u64, u64, u64)> = TableDefinition::new("sessions");
const META: TableDefinition<&str, &[u8]> = TableDefinition::new("meta");

const START_US: u64 = 1_767_225_600_000_000;
const CRNS: [&str; 3] = [
    "crn:svc:aws:us-east-1:ec2:volume:123456789012:vol-1",
    "crn:svc:aws:us-east-1:ec2:instance:123456789012:i-1",
    "crn:svc:gcp:europe-west1:compute:disk:proj-1:d-1",
];

fn event(kind: &str, crn: Option<&str>, n: u64) -> NewEvent {
    NewEvent {
        event_type: kind.to_owned(),
        crn: crn.map(str::to_owned),
        actor: if n % 2 == 0 { "system" } else { "alice" }.to_owned(),
        message: format!("event {n}"),
        payload: json!({"n": n, "savings_usd": n as f64 * 1.5, "reason": "données ✓"}),
    }
}

/// A ledger of two sessions and some fifty events in several commits, the
/// oldest pruned away: every table holds records.
static TEMPLATE: LazyLock<Vec<u8>> = LazyLock::new(|| {
    let dir = scratch().join("template");
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    let path = dir.join("events.redb");
    let _ = std::fs::remove_file(&path);
    let clock = Arc::new(ManualClock::new(START_US));
    for session in ["session-a", "session-b"] {
        let ledger = Ledger::open(&path, session, clock.clone()).expect("a new ledger");
        for commit in 0..6u64 {
            clock.set(clock.now_us() + 60_000_000);
            let batch = (0..4u64)
                .map(|k| {
                    let n = commit * 4 + k;
                    let kind = ["SCAN_COMPLETED", "RESOURCE_FLAGGED", "SAU_APPROVED", "POLICY_CHANGED"][k as usize];
                    event(kind, (k > 0).then_some(CRNS[(n % 3) as usize]), n)
                })
                .collect();
            ledger.append(batch).expect("an append");
        }
        if session == "session-b" {
            ledger.prune(START_US + 3 * 60_000_000, "system").expect("a prune");
            ledger.mark_exported(10).expect("an export mark");
        }
    }
    std::fs::read(&path).expect("the template")
});

/// A directory of this process, in memory when the machine has one.
fn scratch() -> PathBuf {
    let base = Path::new("/dev/shm");
    let base = if base.is_dir() {
        base.to_owned()
    } else {
        std::env::temp_dir()
    };
    base.join(format!("svc-fuzz-ledger-{}", std::process::id()))
}

/// Replaces (or removes) the `pick`-th record of `table` with `value`;
/// whether an event's content changed or an event went missing.
fn mutate(path: &Path, table: u8, pick: u8, value: &[u8]) -> bool {
    let db = Database::open(path).expect("the template opens");
    let txn = db.begin_write().expect("a write");
    let remove = table >= 0x80;
    let mut tampered = false;
    {
        let pick = usize::from(pick);
        match table % 6 {
            0 => {
                let mut t = txn.open_table(EVENTS).expect("events");
                let keys: Vec<u64> = t.iter().expect("iter").map(|r| r.expect("row").0.value()).collect();
                if let Some(&k) = keys.get(pick % keys.len().max(1)) {
                    let old = t.get(k).expect("get").map(|v| v.value().to_vec()).expect("the row");
                    if remove {
                        t.remove(k).expect("remove");
                        tampered = true;
                    } else {
                        tampered = match (decode(&old), decode(value)) {
                            (Ok(a), Ok(b)) => a != b,
                            _ => true,
                        };
                        t.insert(k, value).expect("insert");
                    }
                }
            }
            1 => {
                let mut t = txn.open_table(BY_TYPE).expect("by_type");
                let keys: Vec<(String, u64)> = t
                    .iter()
                    .expect("iter")
                    .map(|r| {
                        let (k, _) = r.expect("row");
                        let (a, b) = k.value();
                        (a.to_owned(), b)
                    })
                    .collect();
                if let Some((a, b)) = keys.get(pick % keys.len().max(1)) {
                    if remove {
                        t.remove((a.as_str(), *b)).expect("remove");
                    } else {
                        t.insert((a.as_str(), *b), value).expect("insert");
                    }
                }
            }
            2 => {
                let mut t = txn.open_table(CRN_RECENT).expect("crn_recent");
                let keys: Vec<u64> = t.iter().expect("iter").map(|r| r.expect("row").0.value()).collect();
                match keys.get(pick % keys.len().max(1)) {
                    Some(&k) if remove => drop(t.remove(k).expect("remove")),
                    Some(&k) => drop(t.insert(k, value).expect("insert")),
                    None => drop(t.insert(pick as u64, value).expect("insert")),
                }
            }
            3 => {
                let mut t = txn.open_table(CRN_RUNS).expect("crn_runs");
                let keys: Vec<(u16, u64)> = t.iter().expect("iter").map(|r| r.expect("row").0.value()).collect();
                match keys.get(pick % keys.len().max(1)) {
                    Some(&k) if remove => drop(t.remove(k).expect("remove")),
                    Some(&k) => drop(t.insert(k, value).expect("insert")),
                    None => drop(t.insert(((pick % 1024) as u16, 30), value).expect("insert")),
                }
            }
            4 => {
                let mut t = txn.open_table(SESSIONS).expect("sessions");
                let keys: Vec<String> = t
                    .iter()
                    .expect("iter")
                    .map(|r| r.expect("row").0.value().to_owned())
                    .collect();
                if let Some(k) = keys.get(pick % keys.len().max(1)) {
                    if remove {
                        t.remove(k.as_str()).expect("remove");
                    } else {
                        let mut words = value.chunks(8).map(|c| {
                            let mut w = [0u8; 8];
                            w[..c.len()].copy_from_slice(c);
                            u64::from_le_bytes(w)
                        });
                        let mut next = || words.next().unwrap_or(0);
                        t.insert(k.as_str(), (next(), next(), next(), next(), next()))
                            .expect("insert");
                    }
                }
            }
            _ => {
                let mut t = txn.open_table(META).expect("meta");
                let key = ["format", "head", "anchor", "savings", "crn_recent"][usize::from(pick) % 5];
                if remove {
                    t.remove(key).expect("remove");
                } else {
                    t.insert(key, value).expect("insert");
                }
            }
        }
    }
    txn.commit().expect("a commit");
    tampered
}

fuzz_target!(|data: &[u8]| {
    let Some((&[table, pick], value)) = data.split_first_chunk::<2>() else {
        return;
    };
    let dir = scratch();
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    let path = dir.join("events.redb");
    std::fs::write(&path, &*TEMPLATE).expect("a copy of the template");
    let tampered = mutate(&path, table, pick, value);

    let offline = Ledger::verify_file(&path);
    let clock = Arc::new(ManualClock::new(START_US + 86_400_000_000));
    let Ok(ledger) = Ledger::open(&path, "session-c", clock) else {
        return;
    };
    let report = ledger.verify();
    if tampered {
        let hidden = matches!(&report, Ok(r) if r.ok);
        assert!(!hidden, "an altered or missing event was not noticed: {report:?}");
        assert!(!matches!(&offline, Ok(r) if r.ok), "verify_file: {offline:?}");
    }
    let last = ledger.last_seq();
    let _ = ledger.get(last);
    let _ = ledger.get(1);
    let _ = ledger.events_after(0, 100);
    let _ = ledger.events_after(u64::MAX, 10);
    let _ = ledger.summary();
    let _ = ledger.sessions();
    let _ = ledger.exported_through();
    for crn in CRNS {
        let _ = ledger.resource(crn, 5);
    }
    let queries = [
        HistoryQuery {
            limit: 5,
            ..HistoryQuery::default()
        },
        HistoryQuery {
            event_type: Some("RESOURCE_FLAGGED".into()),
            limit: 3,
            ..HistoryQuery::default()
        },
        HistoryQuery {
            event_type: Some(SAU_ACTION.into()),
            limit: 100,
            ..HistoryQuery::default()
        },
        HistoryQuery {
            crn: Some(CRNS[1].into()),
            limit: 2,
            before_seq: Some(last),
            ..HistoryQuery::default()
        },
        HistoryQuery {
            status: Some("ok".into()),
            limit: 10,
            ..HistoryQuery::default()
        },
        HistoryQuery {
            since_us: Some(START_US + 120_000_000),
            until_us: Some(START_US + 600_000_000),
            limit: 500,
            ..HistoryQuery::default()
        },
    ];
    for q in &queries {
        let _ = ledger.query(q);
    }
    let _ = ledger.append(vec![
        event("SCAN_COMPLETED", None, 99),
        event("RESOURCE_FLAGGED", Some(CRNS[0]), 100),
    ]);
    let _ = ledger.mark_exported(last);
    let _ = ledger.prune(START_US + 10 * 60_000_000, "system");
    let _ = ledger.resource(CRNS[0], 5);
    let _ = ledger.verify();
});
