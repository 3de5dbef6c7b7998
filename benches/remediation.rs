//! The `engine.sau` pass of a scan over a 1M-node mock estate (~190k waste
//! items): reconciling every item with the scan's verdicts, proving up to
//! `ANALYZE_PER_SCAN` new ones and storing what changed.
//!
//! The warm-up scans (each proving up to 20,000 items until fewer are left)
//! are printed one by one before the criterion run; criterion then times the
//! pass in steady-state scans (everything proved, the estate drifting as
//! the mock's clock advances). Each criterion iteration runs a whole scan
//! and counts only the pass. `SVC_BENCH_NODES` changes the size.

#![allow(clippy::unwrap_used, reason = "a bench that cannot set up has nothing to measure")]

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, SamplingMode, criterion_group, criterion_main};
use svc_engine::Engine;
use svc_engine::clock::SystemClock;
use svc_engine::remediation::ops::SauReport;
use svc_mock_estate::MockEstate;

fn scan(engine: &Arc<Engine>) -> SauReport {
    let report = engine.try_start_scan().expect("no scan running").run().expect("scan");
    report.sau.expect("the remediation pass ran")
}

fn remediation(c: &mut Criterion) {
    let n: usize = std::env::var("SVC_BENCH_NODES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let dir = tempfile::tempdir().unwrap();
    let engine = Arc::new(Engine::open(dir.path(), "bench", Arc::new(SystemClock::default())).unwrap());
    engine.set_sources(vec![Box::new(MockEstate::new(7, n))]);

    let t = Instant::now();
    let first = scan(&engine);
    println!(
        "first scan: {:.2} s; pass {} ms (entered {}, analyzed {}, written {})",
        t.elapsed().as_secs_f64(),
        first.duration.as_millis(),
        first.entered,
        first.analyzed,
        first.written
    );
    // Warm-up: scans that prove up to ANALYZE_PER_SCAN items each.
    let mut warm = Vec::new();
    let budget = svc_engine::remediation::ANALYZE_PER_SCAN as u64;
    let mut last = first;
    while last.analyzed >= budget {
        last = scan(&engine);
        println!(
            "warm-up pass: {} ms (analyzed {}, written {}, entered {}, left {})",
            last.duration.as_millis(),
            last.analyzed,
            last.written,
            last.entered,
            last.left
        );
        if last.analyzed >= budget {
            warm.push(last.duration);
        }
    }
    warm.sort_unstable();
    if let Some(median) = warm.get(warm.len() / 2) {
        println!(
            "warm-up pass median over {} scans: {} ms",
            warm.len(),
            median.as_millis()
        );
    }

    let mut group = c.benchmark_group("remediation");
    group.sample_size(10);
    group.sampling_mode(SamplingMode::Flat);
    group.warm_up_time(Duration::from_millis(500));
    group.measurement_time(Duration::from_secs(1));
    group.bench_function(format!("sau_pass_steady/{n}"), |b| {
        b.iter_custom(|iters| {
            (0..iters)
                .map(|_| {
                    let sau = scan(&engine);
                    assert!(sau.analyzed < budget, "steady state proves only what entered");
                    sau.duration
                })
                .sum()
        })
    });
    group.finish();
}

criterion_group!(benches, remediation);
criterion_main!(benches);
