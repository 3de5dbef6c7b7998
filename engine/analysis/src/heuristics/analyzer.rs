//! Heuristic plugins as analyzers: what the engine sends them and what it
//! accepts back (SPEC 2.6, 4.7, 7; DESIGN 7).
//!
//! For each analyzer the pass asks its [`AnalyzerSpec`] (the plugin's
//! `Metadata`, which the host asks once per plugin start), then streams the
//! visible nodes whose full type (`ec2:volume`) or kind (`volume`) is in the
//! type filter, each with only the declared properties rendered as strings,
//! in batches of the preferred size capped at [`MAX_BATCH_SIZE`] nodes and
//! about [`MAX_BATCH_BYTES`] bytes, the last flagged `is_last`. Batches go
//! through a channel of [`BATCHES_IN_FLIGHT`], so a slow plugin slows the
//! producer instead of the engine buffering the snapshot. Findings about a
//! CRN that was not sent are discarded; a risk score above
//! [`MAX_PLUGIN_RISK`] is capped. Analyzers run at once, one thread each; a
//! failing or hanging analyzer fails only itself.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::time::{Duration, Instant};

use tracing::{info, warn};

use super::finding::{Finding, FindingSource};
use svc_graph::crn::Crn;
use svc_graph::graph::Graph;
use svc_graph::ids::{NodeId, Sym};
use svc_graph::intern::InternerReader;
use svc_graph::props::ValueRef;
use svc_graph::source::SourceError;

/// The global maximum of nodes in one batch, whatever a plugin prefers.
pub const MAX_BATCH_SIZE: usize = 1000;
/// Nodes per batch when a plugin states no preference (0 or negative).
pub const DEFAULT_BATCH_SIZE: usize = 500;
/// A batch is also closed once its nodes reach about this many bytes, well
/// under gRPC's default 4 MiB message limit on the plugin side.
pub const MAX_BATCH_BYTES: usize = 2 << 20;
/// Batches produced ahead of what the plugin has taken.
pub const BATCHES_IN_FLIGHT: usize = 2;
/// The highest risk score a plugin may give (80..=100 is for built-in rules).
pub const MAX_PLUGIN_RISK: u8 = 79;
/// Longest reason, suggested action or annotation kept from a plugin, in bytes.
const MAX_TEXT: usize = 1024;
/// Most annotations kept per finding.
const MAX_ANNOTATIONS: usize = 32;
/// Discard reasons kept per analyzer for the report.
const KEPT_REASONS: usize = 5;
/// Findings a plugin may send in one pass for each node it has been sent
/// (a later finding about a node supersedes an earlier one), beyond
/// [`FINDINGS_SLACK`]; past that it fails the pass, so one that answers
/// without end holds at most this much of the daemon's memory.
pub const MAX_FINDINGS_PER_NODE: u64 = 4;
/// Findings a plugin may send beyond [`MAX_FINDINGS_PER_NODE`] a node.
pub const FINDINGS_SLACK: u64 = 1024;

/// What a heuristic plugin declares about itself (`MetadataResponse`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AnalyzerSpec {
    pub name: String,
    pub description: String,
    pub version: String,
    /// Full types or kinds; empty means every type.
    pub resource_type_filter: Vec<String>,
    /// The only property keys sent.
    pub required_properties: Vec<String>,
    pub preferred_batch_size: i32,
}

impl AnalyzerSpec {
    /// Nodes per batch: the preference, capped at [`MAX_BATCH_SIZE`].
    pub fn batch_size(&self) -> usize {
        match usize::try_from(self.preferred_batch_size) {
            Ok(0) | Err(_) => DEFAULT_BATCH_SIZE,
            Ok(n) => n.min(MAX_BATCH_SIZE),
        }
    }
}

/// One node as sent (`GraphNode`).
#[derive(Clone, Debug, PartialEq)]
pub struct AnalyzeNode {
    /// Graph-form CRN.
    pub crn: String,
    /// Full type, `<service>:<kind>`.
    pub resource_type: String,
    pub cost_usd: f64,
    /// Declared keys only; values as strings.
    pub properties: Vec<(String, String)>,
}

/// One batch as sent (`NodeBatch`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AnalyzeBatch {
    pub nodes: Vec<AnalyzeNode>,
    pub is_last: bool,
}

/// One finding as a plugin sent it (`HeuristicFinding`), unchecked.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PluginFinding {
    pub crn: String,
    pub is_waste: bool,
    pub risk_score: i32,
    pub reason: String,
    pub suggested_action: String,
    pub projected_savings_usd: f64,
    pub annotations: Vec<(String, String)>,
}

/// A heuristic plugin, as the engine drives it.
pub trait Analyzer: Send {
    /// Plugin name, shown in logs, reports and finding sources.
    fn name(&self) -> &str;
    /// The plugin's declaration. Implementations ask the plugin once per
    /// start and answer from that afterwards.
    fn spec(&mut self) -> Result<AnalyzerSpec, SourceError>;
    /// Streams every batch of `batches` to the plugin (until the one with
    /// `is_last`) and hands each finding to `found` as it arrives; when
    /// `found` breaks, the engine takes no more: stop reading and end the
    /// call. Gives up after `timeout` when the scan request set one, else
    /// after the analyzer's own default.
    fn analyze(
        &mut self,
        batches: Receiver<AnalyzeBatch>,
        timeout: Option<Duration>,
        found: &mut dyn FnMut(PluginFinding) -> ControlFlow<()>,
    ) -> Result<(), SourceError>;
    /// Stops the plugin when the daemon stops.
    fn stop(&mut self) {}
    /// As [`svc_graph::source::Source::identity`]: a new analyzer with the
    /// identity of one already there gives way to it.
    fn identity(&self) -> Option<String> {
        None
    }
}

/// How one analyzer's pass went (part of the scan report).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AnalyzerOutcome {
    /// Plugin name.
    pub name: String,
    /// The rule name it declared.
    pub rule: String,
    pub version: String,
    pub ok: bool,
    pub error: Option<String>,
    /// Nodes sent, and in how many batches.
    pub nodes_sent: u64,
    pub batches_sent: u64,
    /// Findings kept, and those of them that say waste.
    pub findings: u64,
    pub waste: u64,
    /// Findings dropped because their CRN was not sent (or not a CRN).
    pub discarded: u64,
    /// Findings whose risk score was above [`MAX_PLUGIN_RISK`].
    pub capped: u64,
    /// The first reasons for discarding.
    pub discard_reasons: Vec<String>,
    /// When the analyzer failed: findings of its last good pass kept for
    /// resources still present, so a crash does not flip verdicts.
    pub carried_over: u64,
    pub duration_ms: u64,
}

impl AnalyzerOutcome {
    /// The outcome as it appears in `SCAN_COMPLETED` and the heuristics status.
    pub fn payload(&self) -> serde_json::Value {
        serde_json::json!({
            "name": self.name, "rule": self.rule, "version": self.version, "ok": self.ok, "error": self.error,
            "nodes_sent": self.nodes_sent, "batches_sent": self.batches_sent, "findings": self.findings,
            "waste": self.waste, "discarded": self.discarded, "capped": self.capped,
            "discard_reasons": self.discard_reasons, "carried_over": self.carried_over,
            "duration_ms": self.duration_ms,
        })
    }
}

/// Runs every analyzer over the visible nodes of `graph` at once. Findings
/// of an analyzer that failed are dropped with it.
pub fn run_analyzers(
    graph: &Graph,
    analyzers: &mut [Box<dyn Analyzer>],
    now_us: u64,
    timeout: Option<Duration>,
) -> (Vec<Finding>, Vec<AnalyzerOutcome>) {
    let parent = tracing::Span::current();
    let results: Vec<(Vec<Finding>, AnalyzerOutcome)> = std::thread::scope(|scope| {
        let handles: Vec<_> = analyzers
            .iter_mut()
            .map(|a| {
                let parent = parent.clone();
                scope.spawn(move || {
                    let _span = parent.enter();
                    run_one(graph, a.as_mut(), now_us, timeout)
                })
            })
            .collect();
        handles.into_iter().filter_map(|h| h.join().ok()).collect()
    });
    let mut findings = Vec::new();
    let mut outcomes = Vec::new();
    for (mut f, o) in results {
        findings.append(&mut f);
        outcomes.push(o);
    }
    outcomes.sort_by(|a, b| a.name.cmp(&b.name));
    (findings, outcomes)
}

/// What to send: which nodes and which of their properties.
struct Selection {
    /// Symbols of the filter entries; `None` selects every node.
    types: Option<HashSet<Sym>>,
    /// Declared keys that exist in the interner, with their text.
    keys: Vec<(Sym, String)>,
}

impl Selection {
    fn new(graph: &Graph, spec: &AnalyzerSpec) -> Selection {
        let reader = graph.interner().reader();
        let types = (!spec.resource_type_filter.is_empty()).then(|| {
            spec.resource_type_filter
                .iter()
                .filter_map(|t| reader.get(t.trim()))
                .collect::<HashSet<Sym>>()
        });
        let mut keys: Vec<(Sym, String)> = spec
            .required_properties
            .iter()
            .filter_map(|k| reader.get(k).map(|s| (s, k.clone())))
            .collect();
        keys.sort_unstable();
        keys.dedup();
        Selection { types, keys }
    }

    fn selects(&self, ty: Sym, kind: Sym) -> bool {
        self.types.as_ref().is_none_or(|t| t.contains(&ty) || t.contains(&kind))
    }
}

/// A property value as a plugin receives it: a JSON string as its text,
/// any other JSON value as its JSON encoding.
pub fn property_text(v: ValueRef<'_>) -> String {
    match v {
        ValueRef::Null => "null".to_owned(),
        ValueRef::Bool(b) => b.to_string(),
        ValueRef::Int(i) => i.to_string(),
        ValueRef::Float(f) => serde_json::Number::from_f64(f).map_or_else(|| "null".to_owned(), |n| n.to_string()),
        ValueRef::Str(s) | ValueRef::Json(s) => s.to_owned(),
    }
}

/// Sends the selected nodes in batches; returns the ids sent and the batch
/// count. Stops early when the analyzer hangs up.
/// `produced` counts the nodes sent so far.
fn produce(
    graph: &Graph,
    sel: &Selection,
    batch_size: usize,
    now_us: u64,
    tx: SyncSender<AnalyzeBatch>,
    produced: &AtomicU64,
) -> (HashSet<NodeId>, u64) {
    let reader: InternerReader<'_> = graph.interner().reader();
    let mut sent = HashSet::new();
    let mut batches = 0u64;
    let mut batch = AnalyzeBatch::default();
    let mut bytes = 0usize;
    for n in graph.nodes() {
        if !n.is_visible(now_us) || !sel.selects(n.ty(), n.kind()) {
            continue;
        }
        let props = n.props();
        let properties: Vec<(String, String)> = sel
            .keys
            .iter()
            .filter_map(|(sym, key)| props.get(*sym).map(|v| (key.clone(), property_text(v))))
            .collect();
        let node = AnalyzeNode {
            crn: graph.crn_with(&reader, n.id()),
            resource_type: reader.resolve(n.ty()).to_owned(),
            cost_usd: f64::from(n.cost_usd_mo()),
            properties,
        };
        bytes += node.crn.len()
            + node.resource_type.len()
            + 16
            + node
                .properties
                .iter()
                .map(|(k, v)| k.len() + v.len() + 4)
                .sum::<usize>();
        sent.insert(n.id());
        batch.nodes.push(node);
        if batch.nodes.len() >= batch_size || bytes >= MAX_BATCH_BYTES {
            batches += 1;
            produced.fetch_add(batch.nodes.len() as u64, Ordering::Release);
            if tx.send(std::mem::take(&mut batch)).is_err() {
                return (sent, batches);
            }
            bytes = 0;
        }
    }
    drop(reader);
    batch.is_last = true;
    batches += 1;
    produced.fetch_add(batch.nodes.len() as u64, Ordering::Release);
    let _ = tx.send(batch);
    (sent, batches)
}

fn clip(s: String) -> String {
    clip_to(s, MAX_TEXT)
}

/// `s` cut to at most `max` bytes, at a character boundary.
fn clip_to(mut s: String, max: usize) -> String {
    if s.len() > max {
        let mut end = max;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
    }
    s
}

/// `f` with no more text than [`check`] keeps, so what waits for the
/// check is bounded by the findings' number.
fn trimmed(mut f: PluginFinding) -> PluginFinding {
    if f.crn.len() > svc_graph::crn::MAX_CRN_LEN {
        // Still too long to be a CRN, so it is discarded as one.
        f.crn = clip_to(f.crn, svc_graph::crn::MAX_CRN_LEN + 4);
    }
    f.reason = clip(f.reason);
    f.suggested_action = clip(f.suggested_action);
    f.annotations.truncate(MAX_ANNOTATIONS);
    for (k, v) in &mut f.annotations {
        *k = clip(std::mem::take(k));
        *v = clip(std::mem::take(v));
    }
    f
}

/// Checks one finding, [`trimmed`] as it arrived, against what was sent;
/// `Err` says why it is dropped.
fn check(
    graph: &Graph,
    sent: &HashSet<NodeId>,
    source: &FindingSource,
    rule: &str,
    f: PluginFinding,
    capped: &mut u64,
) -> Result<Finding, String> {
    let crn = Crn::parse(&f.crn).map_err(|e| e.to_string())?;
    let node = graph
        .find(&crn)
        .filter(|id| sent.contains(id))
        .ok_or_else(|| format!("finding for {} which was not sent", f.crn))?;
    if f.risk_score > i32::from(MAX_PLUGIN_RISK) {
        *capped += 1;
    }
    let risk = f.risk_score.clamp(0, i32::from(MAX_PLUGIN_RISK)) as u8;
    let savings = if f.projected_savings_usd.is_finite() && f.projected_savings_usd > 0.0 {
        f.projected_savings_usd
    } else {
        0.0
    };
    // Its text was cut to what is kept as it arrived (`trimmed`).
    let mut annotations = f.annotations;
    annotations.sort();
    Ok(Finding {
        node,
        source: source.clone(),
        rule: Cow::Owned(rule.to_owned()),
        is_waste: f.is_waste,
        risk_score: risk,
        reason: f.reason,
        suggested_action: Cow::Owned(f.suggested_action),
        projected_savings_usd_mo: savings,
        annotations,
    })
}

fn run_one(
    graph: &Graph,
    a: &mut dyn Analyzer,
    now_us: u64,
    timeout: Option<Duration>,
) -> (Vec<Finding>, AnalyzerOutcome) {
    let started = Instant::now();
    let name = a.name().to_owned();
    let span = tracing::info_span!("plugin.analyze", plugin = %name);
    let _span = span.enter();
    let mut outcome = AnalyzerOutcome {
        name: name.clone(),
        ..AnalyzerOutcome::default()
    };
    let spec = match a.spec() {
        Ok(spec) => spec,
        Err(e) => {
            warn!(plugin = %name, error = %e, "heuristic plugin unavailable; its findings are skipped this scan");
            outcome.error = Some(e.to_string());
            outcome.duration_ms = started.elapsed().as_millis() as u64;
            return (Vec::new(), outcome);
        }
    };
    let rule = if spec.name.trim().is_empty() {
        name.clone()
    } else {
        spec.name.clone()
    };
    outcome.rule = rule.clone();
    outcome.version = spec.version.clone();
    let sel = Selection::new(graph, &spec);
    let (tx, rx) = sync_channel(BATCHES_IN_FLIGHT);
    let mut raw = Vec::new();
    let produced = AtomicU64::new(0);
    let mut flooded = None;
    let (mut result, (sent, batches)) = std::thread::scope(|scope| {
        let (sel, produced) = (&sel, &produced);
        let size = spec.batch_size();
        let producer = scope.spawn(move || produce(graph, sel, size, now_us, tx, produced));
        let result = a.analyze(rx, timeout, &mut |f| {
            // Findings can only be about nodes already sent.
            let nodes = produced.load(Ordering::Acquire);
            let allowed = MAX_FINDINGS_PER_NODE * nodes + FINDINGS_SLACK;
            if raw.len() as u64 >= allowed {
                flooded = Some(format!(
                    "sent more than {allowed} findings for the {nodes} resources it was sent \
                     (at most {MAX_FINDINGS_PER_NODE} a resource); the pass was stopped there"
                ));
                return ControlFlow::Break(());
            }
            raw.push(trimmed(f));
            ControlFlow::Continue(())
        });
        // A producer that panicked sent nothing more; report what is known.
        let produced = producer.join().unwrap_or_default();
        (result, produced)
    });
    if let Some(why) = flooded {
        result = Err(SourceError::Failed(why));
    }
    outcome.nodes_sent = sent.len() as u64;
    outcome.batches_sent = batches;
    outcome.duration_ms = started.elapsed().as_millis() as u64;
    if let Err(e) = result {
        warn!(plugin = %name, error = %e, "heuristic plugin failed; its findings are skipped this scan");
        outcome.error = Some(e.to_string());
        return (Vec::new(), outcome);
    }
    outcome.ok = true;
    let source = FindingSource::Plugin(name.clone());
    // A later finding about the same node supersedes an earlier one.
    let mut kept: HashMap<NodeId, Finding> = HashMap::new();
    for f in raw {
        match check(graph, &sent, &source, &rule, f, &mut outcome.capped) {
            Ok(f) => {
                kept.insert(f.node, f);
            }
            Err(reason) => {
                outcome.discarded += 1;
                if outcome.discard_reasons.len() < KEPT_REASONS {
                    outcome.discard_reasons.push(reason);
                }
            }
        }
    }
    let findings: Vec<Finding> = kept.into_values().collect();
    outcome.findings = findings.len() as u64;
    outcome.waste = findings.iter().filter(|f| f.is_waste).count() as u64;
    if outcome.discarded > 0 {
        warn!(plugin = %name, discarded = outcome.discarded, first = ?outcome.discard_reasons,
            "heuristic plugin sent findings for resources it was not sent; they were discarded");
    }
    if outcome.capped > 0 {
        info!(plugin = %name, capped = outcome.capped, "risk scores above {MAX_PLUGIN_RISK} capped");
    }
    info!(plugin = %name, sent = outcome.nodes_sent, batches, findings = outcome.findings, waste = outcome.waste,
        "heuristic plugin finished");
    (findings, outcome)
}
