use std::sync::Arc;

use super::*;
use crate::heuristics::FindingSet;
use svc_graph::graph::{NodeBatch, NodeInput, NodeKeyRef};
use svc_graph::{Crn, Interner};

fn totals(interner: &Interner, scan_seq: u64, cost: f64) -> ScanTotals {
    let mut t = ScanTotals {
        scan_seq,
        at_us: scan_seq,
        types: Default::default(),
    };
    t.types.insert(
        TypeKey {
            provider: interner.intern("aws"),
            ty: interner.intern("ec2:volume"),
        },
        TypeTotals {
            count: 1,
            cost_usd_mo: cost,
            waste_usd_mo: 0.0,
        },
    );
    t
}

#[test]
fn history_is_bounded_and_ordered() {
    let interner = Interner::new();
    let mut h = History::from_scans((1..=1005).rev().map(|s| totals(&interner, s, 1.0)).collect());
    assert_eq!(h.len(), HISTORY_SCANS);
    assert_eq!(h.scans().next().map(|s| s.scan_seq), Some(6));
    h.push(totals(&interner, 1006, 1.0));
    assert_eq!(h.len(), HISTORY_SCANS);
    assert_eq!(h.scans().next().map(|s| s.scan_seq), Some(7));
    assert_eq!(h.scans().last().map(|s| s.scan_seq), Some(1006));
}

#[test]
fn a_flat_or_immaterial_history_has_no_type_anomaly() {
    let interner = Interner::new();
    let h = History::from_scans((1..=10).map(|s| totals(&interner, s, 500.0)).collect());
    assert!(h.type_anomalies(&totals(&interner, 11, 500.0), &interner).is_empty());
    // An outlier, but 0.6 of a dollar: not material.
    assert!(h.type_anomalies(&totals(&interner, 11, 500.6), &interner).is_empty());
    let got = h.type_anomalies(&totals(&interner, 11, 560.0), &interner);
    assert_eq!(got.len(), 1);
    // Ten changes, nine zeros and 60: MeanAD 6.
    assert!((got[0].z - 60.0 / (1.253314 * 6.0)).abs() < 1e-9, "{got:?}");
}

/// A graph of `costs.len()` volumes at the given costs, all visible.
fn graph(costs: &[f32]) -> Graph {
    let interner = Arc::new(Interner::new());
    let mut batch = NodeBatch::default();
    for (i, cost) in costs.iter().enumerate() {
        let crn = Crn::parse(&format!("crn:svc:aws:us-east-1:ec2:volume:1:vol-{i}")).unwrap();
        let input = NodeInput {
            key: NodeKeyRef::intern(&interner, &crn),
            ty: interner.intern(&crn.node_type()),
            state: interner.intern("in-use"),
            cost_usd_mo: *cost,
            creation_ts: 1,
        };
        batch.push(input, &[], |_| {});
    }
    let mut g = Graph::new(interner);
    g.ingest_nodes(&[batch], 1, 1);
    g
}

#[test]
fn a_flat_estate_has_no_anomaly() {
    let g = graph(&[10.0; 50]);
    let findings = FindingSet::default();
    let signal = Signal::empty();
    let first = signal.analyze(&g, &findings, 2, 1);
    assert_eq!(first.anomalies.baseline, BaselineKind::None);
    assert_eq!(first.anomalies.nodes_compared, 0);
    *signal.baseline.lock() = Some(first.baseline);
    let second = signal.analyze(&g, &findings, 3, 2);
    let a = &second.anomalies;
    assert_eq!((a.nodes_compared, a.nodes_changed, a.nodes_flagged), (50, 0, 0));
    assert_eq!(second.totals.types.values().map(|t| t.count).sum::<u64>(), 50);
    assert_eq!(second.totals.types.values().map(|t| t.cost_usd_mo).sum::<f64>(), 500.0);
}
