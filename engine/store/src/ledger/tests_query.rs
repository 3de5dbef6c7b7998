//! History, resource, summary and session queries, checked against a naive
//! filter over every stored event.

use super::tests::{Fixture, T0, ev, with_savings};
use super::*;

pub(super) const TYPES: &[&str] = &[
    "SCAN_COMPLETED",
    "QUARANTINE",
    "APPROVAL",
    "REJECTION",
    "EXECUTION_COMMIT",
    "POLICY_CHANGE",
    "s.a.u_OVERRIDE",
    "QUARANTINE_REVERTED",
    "ISOLATION",
];

/// 1000 events of mixed types and CRNs, several sharing a timestamp,
/// appended in batches of 100. Returns them oldest first.
fn mixed_ledger(f: &Fixture) -> (Ledger, Vec<Event>) {
    let l = f.open("s1");
    let mut rng = 0x2545_f491_u64;
    let mut all = Vec::new();
    for _ in 0..10 {
        let mut batch = Vec::new();
        for _ in 0..100 {
            rng = rng.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            let r = (rng >> 33) as usize;
            let crn = (r % 8 != 7).then(|| format!("crn:{}", r % 7));
            batch.push(ev(TYPES[(r / 8) % TYPES.len()], crn.as_deref()));
        }
        // Events of one batch share the clock reading.
        all.extend(l.append(batch).unwrap());
        f.clock.advance(1_000);
    }
    (l, all)
}

pub(super) fn matches(e: &Event, q: &HistoryQuery) -> bool {
    let type_ok = match q.event_type.as_deref() {
        None => true,
        Some(SAU_ACTION) => sau_action_types().any(|t| t == e.event_type),
        Some(t) => e.event_type == t,
    };
    type_ok
        && q.crn.as_ref().is_none_or(|c| *c == e.crn)
        && q.status.as_ref().is_none_or(|s| s.eq_ignore_ascii_case(e.status()))
        && q.since_us.is_none_or(|t| e.ts_us >= t)
        && q.until_us.is_none_or(|t| e.ts_us < t)
}

/// Pages through `q` and checks every page against the naive filter.
pub(super) fn check_paging(l: &Ledger, all: &[Event], q: &HistoryQuery) {
    let expected: Vec<&Event> = all.iter().rev().filter(|e| matches(e, q)).collect();
    let mut got: Vec<Event> = Vec::new();
    let mut cursor = None;
    for _ in 0..=all.len() {
        let page = l
            .query(&HistoryQuery {
                before_seq: cursor,
                ..q.clone()
            })
            .unwrap();
        assert_eq!(page.total, expected.len() as u64, "{q:?}");
        assert!(page.events.len() <= q.limit, "{q:?}");
        got.extend(page.events);
        match page.next_cursor {
            Some(c) => {
                assert_eq!(Some(c), got.last().map(|e| e.seq), "{q:?}");
                cursor = Some(c);
            }
            None => break,
        }
    }
    let got: Vec<&Event> = got.iter().collect();
    assert_eq!(got, expected, "{q:?}");
}

#[test]
fn cursor_paging_visits_each_event_once_newest_first() {
    let f = Fixture::new();
    let (l, all) = mixed_ledger(&f);
    let q = HistoryQuery {
        limit: 37,
        ..Default::default()
    };
    check_paging(&l, &all, &q);
    let first = l.query(&q).unwrap();
    assert_eq!(first.total, 1000);
    assert_eq!(first.events[0].seq, 1000);
    assert_eq!(first.next_cursor, Some(964));
}

#[test]
fn every_filter_combination_matches_a_naive_filter() {
    let f = Fixture::new();
    let (l, all) = mixed_ledger(&f);
    let types = [
        None,
        Some("SCAN_COMPLETED"),
        Some(SAU_ACTION),
        Some("APPROVAL"),
        Some("NOPE"),
    ];
    let crns = [None, Some("crn:3"), Some("crn:none")];
    let statuses = [None, Some("OK"), Some("APPROVED"), Some("quarantined"), Some("BOGUS")];
    let times = [
        (None, None),
        (Some(T0 + 3_000), None),
        (None, Some(T0 + 7_000)),
        (Some(T0 + 2_500), Some(T0 + 5_000)),
        (Some(T0 + 5_000), Some(T0 + 5_000)),
        (Some(T0 + 50_000), None),
    ];
    for t in types {
        for c in crns {
            for s in statuses {
                for (since_us, until_us) in times {
                    let q = HistoryQuery {
                        event_type: t.map(str::to_owned),
                        crn: c.map(str::to_owned),
                        status: s.map(str::to_owned),
                        since_us,
                        until_us,
                        limit: 150,
                        before_seq: None,
                    };
                    check_paging(&l, &all, &q);
                }
            }
        }
    }
}

#[test]
fn filters_select_what_they_name() {
    let f = Fixture::new();
    let l = f.open("s1");
    l.append(vec![
        ev("SCAN_COMPLETED", None),
        ev("QUARANTINE", Some("crn:a")),
        ev("APPROVAL", Some("crn:a")),
        ev("POLICY_CHANGE", None),
        ev("s.a.u_OVERRIDE", Some("crn:b")),
        ev("REJECTION", Some("crn:b")),
    ])
    .unwrap();
    let seqs = |q: HistoryQuery| {
        let page = l.query(&HistoryQuery { limit: 100, ..q }).unwrap();
        assert_eq!(page.total, page.events.len() as u64);
        page.events.iter().map(|e| e.seq).collect::<Vec<_>>()
    };
    let ty = |t: &str| HistoryQuery {
        event_type: Some(t.to_owned()),
        ..Default::default()
    };
    assert_eq!(seqs(ty("SCAN_COMPLETED")), vec![1]);
    assert_eq!(seqs(ty(SAU_ACTION)), vec![6, 5, 3, 2]);
    let crn = |c: &str| HistoryQuery {
        crn: Some(c.to_owned()),
        ..Default::default()
    };
    assert_eq!(seqs(crn("crn:a")), vec![3, 2]);
    let status = |s: &str| HistoryQuery {
        status: Some(s.to_owned()),
        ..Default::default()
    };
    assert_eq!(seqs(status("OK")), vec![5, 4, 1]);
    assert_eq!(seqs(status("REJECTED")), vec![6]);
    assert_eq!(
        seqs(HistoryQuery {
            status: Some("QUARANTINED".into()),
            ..crn("crn:a")
        }),
        vec![2]
    );
}

#[test]
fn time_bounds_are_since_inclusive_until_exclusive() {
    let f = Fixture::new();
    let l = f.open("s1");
    for _ in 0..3 {
        l.append_one(ev("SCAN_COMPLETED", None)).unwrap();
        f.clock.advance(10);
    }
    let count = |since_us, until_us| {
        let q = HistoryQuery {
            since_us,
            until_us,
            limit: 10,
            ..Default::default()
        };
        let page = l.query(&q).unwrap();
        assert_eq!(page.total, page.events.len() as u64);
        page.total
    };
    assert_eq!(count(Some(T0 + 10), None), 2);
    assert_eq!(count(None, Some(T0 + 20)), 2);
    assert_eq!(count(Some(T0 + 10), Some(T0 + 20)), 1);
    assert_eq!(count(Some(T0 + 20), Some(T0 + 20)), 0);
    assert_eq!(count(Some(T0 + 21), None), 0);
    assert_eq!(count(None, Some(T0)), 0);
}

#[test]
fn last_full_page_has_no_cursor_and_limits_are_clamped() {
    let f = Fixture::new();
    let l = f.open("s1");
    l.append((0..10).map(|_| ev("SCAN_COMPLETED", None)).collect()).unwrap();
    let q = HistoryQuery {
        limit: 5,
        ..Default::default()
    };
    let p1 = l.query(&q).unwrap();
    assert_eq!(p1.next_cursor, Some(6));
    let p2 = l
        .query(&HistoryQuery {
            before_seq: p1.next_cursor,
            ..q
        })
        .unwrap();
    assert_eq!(p2.events.iter().map(|e| e.seq).collect::<Vec<_>>(), vec![5, 4, 3, 2, 1]);
    assert_eq!((p2.next_cursor, p2.total), (None, 10));
    let p0 = l.query(&HistoryQuery::default()).unwrap();
    assert_eq!((p0.events.len(), p0.next_cursor), (1, Some(10)));
    l.append((0..600).map(|_| ev("SCAN_COMPLETED", None)).collect())
        .unwrap();
    let big = l
        .query(&HistoryQuery {
            limit: 10_000,
            ..Default::default()
        })
        .unwrap();
    assert_eq!(big.events.len(), HISTORY_MAX_LIMIT);
    assert_eq!(big.total, 610);
}

#[test]
fn empty_ledger_answers_every_query() {
    let f = Fixture::new();
    let l = f.open("s1");
    let page = l
        .query(&HistoryQuery {
            limit: 10,
            ..Default::default()
        })
        .unwrap();
    assert_eq!((page.events.len(), page.next_cursor, page.total), (0, None, 0));
    assert_eq!(l.resource("crn:a", 10).unwrap(), (Vec::new(), 0));
    let s = l.summary().unwrap();
    assert_eq!((s.total_events, s.session_count, s.first_event_us), (0, 0, None));
    assert!(l.sessions().unwrap().is_empty());
}

#[test]
fn resource_returns_its_lifecycle_newest_first() {
    let f = Fixture::new();
    let (l, all) = mixed_ledger(&f);
    let expected: Vec<Event> = all.iter().rev().filter(|e| e.crn == "crn:4").cloned().collect();
    let (events, total) = l.resource("crn:4", usize::MAX).unwrap();
    assert_eq!(events, expected);
    assert_eq!(total, expected.len() as u64);
    let (few, total) = l.resource("crn:4", 3).unwrap();
    assert_eq!(few, expected[..3].to_vec());
    assert_eq!(total, expected.len() as u64);
    // A CRN that is a prefix of others matches only itself.
    assert_eq!(l.resource("crn:", 10).unwrap(), (Vec::new(), 0));
}

#[test]
fn summary_and_sessions_span_two_sessions() {
    let f = Fixture::new();
    {
        let l = f.open("first");
        l.append(vec![
            with_savings(ev("QUARANTINE", Some("crn:a")), 10.25),
            ev("APPROVAL", Some("crn:a")),
            ev("SCAN_COMPLETED", None),
        ])
        .unwrap();
    }
    f.clock.advance(60_000_000);
    let l = f.open("second");
    l.append_one(with_savings(ev("EXECUTION_COMMIT", Some("crn:a")), 5.5))
        .unwrap();
    f.clock.advance(1);
    l.append_one(ev("REJECTION", Some("crn:b"))).unwrap();
    let mut text = ev("QUARANTINE", Some("crn:c"));
    text.payload = serde_json::json!({"savings_usd": "12"});
    l.append_one(text).unwrap();
    let s = l.summary().unwrap();
    assert_eq!(
        s,
        Summary {
            total_events: 6,
            quarantined: 2,
            approved: 1,
            rejected: 1,
            session_count: 2,
            total_savings_usd: 15.75,
            first_event_us: Some(T0),
            last_event_us: Some(T0 + 60_000_001),
        }
    );
    assert_eq!(
        l.sessions().unwrap(),
        vec![
            SessionInfo {
                session_id: "first".into(),
                first_event_us: T0,
                last_event_us: T0,
                event_count: 3
            },
            SessionInfo {
                session_id: "second".into(),
                first_event_us: T0 + 60_000_000,
                last_event_us: T0 + 60_000_001,
                event_count: 3
            },
        ]
    );
    let second = l
        .query(&HistoryQuery {
            limit: 10,
            ..Default::default()
        })
        .unwrap();
    assert!(second.events[..3].iter().all(|e| e.session_id == "second"));
    assert!(second.events[3..].iter().all(|e| e.session_id == "first"));
}
