//! Findings to verdicts. A node is waste when any finding says so; the
//! deciding finding is the waste finding with the highest risk (a built-in
//! rule before a plugin at equal risk, then by rule name), and its reason,
//! rule and risk become the node's `waste_reason`, `verdict` and
//! `risk_score`. A visible node without a waste finding is cleared, so a
//! resource that stopped being waste stops being reported.

use std::cmp::Ordering;
use std::collections::HashMap;

use super::{Finding, FindingSet};
use crate::graph::{Graph, Verdict};
use crate::ids::Sym;

/// Orders the findings of one node, the deciding one first.
pub fn precedence(a: &Finding, b: &Finding) -> Ordering {
    b.is_waste
        .cmp(&a.is_waste)
        .then(b.risk_score.cmp(&a.risk_score))
        .then(a.source.cmp(&b.source))
        .then(a.rule.cmp(&b.rule))
}

/// Writes the verdicts of `set` into `graph` (every visible node, in
/// parallel); returns how many nodes changed.
pub fn apply(graph: &mut Graph, set: &FindingSet, now_us: u64) -> usize {
    let interner = graph.interner().clone();
    let rules: HashMap<&str, Sym> = set
        .by_node
        .values()
        .flat_map(|v| v.first())
        .filter(|f| f.is_waste)
        .map(|f| (f.rule.as_str(), interner.intern(&f.rule)))
        .collect();
    graph.apply_verdicts(now_us, |id| {
        let f = set.by_node.get(&id)?.first().filter(|f| f.is_waste)?;
        Some(Verdict {
            is_waste: true,
            reason: &f.reason,
            rule: rules.get(f.rule.as_str()).copied(),
            risk_score: f32::from(f.risk_score),
        })
    })
}
