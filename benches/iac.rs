//! Terraform against a 1M-node estate: a state declaring every EBS volume
//! and EC2 instance of one AWS account of the mock estate (as Terraform
//! records them), the code in a real git repository (`git` on PATH).
//! Measured: matching the states to the graph (`Index::build`), the drift
//! report over the whole graph, `GET /api/v1/drift/report` once the match
//! is kept, and `GET /api/v1/topology` with and without provenance
//! (alternating, twice).
//! `SVC_BENCH_NODES` changes the size.

#![allow(clippy::unwrap_used, reason = "a bench that cannot set up has nothing to measure")]

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::body::Body;
use axum::http::Request;
use criterion::{Criterion, criterion_group, criterion_main};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use svc_api::AppState;
use svc_api::iac::GraphLive;
use svc_engine::Engine;
use svc_engine::clock::SystemClock;
use svc_iac::drift::{Index, Live};
use svc_mock_estate::MockEstate;
use tower::ServiceExt;

/// The configuration, in memory.
struct Config(Mutex<Value>);

impl svc_api::config::ConfigService for Config {
    fn get(&self) -> Value {
        self.0.lock().unwrap().clone()
    }
    fn put(&self, _patch: Value) -> Result<Value, svc_api::config::ConfigError> {
        Err(svc_api::config::ConfigError::Invalid("read only".into()))
    }
}

fn get(rt: &tokio::runtime::Runtime, app: &axum::Router, path: &str) -> usize {
    rt.block_on(async {
        let req = Request::get(path)
            .header("authorization", "Bearer bench")
            .body(Body::empty())
            .unwrap();
        let resp = app.clone().oneshot(req).await.unwrap();
        assert!(resp.status().is_success(), "{path}: {}", resp.status());
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

/// Every volume and instance of the first AWS account met, as a state's
/// resources (`count` instances of one block each).
fn declare(engine: &Engine) -> (Value, usize) {
    let g = engine.graph();
    let live = GraphLive {
        graph: &g,
        now_us: engine.now_us(),
    };
    let mut account = None;
    let mut crns: Vec<(String, &'static str)> = Vec::new();
    live.each(&mut |n| {
        if n.provider != "aws" || !n.live || n.service != "ec2" || !matches!(n.kind, "volume" | "instance") {
            return;
        }
        let account = account.get_or_insert_with(|| n.account.to_owned());
        if n.account == account.as_str() {
            let tf = if n.kind == "volume" {
                "aws_ebs_volume"
            } else {
                "aws_instance"
            };
            crns.push((n.crn(), tf));
        }
    });
    let mut blocks: Vec<Value> = Vec::new();
    for tf in ["aws_ebs_volume", "aws_instance"] {
        let kind = svc_iac::mapping::kind_of(tf).unwrap();
        let instances: Vec<Value> = crns
            .iter()
            .filter(|(_, t)| *t == tf)
            .enumerate()
            .map(|(i, (crn, _))| {
                let c = svc_engine::Crn::parse(crn).unwrap();
                let node = live.live(crn).unwrap();
                let mut a = json!({
                    "id": c.id,
                    "arn": format!("arn:aws:ec2:{}:{}:{}/{}", c.region, c.account, c.kind, c.id),
                    "tags_all": node.tags,
                });
                for (attribute, property) in kind.attributes {
                    a[*attribute] = node.props.get(*property).cloned().unwrap_or(Value::Null);
                }
                json!({"index_key": i, "schema_version": 0, "attributes": a})
            })
            .collect();
        blocks.push(json!({"mode": "managed", "type": tf, "name": "fleet", "each": "list", "instances": instances}));
    }
    (
        json!({"version": 4, "serial": 1, "lineage": "bench", "resources": blocks}),
        crns.len(),
    )
}

fn git(dir: &Path, args: &[&str]) {
    let ok = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "Bench")
        .env("GIT_AUTHOR_EMAIL", "bench@example.com")
        .env("GIT_COMMITTER_NAME", "Bench")
        .env("GIT_COMMITTER_EMAIL", "bench@example.com")
        .status()
        .unwrap()
        .success();
    assert!(ok, "git {args:?}");
}

fn iac(c: &mut Criterion) {
    let n: usize = std::env::var("SVC_BENCH_NODES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let dir = tempfile::tempdir().unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let engine = Arc::new(Engine::open(dir.path(), "bench", Arc::new(SystemClock::default())).unwrap());
    engine.set_sources(vec![Box::new(MockEstate::new(7, n))]);
    let report = engine.try_start_scan().unwrap().run().unwrap();
    let (state, declared) = declare(&engine);
    let path = dir.path().join("fleet.tfstate");
    std::fs::write(&path, serde_json::to_vec(&state).unwrap()).unwrap();
    let repo = dir.path().join("infra");
    std::fs::create_dir_all(&repo).unwrap();
    std::fs::write(
        repo.join("main.tf"),
        "resource \"aws_ebs_volume\" \"fleet\" {\n  count = 1\n}\n\nresource \"aws_instance\" \"fleet\" {\n  count = 1\n}\n",
    )
    .unwrap();
    git(&repo, &["-c", "init.defaultBranch=main", "init", "-q"]);
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-q", "-m", "fleet"]);
    println!(
        "{} nodes / {} edges; the state declares {declared} resources of one account",
        report.nodes, report.edges
    );

    // The same engine served without Terraform: topology's baseline.
    let plain = AppState::new("bench".into());
    plain.set_engine(engine.clone());
    let plain = svc_api::router(plain);
    let state = AppState::new("bench".into());
    state.set_engine(engine.clone());
    state.set_config(Arc::new(Config(Mutex::new(json!({"iac": {
        "terraform_states": [path.to_string_lossy()],
        "repository": repo.to_string_lossy(),
    }})))));
    let app = svc_api::router(state);
    let t = Instant::now();
    get(&rt, &app, "/api/v1/drift/report");
    println!(
        "first drift report (state read, matched, reported): {:.3} s",
        t.elapsed().as_secs_f64()
    );
    let t = Instant::now();
    let bytes = get(&rt, &app, "/api/v1/topology");
    println!(
        "first topology with provenance (blame included): {:.3} s, {:.1} MB",
        t.elapsed().as_secs_f64(),
        bytes as f64 / 1e6
    );

    let parsed = svc_iac::state::parse(&std::fs::read(&path).unwrap()).unwrap();
    let mut group = c.benchmark_group("iac");
    group.sample_size(10);
    group.bench_function(format!("index/{n}"), |b| {
        b.iter(|| {
            let g = engine.graph();
            let live = GraphLive {
                graph: &g,
                now_us: engine.now_us(),
            };
            Index::build(&[&parsed], &live).entries.len()
        })
    });
    let index = {
        let g = engine.graph();
        Index::build(
            &[&parsed],
            &GraphLive {
                graph: &g,
                now_us: engine.now_us(),
            },
        )
    };
    group.bench_function(format!("report/{n}"), |b| {
        b.iter(|| {
            let g = engine.graph();
            let live = GraphLive {
                graph: &g,
                now_us: engine.now_us(),
            };
            svc_iac::drift::report(&index, &live, 500).totals.unmanaged
        })
    });
    group.bench_function(format!("drift_report_http/{n}"), |b| {
        b.iter(|| get(&rt, &app, "/api/v1/drift/report"))
    });
    // Alternating, so both see the same machine.
    for round in 1..=2 {
        group.bench_function(format!("topology_with_provenance/{n}/{round}"), |b| {
            b.iter(|| get(&rt, &app, "/api/v1/topology"))
        });
        group.bench_function(format!("topology_without/{n}/{round}"), |b| {
            b.iter(|| get(&rt, &plain, "/api/v1/topology"))
        });
    }
    group.finish();
}

criterion_group!(benches, iac);
criterion_main!(benches);
