//! The built-in rules as a later scan runs them: each node's answer is kept
//! with what its evaluation read, and a pass evaluates again only the nodes
//! whose answer may have changed.
//!
//! A kept answer is evaluated again when
//! - the node's row changed (its content hash, the one ingest uses to call
//!   a node unchanged), appeared, or stopped being visible;
//! - one of its edges was added, changed or retired since the last pass,
//!   or a node it read (a neighbour, or a neighbour's neighbour through
//!   it) changed or had an edge changed;
//! - an estate fact it asked about (a DNS target, an EBS volume id, a GCP
//!   disk name) appeared or went away;
//! - time moved past a bound it read: the observation time at which an age
//!   in days ticks over or a traffic window stops counting, the scan time at
//!   which an `svc:ignore` date or window ends, or the start of the node's
//!   current version that an `Nd` window counts from moved;
//! - and every answer when the rule selection changed, a clock went
//!   backwards, a shard was renumbered, a list of changed rows overflowed,
//!   or a stored future `valid_to` passed.
//!
//! A pass finds those nodes without walking every row: the graph lists the
//! rows changed since the last pass ([`Graph::take_row_changes`]), the cache
//! keeps who read each node and who asked about each fact, and queues rows
//! by the time their answer may change.
//!
//! The answers are exactly those of [`super::run`] over the same graph at
//! the same times; `ingest/tests/mock_estate.rs` checks that over many
//! hourly epochs of the mock estate and `engine/tests/builtin_rules.rs` on
//! hand-built changes.

use std::collections::BTreeMap;

use rayon::prelude::*;
use rustc_hash::{FxHashMap, FxHashSet};
use smallvec::SmallVec;

use super::ignore::{self, Ignore};
use super::pass::{RuleHit, finding, rules_by_type};
use super::rule::{Rule, Selection, Why};
use super::view::{self, Contributors, Index, Keys, Machines, Node, Reads};
use crate::heuristics::finding::{Finding, precedence};
use crate::heuristics::finding_set::FindingList;
use svc_graph::graph::BitSet;
use svc_graph::graph::shard::prefetch;
use svc_graph::graph::{Graph, Prefetch, RowChanges, prefetch_ahead, visible};
use svc_graph::ids::{NodeId, Sym};

/// The kept answers of the last pass, by node row.
#[derive(Clone, Default)]
pub struct Cache {
    shards: Vec<Shard>,
    index: Index,
    /// By node: the nodes whose kept answers read it.
    readers: FxHashMap<NodeId, Who>,
    /// By estate fact ([`Index`] key): the nodes whose kept answers asked
    /// about it.
    askers: FxHashMap<u64, Who>,
    /// The selection, scan time (µs) and observation time (s) of the last
    /// pass; `None` before the first.
    last: Option<(Selection, u64, u64)>,
    /// From this scan time (µs) a row may stop being visible without a
    /// write ([`RowChanges::horizon`] at the last pass).
    horizon: u64,
    /// Findings and ignored nodes kept, in all.
    findings: u64,
    ignored: u64,
}

#[derive(Default)]
struct Shard {
    /// The node shard's generation the rows are numbered in.
    generation: u32,
    /// By row: whether it has an answer (it was visible and of a type some
    /// selected rule reads), and how many do.
    answered: BitSet,
    answers: u64,
    /// By row: the observation time (Unix seconds) from which the answer
    /// may differ; `u64::MAX` when only a change can alter it, or when the
    /// row has no answer.
    until: Vec<u64>,
    /// By row: which of its own edges the answer read ([`view::edge_bit`]).
    edges: Vec<u16>,
    /// By row: 1 + where its [`Kept`] is in `kept`, or 0 for a row whose
    /// answer has no findings, no `svc:ignore` answer and read nothing but
    /// its own row (most rows).
    slot: Vec<u32>,
    kept: Vec<Kept>,
    /// Places in `kept` free for reuse.
    free: Vec<u32>,
    /// The index keys each contributing row added to the [`Index`], sorted.
    facts: FxHashMap<u32, Box<[u64]>>,
    /// Rows by the observation time from which their answer may differ. An
    /// entry whose time is no longer the row's `until` is stale and skipped.
    due: TimeQueue,
    /// The same by scan time (Unix seconds), for [`Kept::until_now`].
    due_now: TimeQueue,
    /// Rows whose answer read when the node's version started.
    versioned: FxHashSet<u32>,
}

/// A copy with the room of the original: a later pass on the copy grows its
/// lists as one on the original would (exactly full lists would be moved
/// to bigger ones on the first row added).
impl Clone for Shard {
    fn clone(&self) -> Shard {
        Shard {
            generation: self.generation,
            answered: self.answered.clone(),
            answers: self.answers,
            until: roomy(&self.until, self.until.capacity()),
            edges: roomy(&self.edges, self.edges.capacity()),
            slot: roomy(&self.slot, self.slot.capacity()),
            kept: roomy(&self.kept, self.kept.capacity()),
            free: roomy(&self.free, self.free.capacity()),
            facts: self.facts.clone(),
            due: self.due.clone(),
            due_now: self.due_now.clone(),
            versioned: self.versioned.clone(),
        }
    }
}

/// `v` copied into a list of capacity `room` (at least its length).
fn roomy<T: Clone>(v: &[T], room: usize) -> Vec<T> {
    let mut out = Vec::with_capacity(room.max(v.len()));
    out.extend_from_slice(v);
    out
}

/// Lengthens `v` to `len` rows of `fill`. A list that must move to a
/// bigger one gets an eighth more room: estates grow a little every scan.
fn lengthen<T: Clone>(v: &mut Vec<T>, len: usize, fill: T) {
    if v.capacity() < len {
        v.reserve_exact(len + len / 8 - v.len());
    }
    v.resize(len, fill);
}

/// The index keys a shard's changed rows stopped and started contributing.
type Facts = (Vec<u64>, Vec<u64>);

/// What a node's answer holds besides its time bound.
#[derive(Clone, Default)]
struct Kept {
    /// In precedence order, shared with the findings set built from it.
    findings: FindingList,
    ignored: Option<Ignore>,
    /// Kept in place: most answers read one node or two besides their own.
    deps: SmallVec<[NodeId; 2]>,
    keys: Box<[u64]>,
    /// The scan time (Unix seconds) from which the answer may differ.
    until_now: u64,
    /// The start of the node's version (µs) the answer read, if it did.
    changed_us: Option<u64>,
}

/// What one pass did.
#[derive(Debug, Default)]
pub struct Pass {
    /// Every answer was worked out again (first pass, or nothing could be kept).
    pub full: bool,
    /// Nodes whose answer was worked out again, and rule checks run on them.
    pub evaluated: u64,
    pub checks: u64,
    /// Nodes whose kept answer stood.
    pub kept: u64,
    /// Nodes whose answer was worked out again or dropped (no longer
    /// visible): where findings and verdicts may differ from the last pass.
    pub touched: Vec<NodeId>,
    /// Findings and ignored nodes now, in all.
    pub findings: u64,
    pub ignored: u64,
}

/// One evaluated node's answer, before it is stored.
struct Answer {
    until: u64,
    edges: u16,
    kept: Option<Kept>,
    checks: u64,
}

/// What storing one shard's answers did.
#[derive(Default)]
struct Stored {
    touched: Vec<NodeId>,
    evaluated: u64,
    checks: u64,
    findings_in: u64,
    findings_out: u64,
    ignored_in: u64,
    ignored_out: u64,
    /// (node read, reader, whether the reader now reads it or stopped).
    deps: Vec<(NodeId, NodeId, bool)>,
    /// (index key, asker, whether it now asks or stopped).
    keys: Vec<(u64, NodeId, bool)>,
    /// The answers replaced, freed after the pass.
    replaced: Vec<Kept>,
}

impl Stored {
    /// Room for storing `rows` answers, each reading a node or a fact or two.
    fn with_room(rows: usize) -> Stored {
        Stored {
            touched: Vec::with_capacity(rows),
            deps: Vec::with_capacity(rows),
            keys: Vec::with_capacity(rows / 4),
            replaced: Vec::with_capacity(rows),
            ..Stored::default()
        }
    }
}

impl Cache {
    /// Runs the selected rules over the nodes visible at `now_us`, observed
    /// at `as_of_s`, evaluating only the nodes whose answer may differ from
    /// the last pass. `changes` are the rows changed since the last pass
    /// ([`Graph::take_row_changes`], taken after the adjacency index was last
    /// built).
    pub fn run(
        &mut self,
        graph: &Graph,
        changes: &RowChanges,
        now_us: u64,
        as_of_s: u64,
        selection: &Selection,
    ) -> Pass {
        let nodes = graph.node_shards();
        let full = match &self.last {
            None => true,
            Some((sel, last_now, last_as_of)) => {
                sel != selection
                    || now_us < *last_now
                    || now_us >= self.horizon
                    || as_of_s < *last_as_of
                    || changes.nodes.len() != nodes.len()
                    || changes.edges.len() != graph.edge_shards().len()
                    || changes.nodes.iter().chain(&changes.edges).any(Option::is_none)
                    || self.shards.len() != nodes.len()
                    || self.shards.iter().zip(nodes).any(|(c, g)| c.generation != g.generation)
            }
        };
        if full {
            self.shards = nodes
                .iter()
                .map(|g| Shard {
                    generation: g.generation,
                    ..Shard::default()
                })
                .collect();
            self.index = Index::default();
            self.readers.clear();
            self.askers.clear();
            (self.findings, self.ignored) = (0, 0);
        }
        let reader = graph.interner().reader();
        let keys = Keys::new(&reader);
        let who = Contributors::new(&reader, &keys);

        // The rows whose own content or visibility changed (every row on a
        // full pass), and the estate facts: each changed row's contributions
        // worked out again, shard by shard in parallel; only those that
        // differ from what the row had contributed (most rows' stay the
        // same) change the index. Then the keys that appeared or went away.
        let (changed, contributed): (Vec<Vec<u32>>, Vec<Facts>) = self
            .shards
            .par_iter_mut()
            .zip(nodes)
            .enumerate()
            .map(|(s, (c, g))| {
                let rows: Vec<u32> = match changes.nodes.get(s) {
                    Some(Some(rows)) if !full => {
                        let mut rows = rows.clone();
                        rows.sort_unstable();
                        rows.dedup();
                        rows
                    }
                    _ => (0..g.len() as u32).collect(),
                };
                let (mut gone, mut came, mut keys) = (Vec::new(), Vec::new(), Vec::new());
                for &r in &rows {
                    let ri = r as usize;
                    keys.clear();
                    // A row's type never changes: a row of a type no fact
                    // comes from never contributed one.
                    let ty = g.ty[ri];
                    if !who.reads(ty) {
                        continue;
                    }
                    let seen = visible(g.valid_to[ri], now_us);
                    // Nor do its identity's facts while it stays visible.
                    if seen && who.fixed(ty) && c.facts.contains_key(&r) {
                        continue;
                    }
                    if seen && let Some(node) = graph.node(NodeId::new(s, r, g.generation)) {
                        who.keys_of(node, &mut keys);
                    }
                    keys.sort_unstable();
                    let old = c.facts.remove(&r);
                    let old = old.as_deref().unwrap_or_default();
                    diff(old, &keys, |k, add| if add { came.push(k) } else { gone.push(k) });
                    if !keys.is_empty() {
                        c.facts.insert(r, keys.as_slice().into());
                    }
                }
                (rows, (gone, came))
            })
            .unzip();
        let before: FxHashMap<u64, bool> = contributed
            .iter()
            .flat_map(|(gone, came)| gone.iter().chain(came))
            .map(|k| (*k, self.index.contains(*k)))
            .collect();
        for (gone, came) in &contributed {
            gone.iter().for_each(|k| _ = self.index.remove(*k));
            came.iter().for_each(|k| self.index.add(*k));
        }

        // Which rows to work out again, by shard: the changed rows, the ends
        // of every changed edge row whose answer read edges of its relation
        // and direction, the readers of any of these rows, and the askers of
        // a fact that appeared or went away. Each shard adds the rows whose
        // time bound passed.
        let mut todo = changed;
        if !full {
            let mut moved: Vec<BitSet> = nodes.iter().map(|g| BitSet::with_len(g.len())).collect();
            let mut ids: Vec<NodeId> = Vec::new();
            for (s, rows) in todo.iter().enumerate() {
                for &r in rows {
                    moved[s].set(r as usize, true);
                    ids.push(NodeId::new(s, r, nodes[s].generation));
                }
            }
            // Both ends of each changed edge row, and whether the end's
            // answer read edges of its relation and direction; an end whose
            // own row changed is on both lists already.
            let (shards, own) = (&self.shards, &moved);
            let ends: Vec<Vec<(NodeId, bool)>> = graph
                .edge_shards()
                .par_iter()
                .zip(&changes.edges)
                .map(|(e, rows)| {
                    let rows = rows.as_deref().unwrap_or_default();
                    let mut out = Vec::with_capacity(2 * rows.len());
                    for (i, &r) in rows.iter().enumerate() {
                        // The ends are far apart: the next edges' are asked
                        // for while this one's are read.
                        prefetch_ahead(rows, i, 16, |next, stage| {
                            let next = next as usize;
                            match stage {
                                Prefetch::Row => e.prefetch_row(next),
                                Prefetch::Lists => {
                                    for id in [e.src.get(next), e.dst.get(next)].into_iter().flatten() {
                                        let c = shards.get(id.shard());
                                        c.and_then(|c| c.edges.get(id.row() as usize)).map(prefetch);
                                    }
                                }
                            }
                        });
                        let r = r as usize;
                        for (id, outgoing) in [(e.src[r], true), (e.dst[r], false)] {
                            if own.get(id.shard()).is_some_and(|m| m.get(id.row() as usize)) {
                                continue;
                            }
                            let read = shards.get(id.shard()).and_then(|c| c.edges.get(id.row() as usize));
                            let bit = view::edge_bit(e.rel[r], outgoing);
                            out.push((graph.node_id(id), read.is_some_and(|b| b & bit != 0)));
                        }
                    }
                    out
                })
                .collect();
            for (id, read) in ends.into_iter().flatten() {
                let (s, row) = (id.shard(), id.row());
                if read {
                    todo[s].push(row);
                }
                if moved[s].insert(row as usize) {
                    ids.push(id);
                }
            }
            let flipped = before.into_iter().filter(|(k, was)| self.index.contains(*k) != *was);
            let mut again: Vec<NodeId> = ids
                .par_iter()
                .flat_map_iter(|id| self.readers.get(id).into_iter().flatten().copied())
                .collect();
            again.extend(flipped.filter_map(|(k, _)| self.askers.get(&k)).flatten());
            for id in again {
                if let Some(rows) = todo.get_mut(id.shard()) {
                    rows.push(id.row());
                }
            }
        }

        let by_type = rules_by_type(&reader, selection);
        let first = view::Ctx {
            graph,
            reader: &reader,
            keys: &keys,
            index: &self.index,
            machines: &Machines::default(),
            now_us,
            as_of_s,
        };
        // Every machine's verdict once, when most answers are worked out.
        let machines = if full {
            Machines::build(&first)
        } else {
            Machines::default()
        };
        let ctx = view::Ctx {
            machines: &machines,
            ..first
        };
        let now_s = now_us / 1_000_000;
        let (by_type, ctx) = (&by_type, &ctx);

        // Each shard works out its rows' answers and stores them.
        let stored: Vec<Stored> = self
            .shards
            .par_iter_mut()
            .zip(nodes)
            .zip(todo)
            .enumerate()
            .map(|(s, ((c, g), mut todo))| {
                if !full {
                    c.due_rows(&mut todo, g.valid_from.as_slice(), as_of_s, now_s);
                    todo.sort_unstable();
                    todo.dedup();
                }
                lengthen(&mut c.until, g.len(), u64::MAX);
                lengthen(&mut c.edges, g.len(), 0);
                let mut out = Stored::with_room(todo.len());
                let mut scratch = Scratch::default();
                for (i, &r) in todo.iter().enumerate() {
                    // The rows are far apart: what the next ones read is
                    // asked for while this one is worked out.
                    prefetch_ahead(&todo, i, 12, |r, stage| {
                        graph.prefetch_node(NodeId::new(s, r, g.generation), stage);
                        c.prefetch(r as usize, stage);
                    });
                    let ri = r as usize;
                    let id = NodeId::new(s, r, g.generation);
                    let rules = match by_type.get(g.ty[ri].index()) {
                        Some(rules) if !rules.is_empty() && visible(g.valid_to[ri], now_us) => rules,
                        _ => {
                            if c.answered.get(ri) {
                                c.store(id, None, as_of_s, now_s, &mut out);
                            }
                            continue;
                        }
                    };
                    let answer = evaluate(ctx, id, g.key[ri][0], rules, &mut scratch);
                    out.evaluated += 1;
                    out.checks += answer.checks;
                    c.store(id, Some(answer), as_of_s, now_s, &mut out);
                }
                c.compact();
                out
            })
            .collect();

        let mut pass = Pass {
            full,
            ..Pass::default()
        };
        pass.touched.reserve(stored.iter().map(|o| o.touched.len()).sum());
        let mut replaced = Vec::new();
        for out in stored {
            pass.touched.extend(out.touched);
            pass.evaluated += out.evaluated;
            pass.checks += out.checks;
            self.findings = self.findings + out.findings_in - out.findings_out;
            self.ignored = self.ignored + out.ignored_in - out.ignored_out;
            for (dep, reader, add) in out.deps {
                note(&mut self.readers, dep, reader, add);
            }
            for (key, asker, add) in out.keys {
                note(&mut self.askers, key, asker, add);
            }
            replaced.push(out.replaced);
        }
        // The replaced answers (their findings' reasons) are freed off the scan's path.
        if replaced.iter().map(Vec::len).sum::<usize>() > 4096 {
            let _ = std::thread::Builder::new()
                .name("svc-free".into())
                .spawn(move || drop(replaced));
        }
        pass.kept = self.shards.iter().map(|c| c.answers).sum::<u64>() - pass.evaluated;
        pass.findings = self.findings;
        pass.ignored = self.ignored;
        self.last = Some((selection.clone(), now_us, as_of_s));
        self.horizon = changes.horizon;
        pass
    }

    /// The built-in findings about `id` from the last pass.
    pub fn findings_of(&self, id: NodeId) -> &[Finding] {
        self.entry(id).map_or(&[], |k| &k.findings[..])
    }

    /// The same as a shared list, in precedence order; `None` when there
    /// are none.
    pub fn finding_list(&self, id: NodeId) -> Option<FindingList> {
        self.entry(id)
            .map(|k| FindingList::clone(&k.findings))
            .filter(|l| !l.is_empty())
    }

    /// Why `id` was kept out by its `svc:ignore` tag in the last pass.
    pub fn ignored_of(&self, id: NodeId) -> Option<&Ignore> {
        self.entry(id).and_then(|k| k.ignored.as_ref())
    }

    /// Every finding of the last pass.
    pub fn findings(&self) -> impl Iterator<Item = &Finding> {
        self.shards.iter().flat_map(|c| &c.kept).flat_map(|k| k.findings.iter())
    }

    /// The last pass's findings, each node's list (in precedence order,
    /// shared, not copied).
    pub fn findings_by_node(&self) -> Vec<(NodeId, FindingList)> {
        self.shards
            .par_iter()
            .flat_map_iter(|c| &c.kept)
            .filter_map(|k| Some((k.findings.first()?.node, FindingList::clone(&k.findings))))
            .collect()
    }

    /// Every node the last pass kept out, with why.
    pub fn ignored(&self) -> impl Iterator<Item = (NodeId, &Ignore)> {
        self.shards.iter().enumerate().flat_map(|(s, c)| {
            c.slot.iter().enumerate().filter_map(move |(r, &at)| {
                let why = c.kept.get(at.checked_sub(1)? as usize)?.ignored.as_ref()?;
                Some((NodeId::new(s, r as u32, c.generation), why))
            })
        })
    }

    fn entry(&self, id: NodeId) -> Option<&Kept> {
        let c = self.shards.get(id.shard())?;
        if c.generation != id.generation() {
            return None;
        }
        c.kept_of(id.row())
    }
}

impl Shard {
    /// Starts loading what storing row `r`'s answer touches: the row's
    /// entries, then ([`Prefetch::Lists`], once those are in) its kept answer.
    fn prefetch(&self, r: usize, stage: Prefetch) {
        match stage {
            Prefetch::Row => {
                self.until.get(r).map(prefetch);
                self.edges.get(r).map(prefetch);
                self.slot.get(r).map(prefetch);
            }
            Prefetch::Lists => {
                if let Some(k) = self
                    .slot
                    .get(r)
                    .and_then(|at| self.kept.get(at.checked_sub(1)? as usize))
                {
                    prefetch(k);
                }
            }
        }
    }

    /// Adds to `todo` the rows whose time bound passed (observation time
    /// `as_of_s`, scan time `now_s`) or whose version started anew.
    fn due_rows(&mut self, todo: &mut Vec<u32>, valid_from: &[u64], as_of_s: u64, now_s: u64) {
        let Shard {
            until,
            slot,
            kept,
            due,
            due_now,
            versioned,
            ..
        } = self;
        let kept_of = |r: u32| kept.get(slot.get(r as usize)?.checked_sub(1)? as usize);
        due.take_due(as_of_s, |t, r| {
            if until.get(r as usize) == Some(&t) {
                todo.push(r);
            }
        });
        due_now.take_due(now_s, |t, r| {
            if kept_of(r).is_some_and(|k| k.until_now == t) {
                todo.push(r);
            }
        });
        for &r in versioned.iter() {
            let read = kept_of(r).and_then(|k| k.changed_us);
            if read != valid_from.get(r as usize).copied() {
                todo.push(r);
            }
        }
    }

    /// Rebuilds a queue once most of its entries are stale.
    fn compact(&mut self) {
        if self.due.len() > 2 * self.answers as usize + 1024 {
            let live = self.until.iter().enumerate().filter(|(_, u)| **u != u64::MAX);
            self.due = live.map(|(r, u)| (*u, r as u32)).collect();
        }
        if self.due_now.len() > 2 * self.kept.len() + 1024 {
            let slots = self
                .slot
                .iter()
                .enumerate()
                .filter_map(|(r, at)| Some((r, at.checked_sub(1)?)));
            let live = slots.map(|(r, at)| (r, self.kept[at as usize].until_now));
            self.due_now = live
                .filter(|(_, u)| *u != u64::MAX)
                .map(|(r, u)| (u, r as u32))
                .collect();
        }
    }

    fn kept_of(&self, r: u32) -> Option<&Kept> {
        let at = self.slot.get(r as usize)?.checked_sub(1)?;
        self.kept.get(at as usize)
    }

    /// Stores row `id`'s answer (`None`: it has none any more), noting in
    /// `out` what it changed: findings, ignore answers, the nodes and facts
    /// it reads, and the answer it replaced.
    fn store(&mut self, id: NodeId, answer: Option<Answer>, as_of_s: u64, now_s: u64, out: &mut Stored) {
        let r = id.row() as usize;
        let old_until = self.until[r];
        let until = answer.as_ref().map_or(u64::MAX, |a| a.until);
        self.until[r] = until;
        self.edges[r] = answer.as_ref().map_or(0, |a| a.edges);
        if until != u64::MAX && (until != old_until || old_until <= as_of_s) {
            self.due.push(until, id.row());
        }
        let has = answer.is_some();
        if has != self.answered.get(r) {
            self.answered.set(r, has);
            if has {
                self.answers += 1;
            } else {
                self.answers -= 1;
            }
        }
        let old = self.put(id.row(), answer.and_then(|a| a.kept));
        let empty = Kept {
            until_now: u64::MAX,
            ..Kept::default()
        };
        let (was, now) = (old.as_ref().unwrap_or(&empty), self.kept_of(id.row()).unwrap_or(&empty));
        out.findings_in += now.findings.len() as u64;
        out.findings_out += was.findings.len() as u64;
        out.ignored_in += u64::from(now.ignored.is_some());
        out.ignored_out += u64::from(was.ignored.is_some());
        diff(&was.deps, &now.deps, |d, add| out.deps.push((d, id, add)));
        diff(&was.keys, &now.keys, |k, add| out.keys.push((k, id, add)));
        let (old_now, until_now, versioned) = (was.until_now, now.until_now, now.changed_us.is_some());
        if until_now != u64::MAX && (until_now != old_now || old_now <= now_s) {
            self.due_now.push(until_now, id.row());
        }
        if versioned {
            self.versioned.insert(id.row());
        } else if !self.versioned.is_empty() {
            self.versioned.remove(&id.row());
        }
        out.touched.push(id);
        out.replaced.extend(old);
    }

    /// Puts `kept` as row `r`'s (or nothing); returns what the row had.
    fn put(&mut self, r: u32, kept: Option<Kept>) -> Option<Kept> {
        let r = r as usize;
        if self.slot.len() <= r {
            self.slot.resize(r + 1, 0);
        }
        match self.slot[r].checked_sub(1) {
            Some(at) => {
                let old = std::mem::take(&mut self.kept[at as usize]);
                match kept {
                    Some(k) => self.kept[at as usize] = k,
                    None => {
                        self.free.push(at);
                        self.slot[r] = 0;
                    }
                }
                Some(old)
            }
            None => {
                if let Some(k) = kept {
                    let at = match self.free.pop() {
                        Some(at) => {
                            self.kept[at as usize] = k;
                            at
                        }
                        None => {
                            self.kept.push(k);
                            self.kept.len() as u32 - 1
                        }
                    };
                    self.slot[r] = at + 1;
                }
                None
            }
        }
    }
}

/// Rows by a time (Unix seconds), in buckets of 2^[`TimeQueue::BUCKET`]
/// seconds: a pass takes the few earliest buckets whole and pushes each row
/// onto the end of its bucket, where a heap of every bound would walk from
/// its root to a leaf far apart in memory for each.
#[derive(Default)]
struct TimeQueue {
    buckets: BTreeMap<u64, Vec<(u64, u32)>>,
    len: usize,
}

/// A copy with the room of the original's buckets (as [`Shard`]'s).
impl Clone for TimeQueue {
    fn clone(&self) -> TimeQueue {
        TimeQueue {
            buckets: self.buckets.iter().map(|(b, v)| (*b, roomy(v, v.capacity()))).collect(),
            len: self.len,
        }
    }
}

impl TimeQueue {
    /// Seconds in a bucket, as a shift: a bucket spans about 68 minutes.
    const BUCKET: u32 = 12;

    fn push(&mut self, t: u64, r: u32) {
        self.buckets.entry(t >> Self::BUCKET).or_default().push((t, r));
        self.len += 1;
    }

    /// Entries, stale ones included.
    fn len(&self) -> usize {
        self.len
    }

    /// Takes out every entry whose time is at or before `to`, calling
    /// `f(time, row)` for each.
    fn take_due(&mut self, to: u64, mut f: impl FnMut(u64, u32)) {
        while let Some(mut first) = self.buckets.first_entry() {
            let bucket = *first.key();
            if bucket > to >> Self::BUCKET {
                break;
            }
            if bucket < to >> Self::BUCKET {
                let entries = first.remove();
                self.len -= entries.len();
                entries.into_iter().for_each(|(t, r)| f(t, r));
                continue;
            }
            // The bucket `to` falls in: only its entries up to `to`.
            let entries = first.get_mut();
            let before = entries.len();
            entries.retain(|&(t, r)| {
                let due = t <= to;
                if due {
                    f(t, r);
                }
                !due
            });
            self.len -= before - entries.len();
            if entries.is_empty() {
                first.remove();
            }
            break;
        }
    }
}

impl FromIterator<(u64, u32)> for TimeQueue {
    fn from_iter<I: IntoIterator<Item = (u64, u32)>>(entries: I) -> TimeQueue {
        let mut queue = TimeQueue::default();
        entries.into_iter().for_each(|(t, r)| queue.push(t, r));
        queue
    }
}

/// Calls `f(x, true)` for each `x` in `new` and not in `old`, and
/// `f(x, false)` for each in `old` and not in `new` (both sorted).
fn diff<T: Ord + Copy>(old: &[T], new: &[T], mut f: impl FnMut(T, bool)) {
    let (mut i, mut j) = (0, 0);
    while i < old.len() || j < new.len() {
        match (old.get(i), new.get(j)) {
            (Some(a), Some(b)) if a == b => (i, j) = (i + 1, j + 1),
            (Some(a), Some(b)) if a < b => {
                f(*a, false);
                i += 1;
            }
            (Some(a), None) => {
                f(*a, false);
                i += 1;
            }
            (_, Some(b)) => {
                f(*b, true);
                j += 1;
            }
            (None, None) => break,
        }
    }
}

/// The nodes that read a node or asked about a fact: most often one or
/// two, kept in place in the map.
type Who = SmallVec<[NodeId; 2]>;

/// Notes in `map` that `who` now reads `what` (`add`) or stopped.
fn note<K: std::hash::Hash + Eq>(map: &mut FxHashMap<K, Who>, what: K, who: NodeId, add: bool) {
    if add {
        map.entry(what).or_default().push(who);
    } else if let Some(list) = map.get_mut(&what) {
        if let Some(i) = list.iter().position(|x| *x == who) {
            list.swap_remove(i);
        }
        if list.is_empty() {
            map.remove(&what);
        }
    }
}

/// What evaluating a node needs besides the node, kept from one node to
/// the next so its memory is reused.
#[derive(Default)]
struct Scratch {
    reads: Reads,
    reason: String,
    found: Vec<Finding>,
}

/// Works out one node's answer, noting what it read.
fn evaluate(
    ctx: &view::Ctx<'_>,
    id: NodeId,
    provider: Sym,
    rules: &[(Sym, &'static Rule)],
    scratch: &mut Scratch,
) -> Answer {
    scratch.reads.reset();
    let (reads, reason, found) = (&scratch.reads, &mut scratch.reason, &mut scratch.found);
    let node = Node::recording(ctx, id, reads);
    let mut kept = Kept::default();
    let mut checks = 0;
    if let Some(why) = ignore::check(&node) {
        kept.ignored = Some(why);
    } else {
        for (_, rule) in rules.iter().filter(|(p, _)| *p == provider) {
            checks += 1;
            reason.clear();
            if let Some(hit) = (rule.check)(&node, &mut Why::to(reason)) {
                found.push(finding(
                    &RuleHit {
                        node: id,
                        rule,
                        savings: hit.savings,
                    },
                    reason.as_str().to_owned(),
                ));
            }
        }
        if !found.is_empty() {
            found.sort_by(precedence);
            // One block sized to the list.
            kept.findings = found.drain(..).collect();
        }
    }
    let changed_us = reads.changed_s.get().then(|| node.graph_ref().valid_from());
    let mut deps = reads.deps.borrow_mut();
    deps.sort_unstable();
    deps.dedup();
    let mut keys = reads.keys.borrow_mut();
    keys.sort_unstable();
    keys.dedup();
    kept.deps = SmallVec::from_slice(&deps);
    kept.keys = Box::from(&keys[..]);
    kept.until_now = reads.until_now.get();
    kept.changed_us = changed_us;
    let worth = !kept.findings.is_empty()
        || kept.ignored.is_some()
        || !kept.deps.is_empty()
        || !kept.keys.is_empty()
        || kept.until_now != u64::MAX
        || kept.changed_us.is_some();
    Answer {
        until: reads.until_as_of.get(),
        edges: reads.edges.get(),
        kept: worth.then_some(kept),
        checks,
    }
}

#[cfg(test)]
mod tests {
    use super::TimeQueue;

    fn taken(q: &mut TimeQueue, to: u64) -> Vec<(u64, u32)> {
        let mut out = Vec::new();
        q.take_due(to, |t, r| out.push((t, r)));
        out.sort_unstable();
        out
    }

    #[test]
    fn a_time_queue_gives_each_entry_once_when_its_time_comes() {
        let b = 1 << TimeQueue::BUCKET;
        let mut q: TimeQueue = [
            (5 * b + 10, 1),
            (5 * b + 20, 2),
            (2 * b, 3),
            (9 * b, 4),
            (5 * b + 10, 5),
        ]
        .into_iter()
        .collect();
        assert_eq!(q.len(), 5);
        assert_eq!(taken(&mut q, b), vec![]);
        // Whole buckets before `to`, and the part of its own up to it.
        assert_eq!(
            taken(&mut q, 5 * b + 10),
            vec![(2 * b, 3), (5 * b + 10, 1), (5 * b + 10, 5)]
        );
        assert_eq!(q.len(), 2);
        q.push(5 * b + 15, 6);
        assert_eq!(taken(&mut q, 5 * b + 15), vec![(5 * b + 15, 6)]);
        assert_eq!(taken(&mut q, u64::MAX), vec![(5 * b + 20, 2), (9 * b, 4)]);
        assert_eq!(q.len(), 0);
        assert!(q.buckets.is_empty());
    }
}
