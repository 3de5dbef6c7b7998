//! Read views of single nodes and edges.

use super::Graph;
use super::schema::{NodeFields, Phase, Reachability};
use super::shard::{EdgeShard, NodeShard, visible};
use crate::ids::{EdgeId, NodeId, Sym};
use crate::props::{Props, Tags};
use crate::relation::Relation;

/// A node row, read column by column.
#[derive(Copy, Clone)]
pub struct NodeRef<'a> {
    graph: &'a Graph,
    id: NodeId,
    shard: &'a NodeShard,
    r: usize,
}

impl<'a> NodeRef<'a> {
    pub fn new(graph: &'a Graph, id: NodeId) -> NodeRef<'a> {
        NodeRef {
            graph,
            id,
            shard: &graph.nodes[id.shard()],
            r: id.row() as usize,
        }
    }
    pub fn id(&self) -> NodeId {
        self.id
    }
    pub fn crn(&self) -> String {
        self.graph.crn(self.id)
    }
    /// Every field of the row, as the schema lists them.
    pub fn fields(&self) -> NodeFields<'a> {
        self.shard.fields(self.r as u32)
    }
    /// provider, region, service, kind, account.
    pub fn key(&self) -> [Sym; 5] {
        self.shard.key[self.r]
    }
    pub fn provider(&self) -> Sym {
        self.shard.key[self.r][0]
    }
    pub fn region(&self) -> Sym {
        self.shard.key[self.r][1]
    }
    pub fn service(&self) -> Sym {
        self.shard.key[self.r][2]
    }
    pub fn kind(&self) -> Sym {
        self.shard.key[self.r][3]
    }
    pub fn account(&self) -> Sym {
        self.shard.key[self.r][4]
    }
    pub fn physical_id(&self) -> &'a str {
        self.shard.id[self.r].get_str(&self.shard.arena)
    }
    /// `<service>:<kind>`.
    pub fn ty(&self) -> Sym {
        self.shard.ty[self.r]
    }
    pub fn state(&self) -> Sym {
        self.shard.state[self.r]
    }
    pub fn cost_usd_mo(&self) -> f32 {
        self.shard.cost[self.r]
    }
    pub fn creation_ts(&self) -> u64 {
        self.shard.creation_ts[self.r]
    }
    pub fn valid_from(&self) -> u64 {
        self.shard.valid_from[self.r]
    }
    pub fn valid_to(&self) -> u64 {
        self.shard.valid_to[self.r]
    }
    pub fn is_visible(&self, now_us: u64) -> bool {
        visible(self.valid_to(), now_us)
    }
    pub fn is_waste(&self) -> bool {
        self.shard.waste.get(self.r)
    }
    pub fn waste_reason(&self) -> &'a str {
        self.shard.waste_reason[self.r].get_str(&self.shard.arena)
    }
    pub fn risk_score(&self) -> f32 {
        self.shard.risk[self.r]
    }
    pub fn reachability(&self) -> Reachability {
        self.shard.reach[self.r]
    }
    pub fn phase(&self) -> Phase {
        self.shard.phase[self.r]
    }
    pub fn verdict(&self) -> Option<Sym> {
        self.shard.verdict[self.r]
    }
    pub fn tags(&self) -> Tags<'a> {
        Tags::new(self.shard.tags[self.r].get(&self.shard.arena))
    }
    pub fn props(&self) -> Props<'a> {
        Props::new(self.shard.props[self.r].get(&self.shard.arena))
    }

    /// Visible outgoing edges, from the adjacency index.
    pub fn out_edges(&self) -> impl Iterator<Item = EdgeRef<'a>> + 'a {
        let g = self.graph;
        let dense = g.adjacency().dense(self.id);
        dense
            .into_iter()
            .flat_map(move |d| g.adjacency().out(d).map(move |(e, _)| EdgeRef::new(g, e)))
    }

    /// Visible incoming edges, from the adjacency index.
    pub fn in_edges(&self) -> impl Iterator<Item = EdgeRef<'a>> + 'a {
        let g = self.graph;
        let dense = g.adjacency().dense(self.id);
        dense
            .into_iter()
            .flat_map(move |d| g.adjacency().inc(d).map(move |(e, _)| EdgeRef::new(g, e)))
    }
}

/// An edge row.
#[derive(Copy, Clone)]
pub struct EdgeRef<'a> {
    id: EdgeId,
    graph: &'a Graph,
    shard: &'a EdgeShard,
    r: usize,
}

impl<'a> EdgeRef<'a> {
    pub fn new(graph: &'a Graph, id: EdgeId) -> EdgeRef<'a> {
        EdgeRef {
            id,
            graph,
            shard: &graph.edges[id.shard()],
            r: id.row() as usize,
        }
    }
    pub fn id(&self) -> EdgeId {
        self.id
    }
    pub fn source(&self) -> NodeId {
        self.graph.node_id(self.shard.src[self.r])
    }
    pub fn target(&self) -> NodeId {
        self.graph.node_id(self.shard.dst[self.r])
    }
    pub fn relation(&self) -> Relation {
        self.shard.rel[self.r]
    }
    pub fn inferred(&self) -> bool {
        self.shard.inferred.get(self.r)
    }
    pub fn valid_from(&self) -> u64 {
        self.shard.valid_from[self.r]
    }
    pub fn valid_to(&self) -> u64 {
        self.shard.valid_to[self.r]
    }
    pub fn props(&self) -> Props<'a> {
        Props::new(self.shard.props[self.r].get(&self.shard.arena))
    }
}
