//! The audit ledger: durable appends (budget: >= 100,000 events/s with group
//! commit), from one appender in batches and from many concurrent
//! appenders, and history queries at 10M events (budget: p99 <= 10 ms).
//!
//! The 10M-event ledger is generated once into
//! `$CARGO_TARGET_TMPDIR/ledger-bench-10m.redb` (about 4 GB) and reused by
//! later runs; delete it to regenerate. `SVC_BENCH_LEDGER_EVENTS` changes
//! its size (the file name carries the size).

#![allow(clippy::unwrap_used, reason = "a bench that cannot set up has nothing to measure")]

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use serde_json::json;
use svc_engine::clock::SystemClock;
use svc_engine::store::ledger::{HistoryQuery, Ledger, NewEvent};

/// Distinct resources in the generated ledgers.
const RESOURCES: u64 = 200_000;

fn crn(r: u64) -> String {
    format!("crn:svc:aws:us-east-1:ec2:volume:123456789012:vol-{r:08x}")
}

/// A realistic mix: most events are saga steps and pipeline moves of one
/// resource, some are decisions, a few are scans with no resource.
fn event(i: u64) -> NewEvent {
    let (event_type, with_crn) = match i % 20 {
        0 => ("SCAN_COMPLETED", false),
        1 | 2 => ("APPROVAL", true),
        3 => ("REJECTION", true),
        4 => ("QUARANTINE", true),
        5..=7 => ("PIPELINE_MOVE", true),
        _ => ("EXECUTION_COMMIT", true),
    };
    let r = i.wrapping_mul(0x9E37_79B9_7F4A_7C15) % RESOURCES;
    // SVC_BENCH_LEDGER_NO_CRN=1: events that name no resource (no CRN index
    // insert), to see what that index costs.
    let with_crn = with_crn && std::env::var_os("SVC_BENCH_LEDGER_NO_CRN").is_none();
    NewEvent {
        event_type: event_type.into(),
        crn: with_crn.then(|| crn(r)),
        actor: "bench".into(),
        message: "saga step executed".into(),
        payload: json!({"saga_id": format!("saga-{i}"), "step_index": 0, "status": "SUCCESS", "savings_usd": 12.5}),
    }
}

fn open(path: &std::path::Path) -> Ledger {
    Ledger::open(path, "bench", Arc::new(SystemClock::default())).unwrap()
}

fn append(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let ledger = Arc::new(open(&dir.path().join("events.redb")));
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
    // Many appenders at once, each waiting for its own events to be
    // durable: the writer commits whatever is queued as one transaction.
    for (threads, batch) in [(16usize, 1usize), (64, 1), (64, 10), (256, 1)] {
        group.throughput(Throughput::Elements((threads * batch) as u64));
        group.bench_function(format!("append_durable/concurrent_{threads}x{batch}"), |b| {
            b.iter_custom(|iters| {
                let start = Instant::now();
                std::thread::scope(|s| {
                    for t in 0..threads {
                        let ledger = &ledger;
                        s.spawn(move || {
                            for i in 0..iters {
                                let base = (i * threads as u64 + t as u64) * batch as u64;
                                ledger.append((base..base + batch as u64).map(event).collect()).unwrap();
                            }
                        });
                    }
                });
                start.elapsed()
            })
        });
    }
    group.finish();
}

/// The cached ledger of `n` events, generated when missing.
fn big_ledger(n: u64) -> Ledger {
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("ledger-bench-{n}.redb"));
    let ledger = open(&path);
    if ledger.last_seq() < n {
        let started = Instant::now();
        let from = ledger.last_seq();
        eprintln!("generating {n} ledger events into {} (once)", path.display());
        let mut next = from;
        while next < n {
            let end = (next + 50_000).min(n);
            ledger.append((next..end).map(event).collect()).unwrap();
            next = end;
        }
        let secs = started.elapsed().as_secs_f64();
        eprintln!(
            "generated {} events in {secs:.1} s ({:.0} events/s)",
            n - from,
            (n - from) as f64 / secs
        );
    }
    ledger
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

fn history(c: &mut Criterion) {
    let n: u64 = std::env::var("SVC_BENCH_LEDGER_EVENTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000_000);
    let ledger = big_ledger(n);
    let label = if n.is_multiple_of(1_000_000) {
        format!("history_{}m", n / 1_000_000)
    } else {
        format!("history_{n}")
    };
    let q = |f: &dyn Fn(&mut HistoryQuery)| {
        let mut q = HistoryQuery {
            limit: 100,
            ..Default::default()
        };
        f(&mut q);
        q
    };
    // Each case is a list of queries run in turn, so the CRN case reads a
    // different resource (cold pages) every time.
    let cases: Vec<(&str, Vec<HistoryQuery>)> = vec![
        ("newest_100", vec![q(&|_| {})]),
        ("type_approval", vec![q(&|q| q.event_type = Some("APPROVAL".into()))]),
        ("sau_action", vec![q(&|q| q.event_type = Some("s.a.u_ACTION".into()))]),
        (
            "crn",
            (0..1000u64)
                .map(|i| {
                    let c = crn(i.wrapping_mul(7919) % RESOURCES);
                    q(&move |q| q.crn = Some(c.clone()))
                })
                .collect(),
        ),
        (
            "sau_action_last_day",
            vec![q(&|q| {
                q.event_type = Some("s.a.u_ACTION".into());
                q.since_us = Some(day_ago());
            })],
        ),
    ];
    // p50 and p99 over 2,000 runs each (criterion reports medians only):
    // a first round from a cold process (the ledger's page cache empty),
    // then a second, warm round.
    for round in ["cold", "warm"] {
        for (name, queries) in &cases {
            let mut times = Vec::with_capacity(2000);
            for i in 0..2000 {
                let query = &queries[i % queries.len()];
                let t = Instant::now();
                let page = ledger.query(query).unwrap();
                times.push(t.elapsed());
                assert!(!page.events.is_empty() || *name == "sau_action_last_day");
            }
            times.sort();
            eprintln!(
                "{label}/{name} ({round}): p50 {:?}, p99 {:?}, max {:?} over {} runs",
                percentile(&times, 0.5),
                percentile(&times, 0.99),
                times[times.len() - 1],
                times.len()
            );
        }
    }
    let mut group = c.benchmark_group(label);
    for (name, queries) in &cases {
        let mut i = 0usize;
        group.bench_function(*name, |b| {
            b.iter(|| {
                i += 1;
                ledger.query(&queries[i % queries.len()]).unwrap()
            })
        });
    }
    group.finish();
}

/// `now - 1 day` in microseconds, for the time-bounded case.
fn day_ago() -> u64 {
    use svc_engine::clock::Clock;
    SystemClock::default().now_us().saturating_sub(86_400_000_000)
}

criterion_group!(benches, append, history);
criterion_main!(benches);
