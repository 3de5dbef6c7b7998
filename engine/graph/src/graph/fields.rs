//! A node version's fields, borrowed: the one shape in which a node is
//! handed to the stores, from an owned row or straight from a shard.

use super::{NodeRow, Phase, Reachability};
use crate::ids::Sym;

/// A node version's fields, borrowed: from an owned [`NodeRow`] or
/// straight from a shard's columns, encoded the same either way.
pub struct NodeFields<'a> {
    pub key: [Sym; 5],
    pub id: &'a [u8],
    pub ty: Sym,
    pub state: Sym,
    pub cost_usd_mo: f32,
    pub creation_ts: u64,
    pub valid_from: u64,
    pub valid_to: u64,
    pub is_waste: bool,
    pub waste_reason: &'a [u8],
    pub risk_score: f32,
    pub reachability: Reachability,
    pub phase: Phase,
    pub verdict: Option<Sym>,
    pub tags: &'a [u8],
    pub props: &'a [u8],
}

impl<'a> NodeFields<'a> {
    pub fn of(n: &'a NodeRow) -> NodeFields<'a> {
        NodeFields {
            key: n.key,
            id: n.id.as_bytes(),
            ty: n.ty,
            state: n.state,
            cost_usd_mo: n.cost_usd_mo,
            creation_ts: n.creation_ts,
            valid_from: n.valid_from,
            valid_to: n.valid_to,
            is_waste: n.is_waste,
            waste_reason: n.waste_reason.as_bytes(),
            risk_score: n.risk_score,
            reachability: n.reachability,
            phase: n.phase,
            verdict: n.verdict,
            tags: &n.tags,
            props: &n.props,
        }
    }

    /// An owned copy (text that is not UTF-8, which the arena never holds, reads as empty).
    pub fn to_row(&self) -> NodeRow {
        let text = |b: &[u8]| std::str::from_utf8(b).unwrap_or("").to_owned();
        NodeRow {
            key: self.key,
            id: text(self.id),
            ty: self.ty,
            state: self.state,
            cost_usd_mo: self.cost_usd_mo,
            creation_ts: self.creation_ts,
            valid_from: self.valid_from,
            valid_to: self.valid_to,
            is_waste: self.is_waste,
            waste_reason: text(self.waste_reason),
            risk_score: self.risk_score,
            reachability: self.reachability,
            phase: self.phase,
            verdict: self.verdict,
            tags: self.tags.to_vec(),
            props: self.props.to_vec(),
        }
    }
}
