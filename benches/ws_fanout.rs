//! WebSocket fan-out: ledger events delivered to 100 clients of `/events`
//! on a real listener (the api router over TCP on 127.0.0.1, real
//! WebSocket clients). One iteration appends 1,000 events (10 durable
//! appends of 100) and ends when every client has received all of them;
//! the throughput is events per second delivered to all 100 clients (so
//! 100 times as many frames per second).

#![allow(clippy::unwrap_used, reason = "a bench that cannot set up has nothing to measure")]

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use futures::{SinkExt, StreamExt};
use serde_json::json;
use svc_api::AppState;
use svc_engine::Engine;
use svc_engine::clock::SystemClock;
use svc_engine::store::ledger::NewEvent;
use tokio::net::TcpListener;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

const CLIENTS: usize = 100;
const EVENTS: u64 = 1000;
const BATCH: u64 = 100;

fn event(i: u64) -> NewEvent {
    NewEvent {
        event_type: "EXECUTION_COMMIT".into(),
        crn: Some(format!(
            "crn:svc:aws:us-east-1:ec2:volume:123456789012:vol-{:08x}",
            i % 5000
        )),
        actor: "bench".into(),
        message: "saga step executed".into(),
        payload: json!({"saga_id": format!("saga-{i}"), "step_index": 0, "status": "SUCCESS", "duration_ms": 12}),
    }
}

fn fanout(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let engine = Arc::new(Engine::open(dir.path(), "bench", Arc::new(SystemClock::default())).unwrap());
    let state = AppState::new("tok".into());
    state.set_engine(engine.clone());
    // Frames received, summed over the clients.
    let received = Arc::new(AtomicU64::new(0));
    rt.block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let app = svc_api::router(state);
        tokio::spawn(async move { axum::serve(listener, app).await });
        for _ in 0..CLIENTS {
            let mut req = format!("ws://{addr}/events").into_client_request().unwrap();
            req.headers_mut().insert("authorization", "Bearer tok".parse().unwrap());
            let (mut ws, _) = tokio_tungstenite::connect_async(req).await.unwrap();
            // Ends the initial hold: live events flow at once.
            ws.send(Message::text(json!({"since": 0}).to_string())).await.unwrap();
            let received = received.clone();
            tokio::spawn(async move {
                while let Some(Ok(m)) = ws.next().await {
                    if m.is_text() {
                        received.fetch_add(1, Ordering::Relaxed);
                    }
                }
            });
        }
    });
    let mut next = 0u64;
    let mut group = c.benchmark_group("ws_fanout");
    group.sample_size(20);
    group.throughput(Throughput::Elements(EVENTS));
    group.bench_function(format!("{CLIENTS}_clients"), |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let target = received.load(Ordering::Relaxed) + EVENTS * CLIENTS as u64;
                let start = Instant::now();
                let mut i = 0;
                while i < EVENTS {
                    engine
                        .ledger()
                        .append((next..next + BATCH).map(event).collect())
                        .unwrap();
                    next += BATCH;
                    i += BATCH;
                }
                let deadline = Instant::now() + Duration::from_secs(60);
                while received.load(Ordering::Relaxed) < target {
                    assert!(Instant::now() < deadline, "clients did not receive every event");
                    std::thread::sleep(Duration::from_micros(100));
                }
                total += start.elapsed();
            }
            total
        })
    });
    group.finish();
    drop(rt);
}

criterion_group!(benches, fanout);
criterion_main!(benches);
