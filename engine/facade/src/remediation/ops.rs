//! What the engine does with the pipeline: the `engine.sau` pass of each
//! scan, operator decisions, sagas, quarantine, revert and the ignore list.

use std::collections::BTreeMap;
use std::time::Instant;

use rayon::prelude::*;
use rustc_hash::FxHashMap;
use tracing::{debug, info, warn};

use super::plan::{self, Plan};
use super::store::{Batch, ItemsWrite, payload_canonical};
use super::{
    ANALYZE_PER_SCAN, Compensation, Isolation, Item, LOCK_WAIT, Override, Proof, QueuePart, RemediationError, STAGES,
    Saga, SagaStep,
};
use crate::crn::Crn;
use crate::findings::Findings;
use crate::graph::{Graph, Phase};
use crate::graph_core::Core;
use crate::heuristics::Finding;
use crate::ids::NodeId;
use crate::policy::Policies;
use crate::scan::{RemediateRequest, ReversibilityAsk, Source};
use crate::sources::Sources;
use crate::store::ledger::NewEvent;
use crate::store::ledger::events as payloads;
use svc_remediation::{Remediation, RemediationStore, SharedGuard};

use svc_remediation::state::{Behind, Entry, State};
pub use svc_remediation::state::{SagaOutcome, SauReport};

/// The canonical CRN of an operator's input (with or without `svc:`).
pub fn canonical_crn(input: &str) -> Result<Crn, RemediationError> {
    Crn::parse(input).map_err(|e| RemediationError::Invalid(e.to_string()))
}

/// Sets `field` to `value`; whether it changed. Equal text allocates nothing.
fn set_text(field: &mut String, value: &str) -> bool {
    if field == value {
        return false;
    }
    value.clone_into(field);
    true
}

/// Sets `field` to `value`; whether it changed.
fn set_value<T: PartialEq>(field: &mut T, value: T) -> bool {
    if *field == value {
        return false;
    }
    *field = value;
    true
}

/// Built-in reversibility rules, when the source has no opinion.
fn builtin_proof(graph: &Graph, id: NodeId, intent: &str) -> Proof {
    let Some(n) = graph.node(id) else {
        return Proof {
            safe: false,
            reason: "the resource is no longer in the graph".into(),
            source: "builtin".into(),
        };
    };
    let reader = graph.interner().reader();
    for key in ["deletion_protection", "termination_protection", "delete_protection"] {
        let protected = reader
            .get(key)
            .and_then(|k| n.props().get(k))
            .is_some_and(|v| matches!(v, crate::props::ValueRef::Bool(true)) || v.as_str() == Some("true"));
        if protected {
            return Proof {
                safe: false,
                reason: format!("{key} is enabled on the resource"),
                source: "builtin".into(),
            };
        }
    }
    let kind = reader.resolve(n.kind());
    let stateful = [
        "volume",
        "disk",
        "db",
        "database",
        "bucket",
        "table",
        "snapshot",
        "persistentvolumeclaim",
    ]
    .iter()
    .any(|k| kind.contains(k));
    let reason = match (intent, stateful) {
        ("stop" | "pause" | "start", _) => "stopping is undone by starting the resource again".to_owned(),
        (_, true) => format!("{kind} holds data: a snapshot is taken before it is removed and restored on rollback"),
        _ => format!("{kind} holds no data; it is recreated from its recorded configuration on rollback"),
    };
    Proof {
        safe: true,
        reason,
        source: "builtin".into(),
    }
}

/// The source that answers for `crn`: one declaring its provider, else
/// the one whose last scan reported resources of that provider.
fn source_for<'s>(
    sources: &'s mut [Box<dyn Source>],
    crn: &Crn,
    served: &BTreeMap<String, String>,
) -> Option<&'s mut Box<dyn Source>> {
    let i = source_index(&answering(sources), crn, served)?;
    sources.get_mut(i)
}

/// Each source's name and the providers it declares, in order.
fn answering(sources: &[Box<dyn Source>]) -> Vec<(String, Vec<String>)> {
    sources.iter().map(|s| (s.name().to_owned(), s.providers())).collect()
}

/// The position of the source that answers for `crn` in `answering`'s
/// list (see [`source_for`]).
fn source_index(answering: &[(String, Vec<String>)], crn: &Crn, served: &BTreeMap<String, String>) -> Option<usize> {
    answering
        .iter()
        .position(|(_, providers)| providers.contains(&crn.provider))
        .or_else(|| {
            let name = served.get(&crn.provider)?;
            answering.iter().position(|(n, _)| n == name)
        })
}

/// An item waiting to be proved: its entry, its node, and its CRN when
/// it had to be parsed to tell (boxed: a backlog of millions is moved
/// about by [`first_by_crn`]).
type Waiting<'e> = (&'e mut Entry, NodeId, Option<Box<Crn>>);

/// Up to `n` of `waiting`, the first by CRN, in that order, their CRNs
/// parsed; an item whose CRN does not parse is passed over. Only the
/// chosen are sorted: the rest are parted from them in linear time, so a
/// backlog of millions of items (a first scan's) costs one pass, not a
/// sort, each scan. That pass runs on every core: each of a few pieces
/// of the backlog puts its own first `n` in front, and only those are
/// chosen from.
fn first_by_crn(waiting: Vec<Waiting<'_>>, n: usize) -> Vec<(&mut Entry, NodeId, Crn)> {
    let piece = waiting.len().div_ceil(2 * rayon::current_num_threads()).max(PIECE_ROWS);
    first_by_crn_in(waiting, n, piece)
}

/// Items a piece of [`first_by_crn`] holds at least: a backlog of no more
/// is parted on one thread.
const PIECE_ROWS: usize = 1 << 16;

fn first_by_crn_in(mut waiting: Vec<Waiting<'_>>, n: usize, piece: usize) -> Vec<(&mut Entry, NodeId, Crn)> {
    let by_crn = |a: &Waiting<'_>, b: &Waiting<'_>| a.0.item.crn.cmp(&b.0.item.crn);
    if n > 0 && piece > n && waiting.len() > piece {
        // Each piece's first `n` to its front: the first `n` of all are
        // among them.
        waiting.par_chunks_mut(piece).for_each(|p| {
            if p.len() > n {
                p.select_nth_unstable_by(n - 1, by_crn);
            }
        });
        let mut front = Vec::with_capacity(n * waiting.len().div_ceil(piece));
        let mut back = Vec::with_capacity(waiting.len());
        for (at, w) in waiting.into_iter().enumerate() {
            if at % piece < n {
                front.push(w);
            } else {
                back.push(w);
            }
        }
        let chosen = first_parsed(front, n, by_crn);
        if chosen.passed_over == 0 || back.is_empty() {
            return chosen.items;
        }
        // Some of the first did not parse, and those after them in their
        // piece were left behind: choose again from all of them.
        waiting = chosen
            .items
            .into_iter()
            .map(|(e, id, c)| (e, id, Some(Box::new(c))))
            .collect();
        waiting.extend(chosen.unchosen);
        waiting.append(&mut back);
    }
    first_parsed(waiting, n, by_crn).items
}

/// What [`first_parsed`] chose, and what it did not.
struct Chosen<'e> {
    items: Vec<(&'e mut Entry, NodeId, Crn)>,
    /// Items not chosen (their CRNs parse or were not looked at).
    unchosen: Vec<Waiting<'e>>,
    /// Items whose CRN did not parse.
    passed_over: usize,
}

/// Up to `n` of `waiting`, the first by `by_crn`, in that order, passing
/// over CRNs that do not parse.
fn first_parsed<'e>(
    mut waiting: Vec<Waiting<'e>>,
    n: usize,
    by_crn: impl Fn(&Waiting<'_>, &Waiting<'_>) -> std::cmp::Ordering + Sync,
) -> Chosen<'e> {
    let mut chosen = Chosen {
        items: Vec::new(),
        unchosen: Vec::new(),
        passed_over: 0,
    };
    while chosen.items.len() < n && !waiting.is_empty() {
        let want = n - chosen.items.len();
        if waiting.len() > want {
            waiting.select_nth_unstable_by(want - 1, &by_crn);
        }
        // Every item left after the first `want` comes after them by CRN,
        // so the next round's picks follow this round's.
        let rest = waiting.split_off(want.min(waiting.len()));
        waiting.par_sort_unstable_by(&by_crn);
        for (e, id, crn) in waiting {
            match crn.map(|c| *c).or_else(|| Crn::parse(&e.item.crn).ok()) {
                Some(crn) => chosen.items.push((e, id, crn)),
                None => chosen.passed_over += 1,
            }
        }
        waiting = rest;
    }
    chosen.unchosen = waiting;
    chosen
}

/// Runs one `Remediate` call on the source that answers for `crn`; an
/// unsuccessful answer, a source that cannot remediate or none at all is
/// the error, in words.
fn remediate_on(
    sources: &mut [Box<dyn Source>],
    served: &BTreeMap<String, String>,
    crn: &Crn,
    req: &RemediateRequest<'_>,
) -> Result<crate::scan::RemediateOutcome, String> {
    let source = source_for(sources, crn, served)
        .ok_or_else(|| format!("no plugin registered for provider: {}", crn.provider))?;
    match source.remediate(req) {
        None => Err(format!("the {} plugin cannot remediate", source.name())),
        Some(Err(e)) => Err(e.to_string()),
        Some(Ok(o)) if !o.success => Err(if o.error.is_empty() { o.status } else { o.error }),
        Some(Ok(o)) => Ok(o),
    }
}

/// What a source is told about a resource it is asked to prove: the
/// properties the graph holds for it, as text, and the plan's intent.
fn reversibility_ask(graph: &Graph, id: NodeId, crn: &Crn, plan: &Plan) -> ReversibilityAsk {
    let mut properties = BTreeMap::new();
    if let Some(n) = graph.node(id) {
        let reader = graph.interner().reader();
        for (k, v) in n.props() {
            let text = match v {
                crate::props::ValueRef::Str(s) | crate::props::ValueRef::Json(s) => s.to_owned(),
                crate::props::ValueRef::Int(i) => i.to_string(),
                crate::props::ValueRef::Float(f) => f.to_string(),
                crate::props::ValueRef::Bool(b) => b.to_string(),
                crate::props::ValueRef::Null => "null".to_owned(),
            };
            properties.insert(reader.resolve(k).to_owned(), text);
        }
    }
    properties.insert("intent".into(), plan.intent.to_owned());
    ReversibilityAsk {
        crn: crn.to_string(),
        properties,
    }
}

/// The proofs of the sources that answer for `asked` (a node, its CRN and
/// plan each), in that order: `None` where no source checks
/// reversibility or it did not answer, and the built-in rules decide.
/// Each source is asked for all of its resources at once.
fn source_proofs(
    graph: &Graph,
    sources: &mut [Box<dyn Source>],
    served: &BTreeMap<String, String>,
    asked: &[(NodeId, &Crn, &Plan)],
) -> Vec<Option<Proof>> {
    let mut proofs: Vec<Option<Proof>> = vec![None; asked.len()];
    let table = answering(sources);
    let by: Vec<Option<usize>> = asked
        .iter()
        .map(|(_, crn, _)| source_index(&table, crn, served).filter(|&i| sources[i].checks_reversibility()))
        .collect();
    for (k, source) in sources.iter_mut().enumerate() {
        let mine: Vec<usize> = (0..asked.len()).filter(|&i| by[i] == Some(k)).collect();
        if mine.is_empty() {
            continue;
        }
        let asks: Vec<ReversibilityAsk> = mine
            .par_iter()
            .map(|&i| {
                let (id, crn, plan) = asked[i];
                reversibility_ask(graph, id, crn, plan)
            })
            .collect();
        let answers = source.check_reversibility_many(&asks);
        for ((i, ask), answer) in mine.into_iter().zip(&asks).zip(answers) {
            proofs[i] = match answer {
                Some(Ok(p)) => Some(Proof {
                    safe: p.safe,
                    reason: p.reason,
                    source: "plugin".into(),
                }),
                Some(Err(e)) => {
                    warn!(crn = %ask.crn, error = %e, "CheckReversibility failed; the built-in rules decide");
                    None
                }
                None => None,
            };
        }
    }
    proofs
}

/// What a pass does with an item beyond bringing its finding up to date.
enum Check {
    /// Proved, and its plan stands: only the gate.
    Gate,
    /// Not proved yet, or its plan changed: proved and planned again, which
    /// counts against `ANALYZE_PER_SCAN`. With its CRN when it had to be
    /// parsed to tell; an item not proved yet has it parsed only once it is
    /// chosen.
    Prove(Option<Box<Crn>>),
    /// Its CRN does not parse: it stays as it is.
    Stay,
}

/// `replan` when what the plan is made of changed (or it has none yet).
fn plan_check(item: &Item, replan: bool) -> Check {
    let unproved = item.stage == Phase::Flagged || item.proof.is_none();
    if unproved {
        return Check::Prove(None);
    }
    if !replan {
        return Check::Gate;
    }
    let Ok(crn) = Crn::parse(&item.crn) else {
        return Check::Stay;
    };
    if plan::hash(&crn, &item.ty, &item.state, &item.rule, &item.action) != item.plan_hash {
        Check::Prove(Some(Box::new(crn)))
    } else {
        Check::Gate
    }
}

/// The gate, the last step of advancing an item: holds it at `sau_gate`
/// while something blocks it (a policy, an unsafe proof, an operator),
/// else lets it wait at `pending`. `before` is its stage (and since when)
/// before this pass moved it. Returns whether the item changed.
fn gate(
    item: &mut Item,
    id: NodeId,
    before: (Phase, u64),
    now_us: u64,
    blocked: &(dyn Fn(NodeId) -> Vec<String> + Sync),
) -> bool {
    if item.notes().rejected.is_some() {
        return (item.stage, item.stage_us) != before;
    }
    let mut dirty = false;
    let mut blockers = blocked(id);
    if let Some(p) = item.proof.as_ref().filter(|p| !p.safe) {
        blockers.push(format!("unsafe: {}", p.reason));
    }
    if let Some(who) = &item.notes().held_by {
        blockers.push(format!("held by {who}"));
    }
    if item.notes().blockers != blockers {
        item.notes_mut().blockers = blockers;
        dirty = true;
    }
    let overridden = item
        .notes()
        .override_by
        .as_ref()
        .is_some_and(|o| o.plan_hash == item.plan_hash && item.notes().held_by.is_none());
    if item.notes().blockers.is_empty() || overridden {
        item.set_stage(Phase::Pending, now_us);
    } else {
        item.set_stage(Phase::SauGate, now_us);
    }
    dirty || (item.stage, item.stage_us) != before
}

/// What the end of a pass counts over every item.
#[derive(Default)]
struct Tally<'a> {
    counts: [u64; super::STAGES.len()],
    held: u64,
    /// Each item's node and stage, for the graph's `phase` column.
    phases: Vec<(NodeId, Phase)>,
    /// The items this pass changed.
    changed: Vec<&'a Item>,
}

impl Tally<'_> {
    fn merge(mut self, other: Self) -> Self {
        for (a, b) in self.counts.iter_mut().zip(other.counts) {
            *a += b;
        }
        self.held += other.held;
        self.phases.extend(other.phases);
        self.changed.extend(other.changed);
        self
    }
}

/// What the remediation pipeline works with: the core, the sources (to
/// reach the estate, routed by provider), the last scan's findings and
/// policy outcome, and the pipeline's own state.
pub(crate) struct Pipeline<'a> {
    pub core: &'a Core,
    pub sources: &'a Sources,
    pub findings: &'a Findings,
    pub policy: &'a Policies,
    pub remediation: &'a Remediation,
}

impl Pipeline<'_> {
    /// The `engine.sau` pass: brings the pipeline in line with the scan's
    /// verdicts and advances every item as far as it can go. `blocked(id)`
    /// names the enforcing `block` policies matching a node.
    ///
    /// At a large estate almost every item is unchanged from one scan to the
    /// next, so the pass is built around that case: an item remembers the
    /// node it was matched to (rows keep their key, so the match holds until
    /// the node stops being waste), only nodes new to the pipeline have their
    /// CRN rendered, the unchanged items are compared in parallel, and only
    /// the items that need a proof or a new plan go one by one, in CRN order
    /// (the order they are proved in when a scan cannot prove them all).
    ///
    /// The changed items are encoded here and written after the scan's
    /// commit, on a thread of their own ([`Behind`]; the scan begins it
    /// once its own writes are done), so the scan's commit does not wait
    /// for them. Until the write is durable nothing else shows them:
    /// [`Engine::remediation_items`] and the operator actions write or wait
    /// for it first (see [`Pipeline::durable_state`]), and an item leaving
    /// with a ledger record is written durably, in line, before the record
    /// is appended. A crash between the scan's commit and that write keeps
    /// the scan's graph with the items stored before the pass: the next
    /// start checks every item's plan again and the next scan's pass makes
    /// the same changes from its verdicts.
    pub(crate) fn sau_pass(
        &self,
        sources: &mut [Box<dyn Source>],
        now_us: u64,
        blocked: &(dyn Fn(NodeId) -> Vec<String> + Sync),
    ) -> Result<SauReport, RemediationError> {
        let mut report = SauReport {
            recovered_sagas: self.recover_sagas(sources)? as u64,
            expired_isolations: self.expire_isolations(now_us)? as u64,
            ..SauReport::default()
        };

        let t0 = Instant::now();
        let findings = self.findings.last();
        let graph = self.core.graph();
        let reader = graph.interner().reader();
        // Every waste node, and its position in `waste`.
        let waste: Vec<(NodeId, &Finding)> = findings
            .by_node
            .iter()
            .collect::<Vec<_>>()
            .into_par_iter()
            .filter_map(|(id, list)| {
                let f = findings.deciding_in(*id, list).filter(|f| f.is_waste)?;
                graph.is_node_visible(*id, now_us).then_some((*id, f))
            })
            .collect();
        let slot: FxHashMap<NodeId, usize> = waste.iter().enumerate().map(|(i, (id, _))| (*id, i)).collect();
        // The waste node an entry's remembered node still is, if any: an
        // id from before a compaction carries the shard's older generation
        // and is in no slot.
        let matched = |e: &Entry| e.node.and_then(|id| slot.get(&id).copied());

        let mut events = Vec::new();
        let store = self.core.store();
        let mut st = self.remediation.state();
        st.settle(store);
        let rewrite = st.rewrite;
        let State {
            items,
            isolation,
            planned,
            ..
        } = &mut *st;

        // Waste nodes no item is matched to yet: new to the pipeline, or
        // not matched since the start. Only these have their CRN rendered.
        // An item whose node is no longer a waste node forgets it, so that
        // whether it still has one is known below without looking again.
        let mut claimed = vec![false; waste.len()];
        let hits: Vec<usize> = items
            .par_values_mut()
            .filter_map(|e| {
                let hit = matched(e);
                match hit {
                    Some(i) => e.place = i as u32,
                    None => e.node = None,
                }
                hit
            })
            .collect();
        for i in hits {
            claimed[i] = true;
        }
        let fresh: Vec<(usize, String)> = waste
            .par_iter()
            .zip(claimed.par_iter())
            .enumerate()
            .filter(|(_, (_, c))| !**c)
            .map(|(i, ((id, _), _))| (i, graph.crn_with(&reader, *id)))
            .collect();
        drop(claimed);
        items.reserve(fresh.len());
        for (i, crn) in fresh {
            if isolation.contains_key(&crn) {
                continue;
            }
            let (id, place) = (waste[i].0, i as u32);
            match items.get_mut(&crn) {
                Some(e) => (e.node, e.place) = (Some(id), place),
                None => {
                    report.entered += 1;
                    let mut e = Box::new(Entry::new(Item::new(crn, now_us), Some(id)));
                    e.place = place;
                    items.insert(e);
                }
            }
        }
        let collected_ms = t0.elapsed().as_millis();

        // Items whose resource is no longer waste (no node, and none found
        // by CRN above), or is ignored, leave.
        let mut leaving: Vec<String> = items
            .par_values()
            .filter(|e| e.node.is_none() || isolation.contains_key(e.item.crn.as_str()))
            .map(|e| e.item.crn.clone())
            .collect();
        leaving.par_sort_unstable();
        for crn in &leaving {
            let Some(entry) = items.remove(crn) else {
                continue;
            };
            let Entry { item, .. } = *entry;
            let why = if isolation.contains_key(crn) {
                "on the ignore list"
            } else if item.stage == Phase::Applied {
                "remediated; no longer waste"
            } else {
                "no longer waste"
            };
            // An item someone decided on leaves with a ledger record; the
            // others are counted by reason in SCAN_COMPLETED (at a large
            // estate's churn that is thousands a scan).
            let decided = item.notes().held_by.is_some()
                || item.notes().override_by.is_some()
                || item.notes().rejected.is_some()
                || item.notes().saga_id.is_some()
                || item.stage == Phase::Applied;
            if decided {
                events.push(NewEvent::of(
                    Some(crn),
                    "engine",
                    format!("{crn} left the pipeline at {}: {why}", item.stage.name()),
                    &payloads::PipelineMove {
                        crn: crn.to_owned(),
                        from: item.stage.name().to_owned(),
                        to: "removed".to_owned(),
                        reason: why.to_owned(),
                        actor: "engine".to_owned(),
                        plan_hash: None,
                    },
                ));
            }
            *report.left_reasons.entry(why).or_default() += 1;
            report.left += 1;
        }

        // Every remaining item is matched to a waste node. In parallel: bring
        // its finding up to date and, when nothing needs proving or planning,
        // pass it through the gate; the others wait in `slow`.
        let mut actions: FxHashMap<&str, &'static str> = FxHashMap::default();
        for r in crate::heuristics::builtin::rules() {
            actions.entry(r.name).or_insert(r.action);
        }
        let all_planned = *planned;
        let slow: Vec<Waiting<'_>> = items
            .par_values_mut()
            .filter_map(|e| {
                let id = e.node?;
                let f = waste.get(e.place as usize).filter(|(at, _)| *at == id).map(|(_, f)| *f);
                let (Some(f), Some(n)) = (f, graph.node(id)) else {
                    e.dirty = false;
                    return None;
                };
                let item = &mut e.item;
                let action = actions.get(f.rule.as_ref()).copied().unwrap_or("delete");
                // The plan is a function of these four (and the CRN); after a
                // restart every plan is checked once, in case planning changed.
                let mut inputs = item.ty.set(reader.resolve(n.ty()));
                inputs |= item.state.set(reader.resolve(n.state()));
                inputs |= item.rule.set(&f.rule);
                inputs |= item.action.set(action);
                let replan = inputs || item.plan_hash.is_empty() || !all_planned;
                let mut dirty = inputs | set_text(&mut item.reason, &f.reason);
                dirty |= set_value(&mut item.savings_usd_mo, f.projected_savings_usd_mo);
                dirty |= set_value(&mut item.risk_score, f64::from(n.risk_score()));
                dirty |= item.reachability.set(n.reachability().name());
                e.dirty = dirty;
                if item.stage == Phase::Applied {
                    return None;
                }
                match plan_check(item, replan) {
                    Check::Gate => {
                        let before = (item.stage, item.stage_us);
                        e.dirty |= gate(item, id, before, now_us, blocked);
                        None
                    }
                    Check::Prove(c) => Some((e, id, c)),
                    Check::Stay => None,
                }
            })
            .collect();
        // Proved in CRN order, up to ANALYZE_PER_SCAN; the rest wait as
        // they are for the next scan, and an item whose CRN does not parse
        // stays as it is.
        let looked_ms = t0.elapsed().as_millis();
        let mut slow = first_by_crn(slow, ANALYZE_PER_SCAN);
        let analyzed = slow.len();
        let proving = Instant::now();
        self.prove_all(&graph, sources, &mut slow, now_us, blocked);
        let proved_ms = proving.elapsed().as_millis();
        drop(slow);
        *planned = true;
        let decided_ms = t0.elapsed().as_millis();
        report.analyzed = analyzed as u64;

        let Tally {
            counts,
            held,
            phases,
            changed,
        } = items
            .par_values()
            .fold(Tally::default, |mut t, e| {
                let i = &e.item;
                if i.stage == Phase::SauGate {
                    t.held += 1;
                }
                if i.notes().rejected.is_none() {
                    if let Some(k) = super::STAGES.iter().position(|s| *s == i.stage) {
                        t.counts[k] += 1;
                    }
                    if let Some(id) = e.node {
                        t.phases.push((id, i.stage));
                    }
                }
                if e.dirty || rewrite {
                    t.changed.push(i);
                }
                t
            })
            .reduce(Tally::default, Tally::merge);
        report.held = held;
        report.stages = super::STAGES.iter().map(|s| s.name()).zip(counts).collect();
        let batch = Batch {
            items: changed,
            removed_items: leaving.iter().map(String::as_str).collect(),
            ..Batch::default()
        };
        let written = batch.items.len() + batch.removed_items.len();
        report.written = batch.items.len() as u64;
        // In line when a ledger record about it follows; else after the
        // scan's commit (see above). After a failed write, every item.
        let durable = !events.is_empty();
        if durable {
            let written = if rewrite {
                store.write_items(ItemsWrite::replace(&batch.items))
            } else if written > 0 {
                store.put_remediation(&batch)
            } else {
                Ok(())
            };
            if let Err(e) = written {
                st.rewrite = true;
                return Err(e.into());
            }
            st.rewrite = false;
        } else if rewrite || written > 0 {
            let write = if rewrite {
                ItemsWrite::replace(&batch.items)
            } else {
                ItemsWrite::put(&batch.items, &batch.removed_items)
            };
            st.behind = Some(Behind::Waiting(write));
            st.rewrite = false;
        }
        drop(st);
        drop(reader);
        drop(graph);
        let stored_ms = t0.elapsed().as_millis();
        if !events.is_empty() {
            self.core.ledger().append(events)?;
        }
        let mut phases = phases;
        self.core.graph_mut().apply_phases(now_us, &mut phases);
        debug!(
            items = waste.len(),
            written,
            collected_ms,
            looked_ms,
            chosen_ms = proving.duration_since(t0).as_millis() - looked_ms,
            decided_ms,
            analyzed,
            proved_ms,
            stored_ms,
            total_ms = t0.elapsed().as_millis(),
            "remediation items reconciled"
        );
        report.duration = t0.elapsed();
        Ok(report)
    }

    /// Proves and plans `items` (in CRN order), then passes them through
    /// the gate. Plans, blast radii and the built-in rules' proofs are
    /// worked out on every core; a source that checks reversibility is
    /// asked for its items at once, in order (a plugin answers several
    /// at a time).
    fn prove_all(
        &self,
        graph: &Graph,
        sources: &mut [Box<dyn Source>],
        items: &mut [(&mut Entry, NodeId, Crn)],
        now_us: u64,
        blocked: &(dyn Fn(NodeId) -> Vec<String> + Sync),
    ) {
        let worked: Vec<(Plan, u64)> = items
            .par_iter()
            .map(|(e, id, crn)| {
                let i = &e.item;
                let plan = plan::build(crn, &i.ty, &i.state, &i.rule, &i.action);
                let blast = crate::blast::blast_radius(graph, *id, 0).map_or(0, |b| b.count as u64);
                (plan, blast)
            })
            .collect();
        let served = self.sources.served();
        let asks: Vec<(NodeId, &Crn, &Plan)> = items
            .iter()
            .zip(&worked)
            .map(|((_, id, crn), (plan, _))| (*id, crn, plan))
            .collect();
        let asked = source_proofs(graph, sources, &served, &asks);
        drop(asks);
        items
            .par_iter_mut()
            .zip(worked)
            .zip(asked)
            .for_each(|(((e, id, _), (plan, blast)), asked)| {
                let item = &mut e.item;
                let before = (item.stage, item.stage_us);
                item.proof = Some(Box::new(
                    asked.unwrap_or_else(|| builtin_proof(graph, *id, plan.intent)),
                ));
                item.blast_radius = blast;
                item.set_stage(Phase::Analyzed, now_us);
                // The plan just built is the one a saga would run: its hash
                // stands, whatever an earlier pass recorded (an item moved
                // back to `flagged` keeps its old hash until it is proved
                // again). A new plan: earlier decisions were about another one.
                if plan.hash != item.plan_hash {
                    item.plan_hash = plan.hash;
                    item.notes_mut().rejected = None;
                    item.notes_mut().failure = None;
                    item.set_stage(Phase::Codegen, now_us);
                }
                gate(item, *id, before, now_us, blocked);
                e.dirty = true;
            });
    }

    pub(crate) fn remediation_items(&self) -> Result<Vec<Item>, RemediationError> {
        let st = self.durable_state()?;
        let mut items: Vec<Item> = st.items.values().map(|e| e.item.clone()).collect();
        drop(st);
        items.par_sort_unstable_by(|a, b| a.crn.cmp(&b.crn));
        Ok(items)
    }

    pub(crate) fn remediation_queue(&self, limit: usize) -> Result<Vec<QueuePart>, RemediationError> {
        let st = self.durable_state()?;
        let rejected = STAGES.len();
        let mut parts: Vec<(u64, f64, Vec<&Item>)> = (0..=rejected).map(|_| (0, 0.0, Vec::new())).collect();
        for Entry { item, .. } in st.items.values() {
            let at = match item.notes().rejected {
                Some(_) => Some(rejected),
                None => STAGES.iter().position(|s| *s == item.stage),
            };
            if let Some(part) = at.and_then(|at| parts.get_mut(at)) {
                part.0 += 1;
                part.1 += item.savings_usd_mo;
                part.2.push(item);
            }
        }
        let older = |a: &&Item, b: &&Item| a.stage_us.cmp(&b.stage_us).then_with(|| a.crn.cmp(&b.crn));
        let names = STAGES.iter().map(|s| s.name()).chain(["rejected"]);
        Ok(parts
            .into_iter()
            .zip(names)
            .map(|((count, savings_usd_mo, mut of), name)| {
                if limit == 0 {
                    of.clear();
                } else if of.len() > limit {
                    of.select_nth_unstable_by(limit - 1, older);
                    of.truncate(limit);
                }
                of.sort_unstable_by(older);
                QueuePart {
                    name,
                    count,
                    savings_usd_mo,
                    oldest: of.into_iter().cloned().collect(),
                }
            })
            .collect())
    }

    pub(crate) fn remediation_item(&self, crn: &str) -> Result<Item, RemediationError> {
        let crn = canonical_crn(crn)?.to_string();
        self.durable_state()?
            .items
            .get(&crn)
            .map(|e| e.item.clone())
            .ok_or_else(|| RemediationError::NotFound(format!("{crn} is not in the remediation pipeline")))
    }

    /// The items' state, locked, once what a pass wrote is durable: nothing
    /// is shown (or decided on) that a crash could still take back. Waits
    /// only in the short window between a pass and its scan's commit.
    fn durable_state(&self) -> Result<svc_graph::sync::MutexGuard<'_, State>, RemediationError> {
        let mut st = self.remediation.state();
        st.settle(self.core.store());
        Ok(st)
    }

    pub(crate) fn remediation_plan(&self, crn: &str) -> Result<Plan, RemediationError> {
        let item = self.remediation_item(crn)?;
        let c = canonical_crn(&item.crn)?;
        Ok(plan::build(&c, &item.ty, &item.state, &item.rule, &item.action))
    }

    /// Checks that the operator saw the current plan.
    fn check_hash(item: &Item, plan_hash: &str) -> Result<(), RemediationError> {
        if item.plan_hash.is_empty() {
            return Err(RemediationError::Conflict(format!(
                "{} has no plan yet (stage {})",
                item.crn,
                item.stage.name()
            )));
        }
        if item.plan_hash != plan_hash {
            return Err(RemediationError::Conflict(format!(
                "the plan of {} changed since it was shown: it is now {}, not {plan_hash}",
                item.crn, item.plan_hash
            )));
        }
        Ok(())
    }

    /// Updates an item under the state lock, writes it and appends `ev`.
    fn decide(
        &self,
        crn: &str,
        f: impl FnOnce(&mut Item, u64) -> Result<NewEvent, RemediationError>,
    ) -> Result<Item, RemediationError> {
        let crn = canonical_crn(crn)?.to_string();
        let now_us = self.core.clock().now_us();
        let mut st = self.durable_state()?;
        let item = st
            .items
            .get_mut(&crn)
            .map(|e| &mut e.item)
            .ok_or_else(|| RemediationError::NotFound(format!("{crn} is not in the remediation pipeline")))?;
        let mut next = item.clone();
        let ev = f(&mut next, now_us)?;
        self.core.store().put_remediation(&Batch {
            items: vec![&next],
            ..Batch::default()
        })?;
        self.core.ledger().append_one(ev)?;
        *item = next.clone();
        drop(st);
        self.set_phase_of(
            &crn,
            if next.notes().rejected.is_some() {
                Phase::None
            } else {
                next.stage
            },
        );
        Ok(next)
    }

    fn set_phase_of(&self, crn: &str, phase: Phase) {
        let Ok(c) = Crn::parse(crn) else { return };
        let now_us = self.core.clock().now_us();
        let mut g = self.core.graph_mut();
        if let Some(id) = g.find(&c) {
            g.set_phase(id, phase, now_us);
        }
    }

    pub(crate) fn reject(
        &self,
        crn: &str,
        plan_hash: &str,
        actor: &str,
        reason: &str,
    ) -> Result<Item, RemediationError> {
        self.decide(crn, |item, now_us| {
            Self::check_hash(item, plan_hash)?;
            if item.stage == Phase::Applied {
                return Err(RemediationError::Conflict(format!("{} is already applied", item.crn)));
            }
            if item.notes().rejected.is_some() {
                return Err(RemediationError::Conflict(format!("{} is already rejected", item.crn)));
            }
            let from = item.stage.name();
            item.notes_mut().rejected = Some(format!("{actor}: {reason}"));
            item.stage_us = now_us;
            Ok(NewEvent::of(
                Some(&item.crn),
                actor,
                format!("{actor} rejected the remediation of {} at {from}", item.crn),
                &payloads::Rejection {
                    crn: item.crn.clone(),
                    plan_hash: item.plan_hash.clone(),
                    stage: from.to_owned(),
                    reason: reason.to_owned(),
                    actor: actor.to_owned(),
                },
            ))
        })
    }

    pub(crate) fn move_item(
        &self,
        crn: &str,
        plan_hash: &str,
        to: Phase,
        actor: &str,
        reason: &str,
    ) -> Result<Item, RemediationError> {
        self.decide(crn, |item, now_us| {
            Self::check_hash(item, plan_hash)?;
            let from = item.stage;
            let crn = item.crn.clone();
            let illegal = |why: &str| {
                RemediationError::Conflict(format!(
                    "illegal move of {} from {} to {}: {why}",
                    crn,
                    from.name(),
                    to.name()
                ))
            };
            if item.notes().rejected.is_some() {
                return Err(illegal("it was rejected"));
            }
            match (from, to) {
                (Phase::Pending, Phase::SauGate) => {
                    item.notes_mut().held_by = Some(actor.to_owned());
                    item.notes_mut().blockers.push(format!("held by {actor}"));
                }
                (Phase::SauGate, Phase::Pending) => {
                    if item.notes().held_by.is_none() {
                        return Err(illegal("it is held by its blockers; use an override"));
                    }
                    item.notes_mut().held_by = None;
                    item.notes_mut().blockers.retain(|b| !b.starts_with("held by "));
                    let overridden = item
                        .notes()
                        .override_by
                        .as_ref()
                        .is_some_and(|o| o.plan_hash == item.plan_hash);
                    if !item.notes().blockers.is_empty() && !overridden {
                        return Err(illegal("other blockers remain; use an override"));
                    }
                }
                (f, Phase::Flagged) if f != Phase::Applied && f != Phase::Flagged => {
                    item.proof = None;
                    item.notes_mut().held_by = None;
                }
                _ => return Err(illegal("not a legal move")),
            }
            item.set_stage(to, now_us);
            Ok(NewEvent::of(
                Some(&item.crn),
                actor,
                format!("{actor} moved {} from {} to {}", item.crn, from.name(), to.name()),
                &payloads::PipelineMove {
                    crn: item.crn.clone(),
                    from: from.name().to_owned(),
                    to: to.name().to_owned(),
                    reason: reason.to_owned(),
                    actor: actor.to_owned(),
                    plan_hash: Some(item.plan_hash.clone()),
                },
            ))
        })
    }

    pub(crate) fn override_gate(
        &self,
        crn: &str,
        plan_hash: &str,
        actor: &str,
        reason: &str,
    ) -> Result<Item, RemediationError> {
        if reason.trim().is_empty() {
            return Err(RemediationError::Invalid("an override needs a reason".into()));
        }
        self.decide(crn, |item, now_us| {
            Self::check_hash(item, plan_hash)?;
            if item.stage != Phase::SauGate {
                return Err(RemediationError::Conflict(format!(
                    "{} is at {}, not sau_gate",
                    item.crn,
                    item.stage.name()
                )));
            }
            let blockers = item.notes().blockers.clone();
            item.notes_mut().override_by = Some(Override {
                actor: actor.to_owned(),
                reason: reason.to_owned(),
                plan_hash: item.plan_hash.clone(),
            });
            item.notes_mut().held_by = None;
            item.set_stage(Phase::Pending, now_us);
            Ok(NewEvent::of(
                Some(&item.crn),
                actor,
                format!("{actor} overrode sau_gate for {}: {reason}", item.crn),
                &payloads::SauOverride {
                    crn: item.crn.clone(),
                    plan_hash: item.plan_hash.clone(),
                    reason: reason.to_owned(),
                    blockers,
                    actor: actor.to_owned(),
                },
            ))
        })
    }

    pub(crate) fn approve(&self, crn: &str, plan_hash: &str, actor: &str) -> Result<SagaOutcome, RemediationError> {
        // An enforcing `block` rule that matched since the item reached
        // `pending` still keeps it out, unless it was overridden.
        let c = canonical_crn(crn)?;
        let id = self.core.graph().find(&c);
        let blocking = id.map(|id| self.policy.blocked_by(id)).unwrap_or_default();
        if !blocking.is_empty() {
            let item = self.remediation_item(crn)?;
            if item
                .notes()
                .override_by
                .as_ref()
                .is_none_or(|o| o.plan_hash != item.plan_hash)
            {
                return Err(RemediationError::Conflict(format!(
                    "{} is blocked by policy {}; an override is needed",
                    item.crn,
                    blocking.join(", ")
                )));
            }
        }
        let item = self.decide(crn, |item, _| {
            Self::check_hash(item, plan_hash)?;
            if item.notes().rejected.is_some() || item.stage != Phase::Pending {
                return Err(RemediationError::Conflict(format!(
                    "{} is at {}{}, not pending",
                    item.crn,
                    item.stage.name(),
                    if item.notes().rejected.is_some() {
                        " (rejected)"
                    } else {
                        ""
                    }
                )));
            }
            Ok(NewEvent::of(
                Some(&item.crn),
                actor,
                format!("{actor} approved the remediation of {}", item.crn),
                &payloads::Approval {
                    crn: item.crn.clone(),
                    plan_hash: item.plan_hash.clone(),
                    intent: item.action.to_string(),
                    savings_usd_mo: item.savings_usd_mo,
                    actor: actor.to_owned(),
                },
            ))
        })?;
        self.run_saga(&item, actor)
    }

    /// Runs an approved item's plan step by step; compensates on failure.
    fn run_saga(&self, item: &Item, actor: &str) -> Result<SagaOutcome, RemediationError> {
        let Some(_lock) = self.remediation.lock_crn(&item.crn, LOCK_WAIT) else {
            return Err(self.lock_timeout(&item.crn, actor, "another saga holds the resource")?);
        };
        let shared = match self.remediation.lock_shared(&item.crn, LOCK_WAIT) {
            Ok(guard) => guard,
            Err(why) => return Err(self.lock_timeout(&item.crn, actor, &why)?),
        };
        let Some(mut sources) = self.sources.try_lock_for(LOCK_WAIT) else {
            return Err(self.lock_timeout(&item.crn, actor, "a scan holds the plugins")?);
        };
        let shared = shared.as_deref();
        let crn = canonical_crn(&item.crn)?;
        let plan = plan::build(&crn, &item.ty, &item.state, &item.rule, &item.action);
        let now_us = self.core.clock().now_us();
        let mut saga = Saga {
            id: format!("saga-{}-{}", now_us, &plan.hash[..12]),
            crn: item.crn.clone(),
            plan_hash: plan.hash.clone(),
            intent: plan.intent.to_owned(),
            blast_radius: item.blast_radius,
            steps: plan
                .steps
                .iter()
                .map(|s| SagaStep {
                    action: s.action.to_owned(),
                    inverse: s.inverse.to_owned(),
                    status: "pending".into(),
                    payload_hash: String::new(),
                })
                .collect(),
            status: "running".into(),
            started_us: now_us,
        };
        self.put_saga(&saga, None)?;
        let mut failure = None;
        for i in 0..saga.steps.len() {
            let started = Instant::now();
            let action = saga.steps[i].action.clone();
            let props = BTreeMap::from([
                ("saga_id".to_owned(), saga.id.clone()),
                ("rule".to_owned(), item.rule.to_string()),
            ]);
            let served = self.sources.served();
            let call = |sources: &mut [Box<dyn Source>], dry_run: bool| {
                let req = RemediateRequest {
                    crn: &item.crn,
                    action: &action,
                    properties: &props,
                    dry_run,
                };
                remediate_on(sources, &served, &crn, &req)
            };
            if let Err(e) = call(&mut sources[..], true) {
                failure = Some(format!("step {i} ({action}) failed its dry run: {e}"));
                break;
            }
            self.still_locked(shared, &saga)?;
            saga.steps[i].status = "started".into();
            self.put_saga(&saga, None)?;
            match call(&mut sources[..], false) {
                Ok(outcome) => {
                    let payload = Compensation {
                        crn: item.crn.clone(),
                        kind: "step".into(),
                        applied: action.clone(),
                        inverse: saga.steps[i].inverse.clone(),
                        properties: outcome.snapshot.clone(),
                        saga_id: saga.id.clone(),
                        created_us: self.core.clock().now_us(),
                        reverted_us: 0,
                    };
                    let hash = plan::payload_hash(&payload_canonical(&payload));
                    saga.steps[i].status = "SUCCESS".into();
                    saga.steps[i].payload_hash = hash.clone();
                    self.put_saga(&saga, Some((&hash, &payload)))?;
                    self.core.ledger().append_one(NewEvent::of(
                        Some(&item.crn),
                        actor,
                        format!("step {i} of {} ({action}) on {} succeeded", saga.id, item.crn),
                        &payloads::ExecutionCommit {
                            saga_id: saga.id.clone(),
                            crn: item.crn.clone(),
                            intent: saga.intent.to_string(),
                            step_index: i as u64,
                            blast_radius: saga.blast_radius as u64,
                            compensating_payload_hash: hash,
                            status: "SUCCESS".to_owned(),
                            duration_ms: started.elapsed().as_millis() as u64,
                            action: action.to_string(),
                            provider_status: outcome.status.to_string(),
                        },
                    ))?;
                }
                Err(e) => {
                    saga.steps[i].status = "FAILED".into();
                    failure = Some(format!("step {i} ({action}) failed: {e}"));
                    break;
                }
            }
        }
        let applied = failure.is_none();
        if let Some(reason) = &failure {
            self.compensate(&mut sources[..], &mut saga, reason, actor, shared)?;
            saga.status = "compensated".into();
        } else {
            saga.status = "applied".into();
        }
        self.put_saga(&saga, None)?;
        drop(sources);
        let saga_id = saga.id.clone();
        let updated = self.decide_quietly(&item.crn, |it, now_us| {
            it.notes_mut().saga_id = Some(saga_id.clone());
            it.notes_mut().failure = failure.clone();
            it.set_stage(if applied { Phase::Applied } else { Phase::Pending }, now_us);
        })?;
        info!(crn = %item.crn, saga = %saga.id, applied, "saga finished");
        Ok(SagaOutcome {
            saga_id: saga.id,
            crn: item.crn.clone(),
            applied,
            stage: updated.stage,
            failure,
            steps: saga.steps,
        })
    }

    /// In a cluster, asks etcd whether this node still holds the lock on
    /// `saga`'s resource before it acts on it again. A lost lock stops the
    /// saga where it is (as stored: running); it is compensated as
    /// interrupted, by the next scan here if this node still leads, or by
    /// the node leading next.
    fn still_locked(&self, shared: Option<&dyn SharedGuard>, saga: &Saga) -> Result<(), RemediationError> {
        let Some(why) = shared.and_then(|g| g.check().err()) else {
            return Ok(());
        };
        warn!(crn = %saga.crn, saga = %saga.id, reason = %why, "the cluster's lock on the resource was lost; the saga stops");
        self.remediation.state().interrupted.push(saga.clone());
        Err(RemediationError::LockLost(format!(
            "the cluster's lock on {} was lost ({why}): saga {} stopped and is compensated as interrupted",
            saga.crn, saga.id
        )))
    }

    /// Undoes the committed (and started) steps of `saga`, newest first;
    /// under a cluster's lock (`shared`), only while it holds.
    fn compensate(
        &self,
        sources: &mut [Box<dyn Source>],
        saga: &mut Saga,
        reason: &str,
        actor: &str,
        shared: Option<&dyn SharedGuard>,
    ) -> Result<(), RemediationError> {
        let crn = canonical_crn(&saga.crn)?;
        for i in (0..saga.steps.len()).rev() {
            let step = &saga.steps[i];
            if step.status != "SUCCESS" && step.status != "started" {
                continue;
            }
            self.still_locked(shared, saga)?;
            let props = match self.core.store().load_payload(&step.payload_hash)? {
                Some(p) => p.properties,
                None => BTreeMap::new(),
            };
            let inverse = step.inverse.clone();
            let req = RemediateRequest {
                crn: &saga.crn,
                action: &inverse,
                properties: &props,
                dry_run: false,
            };
            let result = remediate_on(sources, &self.sources.served(), &crn, &req).map(|_| ());
            let status = if result.is_ok() {
                "COMPENSATED"
            } else {
                "COMPENSATION_FAILED"
            };
            if let Err(e) = &result {
                warn!(crn = %saga.crn, saga = %saga.id, step = i, error = %e, "compensation failed");
            }
            saga.steps[i].status = status.into();
            self.core.ledger().append_one(NewEvent::of(
                Some(&saga.crn),
                actor,
                format!(
                    "step {i} of {} on {} reversed with {inverse}: {reason}",
                    saga.id, saga.crn
                ),
                &payloads::ExecutionRollback::Compensated {
                    saga_id: saga.id.clone(),
                    step_index: i as u64,
                    reason: reason.to_owned(),
                    compensating_action: inverse.to_string(),
                    status: status.to_owned(),
                    crn: saga.crn.clone(),
                    error: result.err().map(|e| e.to_string()),
                },
            ))?;
            self.put_saga(saga, None)?;
        }
        Ok(())
    }

    /// Sagas the daemon stopped in the middle of: their steps are
    /// compensated and the item goes back to `pending` with the reason.
    fn recover_sagas(&self, sources: &mut [Box<dyn Source>]) -> Result<usize, RemediationError> {
        let interrupted = std::mem::take(&mut self.remediation.state().interrupted);
        let n = interrupted.len();
        for mut saga in interrupted {
            let reason = "the daemon stopped during the saga; its steps are compensated on restart";
            let result = self.compensate(sources, &mut saga, reason, "engine", None);
            result?;
            saga.status = "compensated".into();
            self.put_saga(&saga, None)?;
            let _ = self.decide_quietly(&saga.crn, |it, now_us| {
                it.notes_mut().failure = Some(reason.into());
                it.notes_mut().saga_id = Some(saga.id.clone());
                it.set_stage(Phase::Pending, now_us);
            });
            warn!(crn = %saga.crn, saga = %saga.id, "saga interrupted by a stop; compensated");
        }
        Ok(n)
    }

    fn put_saga(&self, saga: &Saga, payload: Option<(&str, &Compensation)>) -> Result<(), RemediationError> {
        self.core.store().put_remediation(&Batch {
            sagas: vec![saga],
            payloads: payload.into_iter().collect(),
            ..Batch::default()
        })?;
        Ok(())
    }

    fn decide_quietly(&self, crn: &str, f: impl FnOnce(&mut Item, u64)) -> Result<Item, RemediationError> {
        let now_us = self.core.clock().now_us();
        let mut st = self.durable_state()?;
        let item = st
            .items
            .get_mut(crn)
            .map(|e| &mut e.item)
            .ok_or_else(|| RemediationError::NotFound(format!("{crn} is not in the remediation pipeline")))?;
        f(item, now_us);
        let next = item.clone();
        self.core.store().put_remediation(&Batch {
            items: vec![&next],
            ..Batch::default()
        })?;
        drop(st);
        self.set_phase_of(crn, next.stage);
        Ok(next)
    }

    fn lock_timeout(&self, crn: &str, actor: &str, why: &str) -> Result<RemediationError, RemediationError> {
        let secs = LOCK_WAIT.as_secs();
        self.core.ledger().append_one(NewEvent::of(
            Some(crn),
            actor,
            format!("could not lock {crn} within {secs} s: {why}"),
            &payloads::LockTimeout {
                crn: crn.to_owned(),
                waited_seconds: secs,
                reason: why.to_owned(),
            },
        ))?;
        Ok(RemediationError::LockTimeout(format!(
            "could not lock {crn} within {secs} s: {why}"
        )))
    }

    pub(crate) fn quarantine(
        &self,
        crn: &str,
        action: &str,
        reason: &str,
        actor: &str,
    ) -> Result<String, RemediationError> {
        if !["ISOLATE", "STOP", "DELETE"].contains(&action) {
            return Err(RemediationError::Invalid(format!(
                "unknown quarantine action {action:?}: expected ISOLATE, STOP or DELETE"
            )));
        }
        let c = canonical_crn(crn)?;
        let crn = c.to_string();
        if self.core.graph().find(&c).is_none() {
            return Err(RemediationError::NotFound(format!("no node with crn {crn}")));
        }
        let Some(_lock) = self.remediation.lock_crn(&crn, LOCK_WAIT) else {
            return Err(self.lock_timeout(&crn, actor, "another saga holds the resource")?);
        };
        let _shared = match self.remediation.lock_shared(&crn, LOCK_WAIT) {
            Ok(guard) => guard,
            Err(why) => return Err(self.lock_timeout(&crn, actor, &why)?),
        };
        let Some(mut sources) = self.sources.try_lock_for(LOCK_WAIT) else {
            return Err(self.lock_timeout(&crn, actor, "a scan holds the plugins")?);
        };
        let previous = {
            let g = self.core.graph();
            let reader = g.interner().reader();
            g.find(&c)
                .and_then(|id| g.node(id))
                .map(|n| reader.resolve(n.state()).to_owned())
                .unwrap_or_default()
        };
        let source = source_for(&mut sources[..], &c, &self.sources.served())
            .ok_or_else(|| RemediationError::Conflict(format!("no plugin registered for provider: {}", c.provider)))?;
        match source.apply_quarantine(&crn, action, reason) {
            None => {
                return Err(RemediationError::Conflict(format!(
                    "the {} plugin cannot quarantine",
                    source.name()
                )));
            }
            Some(Err(e)) => return Err(RemediationError::Conflict(format!("quarantine of {crn} failed: {e}"))),
            Some(Ok(o)) if !o.success => {
                return Err(RemediationError::Conflict(format!(
                    "quarantine of {crn} failed: {}",
                    o.message
                )));
            }
            Some(Ok(_)) => {}
        }
        drop(sources);
        let payload = Compensation {
            crn: crn.clone(),
            kind: "quarantine".into(),
            applied: action.to_owned(),
            inverse: "restore".into(),
            properties: BTreeMap::from([
                ("state_before".to_owned(), previous),
                ("quarantine_action".to_owned(), action.to_owned()),
            ]),
            saga_id: String::new(),
            created_us: self.core.clock().now_us(),
            reverted_us: 0,
        };
        let hash = plan::payload_hash(&payload_canonical(&payload));
        self.core.store().put_remediation(&Batch {
            payloads: vec![(&hash, &payload)],
            ..Batch::default()
        })?;
        self.core.ledger().append_one(NewEvent::of(
            Some(&crn),
            actor,
            format!("{actor} quarantined {crn} ({action}): {reason}"),
            &payloads::Quarantine {
                crn: crn.to_string(),
                action: action.to_string(),
                reason: reason.to_owned(),
                compensating_payload_hash: hash.clone(),
                actor: actor.to_owned(),
            },
        ))?;
        Ok(hash)
    }

    pub(crate) fn revert(&self, hash: &str, actor: &str) -> Result<Compensation, RemediationError> {
        let hash = hash.trim().to_ascii_lowercase();
        if hash.len() != 64 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(RemediationError::Invalid(format!("{hash:?} is not a SHA-256 in hex")));
        }
        let mut payload = self
            .core
            .store()
            .load_payload(&hash)?
            .ok_or_else(|| RemediationError::NotFound(format!("no compensating payload with hash {hash}")))?;
        if payload.reverted_us != 0 {
            return Err(RemediationError::Conflict(format!("{hash} was already reverted")));
        }
        let c = canonical_crn(&payload.crn)?;
        let Some(_lock) = self.remediation.lock_crn(&payload.crn, LOCK_WAIT) else {
            return Err(self.lock_timeout(&payload.crn, actor, "another saga holds the resource")?);
        };
        let _shared = match self.remediation.lock_shared(&payload.crn, LOCK_WAIT) {
            Ok(guard) => guard,
            Err(why) => return Err(self.lock_timeout(&payload.crn, actor, &why)?),
        };
        let Some(mut sources) = self.sources.try_lock_for(LOCK_WAIT) else {
            return Err(self.lock_timeout(&payload.crn, actor, "a scan holds the plugins")?);
        };
        let req = RemediateRequest {
            crn: &payload.crn,
            action: &payload.inverse,
            properties: &payload.properties,
            dry_run: false,
        };
        remediate_on(&mut sources[..], &self.sources.served(), &c, &req)
            .map_err(|e| RemediationError::Conflict(format!("revert failed: {e}")))?;
        drop(sources);
        payload.reverted_us = self.core.clock().now_us();
        self.core.store().put_remediation(&Batch {
            payloads: vec![(&hash, &payload)],
            ..Batch::default()
        })?;
        let message = format!("{actor} reverted {} on {} ({hash})", payload.applied, payload.crn);
        let event = if payload.kind == "quarantine" {
            NewEvent::of(
                Some(&payload.crn),
                actor,
                message,
                &payloads::QuarantineReverted {
                    crn: payload.crn.clone(),
                    compensating_payload_hash: hash.clone(),
                    action: payload.inverse.clone(),
                    reverted: payload.applied.clone(),
                    actor: actor.to_owned(),
                },
            )
        } else {
            NewEvent::of(
                Some(&payload.crn),
                actor,
                message,
                &payloads::ExecutionRollback::Reverted {
                    saga_id: payload.saga_id.clone(),
                    step_index: None,
                    reason: format!("reverted by {actor}"),
                    compensating_action: payload.inverse.clone(),
                    status: "COMPENSATED".to_owned(),
                    crn: payload.crn.clone(),
                    compensating_payload_hash: hash.clone(),
                },
            )
        };
        self.core.ledger().append_one(event)?;
        if payload.kind == "step" {
            // An applied remediation that is undone waits for a decision again.
            let why = format!("{} was reverted by {actor}", payload.applied);
            let _ = self.decide_quietly(&payload.crn, |it, now_us| {
                if it.stage == Phase::Applied {
                    it.notes_mut().failure = Some(why);
                    it.set_stage(Phase::Pending, now_us);
                }
            });
        }
        Ok(payload)
    }

    pub(crate) fn isolate(
        &self,
        crn: &str,
        reason_code: &str,
        ttl_seconds: u64,
        actor: &str,
    ) -> Result<Isolation, RemediationError> {
        let parsed = canonical_crn(crn)?;
        let c = parsed.to_string();
        if reason_code.trim().is_empty() {
            return Err(RemediationError::Invalid("reason_code must not be empty".into()));
        }
        // A resource the graph has or had: an entry for a CRN nothing
        // reports would sit on the list, protecting nothing.
        if self.core.graph().find(&parsed).is_none() {
            return Err(RemediationError::NotFound(format!("no node with crn {c}")));
        }
        let entry = Isolation {
            crn: c.clone(),
            author: actor.to_owned(),
            reason_code: reason_code.to_owned(),
            ttl_seconds,
            created_us: self.core.clock().now_us(),
        };
        let mut st = self.remediation.state();
        self.core.store().put_remediation(&Batch {
            isolations: vec![&entry],
            ..Batch::default()
        })?;
        self.core.ledger().append_one(NewEvent::of(
            Some(&c),
            actor,
            format!(
                "{actor} added {c} to the ignore list ({reason_code}, {})",
                if ttl_seconds == 0 {
                    "permanent".to_owned()
                } else {
                    format!("{ttl_seconds} s")
                }
            ),
            &payloads::Isolation {
                crn: c.clone(),
                author_identifier: actor.to_owned(),
                reason_code: reason_code.to_owned(),
                ttl_seconds,
                action: "ADDED".to_owned(),
            },
        ))?;
        st.isolation.insert(c, entry.clone());
        Ok(entry)
    }

    pub(crate) fn isolations(&self) -> Vec<Isolation> {
        self.remediation.state().isolation.values().cloned().collect()
    }

    pub(crate) fn remove_isolation(&self, crn: &str, actor: &str) -> Result<Isolation, RemediationError> {
        let c = canonical_crn(crn)?.to_string();
        let mut st = self.remediation.state();
        let entry = st
            .isolation
            .get(&c)
            .cloned()
            .ok_or_else(|| RemediationError::NotFound(format!("{c} is not on the ignore list")))?;
        self.remove_isolation_locked(&mut st, &entry, actor, "REMOVED")?;
        Ok(entry)
    }

    fn remove_isolation_locked(
        &self,
        st: &mut State,
        entry: &Isolation,
        actor: &str,
        action: &str,
    ) -> Result<(), RemediationError> {
        self.core.store().put_remediation(&Batch {
            removed_isolations: vec![&entry.crn],
            ..Batch::default()
        })?;
        self.core.ledger().append_one(NewEvent::of(
            Some(&entry.crn),
            actor,
            format!(
                "{} left the ignore list ({})",
                entry.crn,
                if action == "EXPIRED" {
                    "its TTL ran out"
                } else {
                    "removed"
                }
            ),
            &payloads::Isolation {
                crn: entry.crn.clone(),
                author_identifier: actor.to_owned(),
                reason_code: entry.reason_code.clone(),
                ttl_seconds: entry.ttl_seconds,
                action: action.to_owned(),
            },
        ))?;
        st.isolation.remove(&entry.crn);
        Ok(())
    }

    pub(crate) fn expire_isolations(&self, now_us: u64) -> Result<usize, RemediationError> {
        let mut st = self.remediation.state();
        let due: Vec<Isolation> = st
            .isolation
            .values()
            .filter(|i| i.expires_us().is_some_and(|t| t <= now_us))
            .cloned()
            .collect();
        for entry in &due {
            self.remove_isolation_locked(&mut st, entry, "engine", "EXPIRED")?;
        }
        Ok(due.len())
    }
}

#[cfg(test)]
#[path = "pass_tests.rs"]
mod pass_tests;
