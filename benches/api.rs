//! The read API and restart at 1M nodes: `graph/stats` and `topology`
//! through the real router (budget for topology: 1.5 s, streamed), and
//! restart to ready (budget: 1 s), i.e. opening the stores and loading the
//! graph. `SVC_BENCH_NODES` changes the size. Also the binary graph form
//! (`Accept: application/x-flatbuffers`): the whole topology, and the
//! dashboard's laid-out view of 100,000 nodes; their sizes, single-request
//! times and the peak memory a request adds are printed first. And the
//! terminal UI's windows of `/api/v1/nodes` (`tui_rows`).

#![allow(clippy::unwrap_used, reason = "a bench that cannot set up has nothing to measure")]

use std::sync::Arc;
use std::time::Instant;

use axum::body::Body;
use axum::http::Request;
use criterion::{Criterion, criterion_group, criterion_main};
use http_body_util::BodyExt;
use svc_api::AppState;
use svc_engine::Engine;
use svc_engine::clock::SystemClock;
use svc_mock_estate::MockEstate;
use tower::ServiceExt;

const FLATBUFFERS: &str = "application/x-flatbuffers";

fn get(rt: &tokio::runtime::Runtime, app: &axum::Router, path: &str) -> usize {
    get_as(rt, app, path, "application/json")
}

fn get_as(rt: &tokio::runtime::Runtime, app: &axum::Router, path: &str, accept: &str) -> usize {
    rt.block_on(async {
        let req = Request::get(path)
            .header("authorization", "Bearer bench")
            .header("accept", accept)
            .body(Body::empty())
            .unwrap();
        let resp = app.clone().oneshot(req).await.unwrap();
        assert!(resp.status().is_success(), "{path}: {}", resp.status());
        // Read the body as a client would, frame by frame, without keeping it.
        let mut body = resp.into_body();
        let mut len = 0;
        while let Some(frame) = body.frame().await {
            if let Ok(data) = frame.unwrap().into_data() {
                len += data.len();
            }
        }
        len
    })
}

fn api(c: &mut Criterion) {
    let n: usize = std::env::var("SVC_BENCH_NODES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let dir = tempfile::tempdir().unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    {
        let engine = Arc::new(Engine::open(dir.path(), "bench", Arc::new(SystemClock::default())).unwrap());
        engine.set_sources(vec![Box::new(MockEstate::new(7, n))]);
        let t = Instant::now();
        let report = engine.try_start_scan().unwrap().run().unwrap();
        println!(
            "first scan of {} nodes / {} edges (ingest + commit of every version): {:.2} s",
            report.nodes,
            report.edges,
            t.elapsed().as_secs_f64()
        );
        let state = AppState::new("bench".into());
        state.set_engine(engine.clone());
        let app = svc_api::router(state);
        let bytes = get(&rt, &app, "/api/v1/topology");
        println!("topology body: {:.1} MB", bytes as f64 / 1e6);
        for (what, path) in [
            ("topology (binary)", "/api/v1/topology".to_owned()),
            (
                "graph/topology (binary), 100k nodes",
                "/api/v1/graph/topology?limit=100000".to_owned(),
            ),
            (
                "graph/topology (binary), 250k nodes",
                "/api/v1/graph/topology?limit=250000".to_owned(),
            ),
        ] {
            let base = rss_kib("VmRSS");
            reset_peak_rss();
            let t = Instant::now();
            let bytes = get_as(&rt, &app, &path, FLATBUFFERS);
            let took = t.elapsed().as_secs_f64();
            let peak = rss_kib("VmHWM")
                .zip(base)
                .map(|(p, b)| p.saturating_sub(b) as f64 / 1024.0);
            println!(
                "{what}: {:.1} MB in {:.3} s; peak resident memory above the request's start: {}",
                bytes as f64 / 1e6,
                took,
                peak.map_or("unknown".to_owned(), |m| format!("{m:.0} MiB"))
            );
        }
        let mut group = c.benchmark_group("api");
        group.sample_size(10);
        group.bench_function(format!("graph_stats/{n}"), |b| {
            b.iter(|| get(&rt, &app, "/api/v1/graph/stats"))
        });
        group.bench_function(format!("topology/{n}"), |b| {
            b.iter(|| get(&rt, &app, "/api/v1/topology"))
        });
        group.bench_function(format!("topology_fbs/{n}"), |b| {
            b.iter(|| get_as(&rt, &app, "/api/v1/topology", FLATBUFFERS))
        });
        group.bench_function(format!("graph_topology_fbs_100k/{n}"), |b| {
            b.iter(|| get_as(&rt, &app, "/api/v1/graph/topology?limit=100000", FLATBUFFERS))
        });
        group.finish();
        // The terminal UI's node table: a window of 300 rows chosen by the
        // daemon (workspace, filter, sort, offset) with every workspace's count.
        let mut group = c.benchmark_group("tui_rows");
        group.sample_size(10);
        for (what, path) in [
            (
                "first_window_by_cost",
                "/api/v1/nodes?sort=cost&order=desc&limit=300".to_owned(),
            ),
            (
                "middle_window_by_cost",
                format!("/api/v1/nodes?sort=cost&order=desc&limit=300&offset={}", n / 2),
            ),
            (
                "storage_filtered_by_name",
                "/api/v1/nodes?category=storage&filter=state%3Aavail%20vol&sort=name&limit=300".to_owned(),
            ),
            ("id_order_page", "/api/v1/nodes?limit=300".to_owned()),
        ] {
            group.bench_function(format!("{what}/{n}"), |b| b.iter(|| get(&rt, &app, &path)));
        }
        group.finish();
    }
    let mut group = c.benchmark_group("restart");
    group.sample_size(10);
    group.bench_function(format!("open_to_ready/{n}"), |b| {
        b.iter(|| {
            let engine = Engine::open(dir.path(), "bench", Arc::new(SystemClock::default())).unwrap();
            let state = AppState::new("bench".into());
            let engine = Arc::new(engine);
            state.set_engine(engine.clone());
            assert!(state.is_ready());
            engine.graph().node_rows()
        })
    });
    group.finish();
}

/// A line of `/proc/self/status` in KiB (`VmRSS`, `VmHWM`); Linux only.
fn rss_kib(key: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(key))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Resets `VmHWM` (the peak resident size) to the current size.
fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

criterion_group!(benches, api);
criterion_main!(benches);
