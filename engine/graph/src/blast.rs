//! Blast radius: the resources affected, directly or transitively, by
//! removing one node.
//!
//! Dependence follows the relationship (see
//! [`Relation::source_depends_on_target`]): removing an instance takes down
//! the pods that run on it and what flows to it; removing a network takes its
//! subnets and everything inside them. The walk is a breadth-first search over
//! the adjacency index, so it sees the edges visible at the last rebuild.

use std::collections::VecDeque;

use rustc_hash::FxHashSet;

use crate::graph::{BitSet, Graph};
use crate::ids::NodeId;
use crate::relation::Relation;

/// One affected node and how the removal reaches it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Affected {
    pub id: NodeId,
    /// Hops from the removed node (1 = direct dependent).
    pub depth: u32,
    /// The node through which the removal reaches this one.
    pub via: NodeId,
    pub relation: Relation,
}

#[derive(Clone, Debug, PartialEq)]
pub struct BlastRadius {
    pub root: NodeId,
    /// Every affected node, in breadth-first order, up to the listing limit.
    pub affected: Vec<Affected>,
    /// All affected nodes, also those beyond the listing limit.
    pub count: usize,
    /// Summed monthly cost of all affected nodes.
    pub total_cost_usd_mo: f64,
    pub max_depth: u32,
    /// `true` when `affected` was cut at the listing limit.
    pub truncated: bool,
}

/// The blast radius of removing `root`; `list_limit` caps the listed nodes
/// (the count and cost always cover all of them). `None` when `root` is not
/// in the graph.
pub fn blast_radius(graph: &Graph, root: NodeId, list_limit: usize) -> Option<BlastRadius> {
    graph.node(root)?;
    let adj = graph.adjacency();
    let mut out = BlastRadius {
        root,
        affected: Vec::new(),
        count: 0,
        total_cost_usd_mo: 0.0,
        max_depth: 0,
        truncated: false,
    };
    let Some(start) = adj.dense(root) else { return Some(out) };
    let generation_of = |s: usize| graph.node_shards()[s].generation;
    let mut seen = Seen::Few(FxHashSet::default());
    seen.insert(start, adj.node_count());
    let mut queue = VecDeque::from([(start, 0u32)]);
    while let Some((u, depth)) = queue.pop_front() {
        let via = adj.node_id(u, generation_of);
        let downstream = adj
            .out(u)
            .filter(|(e, _)| edge_rel(graph, *e).is_some_and(|r| !r.source_depends_on_target()));
        let upstream = adj
            .inc(u)
            .filter(|(e, _)| edge_rel(graph, *e).is_some_and(Relation::source_depends_on_target));
        for (e, v) in downstream.chain(upstream) {
            if !seen.insert(v, adj.node_count()) {
                continue;
            }
            let id = adj.node_id(v, generation_of);
            out.count += 1;
            out.max_depth = out.max_depth.max(depth + 1);
            if let Some(n) = graph.node(id) {
                out.total_cost_usd_mo += f64::from(n.cost_usd_mo());
            }
            if out.affected.len() < list_limit {
                let relation = edge_rel(graph, e).unwrap_or(Relation::Uses);
                out.affected.push(Affected {
                    id,
                    depth: depth + 1,
                    via,
                    relation,
                });
            } else {
                out.truncated = true;
            }
            queue.push_back((v, depth + 1));
        }
    }
    Some(out)
}

fn edge_rel(graph: &Graph, e: crate::ids::EdgeId) -> Option<Relation> {
    graph.edge(e).map(|e| e.relation())
}

/// The nodes a walk has reached: a hash set while they are few (most
/// removals reach a handful of nodes), a bit per node of the index once
/// that is smaller.
enum Seen {
    Few(FxHashSet<u32>),
    Many(BitSet),
}

impl Seen {
    /// Adds `v` (of `nodes` in the index); whether it was new.
    fn insert(&mut self, v: u32, nodes: usize) -> bool {
        match self {
            Seen::Few(set) => {
                let new = set.insert(v);
                // About 16 bytes per entry against one bit per node.
                if set.len() > nodes / 128 {
                    let mut bits = BitSet::with_len(nodes);
                    for &u in set.iter() {
                        bits.set(u as usize, true);
                    }
                    *self = Seen::Many(bits);
                }
                new
            }
            Seen::Many(bits) => bits.insert(v as usize),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reached_nodes_are_the_same_before_and_after_the_set_turns_into_bits() {
        let mut seen = Seen::Few(FxHashSet::default());
        let mut reference = std::collections::HashSet::new();
        for k in 0..64u32 {
            let v = (k * 37) % 40;
            assert_eq!(seen.insert(v, 1024), reference.insert(v), "node {v}");
        }
        assert!(matches!(seen, Seen::Many(_)));
        let mut few = Seen::Few(FxHashSet::default());
        assert!(few.insert(5, 1 << 20) && !few.insert(5, 1 << 20));
        assert!(matches!(few, Seen::Few(_)));
    }
}
