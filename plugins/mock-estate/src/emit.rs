//! Writing one unit of the estate: slots and their lifecycle, nodes, edges
//! and the ground truth.
//!
//! A unit declares its resources as slots in a fixed order decided by its
//! shape (never by the epoch), so slot `j` of unit `u` is the same resource
//! at every epoch. Whether a slot exists at an epoch, which incarnation it is
//! and which version of its mutable properties it shows are pure functions
//! of `(seed, unit, j, epoch)`: any epoch is generated directly.

use std::fmt::{self, Write as _};
use std::mem;

use svc_engine::crn::write_crn;
use svc_engine::graph::{EdgeBatch, NodeBatch, NodeInput, NodeKeyRef};
use svc_engine::{Relation, Sym};

use super::clock::{DAY, REFERENCE_TIME, epoch_time, rfc3339};
use super::rng::{Rng, hash3, mix, round2};
use super::syms::{S, Syms, Ty};
use super::wire::{Json, W, WireOut};

/// A churning slot lives in cycles of `CYCLE_MIN..CYCLE_MIN + CYCLE_SPAN`
/// epochs. Each cycle starts with `GAP_MIN..GAP_MIN + GAP_SPAN` epochs
/// without the resource; then a new incarnation (a new physical id) exists
/// for the rest of the cycle.
const CYCLE_MIN: u64 = 50;
const CYCLE_SPAN: u64 = 50;
const GAP_MIN: u64 = 2;
const GAP_SPAN: u64 = 8;
/// Mutable properties change every `CHANGE_MIN..CHANGE_MIN + CHANGE_SPAN`
/// epochs: about 1.4% of the resources an epoch, plus those whose neighbours changed.
const CHANGE_MIN: u64 = 50;
const CHANGE_SPAN: u64 = 70;
/// Salt separating slot hashes from the unit's shape streams.
const SLOT_SALT: u64 = 0x51_07;

/// Where generated batches (and, for the ground truth, waste CRNs) go.
pub(crate) struct Out {
    batch_size: usize,
    pub(crate) nodes: Vec<NodeBatch>,
    pub(crate) edges: Vec<EdgeBatch>,
    cur_nodes: NodeBatch,
    cur_edges: EdgeBatch,
    /// CRNs of the waste resources written, when collecting the ground truth.
    pub(crate) waste: Option<Vec<String>>,
    /// Resources written.
    pub(crate) total: usize,
}

impl Out {
    /// `hint` is the number of nodes expected, to size the first batch.
    pub(crate) fn new(batch_size: usize, hint: usize, truth: bool) -> Out {
        let batch_size = batch_size.max(1);
        let cap = hint.clamp(1, batch_size);
        Out {
            batch_size,
            nodes: Vec::new(),
            edges: Vec::new(),
            cur_nodes: NodeBatch::with_capacity(cap),
            cur_edges: EdgeBatch::with_capacity((cap * 2).min(batch_size)),
            waste: truth.then(Vec::new),
            total: 0,
        }
    }

    fn node_batch(&mut self) -> &mut NodeBatch {
        if self.cur_nodes.len() >= self.batch_size {
            let next = NodeBatch::with_capacity(self.batch_size);
            self.nodes.push(mem::replace(&mut self.cur_nodes, next));
        }
        &mut self.cur_nodes
    }

    fn edge_batch(&mut self) -> &mut EdgeBatch {
        if self.cur_edges.len() >= self.batch_size {
            let next = EdgeBatch::with_capacity(self.batch_size);
            self.edges.push(mem::replace(&mut self.cur_edges, next));
        }
        &mut self.cur_edges
    }

    /// Moves the partly filled batches to the output.
    pub(crate) fn finish(&mut self) {
        if !self.cur_nodes.is_empty() {
            self.nodes.push(mem::take(&mut self.cur_nodes));
        }
        if !self.cur_edges.is_empty() {
            self.edges.push(mem::take(&mut self.cur_edges));
        }
    }
}

/// What running a unit produces: batches, the wire form, or (when planning
/// the estate) the probability that each slot exists at a random epoch.
/// The wire form records those probabilities too, as a plan would: its
/// estate is planned as it is written.
pub(crate) enum Mode<'o> {
    Emit(&'o mut Out),
    Wire(&'o mut Json, &'o mut dyn WireOut, &'o mut Vec<f32>),
    Plan(&'o mut Vec<f32>),
}

/// One resource position of a unit at one epoch.
#[derive(Copy, Clone, Debug)]
pub(crate) struct Slot {
    pub j: u32,
    /// Stable hash of the slot.
    pub h: u64,
    pub alive: bool,
    /// Incarnation: a churning slot gets a new physical id in every cycle.
    pub k: u64,
    /// Epoch the incarnation appeared; 0 or less when it predates the first scan.
    pub born: i64,
    /// Version of the mutable properties.
    pub version: u64,
    /// Epoch the current version began (0 for one older than the first scan).
    pub since: u64,
    expect: f32,
}

impl Slot {
    /// Hash of this incarnation: physical ids and attributes fixed for its life.
    pub(crate) fn ih(&self) -> u64 {
        mix(self.h, self.k)
    }
    /// Attributes fixed for the life of the incarnation.
    pub(crate) fn rng(&self) -> Rng {
        Rng::new(self.ih())
    }
    /// Mutable attributes (utilisation, size, state) of the current version.
    pub(crate) fn vrng(&self) -> Rng {
        Rng::new(hash3(self.h, self.k, self.version ^ 0x7e57))
    }
}

fn lifecycle(h: u64, epoch: u64) -> (bool, u64, i64, f32) {
    let cycle = CYCLE_MIN + (h >> 7) % CYCLE_SPAN;
    let gap = GAP_MIN + (h >> 19) % GAP_SPAN;
    let phase = (h >> 31) % cycle;
    let t = epoch.saturating_add(phase);
    let k = t / cycle;
    let born = i64::try_from(k * cycle + gap).unwrap_or(i64::MAX) - phase as i64;
    (t % cycle >= gap, k, born, 1.0 - gap as f32 / cycle as f32)
}

/// The version of a slot's mutable properties at `epoch`, and the epoch it began.
fn version(h: u64, epoch: u64) -> (u64, u64) {
    if epoch == 0 {
        // Every offset is below its period: the first version, since the start.
        return (0, 0);
    }
    let every = CHANGE_MIN + (h >> 11) % CHANGE_SPAN;
    let offset = (h >> 37) % every;
    let v = epoch.saturating_add(offset) / every;
    (v, (v * every).saturating_sub(offset))
}

/// How a machine is used.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Usage {
    /// Running and doing work.
    Busy,
    /// Running and billed, doing nothing for weeks: waste, with its disks.
    Idle,
    /// Stopped long ago and forgotten: waste, with its disks.
    Stopped,
}

/// Provider, region and account of the nodes a unit is writing.
#[derive(Copy, Clone, Debug)]
pub(crate) struct Scope<'a> {
    pub provider: S<'a>,
    pub region: S<'a>,
    pub account: S<'a>,
}

/// A written node: its key symbols, where its physical id is in the unit's
/// id buffer and (in the wire form) where its CRN is in the CRN buffer and
/// whether an earlier action deleted it.
#[derive(Copy, Clone, Debug)]
pub(crate) struct H {
    syms: [Sym; 5],
    id: (u32, u32),
    crn: (u32, u32),
    gone: bool,
}

/// The discovered fields of a node about to be written.
#[derive(Copy, Clone)]
pub(crate) struct N<'a> {
    scope: Scope<'a>,
    ty: Ty<'a>,
    state: S<'a>,
    cost: f32,
    created: u64,
    waste: bool,
}

impl<'a> N<'a> {
    pub(crate) fn cost(mut self, usd_mo: f64) -> Self {
        self.cost = round2(usd_mo) as f32;
        self
    }
    pub(crate) fn created(mut self, ts: u64) -> Self {
        self.created = ts;
        self
    }
    /// Marks the node as waste by construction (part of the ground truth).
    pub(crate) fn waste(mut self, waste: bool) -> Self {
        self.waste = waste;
        self
    }
    pub(crate) fn region(mut self, region: S<'a>) -> Self {
        self.scope.region = region;
        self
    }
}

/// Tag values shared by a unit's resources.
#[derive(Copy, Clone)]
struct Labels {
    env: Sym,
    team: Sym,
    owner: Sym,
    cost_center: Sym,
}

/// Writes one unit at one epoch.
pub(crate) struct Unit<'a> {
    pub s: &'a Syms,
    pub seed: u64,
    pub index: u64,
    pub epoch: u64,
    /// The unit's Kubernetes cluster name (units that run one).
    pub cluster: S<'a>,
    pub scope: Scope<'a>,
    labels: Labels,
    /// The first two parts of [`hash3`] for slots and shape streams,
    /// which are the same for every slot and stream of the unit.
    slot_base: u64,
    rng_base: u64,
    limit: u32,
    next: u32,
    mode: Mode<'a>,
    ids: String,
    crns: String,
}

impl<'a> Unit<'a> {
    /// A unit writing at most `limit` slots.
    pub(crate) fn new(
        s: &'a Syms,
        (seed, index, epoch): (u64, u64, u64),
        limit: u32,
        cluster: S<'a>,
        mode: Mode<'a>,
    ) -> Unit<'a> {
        let e = s.envs[0].sym;
        Unit {
            s,
            seed,
            index,
            epoch,
            slot_base: mix(seed ^ SLOT_SALT, index),
            rng_base: mix(seed, index),
            cluster,
            scope: Scope {
                provider: s.aws,
                region: s.global,
                account: s.global,
            },
            labels: Labels {
                env: e,
                team: e,
                owner: e,
                cost_center: e,
            },
            limit,
            next: 0,
            crns: match mode {
                Mode::Wire(..) => String::with_capacity(8192),
                _ => String::new(),
            },
            // A plan writes no ids.
            ids: match mode {
                Mode::Plan(_) => String::new(),
                _ => String::with_capacity(2048),
            },
            mode,
        }
    }

    /// A shape stream: counts and choices that never change with the epoch.
    pub(crate) fn rng(&self, salt: u64) -> Rng {
        Rng::new(mix(self.rng_base, salt))
    }

    /// Picks the team, owner and cost centre tagged on the unit's resources.
    pub(crate) fn label(&mut self, env: usize, r: &mut Rng) {
        let s = self.s;
        let team = r.below(s.teams.len());
        self.labels = Labels {
            env: s.envs[env.min(s.envs.len() - 1)].sym,
            team: s.teams[team].sym,
            owner: s.owners[(team * 2 + r.below(2)) % s.owners.len()].sym,
            cost_center: s.cost_centers[team % s.cost_centers.len()].sym,
        };
    }

    fn push_slot(&mut self, h: u64, life: (bool, u64, i64, f32)) -> Slot {
        let j = self.next;
        self.next += 1;
        let (alive, k, born, expect) = life;
        if let Mode::Plan(p) | Mode::Wire(_, _, p) = &mut self.mode {
            p.push(expect);
        }
        let (version, since) = version(h, self.epoch);
        Slot {
            j,
            h,
            alive,
            k,
            born,
            version,
            since,
            expect,
        }
    }

    /// The next slot; a churning one comes and goes, a stable one always exists.
    pub(crate) fn slot(&mut self, churn: bool) -> Slot {
        let h = mix(self.slot_base, u64::from(self.next));
        let life = if churn {
            lifecycle(h, self.epoch)
        } else {
            (true, 0, 0, 1.0)
        };
        self.push_slot(h, life)
    }

    /// The next slot, sharing the lifecycle of `group` (a volume and its instance).
    pub(crate) fn follow(&mut self, group: &Slot) -> Slot {
        let h = mix(self.slot_base, u64::from(self.next));
        self.push_slot(h, (group.alive, group.k, group.born, group.expect))
    }

    /// A node of type `ty` in the current scope.
    pub(crate) fn at(&self, ty: Ty<'a>, state: S<'a>) -> N<'a> {
        N {
            scope: self.scope,
            ty,
            state,
            cost: 0.0,
            created: REFERENCE_TIME,
            waste: false,
        }
    }

    /// Creation time: just before the epoch the incarnation appeared, or
    /// `lo_days..hi_days` before epoch 0 when it predates the first scan.
    pub(crate) fn created(&self, slot: &Slot, lo_days: u64, hi_days: u64) -> u64 {
        match u64::try_from(slot.born) {
            Ok(born) if born > 0 => epoch_time(born) - mix(slot.ih(), 1) % 3_000,
            _ => self.old(slot, lo_days, hi_days),
        }
    }

    /// A time `lo_days..hi_days` before epoch 0, fixed for the incarnation.
    pub(crate) fn old(&self, slot: &Slot, lo_days: u64, hi_days: u64) -> u64 {
        let mut r = Rng::new(mix(slot.ih(), lo_days ^ (hi_days << 16)));
        let days = r.range(lo_days, hi_days.max(lo_days + 1));
        REFERENCE_TIME.saturating_sub(days * DAY + r.range(0, DAY))
    }

    /// Writes a node for `slot` when the slot exists at this epoch and is
    /// within the unit's limit. `state` and `created_at` are written first,
    /// then `props`.
    pub(crate) fn node(
        &mut self,
        slot: &Slot,
        n: N<'a>,
        id: fmt::Arguments<'_>,
        props: impl FnOnce(&mut W<'_, '_>),
    ) -> Option<H> {
        if matches!(self.mode, Mode::Plan(_)) || slot.j >= self.limit || !slot.alive {
            return None;
        }
        let start = self.ids.len();
        // Writing to a String cannot fail.
        let _ = self.ids.write_fmt(id);
        let end = self.ids.len();
        let id = &self.ids[start..end];
        let key = NodeKeyRef {
            provider: n.scope.provider.sym,
            region: n.scope.region.sym,
            service: n.ty.service.sym,
            kind: n.ty.kind.sym,
            account: n.scope.account.sym,
            id,
        };
        let s = self.s;
        let l = self.labels;
        let ignored = (slot.h >> 24).is_multiple_of(100);
        // In key order (`cost-center`, `env`, `owner`, `svc:ignore`,
        // `team`), as a decoder keeps tags: the wire form's tags object
        // is read without sorting.
        let mut tags = [(s.tag.env.sym, l.env); 5];
        let mut len = 0;
        for (k, v, on) in [
            (s.tag.cost_center.sym, l.cost_center, (slot.h >> 44) % 8 != 5),
            (s.tag.env.sym, l.env, true),
            (s.tag.owner.sym, l.owner, (slot.h >> 40) % 10 != 3),
            (s.tag.ignore.sym, s.yes.sym, ignored),
            (s.tag.team.sym, l.team, true),
        ] {
            if on {
                tags[len] = (k, v);
                len += 1;
            }
        }
        let tags = &tags[..len];
        let stamp = rfc3339(n.created);
        let sc = n.scope;
        let crn_of = |out: &mut String| {
            write_crn(
                out,
                [
                    sc.provider.name,
                    sc.region.name,
                    n.ty.service.name,
                    n.ty.kind.name,
                    sc.account.name,
                    id,
                ],
            );
        };
        let mut h = H {
            syms: key.syms(),
            id: (start as u32, end as u32),
            crn: (0, 0),
            gone: false,
        };
        match &mut self.mode {
            Mode::Plan(_) => return None,
            Mode::Emit(out) => {
                let input = NodeInput {
                    key,
                    ty: n.ty.ty,
                    state: n.state.sym,
                    cost_usd_mo: n.cost,
                    creation_ts: n.created,
                };
                out.node_batch().push(input, tags, |w| {
                    let mut w = W::Engine(w);
                    w.str(s.k.state, n.state.name);
                    w.str(s.k.created_at, stamp.as_str());
                    props(&mut w);
                });
                out.total += 1;
                if n.waste
                    && !ignored
                    && let Some(waste) = &mut out.waste
                {
                    let mut crn = String::with_capacity(96);
                    crn_of(&mut crn);
                    waste.push(crn);
                }
            }
            Mode::Wire(json, out, _) => {
                json.crn.clear();
                crn_of(&mut json.crn);
                let crn_start = self.crns.len();
                self.crns.push_str(&json.crn);
                h.crn = (crn_start as u32, self.crns.len() as u32);
                json.state.clear();
                out.generated(&json.crn);
                match out.effect(&json.crn) {
                    Some("deleted") => h.gone = true,
                    Some(state) => json.state.push_str(state),
                    None => json.state.push_str(n.state.name),
                }
                if !h.gone {
                    let state = std::mem::take(&mut json.state);
                    let mut w = json.start();
                    w.str(s.k.state, &state);
                    w.str(s.k.created_at, stamp.as_str());
                    props(&mut w);
                    json.finish(tags, n.created);
                    json.state = state;
                    out.node(&json.crn, &json.doc, f64::from(n.cost));
                }
            }
        }
        Some(h)
    }

    /// Writes an edge when both ends were written; `raw` is the relation
    /// string a provider plugin would report, kept as edge property `relation`.
    pub(crate) fn edge(&mut self, a: Option<H>, b: Option<H>, rel: Relation, raw: &str) {
        let (Some(a), Some(b)) = (a, b) else {
            return;
        };
        match &mut self.mode {
            Mode::Plan(_) => {}
            Mode::Emit(out) => {
                let ids = &self.ids;
                let key = |h: H| NodeKeyRef {
                    provider: h.syms[0],
                    region: h.syms[1],
                    service: h.syms[2],
                    kind: h.syms[3],
                    account: h.syms[4],
                    id: ids.get(h.id.0 as usize..h.id.1 as usize).unwrap_or(""),
                };
                let relation = self.s.k.relation;
                out.edge_batch().push(key(a), key(b), rel, |w| w.str(relation, raw));
            }
            Mode::Wire(_, out, _) => {
                if a.gone || b.gone {
                    return;
                }
                let crn = |h: H| self.crns.get(h.crn.0 as usize..h.crn.1 as usize).unwrap_or("");
                out.edge(crn(a), crn(b), raw);
            }
        }
    }

    /// The physical id of a written node; empty for none.
    pub(crate) fn id(&self, h: Option<H>) -> String {
        h.and_then(|h| self.ids.get(h.id.0 as usize..h.id.1 as usize))
            .unwrap_or("")
            .to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn churning_slots_come_back_as_new_incarnations() {
        for h in [1u64, 0xdead_beef, u64::MAX / 3] {
            let mut seen_dead = false;
            let mut ks = Vec::new();
            for e in 0..400 {
                let (alive, k, born, expect) = lifecycle(h, e);
                assert!((0.8..=1.0).contains(&expect));
                seen_dead |= !alive;
                if alive {
                    assert!(born <= e as i64, "born {born} after epoch {e}");
                    ks.push(k);
                }
            }
            ks.dedup();
            assert!(seen_dead && ks.len() >= 3, "{h}: {ks:?}");
        }
    }

    #[test]
    fn versions_only_move_forward() {
        let h = 0x1234_5678_9abc_def0;
        let vs: Vec<(u64, u64)> = (0..500).map(|e| version(h, e)).collect();
        assert!(vs.windows(2).all(|w| w[1].0 == w[0].0 || w[1].0 == w[0].0 + 1));
        assert!(vs[499].0 > vs[0].0);
        for (e, (_, since)) in vs.iter().enumerate() {
            assert!(*since <= e as u64);
        }
    }
}
