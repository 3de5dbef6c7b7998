//! One node as a rule reads it: its row in the columns, with what is
//! costly to compute kept once, and how a condition came out on it.

use std::cell::OnceCell;

use super::expr::{Field, Key, MapName, Operand, V, lit_value};
use rustc_hash::FxHashSet;

use svc_graph::graph::Graph;
use svc_graph::graph::shard::NodeShard;
use svc_graph::ids::{NodeId, Sym};
use svc_graph::intern::InternerReader;
use svc_graph::props::{Props, Tags, ValueRef};
use svc_graph::relation::Relation;

/// How a condition came out on one node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    Match,
    NoMatch,
    /// An evaluation error (missing key, wrong type, overflow, a result
    /// that is not a bool): never a match.
    Error(String),
}

/// Shared by every node of a pass.
pub struct Env<'a> {
    pub graph: &'a Graph,
    pub reader: &'a InternerReader<'a>,
    pub as_of_s: u64,
    /// The pass's time (µs): the `now` binding, the same for every node.
    pub now_us: u64,
    pub policy_verdicts: &'a FxHashSet<Sym>,
}

/// One node row, read from the columns.
#[derive(Copy, Clone)]
pub struct Row<'a> {
    pub env: &'a Env<'a>,
    pub shard_idx: usize,
    pub shard: &'a NodeShard,
    pub r: usize,
}

const DAY_S: u64 = 86_400;

impl<'a> Row<'a> {
    pub fn id(&self) -> NodeId {
        NodeId::new(self.shard_idx, self.r as u32, self.shard.generation)
    }
    pub fn sym_field(&self, f: Field) -> Sym {
        let k = &self.shard.key[self.r];
        match f {
            Field::Type => self.shard.ty[self.r],
            Field::Kind => k[3],
            Field::Service => k[2],
            Field::Provider => k[0],
            Field::Region => k[1],
            Field::Account => k[4],
            Field::State => self.shard.state[self.r],
            _ => svc_graph::intern::well_known::EMPTY,
        }
    }
    pub fn resolve(&self, s: Sym) -> &'a str {
        self.env.reader.resolve(s)
    }
    pub fn crn(&self) -> String {
        self.env.graph.crn_with(self.env.reader, self.id())
    }
    pub fn reachability(&self) -> &'static str {
        self.shard.reach[self.r].name()
    }
    pub fn cost(&self) -> f64 {
        f64::from(self.shard.cost[self.r])
    }
    pub fn risk(&self) -> f64 {
        f64::from(self.shard.risk[self.r])
    }
    /// Days since creation, counted from when the estate was observed; 0
    /// when the provider reported no creation time.
    pub fn age_days(&self) -> i64 {
        match self.shard.creation_ts[self.r] {
            0 => 0,
            ts => (self.env.as_of_s.saturating_sub(ts) / DAY_S) as i64,
        }
    }
    /// When the provider says the resource was created (Unix seconds);
    /// `None` when it reported no creation time.
    pub fn created_s(&self) -> Option<u64> {
        match self.shard.creation_ts[self.r] {
            0 => None,
            ts => Some(ts),
        }
    }
    /// Waste as the heuristics judged it: a node flagged only by a policy
    /// reads `false`, so a rule reading `is_waste` sees the same value
    /// every scan, whatever it did in the last one.
    pub fn is_waste(&self) -> bool {
        self.shard.waste.get(self.r)
            && !self.shard.verdict[self.r].is_some_and(|v| self.env.policy_verdicts.contains(&v))
    }
    pub fn props(&self) -> Props<'a> {
        Props::new(self.shard.props[self.r].get(&self.shard.arena))
    }
    pub fn tags(&self) -> Tags<'a> {
        Tags::new(self.shard.tags[self.r].get(&self.shard.arena))
    }
    /// Live edges per relation: `[outgoing, incoming]`, indexed by relation.
    pub fn edge_counts(&self) -> [[u32; 7]; 2] {
        let mut c = [[0u32; 7]; 2];
        let g = self.env.graph;
        let adj = g.adjacency();
        let Some(d) = adj.dense(self.id()) else { return c };
        let rel = |e: svc_graph::ids::EdgeId| g.edge_shards()[e.shard()].rel[e.row() as usize] as usize;
        for (e, _) in adj.out(d) {
            c[0][rel(e)] += 1;
        }
        for (e, _) in adj.inc(d) {
            c[1][rel(e)] += 1;
        }
        c
    }
}

/// A row with what is costly to compute kept once.
pub struct NodeCtx<'a> {
    pub row: Row<'a>,
    crn: OnceCell<String>,
    edges: OnceCell<[[u32; 7]; 2]>,
}

impl<'a> NodeCtx<'a> {
    pub fn new(row: Row<'a>) -> NodeCtx<'a> {
        NodeCtx {
            row,
            crn: OnceCell::new(),
            edges: OnceCell::new(),
        }
    }

    pub fn sym_field(&self, f: Field) -> Sym {
        self.row.sym_field(f)
    }

    pub fn physical_id(&self) -> &'a str {
        let row = &self.row;
        row.shard.id[row.r].get_str(&row.shard.arena)
    }

    pub fn operand<'s>(&'s self, o: &'s Operand) -> V<'s> {
        match o {
            Operand::Lit(l) => lit_value(l),
            Operand::Field(f) => self.field(*f),
            Operand::Entry(m, k) => self.entry(*m, k),
        }
    }

    fn field(&self, f: Field) -> V<'_> {
        let row = &self.row;
        match f {
            Field::Crn => V::Str(self.crn.get_or_init(|| row.crn())),
            Field::Reachability => V::Str(row.reachability()),
            Field::Cost => V::Double(row.cost()),
            Field::RiskScore => V::Double(row.risk()),
            Field::AgeDays => V::Int(row.age_days()),
            Field::IsWaste => V::Bool(row.is_waste()),
            f => V::Str(row.resolve(row.sym_field(f))),
        }
    }

    fn entry(&self, m: MapName, k: &Key) -> V<'_> {
        match m {
            MapName::Props => match k.sym.and_then(|s| self.row.props().get(s)) {
                None => V::Err,
                Some(v) => match v {
                    ValueRef::Null => V::Null,
                    ValueRef::Bool(b) => V::Bool(b),
                    ValueRef::Int(i) => V::Int(i),
                    ValueRef::Float(f) => V::Double(f),
                    ValueRef::Str(s) => V::Str(s),
                    ValueRef::Json(_) => V::Other,
                },
            },
            MapName::Tags => match k.sym.and_then(|s| self.row.tags().get(s)) {
                Some(v) => V::Str(self.row.resolve(v)),
                None => V::Err,
            },
            MapName::Out | MapName::Incoming => match k.rel {
                Some(rel) => {
                    let c = self.edges.get_or_init(|| self.row.edge_counts());
                    V::Int(i64::from(c[usize::from(m == MapName::Incoming)][rel as usize]))
                }
                None => V::Err,
            },
        }
    }

    pub fn has(&self, m: MapName, k: &Key) -> bool {
        match m {
            MapName::Props => k.sym.is_some_and(|s| self.row.props().get(s).is_some()),
            MapName::Tags => k.sym.is_some_and(|s| self.row.tags().get(s).is_some()),
            MapName::Out | MapName::Incoming => k.rel.is_some(),
        }
    }
}

/// Relation names in the order of [`Relation::ALL`], for the interpreter's maps.
pub fn relation_names() -> impl Iterator<Item = (usize, &'static str)> {
    Relation::ALL.iter().map(|r| (*r as usize, r.name()))
}
