//! The built-in rules as a later scan runs them: each node's answer is kept
//! with what its evaluation read, and a pass evaluates again only the nodes
//! whose answer may have changed.
//!
//! A kept answer is evaluated again when
//! - the node's row changed (its content hash, the one ingest uses to call
//!   a node unchanged), appeared, or stopped being visible;
//! - one of its edges was added, changed or retired since the last pass
//!   (an edge row stamped at or after that pass), or a node it read (a
//!   neighbour, or a neighbour's neighbour through it) did either;
//! - an estate fact it asked about (a DNS target, an EBS volume id, a GCP
//!   disk name) appeared or went away;
//! - time moved past a bound it read: the observation time at which an age
//!   in days ticks over or a traffic window stops counting, the scan time at
//!   which an `svc:ignore` date or window ends, or the start of the node's
//!   current version that an `Nd` window counts from moved;
//! - and every answer when the rule selection changed, a clock went
//!   backwards, or a shard was renumbered.
//!
//! The answers are exactly those of [`super::run`] over the same graph at
//! the same times; `tests_cache.rs` checks that over many random changes.

use rayon::prelude::*;
use rustc_hash::{FxHashMap, FxHashSet};

use super::ignore::{self, Ignore};
use super::view::{self, Contributors, Index, Keys, Node, Reads};
use super::{Machines, Rule, Selection, Why, finding, rules_by_type};
use crate::graph::shard::BitSet;
use crate::graph::{EdgeChanges, Graph, visible};
use crate::heuristics::Finding;
use crate::ids::{NodeId, Sym};

/// The kept answers of the last pass, by node row.
#[derive(Clone, Default)]
pub struct Cache {
    shards: Vec<Shard>,
    index: Index,
    /// The selection, scan time (µs) and observation time (s) of the last
    /// pass; `None` before the first.
    last: Option<(Selection, u64, u64)>,
    /// From this scan time (µs) an edge may stop being visible without a
    /// write ([`EdgeChanges::horizon`] at the last pass).
    horizon: u64,
    /// Findings and ignored nodes kept, in all.
    findings: u64,
    ignored: u64,
}

#[derive(Clone, Default)]
struct Shard {
    /// The node shard's generation the rows are numbered in.
    generation: u32,
    /// By row: the content hash the answer was worked out from when the row
    /// was visible at the last pass, else 0.
    hash: Vec<u64>,
    /// By row: the observation time (Unix seconds) from which the answer
    /// may differ; `u64::MAX` when only a change can alter it.
    until: Vec<u64>,
    /// By row: 1 + where its [`Kept`] is in `kept`, or 0 for a row whose
    /// answer has no findings, no `svc:ignore` answer and read nothing but
    /// its own row (most rows).
    slot: Vec<u32>,
    kept: Vec<Kept>,
    /// Places in `kept` free for reuse.
    free: Vec<u32>,
    /// The index keys each contributing row added to the [`Index`].
    facts: FxHashMap<u32, Box<[u64]>>,
}

/// What a node's answer holds besides its hash and time bound.
#[derive(Clone, Default)]
struct Kept {
    findings: Vec<Finding>,
    ignored: Option<Ignore>,
    deps: Box<[NodeId]>,
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
    row: u32,
    until: u64,
    kept: Option<Kept>,
    checks: u64,
}

impl Cache {
    /// Runs the selected rules over the nodes visible at `now_us`, observed
    /// at `as_of_s`, evaluating only the nodes whose answer may differ from
    /// the last pass. `edges` are the edge rows changed since the last pass
    /// ([`Graph::take_edge_changes`], taken after the adjacency index was
    /// last built).
    pub fn run(
        &mut self,
        graph: &Graph,
        edges: &EdgeChanges,
        now_us: u64,
        as_of_s: u64,
        selection: &Selection,
    ) -> Pass {
        let full = match &self.last {
            None => true,
            Some((sel, last_now, last_as_of)) => {
                sel != selection
                    || now_us < *last_now
                    || now_us >= self.horizon
                    || edges.rows.len() != graph.edge_shards().len()
                    || edges.rows.iter().any(Option::is_none)
                    || as_of_s < *last_as_of
                    || self.shards.len() != graph.node_shards().len()
                    || self
                        .shards
                        .iter()
                        .zip(graph.node_shards())
                        .any(|(c, g)| c.generation != g.generation)
            }
        };
        if full {
            self.shards = graph
                .node_shards()
                .iter()
                .map(|g| Shard {
                    generation: g.generation,
                    ..Shard::default()
                })
                .collect();
            self.index = Index::default();
            (self.findings, self.ignored) = (0, 0);
        }
        let reader = graph.interner().reader();
        let keys = Keys::new(&reader);
        let who = Contributors::new(&reader, &keys);

        // Rows whose own content or visibility changed.
        let changed: Vec<Vec<u32>> = self
            .shards
            .par_iter()
            .zip(graph.node_shards())
            .map(|(c, g)| {
                (0..g.len())
                    .filter(|&r| {
                        let now = if visible(g.valid_to[r], now_us) {
                            g.content[r]
                        } else {
                            0
                        };
                        c.hash.get(r).copied().unwrap_or(0) != now
                    })
                    .map(|r| r as u32)
                    .collect()
            })
            .collect();

        // The estate facts: contributions of changed rows taken away and
        // added again; keys that appeared or went away.
        let fresh: Vec<Vec<(u32, Vec<u64>)>> = graph
            .node_shards()
            .par_iter()
            .zip(&changed)
            .enumerate()
            .map(|(s, (g, rows))| {
                let mut out = Vec::new();
                for &r in rows {
                    let ri = r as usize;
                    if !who.reads(g.ty[ri]) || !visible(g.valid_to[ri], now_us) {
                        continue;
                    }
                    let Some(node) = graph.node(NodeId::new(s, r, g.generation)) else {
                        continue;
                    };
                    let mut keys = Vec::new();
                    who.keys_of(node, &mut keys);
                    out.push((r, keys));
                }
                out
            })
            .collect();
        let old: Vec<(usize, u32, Box<[u64]>)> = changed
            .iter()
            .enumerate()
            .flat_map(|(s, rows)| rows.iter().map(move |r| (s, *r)))
            .filter_map(|(s, r)| Some((s, r, self.shards[s].facts.remove(&r)?)))
            .collect();
        let before: FxHashMap<u64, bool> = old
            .iter()
            .flat_map(|(_, _, keys)| keys.iter())
            .chain(fresh.iter().flatten().flat_map(|(_, keys)| keys))
            .map(|k| (*k, self.index.contains(*k)))
            .collect();
        for k in old.iter().flat_map(|(_, _, keys)| keys.iter()) {
            self.index.remove(*k);
        }
        for (s, rows) in fresh.into_iter().enumerate() {
            for (r, keys) in rows {
                keys.iter().for_each(|k| self.index.add(*k));
                if !keys.is_empty() {
                    self.shards[s].facts.insert(r, keys.into_boxed_slice());
                }
            }
        }
        let flipped: FxHashSet<u64> = before
            .into_iter()
            .filter(|(k, was)| self.index.contains(*k) != *was)
            .map(|(k, _)| k)
            .collect();

        // Nodes whose neighbourhood changed: the rows above and both ends
        // of every edge stamped since the last pass.
        let mut moved: Vec<BitSet> = graph.node_shards().iter().map(|_| BitSet::default()).collect();
        for (s, rows) in changed.iter().enumerate() {
            for &r in rows {
                moved[s].set(r as usize, true);
            }
        }
        if !full {
            for (e, rows) in graph.edge_shards().iter().zip(&edges.rows) {
                for &r in rows.iter().flatten() {
                    let r = r as usize;
                    for id in [e.src[r], e.dst[r]] {
                        if let Some(set) = moved.get_mut(id.shard()) {
                            set.set(id.row() as usize, true);
                        }
                    }
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
        let moved = &moved;
        let flipped = &flipped;
        let by_type = &by_type;
        let ctx = &ctx;

        // Which rows to work out again, then their answers, shard by shard.
        let results: Vec<(Vec<Answer>, Vec<u32>, u64)> = self
            .shards
            .par_iter()
            .zip(graph.node_shards())
            .enumerate()
            .map(|(s, (c, g))| {
                let mut answers = Vec::new();
                let mut dropped = Vec::new();
                let mut kept = 0u64;
                for r in 0..g.len() {
                    let vis = visible(g.valid_to[r], now_us);
                    let rules = match by_type.get(g.ty[r].index()) {
                        Some(rules) if vis && !rules.is_empty() => Some(rules),
                        _ => None,
                    };
                    let old = match c.slot.get(r) {
                        Some(&at) if at > 0 => c.kept.get(at as usize - 1),
                        _ => None,
                    };
                    let Some(rules) = rules else {
                        if old.is_some() {
                            dropped.push(r as u32);
                        }
                        continue;
                    };
                    let again = full
                        || moved[s].get(r)
                        || c.until.get(r).is_none_or(|u| *u <= as_of_s)
                        || old.is_some_and(|k| {
                            k.until_now <= now_s
                                || k.changed_us.is_some_and(|v| v != g.valid_from[r])
                                || k.deps
                                    .iter()
                                    .any(|d| moved.get(d.shard()).is_some_and(|m| m.get(d.row() as usize)))
                                || k.keys.iter().any(|key| flipped.contains(key))
                        });
                    if !again {
                        kept += 1;
                        continue;
                    }
                    let id = NodeId::new(s, r as u32, g.generation);
                    answers.push(evaluate(ctx, id, g.key[r][0], rules));
                }
                (answers, dropped, kept)
            })
            .collect();

        // Answers stored shard by shard in parallel: (touched, evaluated,
        // checks, kept, findings added, findings taken, ignored added,
        // ignored taken).
        type Stored = (Vec<NodeId>, u64, u64, u64, u64, u64, u64, u64);
        let stored: Vec<Stored> = self
            .shards
            .par_iter_mut()
            .zip(graph.node_shards())
            .zip(results)
            .zip(&changed)
            .enumerate()
            .map(|(s, (((c, g), (answers, dropped, kept)), changed))| {
                let mut out: Stored = (Vec::new(), 0, 0, kept, 0, 0, 0, 0);
                for r in dropped {
                    let (f, i) = c.put(r, None);
                    out.5 += f;
                    out.7 += i;
                    out.0.push(NodeId::new(s, r, g.generation));
                }
                c.until.resize(g.len(), 0);
                for a in answers {
                    out.1 += 1;
                    out.2 += a.checks;
                    c.until[a.row as usize] = a.until;
                    if let Some(k) = &a.kept {
                        out.4 += k.findings.len() as u64;
                        out.6 += u64::from(k.ignored.is_some());
                    }
                    let (f, i) = c.put(a.row, a.kept);
                    out.5 += f;
                    out.7 += i;
                    out.0.push(NodeId::new(s, a.row, g.generation));
                }
                c.hash.resize(g.len(), 0);
                for &r in changed {
                    let r = r as usize;
                    c.hash[r] = if visible(g.valid_to[r], now_us) {
                        g.content[r]
                    } else {
                        0
                    };
                }
                out
            })
            .collect();
        let mut pass = Pass {
            full,
            ..Pass::default()
        };
        pass.touched.reserve(stored.iter().map(|o| o.0.len()).sum());
        for (touched, evaluated, checks, kept, f_in, f_out, i_in, i_out) in stored {
            pass.touched.extend(touched);
            pass.evaluated += evaluated;
            pass.checks += checks;
            pass.kept += kept;
            self.findings = self.findings + f_in - f_out;
            self.ignored = self.ignored + i_in - i_out;
        }
        pass.findings = self.findings;
        pass.ignored = self.ignored;
        self.last = Some((selection.clone(), now_us, as_of_s));
        self.horizon = edges.horizon;
        pass
    }

    /// The built-in findings about `id` from the last pass.
    pub fn findings_of(&self, id: NodeId) -> &[Finding] {
        self.entry(id).map_or(&[], |k| k.findings.as_slice())
    }

    /// Why `id` was kept out by its `svc:ignore` tag in the last pass.
    pub fn ignored_of(&self, id: NodeId) -> Option<&Ignore> {
        self.entry(id).and_then(|k| k.ignored.as_ref())
    }

    /// Every finding of the last pass.
    pub fn findings(&self) -> impl Iterator<Item = &Finding> {
        self.shards.iter().flat_map(|c| &c.kept).flat_map(|k| &k.findings)
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
        let at = c.slot.get(id.row() as usize)?.checked_sub(1)?;
        c.kept.get(at as usize)
    }
}

impl Shard {
    /// Stores `kept` as row `r`'s (or nothing); returns the findings and
    /// ignored answers (0 or 1) the row had.
    fn put(&mut self, r: u32, kept: Option<Kept>) -> (u64, u64) {
        let r = r as usize;
        if self.slot.len() <= r {
            self.slot.resize(r + 1, 0);
        }
        let old = match self.slot[r].checked_sub(1) {
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
        };
        old.map_or((0, 0), |o| (o.findings.len() as u64, u64::from(o.ignored.is_some())))
    }
}

/// Works out one node's answer, noting what it read.
fn evaluate(ctx: &view::Ctx<'_>, id: NodeId, provider: Sym, rules: &[(Sym, &'static Rule)]) -> Answer {
    let reads = Reads::default();
    let node = Node::recording(ctx, id, &reads);
    let mut kept = Kept::default();
    let mut checks = 0;
    if let Some(why) = ignore::check(&node) {
        kept.ignored = Some(why);
    } else {
        let mut reason = String::new();
        for (_, rule) in rules.iter().filter(|(p, _)| *p == provider) {
            checks += 1;
            if let Some(hit) = (rule.check)(&node, &mut Why::to(&mut reason)) {
                kept.findings.push(finding(
                    &super::RuleHit {
                        node: id,
                        rule,
                        savings: hit.savings,
                    },
                    reason.as_str().to_owned(),
                ));
            }
            reason.clear();
        }
    }
    let changed_us = reads.changed_s.get().then(|| node.graph_ref().valid_from());
    let mut deps = reads.deps.into_inner();
    deps.sort_unstable();
    deps.dedup();
    let mut keys = reads.keys.into_inner();
    keys.sort_unstable();
    keys.dedup();
    kept.deps = deps.into_boxed_slice();
    kept.keys = keys.into_boxed_slice();
    kept.until_now = reads.until_now.get();
    kept.changed_us = changed_us;
    let worth = !kept.findings.is_empty()
        || kept.ignored.is_some()
        || !kept.deps.is_empty()
        || !kept.keys.is_empty()
        || kept.until_now != u64::MAX
        || kept.changed_us.is_some();
    Answer {
        row: id.row(),
        until: reads.until_as_of.get(),
        kept: worth.then_some(kept),
        checks,
    }
}
