//! The per-node pass: one rayon task per node shard reads the cost,
//! visibility, type and waste columns, adds up each type, and keeps the
//! rows whose cost differs from the baseline. Scoring then sorts only those.

use rayon::prelude::*;
use rustc_hash::FxHashMap;

use super::robust::Robust;
use super::{
    Anomalies, Baseline, ChangeKind, MAX_NODE_ANOMALIES, MIN_CHANGE_PCT, MIN_CHANGE_USD_MO, NodeAnomaly, TypeKey,
    TypeTotals, Z_THRESHOLD,
};
use crate::heuristics::FindingSet;
use svc_graph::graph::{Graph, visible};
use svc_graph::ids::NodeId;

/// One type's sums over the pass.
#[derive(Copy, Clone, Debug, Default)]
pub(super) struct Agg {
    pub(super) count: u64,
    cost: f64,
    waste: f64,
    /// Nodes visible at the baseline or now: the sample a change is scored in.
    compared: u64,
}

impl Agg {
    pub(super) fn totals(&self) -> TypeTotals {
        TypeTotals {
            count: self.count,
            cost_usd_mo: self.cost,
            waste_usd_mo: self.waste,
        }
    }
    fn add(&mut self, o: &Agg) {
        self.count += o.count;
        self.cost += o.cost;
        self.waste += o.waste;
        self.compared += o.compared;
    }
}

/// A row whose cost is not what it was; NaN where it was or is not visible.
#[derive(Copy, Clone, Debug)]
pub(super) struct Change {
    key: TypeKey,
    id: NodeId,
    previous: f32,
    current: f32,
}

impl Change {
    fn previous(&self) -> f64 {
        if self.previous.is_nan() {
            0.0
        } else {
            f64::from(self.previous)
        }
    }
    fn current(&self) -> f64 {
        if self.current.is_nan() {
            0.0
        } else {
            f64::from(self.current)
        }
    }
    fn delta(&self) -> f64 {
        self.current() - self.previous()
    }
    fn kind(&self) -> ChangeKind {
        match (self.previous.is_nan(), self.current.is_nan()) {
            (true, _) => ChangeKind::New,
            (_, true) => ChangeKind::Removed,
            _ => ChangeKind::Changed,
        }
    }
}

/// What the pass found over the whole graph.
pub(super) struct Pass {
    pub(super) types: FxHashMap<TypeKey, Agg>,
    changes: Vec<Change>,
    /// This scan's costs, the next scan's baseline.
    pub(super) costs: Vec<Vec<f32>>,
}

struct ShardPass {
    types: FxHashMap<TypeKey, Agg>,
    changes: Vec<Change>,
    costs: Vec<f32>,
}

/// Sums every type and collects the changed rows, shard by shard in parallel.
pub(super) fn run(graph: &Graph, findings: &FindingSet, baseline: Option<&Baseline>, now_us: u64) -> Pass {
    let parts: Vec<ShardPass> = graph
        .node_shards()
        .par_iter()
        .enumerate()
        .map(|(s, shard)| {
            let before: &[f32] = baseline.and_then(|b| b.costs.get(s)).map_or(&[], Vec::as_slice);
            let mut out = ShardPass {
                types: FxHashMap::default(),
                changes: Vec::new(),
                costs: Vec::with_capacity(shard.len()),
            };
            for r in 0..shard.len() {
                let shown = visible(shard.valid_to[r], now_us);
                let current = if shown { shard.cost[r] } else { f32::NAN };
                out.costs.push(current);
                let previous = before.get(r).copied().unwrap_or(f32::NAN);
                if !shown && previous.is_nan() {
                    continue;
                }
                let key = TypeKey {
                    provider: shard.key[r][0],
                    ty: shard.ty[r],
                };
                let agg = out.types.entry(key).or_default();
                let id = NodeId::new(s, r as u32, shard.generation);
                if shown {
                    agg.count += 1;
                    agg.cost += f64::from(current);
                    if shard.waste.get(r)
                        && let Some(f) = findings.deciding(id)
                        && f.is_waste
                    {
                        agg.waste += f.projected_savings_usd_mo;
                    }
                }
                if baseline.is_some() {
                    agg.compared += 1;
                    let c = Change {
                        key,
                        id,
                        previous,
                        current,
                    };
                    if c.delta() != 0.0 {
                        out.changes.push(c);
                    }
                }
            }
            out
        })
        .collect();
    let mut types: FxHashMap<TypeKey, Agg> = FxHashMap::default();
    let mut changes = Vec::with_capacity(parts.iter().map(|p| p.changes.len()).sum());
    let mut costs = Vec::with_capacity(parts.len());
    for p in parts {
        for (k, a) in &p.types {
            types.entry(*k).or_default().add(a);
        }
        changes.extend(p.changes);
        costs.push(p.costs);
    }
    Pass { types, changes, costs }
}

/// A node's change is material: at least [`MIN_CHANGE_USD_MO`] and
/// [`MIN_CHANGE_PCT`] of its previous cost (any change from nothing).
fn material(previous: f64, delta: f64) -> bool {
    delta.abs() >= MIN_CHANGE_USD_MO && (previous == 0.0 || delta.abs() / previous.abs() * 100.0 >= MIN_CHANGE_PCT)
}

/// Scores each changed row within its type (unchanged rows count as zeros)
/// and keeps the material outliers, highest |z| first.
pub(super) fn node_anomalies(graph: &Graph, pass: &mut Pass, baseline: Option<&Baseline>) -> Anomalies {
    let Some(baseline) = baseline else {
        return Anomalies::default();
    };
    pass.changes.par_sort_unstable_by_key(|c| (c.key, c.id));
    let changes = &pass.changes;
    let groups: Vec<&[Change]> = changes.chunk_by(|a, b| a.key == b.key).collect();
    let mut flagged: Vec<(Change, f64)> = groups
        .par_iter()
        .flat_map_iter(|group| {
            let compared = pass.types.get(&group[0].key).map_or(0, |a| a.compared);
            let zeros = compared.saturating_sub(group.len() as u64);
            let mut deltas: Vec<f64> = group.iter().map(Change::delta).collect();
            let robust = Robust::with_zeros(&mut deltas, zeros);
            group.iter().filter_map(move |c| {
                let z = robust?.z(c.delta());
                (z.abs() > Z_THRESHOLD && material(c.previous(), c.delta())).then_some((*c, z))
            })
        })
        .collect();
    let nodes_flagged = flagged.len() as u64;
    flagged.par_sort_unstable_by(|a, b| b.1.abs().total_cmp(&a.1.abs()).then(a.0.id.cmp(&b.0.id)));
    flagged.truncate(MAX_NODE_ANOMALIES);
    let reader = graph.interner().reader();
    let nodes = flagged
        .iter()
        .map(|(c, z)| NodeAnomaly {
            crn: graph.crn_with(&reader, c.id),
            ty: reader.resolve(c.key.ty).to_owned(),
            provider: reader.resolve(c.key.provider).to_owned(),
            kind: c.kind(),
            previous: c.previous(),
            current: c.current(),
            z: *z,
        })
        .collect();
    Anomalies {
        scan_seq: 0,
        previous_scan_seq: baseline.scan_seq,
        baseline: baseline.kind,
        nodes_compared: pass.types.values().map(|a| a.compared).sum(),
        nodes_changed: changes.len() as u64,
        nodes_flagged,
        nodes,
        types: Vec::new(),
    }
}
