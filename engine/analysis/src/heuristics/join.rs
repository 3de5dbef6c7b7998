//! Findings to verdicts. A node is waste when any finding says so; the
//! deciding finding is the waste finding with the highest risk (a built-in
//! rule before a plugin at equal risk, then by rule name), or, for a node
//! in use, the optimisation finding with the highest risk. Its reason and
//! rule become the node's `waste_reason` and `verdict`; the node's
//! `risk_score` is the removal risk formal verification computes. A
//! visible node without findings, or whose `svc:ignore` tag holds, is
//! cleared, so a resource that stopped being waste stops being
//! reported.

use std::collections::HashMap;

pub use super::finding::precedence;
use super::finding_set::FindingSet;
use svc_graph::graph::{Graph, Verdict};
use svc_graph::ids::Sym;

/// Writes the verdicts of `set` into `graph` for the visible nodes among
/// `nodes` only: the nodes whose findings may have changed since the
/// verdicts were last joined. Returns how many nodes changed.
pub fn apply_to<'s>(graph: &mut Graph, set: &'s FindingSet, now_us: u64, nodes: &[svc_graph::ids::NodeId]) -> usize {
    let interner = graph.interner().clone();
    let mut rules: HashMap<&'s str, Sym> = HashMap::new();
    let mut changed = 0;
    for id in nodes {
        if !graph.is_node_visible(*id, now_us) {
            continue;
        }
        let rule = |r: &'s str| Some(*rules.entry(r).or_insert_with(|| interner.intern(r)));
        let v = verdict(set, *id, rule).unwrap_or(Verdict::CLEAR);
        changed += usize::from(graph.set_verdict(*id, &v, now_us));
    }
    changed
}

/// Writes the verdicts of `set` into `graph` (every visible node, in
/// parallel); returns how many nodes changed. A node's deciding finding
/// sets its verdict (rule) and reason, and `is_waste` when it is a
/// waste finding; an ignored node, or one without findings, is cleared.
pub fn apply(graph: &mut Graph, set: &FindingSet, now_us: u64) -> usize {
    let interner = graph.interner().clone();
    // A few dozen rule names, each interned once.
    let mut rules: HashMap<&str, Sym> = HashMap::new();
    for f in set.by_node.values().flat_map(|v| v.first()) {
        if !rules.contains_key(&*f.rule) {
            rules.insert(&f.rule, interner.intern(&f.rule));
        }
    }
    graph.apply_verdicts(now_us, |id| verdict(set, id, |r| rules.get(r).copied()))
}

/// The verdict of `id`'s deciding finding in `set`, if it has one, with
/// its rule's symbol from `rule`.
fn verdict<'s>(
    set: &'s FindingSet,
    id: svc_graph::ids::NodeId,
    rule: impl FnOnce(&'s str) -> Option<Sym>,
) -> Option<Verdict<'s>> {
    let f = set.deciding(id)?;
    Some(Verdict {
        is_waste: f.is_waste,
        reason: &f.reason,
        rule: rule(&f.rule),
    })
}
