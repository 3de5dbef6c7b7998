//! `graph.snap`: a start from the snapshot gives exactly the graph the store
//! replay gives; a stale, corrupt or truncated snapshot is ignored and rewritten.

#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

use std::path::Path;
use std::sync::Arc;

use svc_engine::clock::ManualClock;
use svc_engine::engine::SNAPSHOT_FILE;
use svc_engine::graph::{EdgeBatch, NodeBatch, NodeInput, NodeKeyRef};
use svc_engine::scan::{ScanContext, ScanSink, Source, SourceError};
use svc_engine::{Crn, Engine, Relation};

/// Twenty nodes in a chain; each scan changes one node's state and drops one.
struct Chain;

impl Source for Chain {
    fn name(&self) -> &str {
        "chain"
    }
    fn providers(&self) -> Vec<String> {
        vec!["aws".into()]
    }
    fn scan(&mut self, ctx: &ScanContext<'_>, sink: &mut dyn ScanSink) -> Result<(), SourceError> {
        let i = ctx.interner;
        let k = ctx.scan_seq as usize;
        let crns: Vec<Crn> = (0..20)
            .filter(|n| *n != k)
            .map(|n| Crn::parse(&format!("crn:svc:aws:us-east-1:ec2:instance:1:i-{n}")).unwrap())
            .collect();
        let mut nodes = NodeBatch::default();
        let (size, env) = (i.intern("size_gib"), (i.intern("env"), i.intern("prod")));
        for (n, c) in crns.iter().enumerate() {
            let state = if n == k % 20 { "stopped" } else { "running" };
            let input = NodeInput {
                key: NodeKeyRef::intern(i, c),
                ty: i.intern("ec2:instance"),
                state: i.intern(state),
                cost_usd_mo: n as f32,
                creation_ts: 1_700_000_000,
            };
            nodes.push(input, &[env], |w| w.int(size, n as i64));
        }
        let mut edges = EdgeBatch::default();
        for w in crns.windows(2) {
            edges.push(
                NodeKeyRef::intern(i, &w[0]),
                NodeKeyRef::intern(i, &w[1]),
                Relation::Uses,
                |_| {},
            );
        }
        sink.nodes(nodes);
        sink.edges(edges);
        Ok(())
    }
}

fn scanned(dir: &Path, clock: &Arc<ManualClock>, scans: usize) {
    let engine = Arc::new(Engine::open(dir, "s", clock.clone()).unwrap());
    engine.set_sources(vec![Box::new(Chain)]);
    for _ in 0..scans {
        clock.advance(1_000_000);
        engine.try_start_scan().unwrap().run().unwrap();
    }
}

/// Every row of the graph, as versions sorted by CRN / endpoints.
fn dump(engine: &Engine) -> (Vec<String>, Vec<String>) {
    let changes = engine.graph().all_versions();
    let mut nodes: Vec<String> = changes.nodes.iter().map(|n| format!("{n:?}")).collect();
    let mut edges: Vec<String> = changes.edges.iter().map(|e| format!("{e:?}")).collect();
    nodes.sort();
    edges.sort();
    (nodes, edges)
}

fn open(dir: &Path, clock: &Arc<ManualClock>) -> Engine {
    Engine::open(dir, "s2", clock.clone()).unwrap()
}

#[test]
fn snapshot_start_equals_store_replay() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(1_000_000));
    scanned(dir.path(), &clock, 3);
    let from_snap = open(dir.path(), &clock);
    assert_eq!(from_snap.loaded_from(), "snapshot");
    let a = dump(&from_snap);
    let stats = from_snap.graph().stats(svc_engine::clock::Clock::now_us(&*clock));
    drop(from_snap);
    std::fs::remove_file(dir.path().join(SNAPSHOT_FILE)).unwrap();
    let replayed = open(dir.path(), &clock);
    assert_eq!(replayed.loaded_from(), "graph store");
    assert_eq!(dump(&replayed), a);
    assert_eq!(replayed.graph().stats(svc_engine::clock::Clock::now_us(&*clock)), stats);
    assert_eq!(stats.active_nodes, 19);
    assert_eq!(
        stats.logically_deleted, 0,
        "each scan drops one node and brings back the last one; a start compacts the retired one away"
    );
    drop(replayed);
    // The replay wrote a fresh snapshot.
    assert_eq!(open(dir.path(), &clock).loaded_from(), "snapshot");
}

#[test]
fn bad_snapshots_are_ignored_and_rewritten() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(1_000_000));
    scanned(dir.path(), &clock, 1);
    let snap = dir.path().join(SNAPSHOT_FILE);
    let old = std::fs::read(&snap).unwrap();
    scanned(dir.path(), &clock, 1);
    let want = dump(&open(dir.path(), &clock));
    let good = std::fs::read(&snap).unwrap();

    let mut flipped = good.clone();
    let mid = flipped.len() / 2;
    flipped[mid] ^= 0x40;
    let cases: [(&str, Vec<u8>); 4] = [
        ("stale", old),
        ("corrupt", flipped),
        ("truncated", good[..good.len() / 3].to_vec()),
        ("garbage", vec![7u8; 1000]),
    ];
    for (name, bytes) in cases {
        std::fs::write(&snap, &bytes).unwrap();
        let engine = open(dir.path(), &clock);
        assert_eq!(engine.loaded_from(), "graph store", "{name}");
        assert_eq!(dump(&engine), want, "{name}");
        drop(engine);
        assert_ne!(std::fs::read(&snap).unwrap(), bytes, "{name}: rewritten");
        assert_eq!(open(dir.path(), &clock).loaded_from(), "snapshot", "{name}");
    }
}
