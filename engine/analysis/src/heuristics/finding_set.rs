//! A scan's findings grouped by node, each node's list in [`precedence`]
//! order ([`FindingSet`]), with how each analyzer and the built-in pass
//! did ([`BuiltinStats`]).

use std::sync::Arc;

use rustc_hash::FxHashMap;

use super::analyzer::AnalyzerOutcome;
use super::builtin::ignore::Ignore;
use super::finding::{Finding, precedence};
use svc_graph::ids::NodeId;

/// One node's findings in [`precedence`] order, shared: a node whose
/// findings are all the built-in rules' holds the list the rules' kept
/// answer holds ([`super::builtin::Cache`]), not a copy of it. A list is
/// never empty in a [`FindingSet`]; changing one makes a new list.
pub type FindingList = Arc<[Finding]>;

/// The findings of the last scan, by node, and how each analyzer did.
#[derive(Clone, Debug, Default)]
pub struct FindingSet {
    pub scan_seq: u64,
    pub by_node: FxHashMap<NodeId, FindingList>,
    pub analyzers: Vec<AnalyzerOutcome>,
    /// Nodes the `svc:ignore` tag kept out; none of their findings count.
    pub ignored: FxHashMap<NodeId, Ignore>,
    /// How the built-in rules did.
    pub builtin: BuiltinStats,
    /// When the estate was observed (Unix seconds).
    pub as_of_s: u64,
}

/// The built-in pass in numbers.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BuiltinStats {
    pub rules: u64,
    /// Nodes of a type some rule reads whose answer was worked out in this
    /// scan, and rule checks run on them.
    pub evaluated: u64,
    pub checks: u64,
    /// Nodes whose answer from the scan before stood (nothing it read changed).
    pub kept: u64,
    pub findings: u64,
    pub ignored: u64,
    pub duration_ms: u64,
}

impl BuiltinStats {
    /// The numbers as they appear in `SCAN_COMPLETED` and the heuristics status.
    pub fn payload(&self) -> serde_json::Value {
        serde_json::json!({
            "rules": self.rules, "evaluated": self.evaluated, "checks": self.checks, "kept": self.kept,
            "findings": self.findings, "ignored": self.ignored, "duration_ms": self.duration_ms,
        })
    }
}

impl FindingSet {
    pub fn new(scan_seq: u64, findings: Vec<Finding>, analyzers: Vec<AnalyzerOutcome>) -> FindingSet {
        FindingSet::grouped(scan_seq, Vec::new(), findings, analyzers)
    }

    /// A set from lists grouped by node (each node once, each list in
    /// precedence order and not empty) and more findings to add to them.
    pub fn grouped(
        scan_seq: u64,
        grouped: Vec<(NodeId, FindingList)>,
        more: Vec<Finding>,
        analyzers: Vec<AnalyzerOutcome>,
    ) -> FindingSet {
        debug_assert!(
            grouped
                .iter()
                .all(|(_, l)| !l.is_empty() && l.is_sorted_by(|a, b| precedence(a, b).is_le()))
        );
        let mut by_node: FxHashMap<NodeId, FindingList> = FxHashMap::default();
        by_node.reserve(grouped.len() + more.len());
        by_node.extend(grouped);
        let mut set = FindingSet {
            scan_seq,
            by_node,
            analyzers,
            ..FindingSet::default()
        };
        set.add(more);
        set
    }

    /// Adds findings to their nodes' lists, each list changed put in
    /// precedence order again; the nodes whose lists changed, ascending.
    pub fn add(&mut self, mut more: Vec<Finding>) -> Vec<NodeId> {
        more.sort_by_key(|f| f.node);
        let mut nodes = Vec::new();
        let mut more = more.into_iter().peekable();
        while let Some(first) = more.next() {
            let id = first.node;
            let mut list: Vec<Finding> = self.by_node.get(&id).map(|l| l.to_vec()).unwrap_or_default();
            list.push(first);
            while let Some(f) = more.next_if(|f| f.node == id) {
                list.push(f);
            }
            list.sort_by(precedence);
            self.by_node.insert(id, list.into());
            nodes.push(id);
        }
        nodes
    }

    /// Takes out every finding `drop` is true of (a node left with none
    /// leaves the set); the nodes whose lists changed.
    pub fn remove_where(&mut self, drop: impl Fn(&Finding) -> bool) -> Vec<NodeId> {
        let mut nodes = Vec::new();
        self.by_node.retain(|id, list| {
            if !list.iter().any(&drop) {
                return true;
            }
            nodes.push(*id);
            // What is left of a list in order is in order.
            *list = list.iter().filter(|f| !drop(f)).cloned().collect();
            !list.is_empty()
        });
        nodes
    }

    /// Findings about `node`, the deciding one first.
    pub fn of(&self, node: NodeId) -> &[Finding] {
        self.by_node.get(&node).map_or(&[], |l| &l[..])
    }

    /// The finding that decides a node's verdict: its first, unless the
    /// node is ignored.
    pub fn deciding(&self, node: NodeId) -> Option<&Finding> {
        self.by_node.get(&node).and_then(|list| self.deciding_in(node, list))
    }

    /// [`FindingSet::deciding`] for a node whose list is at hand (while
    /// walking `by_node`, say).
    pub fn deciding_in<'a>(&self, node: NodeId, list: &'a FindingList) -> Option<&'a Finding> {
        if self.ignored.contains_key(&node) {
            return None;
        }
        list.first()
    }

    /// Monthly USD of the resources judged waste, and what acting on every
    /// deciding finding would save (one finding per node, so nothing is
    /// counted twice).
    pub fn totals(&self) -> (f64, f64) {
        let (mut waste, mut savings) = (0.0, 0.0);
        for (id, list) in &self.by_node {
            if let Some(f) = self.deciding_in(*id, list) {
                savings += f.projected_savings_usd_mo;
                if f.is_waste {
                    waste += f.projected_savings_usd_mo;
                }
            }
        }
        (waste, savings)
    }

    /// Number of findings.
    pub fn len(&self) -> usize {
        self.by_node.values().map(|l| l.len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.by_node.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use super::*;
    use crate::heuristics::FindingSource;

    fn finding(node: NodeId, source: FindingSource, rule: &'static str, risk: u8) -> Finding {
        Finding {
            node,
            source,
            rule: Cow::Borrowed(rule),
            is_waste: true,
            risk_score: risk,
            reason: format!("{rule} says so"),
            suggested_action: Cow::Borrowed("delete"),
            projected_savings_usd_mo: 1.0,
            annotations: Vec::new(),
        }
    }

    fn rules(set: &FindingSet, id: NodeId) -> Vec<&str> {
        set.of(id).iter().map(|f| &*f.rule).collect()
    }

    #[test]
    fn lists_are_shared_until_changed_and_kept_in_precedence_order() {
        let (a, b, c) = (NodeId::new(0, 1, 0), NodeId::new(0, 2, 0), NodeId::new(1, 1, 0));
        let kept_a: FindingList = vec![finding(a, FindingSource::Builtin, "x", 60)].into();
        let kept_b: FindingList = vec![finding(b, FindingSource::Builtin, "y", 40)].into();
        let plugin = FindingSource::Plugin("p".into());
        let mut set = FindingSet::grouped(
            1,
            vec![(a, kept_a.clone()), (b, kept_b.clone())],
            vec![
                finding(b, plugin.clone(), "z", 70),
                finding(c, FindingSource::Policy, "policy:q", 10),
            ],
            Vec::new(),
        );
        // A node whose findings are all the kept ones holds the kept list.
        assert!(Arc::ptr_eq(&set.by_node[&a], &kept_a));
        assert!(!Arc::ptr_eq(&set.by_node[&b], &kept_b));
        assert_eq!(rules(&set, b), ["z", "y"], "the riskier finding decides");
        assert_eq!(rules(&set, c), ["policy:q"]);
        assert_eq!(set.len(), 4);

        let mut changed = set.remove_where(|f| f.source != FindingSource::Builtin);
        changed.sort_unstable();
        assert_eq!(changed, [b, c]);
        assert_eq!(rules(&set, b), ["y"]);
        assert!(!set.by_node.contains_key(&c), "a node left with nothing leaves the set");
        assert!(
            Arc::ptr_eq(&set.by_node[&a], &kept_a),
            "an untouched list is not copied"
        );

        assert_eq!(
            set.add(vec![finding(a, plugin.clone(), "w", 90), finding(a, plugin, "v", 5)]),
            [a]
        );
        assert_eq!(rules(&set, a), ["w", "x", "v"]);
        assert_eq!(kept_a.len(), 1, "the kept list itself is never changed");
        assert!(set.remove_where(|_| false).is_empty());
    }
}
