//! The mock estate through the engine's ingest path: determinism, CRNs,
//! relations, providers, waste share, churn between epochs and scale.

#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::Arc;

use svc_engine::crn::Crn;
use svc_engine::graph::{EdgeBatch, IngestStats, NodeBatch};
use svc_engine::props::ValueRef;
use svc_engine::relation::map_relation;
use svc_engine::scan::{CollectSink, ScanContext, Source};
use svc_engine::{Graph, Interner, Relation};
use svc_mock_estate::{MockEstate, PROVIDERS, SCAN_BATCH, epoch_time};

fn now(epoch: u64) -> u64 {
    epoch_time(epoch) * 1_000_000
}

struct Scanned {
    graph: Graph,
    nodes: IngestStats,
    edges: IngestStats,
    node_count: usize,
    edge_count: usize,
}

/// Generates `epoch` and ingests it into `graph` as scan `epoch + 1`.
fn scan_into(mut graph: Graph, estate: &MockEstate, epoch: u64) -> Scanned {
    let (nodes, edges) = estate.generate(graph.interner(), epoch, SCAN_BATCH);
    let node_count = nodes.iter().map(NodeBatch::len).sum();
    let edge_count = edges.iter().map(EdgeBatch::len).sum();
    let scan = epoch as u32 + 1;
    let n = graph.ingest_nodes(&nodes, now(epoch), scan);
    let e = graph.ingest_edges(&edges, now(epoch), scan);
    Scanned {
        graph,
        nodes: n,
        edges: e,
        node_count,
        edge_count,
    }
}

fn scan(estate: &MockEstate, epoch: u64) -> Scanned {
    scan_into(Graph::new(Arc::new(Interner::new())), estate, epoch)
}

/// Every visible node as `(crn, state, cost, properties)`, sorted.
fn snapshot(g: &Graph, at: u64) -> Vec<(String, String, u32, String)> {
    let i = g.interner();
    let mut out: Vec<_> = g
        .nodes()
        .filter(|n| n.is_visible(at))
        .map(|n| {
            let props: Vec<String> = n.props().map(|(k, v)| format!("{}={v:?}", i.resolve(k))).collect();
            (
                n.crn(),
                i.resolve(n.state()).to_string(),
                n.cost_usd_mo().to_bits(),
                props.join(","),
            )
        })
        .collect();
    out.sort();
    out
}

#[test]
fn same_seed_scale_and_epoch_give_identical_batches() {
    let a = MockEstate::new(7, 1500);
    let b = MockEstate::new(7, 1500);
    for epoch in [0, 4] {
        let (ia, ib) = (Interner::new(), Interner::new());
        let (na, ea) = a.generate(&ia, epoch, 500);
        let (nb, eb) = b.generate(&ib, epoch, 500);
        let shape = |n: &[NodeBatch], e: &[EdgeBatch]| {
            (
                n.iter().map(|b| (b.len(), b.buffer_len())).collect::<Vec<_>>(),
                e.iter().map(EdgeBatch::len).collect::<Vec<_>>(),
            )
        };
        assert_eq!(shape(&na, &ea), shape(&nb, &eb));
        assert_eq!(
            ia.strings_from(0),
            ib.strings_from(0),
            "symbols interned in the same order"
        );
        let (ga, gb) = (scan(&a, epoch), scan(&b, epoch));
        assert_eq!(ga.node_count, gb.node_count);
        assert_eq!(snapshot(&ga.graph, now(epoch)), snapshot(&gb.graph, now(epoch)));
    }
    let other = scan(&MockEstate::new(8, 1500), 0);
    assert_ne!(snapshot(&other.graph, now(0)), snapshot(&scan(&a, 0).graph, now(0)));
}

#[test]
fn crns_parse_and_round_trip() {
    let s = scan(&MockEstate::new(1, 3000), 0);
    assert_eq!(s.nodes.inserted, s.node_count, "every CRN is unique");
    let mut colon_ids = 0;
    for n in s.graph.nodes() {
        let crn = n.crn();
        let parsed = Crn::parse(&crn).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(parsed.to_string(), crn);
        assert_eq!(parsed.id, n.physical_id());
        assert_eq!(parsed.node_type(), &*s.graph.interner().resolve(n.ty()));
        colon_ids += usize::from(parsed.id.contains(':'));
    }
    assert!(colon_ids > 50, "ARN-style ids with colons: {colon_ids}");
    let (waste, _) = MockEstate::new(1, 3000).waste_truth(0);
    for crn in &waste {
        let c = Crn::parse(crn).unwrap_or_else(|e| panic!("{e}"));
        assert!(s.graph.find(&c).is_some(), "waste {crn} is in the graph");
    }
}

#[test]
fn every_relation_and_provider_appears() {
    let s = scan(&MockEstate::new(3, 300), 0);
    let i = s.graph.interner();
    let relation = i.intern("relation");
    let mut seen = BTreeSet::new();
    for e in s.graph.edges() {
        let Some(ValueRef::Str(raw)) = e.props().get(relation) else {
            panic!("edge without relation")
        };
        let mapped = map_relation(raw);
        assert!(mapped.known, "{raw}");
        assert_eq!(mapped.relation, e.relation(), "{raw}");
        seen.insert(e.relation());
    }
    assert_eq!(seen.into_iter().collect::<Vec<_>>(), Relation::ALL.to_vec());
    let providers: BTreeSet<String> = s.graph.nodes().map(|n| i.resolve(n.provider()).to_string()).collect();
    let want: BTreeSet<String> = PROVIDERS.iter().map(|p| p.to_string()).collect();
    assert_eq!(providers, want);
}

#[test]
fn about_a_fifth_is_waste() {
    let estate = MockEstate::new(11, 1000);
    for epoch in [0, 10] {
        let (waste, total) = estate.waste_truth(epoch);
        let share = waste.len() as f64 / total as f64;
        assert!(
            (0.15..=0.25).contains(&share),
            "epoch {epoch}: {} of {total} = {share:.3}",
            waste.len()
        );
        assert_eq!(waste.len(), waste.iter().collect::<HashSet<_>>().len());
    }
}

#[test]
fn consecutive_epochs_add_change_and_remove_a_little() {
    let estate = MockEstate::new(5, 2000);
    let first = scan(&estate, 0);
    assert_eq!(first.nodes.inserted, first.node_count);
    let mut second = scan_into(first.graph, &estate, 1);
    let st = second.nodes;
    let syms: Vec<_> = PROVIDERS.iter().map(|p| second.graph.interner().intern(p)).collect();
    let (retired, _) = second.graph.retire_unseen(&syms, now(1), 2);
    let total = st.total() as f64;
    assert!(
        st.inserted > 0 && st.changed > 0 && retired > 0,
        "{st:?}, retired {retired}"
    );
    assert_eq!(st.revived, 0);
    assert!(st.unchanged as f64 > 0.93 * total, "{st:?}");
    assert!((st.changed as f64) < 0.05 * total, "{st:?}");
    assert!((retired as f64) < 0.03 * total, "retired {retired} of {total}");
}

#[test]
fn no_dangling_edges() {
    let estate = MockEstate::new(9, 2000);
    for epoch in [0, 3] {
        let s = scan(&estate, epoch);
        assert_eq!(s.edges.dangling, 0, "epoch {epoch}");
        assert_eq!(s.edges.inserted, s.edge_count, "epoch {epoch}: duplicate edges");
        assert_eq!(s.nodes.inserted, s.node_count, "epoch {epoch}: duplicate nodes");
    }
}

#[test]
fn scale_sets_the_size() {
    for n in [50usize, 300, 10_000] {
        let s = scan(&MockEstate::new(2, n), 0);
        let got = s.node_count as f64;
        assert!(
            (0.8 * n as f64..=1.2 * n as f64).contains(&got),
            "scale {n}: {got} nodes"
        );
    }
    let empty = MockEstate::new(2, 0);
    assert_eq!(empty.generate(&Interner::new(), 0, SCAN_BATCH).0.len(), 0);
}

#[test]
fn batches_respect_the_batch_size() {
    let estate = MockEstate::new(4, 700);
    let interner = Interner::new();
    let (small_n, small_e) = estate.generate(&interner, 2, 64);
    let (big_n, big_e) = estate.generate(&interner, 2, SCAN_BATCH);
    assert!(small_n.iter().all(|b| !b.is_empty() && b.len() <= 64));
    assert!(small_e.iter().all(|b| !b.is_empty() && b.len() <= 64));
    let count = |n: &[NodeBatch]| n.iter().map(NodeBatch::len).sum::<usize>();
    let ecount = |e: &[EdgeBatch]| e.iter().map(EdgeBatch::len).sum::<usize>();
    assert_eq!(count(&small_n), count(&big_n));
    assert_eq!(ecount(&small_e), ecount(&big_e));
}

#[test]
fn scan_n_shows_epoch_n_minus_one() {
    let mut estate = MockEstate::new(6, 400);
    assert_eq!(estate.name(), "mock");
    assert_eq!(estate.providers(), PROVIDERS.map(String::from).to_vec());
    let interner = Interner::new();
    let config = BTreeMap::new();
    let mut sink = CollectSink::default();
    let ctx = ScanContext {
        interner: &interner,
        scan_seq: 3,
        now_us: 0,
        config: &config,
        timeout: None,
        concurrent: 1,
        graph: None,
    };
    estate.scan(&ctx, &mut sink).expect("mock scans never fail");
    let (nodes, edges) = estate.generate(&interner, 2, SCAN_BATCH);
    let lens = |n: &[NodeBatch]| n.iter().map(|b| (b.len(), b.buffer_len())).collect::<Vec<_>>();
    assert_eq!(lens(&sink.nodes), lens(&nodes));
    assert_eq!(
        sink.edges.iter().map(EdgeBatch::len).sum::<usize>(),
        edges.iter().map(EdgeBatch::len).sum::<usize>()
    );
}

#[test]
fn large_scale_generates() {
    let estate = MockEstate::new(42, 100_000);
    let (nodes, edges) = estate.generate(&Interner::new(), 0, SCAN_BATCH);
    let n: usize = nodes.iter().map(NodeBatch::len).sum();
    let e: usize = edges.iter().map(EdgeBatch::len).sum();
    assert!((80_000..=120_000).contains(&n), "{n} nodes");
    assert!(e > n, "{e} edges for {n} nodes");
}

/// Nodes, edges and node batch bytes of `estate` at epoch 0.
fn sizes(estate: &MockEstate) -> (usize, usize, usize) {
    let (nodes, edges) = estate.generate(&Interner::new(), 0, SCAN_BATCH);
    (
        nodes.iter().map(NodeBatch::len).sum(),
        edges.iter().map(EdgeBatch::len).sum(),
        nodes.iter().map(NodeBatch::buffer_len).sum(),
    )
}

/// The estate of a seed never changes with a dependency upgrade or a
/// refactoring; a deliberate change to the generator updates these figures
/// (the bytes, also a change to the tag and property encoding).
#[test]
fn estate_of_a_seed_is_pinned() {
    let estate = MockEstate::new(1, 300);
    assert_eq!(sizes(&estate), (300, 514, 47_014));
    let (waste, total) = estate.waste_truth(0);
    assert_eq!(total, 300);
    assert_eq!(
        waste[0],
        "crn:svc:aws:ap-southeast-2:ec2:eip:424467945387:eipalloc-044f80b9418d2f419"
    );
}

#[test]
fn the_linker_reads_again_only_what_changed_and_finds_what_a_fresh_run_finds() {
    use svc_engine::analysis::linker;
    let estate = MockEstate::new(11, 20_000);
    let mut scanned = scan(&estate, 0);
    let mut cache = linker::Cache::default();
    let first = linker::find_with(&mut cache, &scanned.graph, now(0));
    assert!(!first.is_empty());
    assert_eq!(first, linker::find(&scanned.graph, now(0)));
    let visible = scanned.graph.node_rows() as u64;
    assert_eq!(cache.read, visible, "a first run reads every node");
    for epoch in 1..4 {
        scanned = scan_into(scanned.graph, &estate, epoch);
        let syms: Vec<_> = PROVIDERS.iter().map(|p| scanned.graph.interner().intern(p)).collect();
        scanned.graph.retire_unseen(&syms, now(epoch), epoch as u32 + 1);
        let kept = linker::find_with(&mut cache, &scanned.graph, now(epoch));
        assert_eq!(kept, linker::find(&scanned.graph, now(epoch)), "epoch {epoch}");
        let changed = (scanned.nodes.inserted + scanned.nodes.changed + scanned.nodes.revived) as u64;
        assert_eq!(
            cache.read, changed,
            "epoch {epoch}: only new and changed nodes are read"
        );
    }
}

/// Every built-in finding and `svc:ignore` answer of a pass, comparable.
fn builtin_answers(
    findings: impl Iterator<Item = svc_engine::heuristics::Finding>,
    ignored: impl Iterator<Item = (svc_engine::NodeId, String)>,
) -> (BTreeSet<String>, BTreeSet<String>) {
    (
        findings
            .map(|f| {
                format!(
                    "{:?} {} {} {} {}",
                    f.node, f.rule, f.reason, f.projected_savings_usd_mo, f.risk_score
                )
            })
            .collect(),
        ignored.map(|(id, why)| format!("{id:?} {why}")).collect(),
    )
}

#[test]
fn kept_rule_answers_equal_a_fresh_pass_over_epochs() {
    use svc_engine::heuristics::builtin::{self, Cache};
    let estate = MockEstate::new(5, 20_000);
    let mut scanned = scan(&estate, 0);
    scanned.graph.rebuild_adjacency(now(0));
    let mut cache = Cache::default();
    let selection = builtin::Selection::default();
    let changes = scanned.graph.take_row_changes();
    let first = cache.run(&scanned.graph, &changes, now(0), epoch_time(0), &selection);
    assert!(first.full);
    let mut kept_total = 0;
    // 30 hourly epochs: a day boundary passes for every age the rules read.
    for epoch in 0..30u64 {
        if epoch > 0 {
            scanned = scan_into(scanned.graph, &estate, epoch);
            let syms: Vec<_> = PROVIDERS.iter().map(|p| scanned.graph.interner().intern(p)).collect();
            scanned.graph.retire_unseen(&syms, now(epoch), epoch as u32 + 1);
            scanned.graph.rebuild_adjacency(now(epoch));
        }
        let pass = if epoch > 0 {
            let changes = scanned.graph.take_row_changes();
            cache.run(&scanned.graph, &changes, now(epoch), epoch_time(epoch), &selection)
        } else {
            first_pass_again(&mut cache, &mut scanned.graph, &selection)
        };
        let fresh = builtin::run(&scanned.graph, now(epoch), epoch_time(epoch), &selection);
        assert!(!fresh.findings.is_empty());
        let want = builtin_answers(
            fresh.findings.into_iter(),
            fresh.ignored.into_iter().map(|(id, why)| (id, why.describe())),
        );
        let got = builtin_answers(
            cache.findings().cloned(),
            cache.ignored().map(|(id, why)| (id, why.describe())),
        );
        assert_eq!(got.0.len(), want.0.len(), "epoch {epoch}: number of findings");
        assert_eq!(got, want, "epoch {epoch}");
        assert_eq!(pass.findings as usize, want.0.len());
        if epoch > 0 {
            assert!(!pass.full, "epoch {epoch}");
            assert!(pass.evaluated > 0, "epoch {epoch}: new and changed nodes are evaluated");
            assert!(
                pass.kept > pass.evaluated,
                "epoch {epoch}: most answers are kept ({} kept, {} evaluated)",
                pass.kept,
                pass.evaluated
            );
            kept_total += pass.kept;
        }
    }
    assert!(kept_total > 0);
}

/// A second pass over an unchanged graph at the same times keeps every answer.
fn first_pass_again(
    cache: &mut svc_engine::heuristics::builtin::Cache,
    g: &mut Graph,
    selection: &svc_engine::heuristics::builtin::Selection,
) -> svc_engine::heuristics::builtin::cache::Pass {
    let changes = g.take_row_changes();
    let pass = cache.run(g, &changes, now(0) + 1, epoch_time(0), selection);
    assert!(!pass.full);
    assert_eq!(pass.evaluated, 0, "nothing changed, nothing is evaluated again");
    assert!(pass.touched.is_empty());
    pass
}

/// A larger estate, laid out from units planned many at a time, and seen
/// at a later epoch: pinned as well.
#[test]
fn larger_estate_of_a_seed_is_pinned() {
    let estate = MockEstate::new(3, 25_000);
    assert_eq!(sizes(&estate), (24_941, 45_383, 3_958_322));
    let (waste, total) = estate.waste_truth(5);
    assert_eq!((waste.len(), total), (4_552, 24_938));
    assert_eq!(
        waste.last().map(String::as_str),
        Some("crn:svc:kubernetes:westeurope:core:service:staging-aks-westeurope-be:payments/legacy-lb")
    );
}
