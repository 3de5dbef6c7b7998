//! Ledger tests: appends, the chain, durability, concurrency, prune and
//! listeners. Tampering and bad files: `tests_integrity`; queries:
//! `tests_query`.

use std::path::PathBuf;
use std::sync::Arc;

use parking_lot::Mutex;
use serde_json::json;

use super::*;
use svc_graph::clock::ManualClock;

pub(super) const T0: u64 = 1_700_000_000_000_000;

pub(super) fn ev(event_type: &str, crn: Option<&str>) -> NewEvent {
    NewEvent {
        event_type: event_type.to_owned(),
        crn: crn.map(str::to_owned),
        actor: "tester".to_owned(),
        message: format!("{event_type} happened"),
        payload: json!({}),
    }
}

pub(super) fn with_savings(mut e: NewEvent, usd: f64) -> NewEvent {
    e.payload = json!({ "savings_usd": usd });
    e
}

pub(super) struct Fixture {
    _dir: tempfile::TempDir,
    pub path: PathBuf,
    pub clock: Arc<ManualClock>,
}

impl Fixture {
    pub(super) fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.redb");
        Fixture {
            _dir: dir,
            path,
            clock: Arc::new(ManualClock::new(T0)),
        }
    }

    pub(super) fn open(&self, session: &str) -> Ledger {
        Ledger::open(&self.path, session, self.clock.clone()).unwrap()
    }
}

fn all_events(l: &Ledger) -> Vec<Event> {
    l.events_after(0, usize::MAX).unwrap()
}

#[test]
fn append_then_get_round_trips() {
    let f = Fixture::new();
    let l = f.open("s1");
    assert_eq!(l.last_seq(), 0);
    assert_eq!(l.path(), f.path.as_path());
    assert_eq!(l.session_id(), "s1");
    let mut e = ev("QUARANTINE", Some("crn:svc:aws:us-east-1:ec2:volume:1:vol-1"));
    e.payload = json!({"savings_usd": 12.5, "nested": {"list": [1, "two", null]}, "ünï": "çødé"});
    e.message = "line one\nline two".to_owned();
    let stored = l.append_one(e.clone()).unwrap();
    assert_eq!(stored.seq, 1);
    assert_eq!(stored.ts_us, T0);
    assert_eq!(stored.crn, e.crn.clone().unwrap());
    assert_eq!(stored.payload, e.payload);
    assert_eq!(stored.status(), "QUARANTINED");
    assert_eq!(l.get(1).unwrap(), Some(stored.clone()));
    let no_crn = l.append_one(ev("SCAN_COMPLETED", None)).unwrap();
    assert_eq!(no_crn.crn, "");
    assert_eq!(l.get(2).unwrap(), Some(no_crn));
    assert_eq!(l.get(0).unwrap(), None);
    assert_eq!(l.get(3).unwrap(), None);
    assert_eq!(l.last_seq(), 2);
    assert!(l.append(Vec::new()).unwrap().is_empty());
    assert_eq!(l.last_seq(), 2);
}

#[test]
fn status_of_maps_decisions() {
    assert_eq!(status_of("APPROVAL"), "APPROVED");
    assert_eq!(status_of("REJECTION"), "REJECTED");
    assert_eq!(status_of("QUARANTINE"), "QUARANTINED");
    assert_eq!(status_of("QUARANTINE_REVERTED"), "OK");
    assert_eq!(status_of("SCAN_COMPLETED"), "OK");
}

#[test]
fn hash_chain_links_and_verifies() {
    let f = Fixture::new();
    let l = f.open("s1");
    let events = l
        .append((0..20).map(|i| ev(&format!("T{}", i % 3), None)).collect())
        .unwrap();
    assert_eq!(events[0].prev_hash, [0; 32]);
    for w in events.windows(2) {
        assert_eq!(w[1].prev_hash, w[0].hash);
        assert_eq!(w[1].seq, w[0].seq + 1);
    }
    assert_eq!(events[3].hash_hex(), hex::encode(events[3].hash));
    assert_eq!(events[3].hash_hex().len(), 64);
    let r = l.verify().unwrap();
    assert_eq!(
        r,
        VerifyReport {
            first_seq: 1,
            last_seq: 20,
            checked: 20,
            ok: true,
            problem: None,
            first_broken: None,
            checkpoint: None,
        }
    );
}

#[test]
fn verify_of_an_empty_ledger_is_ok() {
    let f = Fixture::new();
    let r = f.open("s1").verify().unwrap();
    assert!(r.ok);
    assert_eq!((r.first_seq, r.last_seq, r.checked), (0, 0, 0));
}

pub(super) fn ledger_of(n: usize) -> Fixture {
    let f = Fixture::new();
    f.open("s1")
        .append((0..n).map(|_| ev("SCAN_COMPLETED", None)).collect())
        .unwrap();
    f
}

#[test]
fn concurrent_appends_are_gap_free_and_contiguous() {
    let f = Fixture::new();
    let l = Arc::new(f.open("s1"));
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let l = Arc::clone(&l);
            std::thread::spawn(move || {
                let mut calls = Vec::new();
                for i in 0..40 {
                    let n = 1 + (t + i) % 4;
                    let batch = (0..n).map(|k| ev(&format!("T{t}-{i}-{k}"), None)).collect();
                    calls.push(l.append(batch).unwrap());
                }
                calls
            })
        })
        .collect();
    let mut seqs = Vec::new();
    for h in threads {
        for call in h.join().unwrap() {
            for (k, e) in call.iter().enumerate() {
                // Contiguous, and in the caller's order.
                assert_eq!(e.seq, call[0].seq + k as u64);
                assert!(e.event_type.ends_with(&format!("-{k}")));
            }
            seqs.extend(call.iter().map(|e| e.seq));
        }
    }
    seqs.sort_unstable();
    let n = seqs.len() as u64;
    assert_eq!(seqs, (1..=n).collect::<Vec<_>>());
    assert_eq!(l.last_seq(), n);
    let r = l.verify().unwrap();
    assert!(r.ok, "{r:?}");
    assert_eq!(r.checked, n);
}

#[test]
fn reopen_keeps_events_and_continues_the_chain() {
    let f = Fixture::new();
    let before = {
        let l = f.open("s1");
        for i in 0..10 {
            f.clock.advance(1_000);
            l.append_one(with_savings(ev("QUARANTINE", Some("crn:a")), i as f64))
                .unwrap();
        }
        all_events(&l)
    };
    // The clock is now behind the stored events.
    f.clock.set(T0 - 5_000_000);
    let l = f.open("s2");
    assert_eq!(all_events(&l), before);
    assert_eq!(l.last_seq(), 10);
    let next = l.append_one(ev("SCAN_COMPLETED", None)).unwrap();
    assert_eq!(next.seq, 11);
    assert_eq!(next.prev_hash, before[9].hash);
    assert_eq!(next.ts_us, before[9].ts_us, "time never goes backwards");
    assert_eq!(next.session_id, "s2");
    assert!(l.verify().unwrap().ok);
}

#[test]
fn events_after_replays_in_order() {
    let f = ledger_of(10);
    let l = f.open("s1");
    let seqs = |v: Vec<Event>| v.into_iter().map(|e| e.seq).collect::<Vec<_>>();
    assert_eq!(seqs(l.events_after(7, 100).unwrap()), vec![8, 9, 10]);
    assert_eq!(seqs(l.events_after(0, 2).unwrap()), vec![1, 2]);
    assert!(l.events_after(10, 5).unwrap().is_empty());
    assert!(l.events_after(u64::MAX, 5).unwrap().is_empty());
}

#[test]
fn listener_receives_every_event_in_seq_order() {
    let f = Fixture::new();
    let l = Arc::new(f.open("s1"));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    l.add_listener(Box::new(|e| {
        if e.seq == 3 {
            panic!("a listener that fails");
        }
    }));
    l.add_listener(Box::new(move |e| sink.lock().push(e.seq)));
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let l = Arc::clone(&l);
            std::thread::spawn(move || {
                for _ in 0..25 {
                    l.append(vec![ev("A", None), ev("B", None)]).unwrap();
                }
            })
        })
        .collect();
    for h in threads {
        h.join().unwrap();
    }
    // Listeners run before append returns, so everything is there now.
    assert_eq!(*seen.lock(), (1..=200).collect::<Vec<u64>>());
}

#[test]
fn prune_keeps_the_chain_verifiable_and_audits_itself() {
    let f = Fixture::new();
    {
        let l = f.open("old");
        l.append_one(with_savings(ev("QUARANTINE", Some("crn:a")), 10.0))
            .unwrap();
        l.append_one(ev("APPROVAL", Some("crn:a"))).unwrap();
    }
    f.clock.advance(1_000);
    let l = f.open("mid");
    l.append_one(with_savings(ev("QUARANTINE", Some("crn:b")), 2.5))
        .unwrap();
    f.clock.advance(1_000);
    let kept = l.append_one(with_savings(ev("REJECTION", Some("crn:b")), 4.0)).unwrap();
    l.append_one(ev("SCAN_COMPLETED", None)).unwrap();
    let before = l.summary().unwrap();
    assert_eq!((before.total_events, before.quarantined, before.approved), (5, 2, 1));
    assert_eq!(before.total_savings_usd, 16.5);

    // Removes seqs 1..=3: both "old" events and the first "mid" one.
    let last_removed = l.get(3).unwrap().unwrap().hash_hex();
    assert_eq!(l.prune(T0 + 2_000, "operator").unwrap(), 3);
    assert_eq!(l.get(3).unwrap(), None);
    assert_eq!(l.get(4).unwrap(), Some(kept.clone()));
    let audit = l.get(6).unwrap().unwrap();
    assert_eq!(audit.event_type, HISTORY_PRUNED);
    assert_eq!(audit.actor, "operator");
    assert_eq!(audit.prev_hash, l.get(5).unwrap().unwrap().hash);
    assert_eq!(
        audit.payload,
        json!({"pruned": 3, "cutoff_us": T0 + 2_000, "first_seq": 1, "through_seq": 3, "last_hash": last_removed})
    );
    let r = l.verify().unwrap();
    assert_eq!((r.ok, r.first_seq, r.last_seq, r.checked), (true, 4, 6, 3), "{r:?}");

    let s = l.summary().unwrap();
    assert_eq!((s.total_events, s.quarantined, s.approved, s.rejected), (3, 0, 0, 1));
    assert_eq!(s.total_savings_usd, 4.0);
    assert_eq!(s.first_event_us, Some(kept.ts_us));
    assert_eq!(s.session_count, 1);
    let sessions = l.sessions().unwrap();
    assert_eq!(sessions.len(), 1);
    assert_eq!(sessions[0].session_id, "mid");
    assert_eq!((sessions[0].first_event_us, sessions[0].event_count), (kept.ts_us, 3));
    let (timeline, total) = l.resource("crn:b", 10).unwrap();
    assert_eq!((timeline.len(), total), (1, 1));
    let page = l
        .query(&HistoryQuery {
            limit: 10,
            ..Default::default()
        })
        .unwrap();
    assert_eq!(page.total, 3);

    // Nothing older left: removes nothing but is still audited.
    assert_eq!(l.prune(T0 + 2_000, "operator").unwrap(), 0);
    let again = l.get(7).unwrap().unwrap();
    assert_eq!(again.payload["through_seq"], json!(3));
    assert!(l.verify().unwrap().ok);

    // Everything: the chain continues from the anchor.
    f.clock.advance(1_000);
    assert_eq!(l.prune(u64::MAX, "operator").unwrap(), 4);
    drop(l);
    let l = f.open("late");
    let r = l.verify().unwrap();
    assert_eq!((r.ok, r.first_seq, r.last_seq), (true, 8, 8), "{r:?}");
    let s = l.summary().unwrap();
    assert_eq!((s.total_events, s.total_savings_usd, s.session_count), (1, 0.0, 1));
    l.append_one(ev("SCAN_COMPLETED", None)).unwrap();
    assert!(Ledger::verify_file(&f.path).is_err(), "the daemon holds the file");
    drop(l);
    let r = Ledger::verify_file(&f.path).unwrap();
    assert_eq!((r.ok, r.first_seq, r.last_seq, r.checked), (true, 8, 9, 2));
}

/// A prune the daemon makes for its retention setting is the same removal
/// and record, saying why; with nothing old enough it records nothing.
#[test]
fn a_retention_prune_says_why_and_records_nothing_when_nothing_is_old() {
    let f = Fixture::new();
    let l = f.open("s");
    l.append_one(ev("QUARANTINE", Some("crn:a"))).unwrap();
    l.append_one(ev("APPROVAL", Some("crn:a"))).unwrap();
    f.clock.advance(1_000);
    l.append_one(ev("SCAN_COMPLETED", None)).unwrap();

    assert_eq!(l.prune_older(T0, "retention", "ledger.retention 400d").unwrap(), 0);
    assert_eq!(all_events(&l).len(), 3, "nothing removed, nothing recorded");

    assert_eq!(
        l.prune_older(T0 + 500, "retention", "ledger.retention 400d").unwrap(),
        2
    );
    let events = all_events(&l);
    assert_eq!(events.len(), 2);
    let audit = events.last().unwrap();
    assert_eq!(
        (audit.event_type.as_str(), audit.actor.as_str()),
        (HISTORY_PRUNED, "retention")
    );
    assert!(audit.message.ends_with("(ledger.retention 400d)"), "{}", audit.message);
    assert_eq!(audit.payload["reason"], json!("ledger.retention 400d"));
    assert_eq!(
        (audit.payload["pruned"].clone(), audit.payload["through_seq"].clone()),
        (json!(2), json!(2))
    );
    let r = l.verify().unwrap();
    assert_eq!((r.ok, r.first_seq, r.last_seq), (true, 3, 4), "{r:?}");

    // The same window again: nothing left to remove, nothing recorded.
    assert_eq!(
        l.prune_older(T0 + 500, "retention", "ledger.retention 400d").unwrap(),
        0
    );
    assert_eq!(all_events(&l).len(), 2);
}
