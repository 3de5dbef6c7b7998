//! The topology snapshot: the columns the body needs, copied under one
//! read-lock hold, then sorted into canonical order without the lock.

use std::cmp::Ordering;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

use svc_engine::relation::Relation;
use svc_engine::{Engine, NodeId, Sym};

use super::json::push_json_str_body;
use crate::wire;

/// Where a node's CRN text is: its key tuple and its physical id.
#[derive(Copy, Clone)]
pub(super) struct CrnRef {
    pub id_off: u32,
    pub id_len: u32,
    pub tuple: u32,
}

/// The other fields of a node the body shows.
pub(super) struct NodeRest {
    pub ty: Sym,
    pub state: Sym,
    pub cost: f32,
    /// `None` without a finding; else the verdict naming it (or none).
    pub flag: Option<Option<Sym>>,
    pub severity: u8,
    /// Unix seconds of the resource's creation (the binary form's only).
    pub created: u64,
}

/// The graph as the body shows it. Node arrays are in CRN order; an edge is
/// named by the positions of its endpoints in that order.
pub(super) struct Snapshot {
    pub generation: u64,
    pub strings: Vec<Arc<str>>,
    /// Per key tuple, `crn:svc:<provider>:<region>:<service>:<kind>:<account>:`
    /// escaped for the inside of a JSON string.
    pub prefixes: Vec<Vec<u8>>,
    /// The key tuples (`CrnRef::tuple` indexes them).
    pub tuples: Vec<[Sym; 5]>,
    /// Physical ids, in CRN order.
    pub ids: Vec<u8>,
    pub crns: Vec<CrnRef>,
    pub rest: Vec<NodeRest>,
    /// Edges of source position `s` are `edges[edge_off[s]..edge_off[s + 1]]`.
    pub edge_off: Vec<u32>,
    /// `target position << 8 | relation rank by name`, sorted per source.
    pub edges: Vec<u64>,
    /// Relationships by name rank: edges of one pair sort by the `type` text.
    pub relations: [Relation; 7],
    pub waste_usd_mo: f64,
    /// Managed resources' provenance objects by CRN (as it reads inside a
    /// JSON string); `None` when no Terraform state is configured.
    pub provenance: Option<std::sync::Arc<crate::iac::ProvenanceJson>>,
}

/// FxHash's multiply-rotate, for the small keys of the tuple table.
#[derive(Default)]
struct Fx(u64);

impl Hasher for Fx {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.write_u64(u64::from(*b));
        }
    }
    fn write_u32(&mut self, v: u32) {
        self.write_u64(u64::from(v));
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

/// What the read lock is held for: the columns, in row order.
struct Copied {
    generation: u64,
    strings: Vec<Arc<str>>,
    tuples: Vec<[Sym; 5]>,
    ids: Vec<u8>,
    crns: Vec<CrnRef>,
    rest: Vec<NodeRest>,
    /// `(source, target, relation)` by index into the node columns.
    edges: Vec<(u32, u32, Relation)>,
    waste_usd_mo: f64,
}

fn copy(engine: &Engine) -> Copied {
    let now = engine.now_us();
    let g = engine.graph();
    // Every symbol the locked graph uses is already in the table.
    let strings = engine.interner().strings_from(0);
    let rows = g.node_rows();
    let mut out = Copied {
        generation: g.generation(),
        strings,
        tuples: Vec::new(),
        ids: Vec::new(),
        crns: Vec::with_capacity(rows),
        rest: Vec::with_capacity(rows),
        edges: Vec::new(),
        waste_usd_mo: 0.0,
    };
    let mut tuple_index: HashMap<[Sym; 5], u32, BuildHasherDefault<Fx>> = HashMap::default();
    let mut local: Vec<Vec<u32>> = g.node_shards().iter().map(|s| vec![u32::MAX; s.len()]).collect();
    // A flag's severity is its deciding finding's risk (the node's own
    // `risk_score` is the removal risk).
    let findings = engine.findings();
    for n in g.nodes() {
        if !n.is_visible(now) {
            continue;
        }
        let key = n.key();
        let tuple = *tuple_index.entry(key).or_insert_with(|| {
            out.tuples.push(key);
            (out.tuples.len() - 1) as u32
        });
        if let Some(slot) = local
            .get_mut(n.id().shard())
            .and_then(|s| s.get_mut(n.id().row() as usize))
        {
            *slot = out.crns.len() as u32;
        }
        let cost = if n.cost_usd_mo().is_finite() {
            n.cost_usd_mo()
        } else {
            0.0
        };
        if n.is_waste() {
            out.waste_usd_mo += f64::from(cost);
        }
        let id = n.physical_id().as_bytes();
        out.crns.push(CrnRef {
            id_off: out.ids.len() as u32,
            id_len: id.len() as u32,
            tuple,
        });
        out.rest.push(NodeRest {
            ty: n.ty(),
            state: n.state(),
            cost,
            flag: wire::flag_rule(n.is_waste(), n.waste_reason(), n.verdict()),
            severity: wire::severity(findings.deciding(n.id()).map_or(0.0, |f| f32::from(f.risk_score))),
            created: n.creation_ts(),
        });
        out.ids.extend_from_slice(id);
    }
    // Once a scan has judged the estate, its findings price the waste (a
    // provider that reports no cost is priced from the table).
    if findings.scan_seq > 0 {
        out.waste_usd_mo = findings.totals().0;
    }
    let slot = |id: NodeId| local.get(id.shard()).and_then(|s| s.get(id.row() as usize)).copied();
    for e in g.edges() {
        if !g.is_edge_visible(e.id(), now) {
            continue;
        }
        if let (Some(s), Some(t)) = (slot(e.source()), slot(e.target()))
            && s != u32::MAX
            && t != u32::MAX
        {
            out.edges.push((s, t, e.relation()));
        }
    }
    out
}

/// Byte order of CRNs, one segment at a time: a segment is compared as if
/// followed by the `:` that separates it from the next.
pub(super) fn segment_cmp(a: &str, b: &str) -> Ordering {
    a.bytes().chain([b':']).cmp(b.bytes().chain([b':']))
}

/// The first 12 bytes of `id`, zero-padded, in the low 96 bits: ordered
/// like the id, up to ties.
pub(super) fn id_prefix(id: &[u8]) -> u128 {
    let mut b = [0u8; 16];
    let n = id.len().min(12);
    b[4..4 + n].copy_from_slice(&id[..n]);
    u128::from_be_bytes(b)
}

/// The relationships sorted by name.
fn by_name() -> [Relation; 7] {
    let mut all = Relation::ALL;
    all.sort_by_key(|r| r.name());
    all
}

impl Snapshot {
    pub fn take(engine: &Engine) -> Snapshot {
        let c = copy(engine);
        let seg = |s: Sym| c.strings.get(s.index()).map_or("", |s| &**s);
        // Rank the key tuples by their CRN prefix.
        let mut order: Vec<u32> = (0..c.tuples.len() as u32).collect();
        order.sort_unstable_by(|&a, &b| {
            let (a, b) = (&c.tuples[a as usize], &c.tuples[b as usize]);
            (0..5)
                .map(|k| segment_cmp(seg(a[k]), seg(b[k])))
                .find(|o| o.is_ne())
                .unwrap_or(Ordering::Equal)
        });
        let mut tuple_rank = vec![0u32; c.tuples.len()];
        for (rank, t) in order.into_iter().enumerate() {
            tuple_rank[t as usize] = rank as u32;
        }
        // Sort the nodes: tuple rank, then the id's first 12 bytes, then the whole id.
        let id_of = |r: &CrnRef| &c.ids[r.id_off as usize..(r.id_off + r.id_len) as usize];
        let mut keys: Vec<(u128, u32)> = c
            .crns
            .iter()
            .enumerate()
            .map(|(i, r)| {
                (
                    (u128::from(tuple_rank[r.tuple as usize]) << 96) | id_prefix(id_of(r)),
                    i as u32,
                )
            })
            .collect();
        keys.sort_unstable_by(|a, b| {
            a.0.cmp(&b.0)
                .then_with(|| id_of(&c.crns[a.1 as usize]).cmp(id_of(&c.crns[b.1 as usize])))
        });
        // Lay the nodes out in that order, ids included.
        let mut position = vec![0u32; c.crns.len()];
        let mut ids = Vec::with_capacity(c.ids.len());
        let mut crns = Vec::with_capacity(c.crns.len());
        for (pos, (_, i)) in keys.iter().enumerate() {
            position[*i as usize] = pos as u32;
            let r = c.crns[*i as usize];
            crns.push(CrnRef {
                id_off: ids.len() as u32,
                id_len: r.id_len,
                tuple: r.tuple,
            });
            ids.extend_from_slice(id_of(&r));
        }
        let mut slots: Vec<Option<NodeRest>> = c.rest.into_iter().map(Some).collect();
        let rest: Vec<NodeRest> = keys.iter().filter_map(|(_, i)| slots[*i as usize].take()).collect();
        drop(slots);
        drop(keys);
        // Edges: counting sort by source position, then each source's edges
        // by target position and type.
        let relations = by_name();
        let mut name_rank = [0u8; 7];
        for (i, r) in relations.iter().enumerate() {
            name_rank[*r as usize] = i as u8;
        }
        let mut edge_off = vec![0u32; crns.len() + 1];
        for (s, _, _) in &c.edges {
            edge_off[position[*s as usize] as usize + 1] += 1;
        }
        for i in 0..crns.len() {
            edge_off[i + 1] += edge_off[i];
        }
        let mut fill = edge_off.clone();
        let mut edges = vec![0u64; c.edges.len()];
        for (s, t, rel) in c.edges {
            let slot = &mut fill[position[s as usize] as usize];
            edges[*slot as usize] = (u64::from(position[t as usize]) << 8) | u64::from(name_rank[rel as usize]);
            *slot += 1;
        }
        drop(fill);
        for w in edge_off.windows(2) {
            edges[w[0] as usize..w[1] as usize].sort_unstable();
        }
        let prefixes = c
            .tuples
            .iter()
            .map(|t| {
                let mut p = format!("crn:{}:", svc_engine::crn::NAMESPACE).into_bytes();
                for s in t {
                    push_json_str_body(&mut p, seg(*s));
                    p.push(b':');
                }
                p
            })
            .collect();
        Snapshot {
            generation: c.generation,
            strings: c.strings,
            prefixes,
            tuples: c.tuples,
            ids,
            crns,
            rest,
            edge_off,
            edges,
            relations,
            waste_usd_mo: c.waste_usd_mo,
            provenance: None,
        }
    }

    pub fn sym(&self, s: Sym) -> &str {
        self.strings.get(s.index()).map_or("", |s| &**s)
    }

    pub fn id(&self, r: CrnRef) -> &str {
        let id = self
            .ids
            .get(r.id_off as usize..(r.id_off + r.id_len) as usize)
            .unwrap_or_default();
        std::str::from_utf8(id).unwrap_or("")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segment_order_is_crn_byte_order() {
        // "aws-x:..." sorts before "aws:..." because '-' < ':'.
        assert_eq!(segment_cmp("aws", "aws-x"), Ordering::Greater);
        assert_eq!(segment_cmp("aws", "awsx"), Ordering::Less);
        assert_eq!(segment_cmp("a", "a"), Ordering::Equal);
        assert_eq!("crn:svc:aws:r".cmp("crn:svc:aws-x:r"), Ordering::Greater);
    }

    #[test]
    fn id_prefix_orders_like_the_id() {
        let ids = [
            "",
            "a",
            "ab",
            "ab0",
            "abc",
            "vol-0000000000001",
            "vol-0000000000002",
            "z",
        ];
        for w in ids.windows(2) {
            assert!(id_prefix(w[0].as_bytes()) <= id_prefix(w[1].as_bytes()), "{w:?}");
        }
    }

    #[test]
    fn relations_rank_by_name() {
        let names: Vec<&str> = by_name().iter().map(|r| r.name()).collect();
        let mut sorted = names.clone();
        sorted.sort();
        assert_eq!(names, sorted);
    }
}
