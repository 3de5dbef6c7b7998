//! Evaluating compiled rules over the graph: one rayon pass over the node
//! shards. Each node is read from the columns; each rule whose guard admits
//! the node's type runs its column predicate, and the interpreter only
//! where a rule has none or the predicate defers (a JSON value it does not
//! model). A worker builds a CEL root context only the first time it needs
//! the interpreter.

use std::time::Instant;

use rayon::prelude::*;
use rustc_hash::{FxHashMap, FxHashSet};

use super::compile::Compiled;
use super::fast::{Guard, Pred, Tri};
use super::interp::Interp;
use super::node::{Env, NodeCtx, Row};
pub use super::node::{Outcome, relation_names};
use svc_graph::graph::Graph;
use svc_graph::graph::shard::visible;
use svc_graph::ids::{NodeId, Sym};

/// One rule to evaluate.
pub struct EvalRule<'a> {
    pub compiled: &'a Compiled,
    /// Keep the ids of matching nodes (up to [`EvalOptions::hit_limit`]).
    pub collect_hits: bool,
}

/// What a pass needs besides the rules.
#[derive(Clone, Debug, Default)]
pub struct EvalOptions {
    pub now_us: u64,
    /// When the estate was observed (Unix seconds): `age_days` counts from it.
    pub as_of_s: u64,
    /// Verdict symbols of nodes a policy flagged (`policy:<id>`): such a
    /// node's `is_waste` binding is what the heuristics said, false.
    pub policy_verdicts: FxHashSet<Sym>,
    /// Evaluate every rule on every node with the interpreter (no column
    /// predicates, no guards): the baseline the fast path is measured and
    /// tested against.
    pub interpreter_only: bool,
    /// Most hits kept per rule.
    pub hit_limit: usize,
}

/// What one rule did in a pass.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RuleTally {
    pub matches: u64,
    pub errors: u64,
    /// Nodes the interpreter decided (the rule has no column predicate, or
    /// it deferred).
    pub interpreted: u64,
    /// The first error, with the node it happened on.
    pub first_error: Option<(NodeId, String)>,
    /// Matches per node type.
    pub by_type: Vec<(Sym, u64)>,
    /// Matching nodes, in shard order, when collected.
    pub hits: Vec<NodeId>,
}

/// The result of a pass.
#[derive(Clone, Debug, Default)]
pub struct Evaluation {
    pub rules: Vec<RuleTally>,
    /// Visible nodes seen.
    pub nodes: u64,
    pub duration_us: u64,
}

/// A rule made ready for one pass: literals bound to symbols, guard resolved.
struct Ready<'a> {
    compiled: &'a Compiled,
    fast: Option<Pred>,
    guard: Option<(bool, Vec<Sym>)>,
    collect: bool,
}

impl Ready<'_> {
    fn admits(&self, ty: Sym, kind: Sym) -> bool {
        match &self.guard {
            None => true,
            Some((true, kinds)) => kinds.contains(&kind),
            Some((false, types)) => types.contains(&ty),
        }
    }
}

/// Per-worker accumulator.
#[derive(Default)]
struct Acc {
    tallies: Vec<RuleTally>,
    by_type: FxHashMap<(u32, Sym), u64>,
    nodes: u64,
}

/// Evaluates `rules` over every node visible at `opts.now_us`.
pub fn evaluate(graph: &Graph, rules: &[EvalRule<'_>], opts: &EvalOptions) -> Evaluation {
    let started = Instant::now();
    if rules.is_empty() {
        // Nothing to evaluate: only the visible nodes are counted.
        let nodes = graph
            .node_shards()
            .par_iter()
            .map(|shard| shard.valid_to.iter().filter(|v| visible(**v, opts.now_us)).count() as u64)
            .sum();
        return Evaluation {
            nodes,
            duration_us: started.elapsed().as_micros() as u64,
            ..Evaluation::default()
        };
    }
    let reader = graph.interner().reader();
    let get = |s: &str| reader.get(s);
    let ready: Vec<Ready<'_>> = rules
        .iter()
        .map(|r| Ready {
            compiled: r.compiled,
            fast: if opts.interpreter_only {
                None
            } else {
                r.compiled.fast.as_ref().map(|p| super::fast::bind(p, &get))
            },
            guard: match (&r.compiled.guard, opts.interpreter_only) {
                (_, true) | (Guard::All, _) => None,
                (Guard::Kinds(k), _) => Some((true, k.iter().filter_map(|s| get(s)).collect())),
                (Guard::Types(t), _) => Some((false, t.iter().filter_map(|s| get(s)).collect())),
            },
            collect: r.collect_hits,
        })
        .collect();
    let env = Env {
        graph,
        reader: &reader,
        as_of_s: opts.as_of_s,
        now_us: opts.now_us,
        policy_verdicts: &opts.policy_verdicts,
    };
    let env = &env;
    let ready = &ready;
    let accs: Vec<Acc> = graph
        .node_shards()
        .par_iter()
        .enumerate()
        .map(|(s, shard)| {
            let mut acc = Acc {
                tallies: vec![RuleTally::default(); ready.len()],
                ..Acc::default()
            };
            let mut interp: Option<Interp> = None;
            let mut lists: FxHashMap<(Sym, Sym), Vec<u32>> = FxHashMap::default();
            for r in 0..shard.len() {
                if !visible(shard.valid_to[r], opts.now_us) {
                    continue;
                }
                acc.nodes += 1;
                let row = Row {
                    env,
                    shard_idx: s,
                    shard,
                    r,
                };
                let ty = shard.ty[r];
                let list = lists.entry((ty, shard.key[r][3])).or_insert_with(|| {
                    (0..ready.len() as u32)
                        .filter(|&i| ready[i as usize].admits(ty, shard.key[r][3]))
                        .collect()
                });
                let ctx = NodeCtx::new(row);
                for &i in list.iter() {
                    let rule = &ready[i as usize];
                    let t = match &rule.fast {
                        Some(p) => p.eval(&ctx),
                        None => Tri::Fallback,
                    };
                    let tally = &mut acc.tallies[i as usize];
                    let matched = match t {
                        Tri::True => true,
                        Tri::False => false,
                        Tri::Error => {
                            tally.errors += 1;
                            if tally.first_error.is_none() {
                                // The fast path knows an error happened; the
                                // interpreter words it.
                                let it = interp.get_or_insert_with(Interp::new);
                                let msg = match it.eval(rule.compiled, row) {
                                    Outcome::Error(m) => m,
                                    _ => "evaluation error".to_owned(),
                                };
                                tally.first_error = Some((row.id(), msg));
                            }
                            false
                        }
                        Tri::Fallback => {
                            tally.interpreted += 1;
                            let it = interp.get_or_insert_with(Interp::new);
                            match it.eval(rule.compiled, row) {
                                Outcome::Match => true,
                                Outcome::NoMatch => false,
                                Outcome::Error(m) => {
                                    tally.errors += 1;
                                    if tally.first_error.is_none() {
                                        tally.first_error = Some((row.id(), m));
                                    }
                                    false
                                }
                            }
                        }
                    };
                    if matched {
                        tally.matches += 1;
                        if rule.collect && tally.hits.len() < opts.hit_limit {
                            tally.hits.push(row.id());
                        }
                        *acc.by_type.entry((i, ty)).or_insert(0) += 1;
                    }
                }
            }
            acc
        })
        .collect();
    let mut out = Evaluation {
        rules: vec![RuleTally::default(); rules.len()],
        ..Evaluation::default()
    };
    let mut by_type: FxHashMap<(u32, Sym), u64> = FxHashMap::default();
    for acc in accs {
        out.nodes += acc.nodes;
        for (t, a) in out.rules.iter_mut().zip(acc.tallies) {
            t.matches += a.matches;
            t.errors += a.errors;
            t.interpreted += a.interpreted;
            if t.first_error.is_none() {
                t.first_error = a.first_error;
            }
            let room = opts.hit_limit.saturating_sub(t.hits.len());
            t.hits.extend(a.hits.into_iter().take(room));
        }
        for (k, v) in acc.by_type {
            *by_type.entry(k).or_insert(0) += v;
        }
    }
    for ((i, ty), n) in by_type {
        if let Some(t) = out.rules.get_mut(i as usize) {
            t.by_type.push((ty, n));
        }
    }
    for t in &mut out.rules {
        t.by_type.sort_unstable();
    }
    out.duration_us = started.elapsed().as_micros() as u64;
    out
}

/// How `compiled` comes out on one node, by the fast path (`None` when the
/// condition has no column predicate or it defers on this node) or by the
/// interpreter. For tests and diagnostics.
pub fn check_node(graph: &Graph, compiled: &Compiled, id: NodeId, opts: &EvalOptions, fast: bool) -> Option<Outcome> {
    let reader = graph.interner().reader();
    let env = Env {
        graph,
        reader: &reader,
        as_of_s: opts.as_of_s,
        now_us: opts.now_us,
        policy_verdicts: &opts.policy_verdicts,
    };
    let shard = graph.node_shards().get(id.shard())?;
    let r = id.row() as usize;
    if r >= shard.len() {
        return None;
    }
    let row = Row {
        env: &env,
        shard_idx: id.shard(),
        shard,
        r,
    };
    if fast {
        let p = super::fast::bind(compiled.fast.as_ref()?, &|s| reader.get(s));
        return match p.eval(&NodeCtx::new(row)) {
            Tri::True => Some(Outcome::Match),
            Tri::False => Some(Outcome::NoMatch),
            Tri::Error => Some(Outcome::Error(String::new())),
            Tri::Fallback => None,
        };
    }
    Some(Interp::new().eval(compiled, row))
}
