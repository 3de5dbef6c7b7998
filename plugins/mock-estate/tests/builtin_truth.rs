//! The built-in rules against the mock estate's ground truth: every
//! resource planted as waste is found, and no resource planted as in use is
//! reported as waste, at the first scan and at a later one.

#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use svc_engine::heuristics::builtin;
use svc_engine::{Graph, Interner};
use svc_mock_estate::{MockEstate, SCAN_BATCH, epoch_time};

fn check(seed: u64, scale: usize, epoch: u64) {
    let interner = Arc::new(Interner::new());
    let estate = MockEstate::new(seed, scale);
    let (nodes, edges) = estate.generate(&interner, epoch, SCAN_BATCH);
    let mut g = Graph::new(interner.clone());
    g.ingest_nodes(&nodes, 1, 1);
    g.ingest_edges(&edges, 1, 1);
    g.rebuild_adjacency(1);
    let out = builtin::run(&g, 1, epoch_time(epoch), &Default::default());
    let flagged: BTreeMap<String, String> = out
        .findings
        .iter()
        .filter(|f| f.is_waste)
        .map(|f| (g.crn(f.node), f.rule.to_string()))
        .collect();
    let (truth, total) = estate.waste_truth(epoch);
    let truth: BTreeSet<String> = truth.into_iter().collect();
    let missed: Vec<&String> = truth.iter().filter(|c| !flagged.contains_key(*c)).collect();
    let false_positives: Vec<(&String, &String)> = flagged.iter().filter(|(c, _)| !truth.contains(*c)).collect();
    assert!(
        truth.len() > total / 10,
        "the estate plants waste: {} of {total}",
        truth.len()
    );
    assert!(
        missed.is_empty(),
        "seed {seed} epoch {epoch}: {} of {} planted waste missed, e.g. {:?}",
        missed.len(),
        truth.len(),
        &missed[..missed.len().min(8)]
    );
    assert!(
        false_positives.is_empty(),
        "seed {seed} epoch {epoch}: {} in-use resources flagged, e.g. {:?}",
        false_positives.len(),
        &false_positives[..false_positives.len().min(8)]
    );
    // Every flagged resource has a reason a person can read, and savings.
    for f in out.findings.iter().filter(|f| f.is_waste) {
        assert!(f.reason.len() > 10 && f.risk_score >= 80, "{f:?}");
        assert!(f.projected_savings_usd_mo.is_finite() && f.projected_savings_usd_mo >= 0.0);
    }
    // Resources tagged svc:ignore are kept out, not flagged.
    assert!(!out.ignored.is_empty());
}

#[test]
fn planted_waste_is_found_without_false_positives() {
    check(42, 20_000, 0);
}

#[test]
fn later_scans_and_other_seeds_agree_with_the_truth() {
    check(7, 8_000, 30);
    check(1234, 8_000, 200);
}
