//! Blast radius: the resources affected, directly or transitively, by
//! removing one node.
//!
//! Dependence follows the relationship (see
//! [`Relation::source_depends_on_target`]): removing an instance takes down
//! the pods that run on it and what flows to it; removing a network takes its
//! subnets and everything inside them. The walk is a breadth-first search over
//! the adjacency index, so it sees the edges visible at the last rebuild.

use std::collections::VecDeque;

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
    let mut seen = BitSet::with_len(adj.node_count());
    seen.set(start as usize, true);
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
            if !seen.insert(v as usize) {
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
