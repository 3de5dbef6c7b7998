//! A property test: random appends, clock moves, prunes and reopens, checked
//! after every step against a plain list of the events that should remain.

use proptest::prelude::*;
use serde_json::json;

use super::tests::{Fixture, T0};
use super::tests_query::{TYPES, matches};
use super::*;

#[derive(Clone, Debug)]
enum Op {
    /// (type index, CRN index, savings in quarter dollars) per event.
    Append(Vec<(usize, Option<usize>, u8)>),
    Advance(u64),
    /// Prune events older than `T0 + offset`.
    Prune(u64),
    Reopen,
}

fn op() -> impl Strategy<Value = Op> {
    let event = (0..TYPES.len(), proptest::option::of(0..4usize), 0..8u8);
    prop_oneof![
        4 => proptest::collection::vec(event, 1..6).prop_map(Op::Append),
        2 => (0..5_000u64).prop_map(Op::Advance),
        1 => (0..20_000u64).prop_map(Op::Prune),
        1 => Just(Op::Reopen),
    ]
}

fn new_event((t, crn, quarters): (usize, Option<usize>, u8)) -> NewEvent {
    NewEvent {
        event_type: TYPES[t].to_owned(),
        crn: crn.map(|c| format!("crn:{c}")),
        actor: "prop".to_owned(),
        message: String::new(),
        payload: if quarters == 0 {
            json!({})
        } else {
            json!({ "savings_usd": f64::from(quarters) * 0.25 })
        },
    }
}

fn check(l: &Ledger, model: &[Event]) -> Result<(), TestCaseError> {
    let r = l.verify().unwrap();
    prop_assert!(r.ok, "{:?}", r);
    prop_assert_eq!(r.checked, model.len() as u64);
    prop_assert_eq!(&l.events_after(0, usize::MAX).unwrap(), model);
    if let Some(last) = model.last() {
        prop_assert_eq!(l.last_seq(), last.seq);
    }

    let count = |t: &str| model.iter().filter(|e| e.event_type == t).count() as u64;
    let mut sessions: Vec<SessionInfo> = Vec::new();
    for e in model {
        match sessions.iter_mut().find(|s| s.session_id == e.session_id) {
            Some(s) => {
                s.last_event_us = e.ts_us;
                s.event_count += 1;
            }
            None => sessions.push(SessionInfo {
                session_id: e.session_id.clone(),
                first_event_us: e.ts_us,
                last_event_us: e.ts_us,
                event_count: 1,
            }),
        }
    }
    let summary = Summary {
        total_events: model.len() as u64,
        quarantined: count("QUARANTINE"),
        approved: count("APPROVAL"),
        rejected: count("REJECTION"),
        session_count: sessions.len() as u64,
        total_savings_usd: model
            .iter()
            .filter_map(|e| e.payload.get("savings_usd").and_then(|v| v.as_f64()))
            .sum(),
        first_event_us: model.first().map(|e| e.ts_us),
        last_event_us: model.last().map(|e| e.ts_us),
    };
    prop_assert_eq!(l.summary().unwrap(), summary);
    prop_assert_eq!(l.sessions().unwrap(), sessions);

    for event_type in [None, Some(SAU_ACTION), Some("APPROVAL")] {
        for crn in [None, Some("crn:1")] {
            for status in [None, Some("OK")] {
                let q = HistoryQuery {
                    event_type: event_type.map(str::to_owned),
                    crn: crn.map(str::to_owned),
                    status: status.map(str::to_owned),
                    limit: HISTORY_MAX_LIMIT,
                    ..Default::default()
                };
                let expected: Vec<&Event> = model.iter().rev().filter(|e| matches(e, &q)).collect();
                let page = l.query(&q).unwrap();
                prop_assert_eq!(page.total, expected.len() as u64);
                prop_assert_eq!(page.events.iter().collect::<Vec<_>>(), expected);
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn ledger_matches_a_plain_list_of_events(ops in proptest::collection::vec(op(), 1..25)) {
        let f = Fixture::new();
        let mut sessions = 0;
        let mut ledger = f.open("s0");
        let mut model: Vec<Event> = Vec::new();
        for op in ops {
            match op {
                Op::Append(spec) => {
                    let events = spec.into_iter().map(new_event).collect();
                    model.extend(ledger.append(events).unwrap());
                }
                Op::Advance(us) => f.clock.advance(us),
                Op::Prune(offset) => {
                    let cutoff = T0 + offset;
                    let before = model.len();
                    model.retain(|e| e.ts_us >= cutoff);
                    let pruned = ledger.prune(cutoff, "prop").unwrap();
                    prop_assert_eq!(pruned, (before - model.len()) as u64);
                    let audit = ledger.get(ledger.last_seq()).unwrap().unwrap();
                    prop_assert_eq!(audit.event_type.as_str(), HISTORY_PRUNED);
                    model.push(audit);
                }
                Op::Reopen => {
                    drop(ledger);
                    sessions += 1;
                    ledger = f.open(&format!("s{sessions}"));
                }
            }
            check(&ledger, &model)?;
        }
    }
}
