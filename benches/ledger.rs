//! The audit ledger: durable appends (budget: >= 100,000 events/s with group
//! commit) and history queries over a filled ledger.

use std::sync::Arc;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use serde_json::json;
use svc_engine::clock::SystemClock;
use svc_engine::store::ledger::{HistoryQuery, Ledger, NewEvent};

fn event(i: u64) -> NewEvent {
    NewEvent {
        event_type: if i.is_multiple_of(10) {
            "APPROVAL".into()
        } else {
            "EXECUTION_COMMIT".into()
        },
        crn: Some(format!(
            "crn:svc:aws:us-east-1:ec2:volume:123456789012:vol-{:08x}",
            i % 5000
        )),
        actor: "bench".into(),
        message: "saga step executed".into(),
        payload: json!({"saga_id": format!("saga-{i}"), "step_index": 0, "status": "SUCCESS", "savings_usd": 12.5}),
    }
}

fn ledger(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let ledger = Ledger::open(
        &dir.path().join("events.redb"),
        "bench",
        Arc::new(SystemClock::default()),
    )
    .unwrap();
    let mut group = c.benchmark_group("ledger");
    group.sample_size(10);
    let mut next = 0u64;
    for batch in [1usize, 100, 1000] {
        group.throughput(Throughput::Elements(batch as u64));
        group.bench_function(format!("append_durable/batch_{batch}"), |b| {
            b.iter_batched(
                || {
                    let events: Vec<NewEvent> = (next..next + batch as u64).map(event).collect();
                    next += batch as u64;
                    events
                },
                |events| ledger.append(events).unwrap(),
                BatchSize::SmallInput,
            )
        });
    }
    group.finish();
    // Fill to 200,000 events, then query.
    while ledger.last_seq() < 200_000 {
        let events: Vec<NewEvent> = (next..next + 10_000).map(event).collect();
        next += 10_000;
        ledger.append(events).unwrap();
    }
    let mut group = c.benchmark_group("history_200k");
    let q = |f: fn(&mut HistoryQuery)| {
        let mut q = HistoryQuery {
            limit: 100,
            ..Default::default()
        };
        f(&mut q);
        q
    };
    let cases = [
        ("newest_100", q(|_| {})),
        ("type_approval", q(|q| q.event_type = Some("APPROVAL".into()))),
        ("sau_action", q(|q| q.event_type = Some("s.a.u_ACTION".into()))),
        (
            "crn",
            q(|q| q.crn = Some("crn:svc:aws:us-east-1:ec2:volume:123456789012:vol-00000007".into())),
        ),
    ];
    for (name, query) in cases {
        group.bench_function(name, |b| b.iter(|| ledger.query(&query).unwrap()));
    }
    group.finish();
}

criterion_group!(benches, ledger);
criterion_main!(benches);
