//! The adjacency index after random changes, patched or built from
//! scratch, is the index a full build gives.

use std::cell::Cell;
use std::sync::Arc;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

use super::*;
use crate::crn::Crn;
use crate::fixture::Estate;
use crate::intern::Interner;

const NODES: u8 = 40;

#[derive(Clone, Debug)]
enum Op {
    /// Reports these nodes (inserted, changed or revived).
    Nodes(Vec<u8>, bool),
    /// Reports these edges `(src, dst, relation)`.
    Edges(Vec<(u8, u8, u8)>),
    /// Infers these edges.
    Inferred(Vec<(u8, u8)>),
    RetireNode(u8),
    RetireEdge(u16),
    /// Loads a node as visible until `d` after now.
    ExpireNode(u8, u64),
    /// Loads an edge as visible until `d` after now.
    ExpireEdge(u16, u64),
    /// Moves time on by `d` and rebuilds.
    Rebuild(u64),
    /// Moves time back and rebuilds.
    Back,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (prop::collection::vec(0..NODES, 1..6), any::<bool>()).prop_map(|(n, s)| Op::Nodes(n, s)),
        3 => prop::collection::vec((0..NODES, 0..NODES, 0..3u8), 1..8).prop_map(Op::Edges),
        1 => prop::collection::vec((0..NODES, 0..NODES), 1..4).prop_map(Op::Inferred),
        2 => (0..NODES).prop_map(Op::RetireNode),
        2 => any::<u16>().prop_map(Op::RetireEdge),
        1 => (0..NODES, 1..6u64).prop_map(|(i, d)| Op::ExpireNode(i, d)),
        1 => (any::<u16>(), 1..6u64).prop_map(|(i, d)| Op::ExpireEdge(i, d)),
        4 => (0..3u64).prop_map(Op::Rebuild),
        1 => Just(Op::Back),
    ]
}

fn crn(i: u8) -> String {
    format!("crn:svc:aws:us-east-1:ec2:instance:123456789012:i-{i}")
}

fn node_id(g: &Graph, i: u8) -> Option<NodeId> {
    g.find(&Crn::parse(&crn(i)).ok()?)
}

fn relation(r: u8) -> Relation {
    [Relation::AttachedTo, Relation::SecuredBy, Relation::Contains][usize::from(r) % 3]
}

/// The `i`-th edge row of the graph (modulo the number of rows).
fn edge_row(g: &Graph, i: u16) -> Option<EdgeId> {
    let all: Vec<EdgeId> = g
        .edges
        .iter()
        .enumerate()
        .flat_map(|(s, shard)| (0..shard.len() as u32).map(move |r| EdgeId::new(s, r)))
        .collect();
    (!all.is_empty()).then(|| all[usize::from(i) % all.len()])
}

fn arrays(a: &Adjacency) -> [&Vec<u32>; 7] {
    [
        &a.base,
        &a.out_off,
        &a.out_edge,
        &a.out_node,
        &a.in_off,
        &a.in_edge,
        &a.in_node,
    ]
}

/// Applies `ops` to a small graph, checking the index after every rebuild
/// against a full build; returns the graph's build counts.
fn run(ops: &[Op]) -> Result<Builds, TestCaseError> {
    let i = Arc::new(Interner::new());
    let mut g = Graph::new(i.clone());
    let mut e = Estate::new(i.clone());
    let (mut now, mut scan) = (100u64, 1u32);
    for n in 0..NODES / 2 {
        e.node(&crn(n), "running", 1.0);
        e.edge(&crn(n), &crn((n + 1) % (NODES / 2)), Relation::AttachedTo);
    }
    e.scan_into(&mut g, now, scan);
    g.rebuild_adjacency(now);
    for op in ops {
        match op {
            Op::Nodes(ns, stopped) => {
                scan += 1;
                for &n in ns {
                    e.node(&crn(n), if *stopped { "stopped" } else { "running" }, 1.0);
                }
                e.scan_into(&mut g, now, scan);
            }
            Op::Edges(es) => {
                scan += 1;
                for &(a, b, r) in es {
                    e.edge(&crn(a), &crn(b), relation(r));
                }
                e.scan_into(&mut g, now, scan);
            }
            Op::Inferred(es) => {
                scan += 1;
                let inferred: Vec<InferredEdge> = es
                    .iter()
                    .filter_map(|&(a, b)| {
                        Some(InferredEdge {
                            src: node_id(&g, a)?,
                            dst: node_id(&g, b)?,
                            rel: Relation::FlowsTo,
                            props: Vec::new(),
                        })
                    })
                    .collect();
                g.upsert_inferred_edges(&inferred, now, scan);
            }
            Op::RetireNode(n) => {
                if let Some(id) = node_id(&g, *n) {
                    g.nodes[id.shard()].retire(id.row(), now);
                }
            }
            Op::RetireEdge(k) => {
                if let Some(id) = edge_row(&g, *k) {
                    g.edges[id.shard()].retire(id.row(), now);
                }
            }
            Op::ExpireNode(n, d) => {
                if let Some(id) = node_id(&g, *n) {
                    let mut row = g.nodes[id.shard()].row(id.row());
                    row.valid_to = now + d;
                    g.load_node(&row);
                }
            }
            Op::ExpireEdge(k, d) => {
                if let Some(id) = edge_row(&g, *k) {
                    let (shard, r) = (&g.edges[id.shard()], id.row() as usize);
                    let v = EdgeVersion {
                        src: g.crn(g.node_id(shard.src[r])),
                        dst: g.crn(g.node_id(shard.dst[r])),
                        relation: shard.rel[r],
                        inferred: shard.inferred.get(r),
                        valid_from: shard.valid_from[r],
                        valid_to: now + d,
                        props: Vec::new(),
                    };
                    prop_assert_eq!(g.load_edges(&[v]), 0);
                }
            }
            Op::Rebuild(_) | Op::Back => {
                now = match op {
                    Op::Rebuild(d) => now + d,
                    _ => now - 3,
                };
                g.rebuild_adjacency(now);
                let full = g.full_adjacency(g.dense_base(), now);
                prop_assert_eq!(arrays(&g.adj), arrays(&full), "{:?} at {}", op, now);
                prop_assert_eq!(&g.adj.out_rel, &full.out_rel, "{:?} at {}", op, now);
                prop_assert_eq!(&g.adj.in_rel, &full.in_rel, "{:?} at {}", op, now);
                prop_assert!(g.adj.same_index(&full));
            }
        }
    }
    Ok(g.adjacency().builds())
}

#[test]
fn patched_adjacency_equals_a_full_build() {
    let mut runner = TestRunner::new(Config {
        cases: 256,
        ..Config::default()
    });
    let (patched, full) = (Cell::new(0), Cell::new(0));
    let result = runner.run(&prop::collection::vec(op(), 1..60), |ops| {
        let b = run(&ops)?;
        patched.set(patched.get() + b.patched);
        // The first build is always full.
        full.set(full.get() + b.full - 1);
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    // Both ways were taken, many times: patches after small changes, full
    // builds when time went back or past a row's expiry.
    assert!(patched.get() > 1000, "{} patched", patched.get());
    assert!(full.get() > 50, "{} full", full.get());
}
