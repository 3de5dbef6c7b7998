//! The `engine.pattern` pass on small hand-built estates: alike resources
//! share a signature and anything structural that differs (an edge kind, a
//! neighbour's state) separates them; signatures do not depend on row
//! numbers, insertion order or symbol numbering; outliers are found in both
//! directions; identical waste becomes one grouped finding with the right
//! savings.

#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

use std::sync::Arc;

use proptest::prelude::*;
use svc_engine::analysis::pattern::{self, Direction, Options, PatternReport};
use svc_engine::graph::{EdgeBatch, NodeBatch, NodeInput, NodeKeyRef, Verdict};
use svc_engine::relation::Relation::{self, AttachedTo, SecuredBy, Uses};
use svc_engine::{Crn, Graph, Interner, NodeId};

const NOW: u64 = 1_767_225_600_000_000;

#[derive(Default)]
struct Estate {
    nodes: Vec<(String, &'static str, &'static str, f32)>,
    edges: Vec<(usize, Relation, usize)>,
}

impl Estate {
    /// Adds a node; returns its index.
    fn node(&mut self, name: &str, ty: &'static str, state: &'static str, cost: f32) -> usize {
        self.nodes.push((name.to_owned(), ty, state, cost));
        self.nodes.len() - 1
    }

    fn edge(&mut self, a: usize, rel: Relation, b: usize) {
        self.edges.push((a, rel, b));
    }

    /// Ingests nodes in `order` and edges in `edge_order` into a graph whose
    /// interner already holds `junk` symbols; ids are `prefix` + name.
    fn build_with(&self, order: &[usize], edge_order: &[usize], junk: usize, prefix: &str) -> (Graph, Vec<NodeId>) {
        let interner = Arc::new(Interner::new());
        for j in 0..junk {
            interner.intern(&format!("junk-{j}"));
        }
        let crns: Vec<Crn> = self
            .nodes
            .iter()
            .map(|(name, ty, _, _)| {
                let (service, kind) = ty.split_once(':').expect("service:kind");
                Crn::from_parts(
                    "aws",
                    "us-east-1",
                    service,
                    kind,
                    "123456789012",
                    &format!("{prefix}{name}"),
                )
            })
            .collect();
        let mut nodes = NodeBatch::default();
        for &i in order {
            let (_, ty, state, cost) = &self.nodes[i];
            let input = NodeInput {
                key: NodeKeyRef::intern(&interner, &crns[i]),
                ty: interner.intern(ty),
                state: interner.intern(state),
                cost_usd_mo: *cost,
                creation_ts: 1_700_000_000,
            };
            nodes.push(input, &[], |_| {});
        }
        let mut edges = EdgeBatch::default();
        for &k in edge_order {
            let (a, rel, b) = self.edges[k];
            edges.push(
                NodeKeyRef::intern(&interner, &crns[a]),
                NodeKeyRef::intern(&interner, &crns[b]),
                rel,
                |_| {},
            );
        }
        let mut g = Graph::new(interner);
        g.ingest_nodes(&[nodes], NOW - 1, 1);
        g.ingest_edges(&[edges], NOW - 1, 1);
        g.rebuild_adjacency(NOW);
        let ids = crns.iter().map(|c| g.find(c).expect("ingested")).collect();
        (g, ids)
    }

    fn build(&self) -> (Graph, Vec<NodeId>) {
        let order: Vec<usize> = (0..self.nodes.len()).collect();
        let edge_order: Vec<usize> = (0..self.edges.len()).collect();
        self.build_with(&order, &edge_order, 0, "")
    }
}

fn sigs(g: &Graph, ids: &[NodeId]) -> Vec<Option<u64>> {
    let s = pattern::signatures(g, NOW, pattern::ROUNDS);
    ids.iter().map(|&id| s.get(g, id)).collect()
}

fn waste(g: &mut Graph, id: NodeId, rule: &str) {
    let rule = g.interner().intern(rule);
    let v = Verdict {
        is_waste: true,
        reason: "flagged",
        rule: Some(rule),
    };
    g.set_verdict(id, &v, NOW);
}

fn run(g: &Graph) -> PatternReport {
    pattern::run(g, NOW, &|_| None)
}

/// An instance with an attached volume, behind a security group.
fn app(e: &mut Estate, name: &str, sg: usize) -> (usize, usize) {
    let i = e.node(&format!("i-{name}"), "ec2:instance", "running", 70.0);
    let v = e.node(&format!("vol-{name}"), "ec2:volume", "in-use", 8.0);
    e.edge(v, AttachedTo, i);
    e.edge(i, SecuredBy, sg);
    (i, v)
}

#[test]
fn alike_nodes_share_a_signature_and_structure_separates_them() {
    let mut e = Estate::default();
    let sg = e.node("sg-1", "ec2:security-group", "active", 0.0);
    let a = app(&mut e, "a", sg);
    let b = app(&mut e, "b", sg);
    let c = app(&mut e, "c", sg);
    // The volume is used, not attached: another edge kind.
    let d = e.node("i-d", "ec2:instance", "running", 70.0);
    let dv = e.node("vol-d", "ec2:volume", "in-use", 8.0);
    e.edge(dv, Uses, d);
    e.edge(d, SecuredBy, sg);
    // The same shape with a volume in another state.
    let f = e.node("i-f", "ec2:instance", "running", 70.0);
    let fv = e.node("vol-f", "ec2:volume", "error", 8.0);
    e.edge(fv, AttachedTo, f);
    e.edge(f, SecuredBy, sg);
    // A stopped one: its own state differs.
    let s = app(&mut e, "s", sg);
    e.nodes[s.0].2 = "stopped";

    let (g, ids) = e.build();
    let h = sigs(&g, &ids);
    assert!(h.iter().all(Option::is_some), "every visible node is signed");
    assert_eq!(h[a.0], h[b.0]);
    assert_eq!(h[b.0], h[c.0]);
    assert_eq!(h[a.1], h[c.1], "alike volumes");
    assert_ne!(h[a.0], h[d], "a different edge kind changes the signature");
    assert_ne!(h[a.1], h[dv]);
    assert_ne!(h[a.0], h[f], "a neighbour's state changes the signature");
    assert_ne!(h[a.0], h[s.0], "the node's own state changes the signature");
    // Two hops: the volume of the stopped instance differs from the others'.
    assert_ne!(h[a.1], h[s.1]);
    assert_ne!(h[a.0], h[a.1], "the type is part of it");

    // Stable: the same graph twice, and the same estate built again.
    assert_eq!(h, sigs(&g, &ids));
    let (g2, ids2) = e.build();
    assert_eq!(h, sigs(&g2, &ids2));

    // With no rounds a signature is type and state alone: every volume in
    // use is alike, whatever it is wired to.
    let zero = pattern::signatures(&g, NOW, 0);
    assert_eq!(zero.get(&g, ids[a.1]), zero.get(&g, ids[s.1]));
    assert_eq!(zero.get(&g, ids[a.1]), zero.get(&g, ids[dv]));

    let report = run(&g);
    assert_eq!(report.signatures, ids.len() as u64);
    // Groups: {i-a, i-b, i-c} and {vol-a, vol-b, vol-c}.
    assert_eq!(report.groups, 2, "{report:?}");
    assert_eq!(report.grouped_nodes, 6);
    assert_eq!(report.outliers_total, 0);
    assert_eq!(report.grouped_total, 0);
}

#[test]
fn invisible_nodes_get_no_signature_and_are_not_neighbours() {
    let mut e = Estate::default();
    let sg = e.node("sg-1", "ec2:security-group", "active", 0.0);
    let a = app(&mut e, "a", sg);
    let b = app(&mut e, "b", sg);
    let (mut g, ids) = e.build();
    let before = sigs(&g, &ids);
    assert_eq!(before[a.0], before[b.0]);
    // Scan 2 reports everything but vol-b: it is retired.
    let order: Vec<usize> = (0..e.nodes.len()).filter(|&i| i != b.1).collect();
    let interner = g.interner().clone();
    let mut batch = NodeBatch::default();
    for &i in &order {
        let (name, ty, state, cost) = &e.nodes[i];
        let (service, kind) = ty.split_once(':').expect("service:kind");
        let crn = Crn::from_parts("aws", "us-east-1", service, kind, "123456789012", name);
        let input = NodeInput {
            key: NodeKeyRef::intern(&interner, &crn),
            ty: interner.intern(ty),
            state: interner.intern(state),
            cost_usd_mo: *cost,
            creation_ts: 1_700_000_000,
        };
        batch.push(input, &[], |_| {});
    }
    let mut edges = EdgeBatch::default();
    for &(x, rel, y) in e.edges.iter().filter(|(x, _, y)| *x != b.1 && *y != b.1) {
        let key = |i: usize| {
            let (name, ty, _, _) = &e.nodes[i];
            let (service, kind) = ty.split_once(':').expect("service:kind");
            Crn::from_parts("aws", "us-east-1", service, kind, "123456789012", name)
        };
        let (cx, cy) = (key(x), key(y));
        edges.push(
            NodeKeyRef::intern(&interner, &cx),
            NodeKeyRef::intern(&interner, &cy),
            rel,
            |_| {},
        );
    }
    g.ingest_nodes(&[batch], NOW, 2);
    g.ingest_edges(&[edges], NOW, 2);
    let aws = interner.intern("aws");
    g.retire_unseen(&[aws], NOW, 2);
    g.rebuild_adjacency(NOW + 1);
    let s = pattern::signatures(&g, NOW + 1, pattern::ROUNDS);
    assert_eq!(s.get(&g, ids[b.1]), None, "a retired node has no signature");
    let (ha, hb) = (s.get(&g, ids[a.0]), s.get(&g, ids[b.0]));
    assert!(ha.is_some() && hb.is_some());
    assert_ne!(ha, hb, "i-b lost its volume");
}

/// Five alike instances and six alike unattached volumes.
fn fleet() -> (Estate, Vec<usize>, Vec<usize>) {
    let mut e = Estate::default();
    let sg = e.node("sg-1", "ec2:security-group", "active", 0.0);
    let instances: Vec<usize> = (0..5)
        .map(|k| {
            let i = e.node(&format!("i-{k}"), "ec2:instance", "running", 70.0);
            e.edge(i, SecuredBy, sg);
            i
        })
        .collect();
    let volumes: Vec<usize> = (0..6)
        .map(|k| e.node(&format!("vol-{k}"), "ec2:volume", "available", 10.0 + k as f32))
        .collect();
    (e, instances, volumes)
}

#[test]
fn outliers_in_both_directions_and_identical_waste_grouped() {
    let (e, instances, volumes) = fleet();
    let (mut g, ids) = e.build();
    // One idle instance among five: waste where its group is not.
    waste(&mut g, ids[instances[2]], "aws-ec2-idle");
    // Five of six unattached volumes flagged by one rule; vol-3 is not.
    for &v in volumes.iter().filter(|&&v| v != volumes[3]) {
        waste(&mut g, ids[v], "aws-ebs-unattached");
    }
    let report = run(&g);
    assert_eq!(report.groups, 2, "{report:?}");
    assert_eq!(report.outliers_total, 2, "{:?}", report.outliers);

    let idle = report
        .outliers
        .iter()
        .find(|o| o.direction == Direction::WasteAmongInUse)
        .expect("the idle instance");
    assert_eq!(idle.node, ids[instances[2]]);
    assert_eq!((idle.group_size, idle.group_waste), (5, 1));
    assert_eq!(
        idle.reason,
        "waste (aws-ec2-idle) while 4 of 5 alike ec2:instance resources are not"
    );
    let kept = report
        .outliers
        .iter()
        .find(|o| o.direction == Direction::InUseAmongWaste)
        .expect("the volume in use");
    assert_eq!(kept.node, ids[volumes[3]]);
    assert_eq!((kept.group_size, kept.group_waste), (6, 5));
    assert_eq!(
        kept.reason,
        "not waste while 5 of 6 alike ec2:volume resources are (all by aws-ebs-unattached); \
         a rule may have missed it"
    );
    let sigs = pattern::signatures(&g, NOW, pattern::ROUNDS);
    assert_eq!(Some(kept.signature), sigs.get(&g, ids[volumes[0]]));

    // The five unattached volumes are one finding: 10 + 11 + 12 + 14 + 15.
    assert_eq!(report.grouped_total, 1);
    let grouped = &report.grouped[0];
    assert_eq!(grouped.rule, "aws-ebs-unattached");
    assert_eq!(grouped.ty, "ec2:volume");
    assert_eq!((grouped.members, grouped.group_size), (5, 6));
    assert!((grouped.savings_usd_mo - 62.0).abs() < 1e-9, "{grouped:?}");
    assert_eq!(
        grouped.summary,
        "5 alike ec2:volume (of 6), all aws-ebs-unattached: $62.00/mo"
    );
    // Samples: largest savings first, at most five.
    let want: Vec<NodeId> = [5, 4, 2, 1, 0].iter().map(|&k| ids[volumes[k]]).collect();
    assert_eq!(grouped.samples, want);

    // Savings priced by the heuristics phase win over the reported cost.
    let priced = pattern::run(&g, NOW, &|_| Some(1.5));
    assert!((priced.grouped[0].savings_usd_mo - 7.5).abs() < 1e-9);
}

#[test]
fn no_outliers_without_a_clear_majority_and_mixed_rules_are_not_grouped() {
    let (e, instances, volumes) = fleet();
    let (mut g, ids) = e.build();
    // Two of five instances: 60% in use is not a clear majority.
    waste(&mut g, ids[instances[0]], "aws-ec2-idle");
    waste(&mut g, ids[instances[1]], "aws-ec2-idle");
    // All six volumes waste, by two rules: no outlier, no grouped finding.
    for (k, &v) in volumes.iter().enumerate() {
        waste(
            &mut g,
            ids[v],
            if k % 2 == 0 {
                "aws-ebs-unattached"
            } else {
                "aws-ebs-old"
            },
        );
    }
    let report = run(&g);
    assert_eq!(report.outliers_total, 0, "{:?}", report.outliers);
    assert_eq!(report.grouped_total, 0, "{:?}", report.grouped);
    // With a 60% majority the two idle instances are outliers.
    let loose = Options {
        majority: 0.6,
        ..Options::default()
    };
    let report = pattern::run_with(&g, NOW, &loose, &|_| None);
    assert_eq!(report.outliers_total, 2);
    // A group needs three members: two alike volumes are not one.
    let small = Options {
        min_group: 7,
        ..Options::default()
    };
    assert_eq!(pattern::run_with(&g, NOW, &small, &|_| None).groups, 0);
}

#[test]
fn identical_waste_across_a_whole_group_is_one_finding() {
    let (e, _, volumes) = fleet();
    let (mut g, ids) = e.build();
    for &v in &volumes {
        waste(&mut g, ids[v], "aws-ebs-unattached");
    }
    let report = run(&g);
    assert_eq!(report.outliers_total, 0);
    assert_eq!(report.grouped.len(), 1);
    let f = &report.grouped[0];
    assert_eq!((f.members, f.group_size), (6, 6));
    assert_eq!(f.summary, "6 alike ec2:volume, all aws-ebs-unattached: $75.00/mo");
    assert_eq!(f.samples.len(), pattern::SAMPLES);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// The same graph ingested in another order, under other physical ids
    /// (so other shards and rows) and with other symbol numbers, gives
    /// every node the same signature.
    #[test]
    fn signatures_do_not_depend_on_numbering_or_order(
        nodes in prop::collection::vec((0usize..3, 0usize..2), 1..40),
        raw_edges in prop::collection::vec((0usize..1000, 0usize..7, 0usize..1000), 0..80),
        seed in any::<u64>(),
        junk in 0usize..50,
    ) {
        const TYPES: [&str; 3] = ["ec2:instance", "ec2:volume", "rds:db"];
        const STATES: [&str; 2] = ["running", "stopped"];
        let mut e = Estate::default();
        for (k, (t, s)) in nodes.iter().enumerate() {
            e.node(&format!("n{k}"), TYPES[*t], STATES[*s], 1.0);
        }
        let n = nodes.len();
        for (a, r, b) in raw_edges {
            e.edge(a % n, Relation::ALL[r], b % n);
        }
        let (g1, ids1) = e.build();
        // A permutation from the seed (xorshift), for nodes and edges.
        let mut x = seed | 1;
        let mut next = move || { x ^= x << 13; x ^= x >> 7; x ^= x << 17; x };
        let mut order: Vec<usize> = (0..n).collect();
        let mut edge_order: Vec<usize> = (0..e.edges.len()).collect();
        for v in [&mut order, &mut edge_order] {
            for i in (1..v.len()).rev() {
                let j = (next() % (i as u64 + 1)) as usize;
                v.swap(i, j);
            }
        }
        let (g2, ids2) = e.build_with(&order, &edge_order, junk, "renamed-");
        prop_assert_eq!(sigs(&g1, &ids1), sigs(&g2, &ids2));
        let (r1, r2) = (run(&g1), run(&g2));
        prop_assert_eq!((r1.groups, r1.grouped_nodes, r1.distinct_signatures),
                        (r2.groups, r2.grouped_nodes, r2.distinct_signatures));
    }
}
