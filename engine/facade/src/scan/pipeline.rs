//! One scan, phase by phase (DESIGN.md section 4). Each phase is a tracing
//! span named as in SPEC 4.9 under the root `engine.run`.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::time::Instant;

use tracing::{debug, info, info_span, warn};

use super::stage::{EdgePool, SourceStage, StageSink};
use crate::analysis::linker::{self, LinkReport};
use crate::analysis::reach::{self, Assessment};
use crate::analysis::traffic;
use crate::engine::{Engine, EngineError};
use crate::graph::{EdgeBatch, IngestStats, NodeBatch, NodeStage};
use crate::heuristics::{self, Analyzer, AnalyzerOutcome, BuiltinStats, Finding, FindingSet, FindingSource};
use crate::ids::{NodeId, Sym};
use crate::store::CommitMeta;
use crate::store::ledger::NewEvent;
use svc_graph::source::{ScanContext, ScanLimits, ScanSink, Source, SourceError};

/// Span names of the pipeline, declared once.
pub mod spans {
    pub const RUN: &str = "engine.run";
    pub const INIT: &str = "engine.init";
    pub const TIME_TRAVEL: &str = "engine.time_travel";
    pub const PLUGIN_SCAN: &str = "engine.plugin_scan";
    pub const HEURISTICS: &str = "engine.heuristics";
    pub const PATTERN: &str = "engine.pattern";
    pub const GHOST_LINKER: &str = "engine.ghost_linker";
    pub const FORMAL_VERIFY: &str = "engine.formal_verify";
    pub const SAU: &str = "engine.sau";
    pub const POLICY: &str = "engine.policy";
    pub const SIGNAL_ANALYSIS: &str = "engine.signal_analysis";
    /// The ten phases, in order.
    pub const PHASES: [&str; 10] = [
        INIT,
        TIME_TRAVEL,
        PLUGIN_SCAN,
        HEURISTICS,
        PATTERN,
        GHOST_LINKER,
        FORMAL_VERIFY,
        SAU,
        POLICY,
        SIGNAL_ANALYSIS,
    ];
}

/// How one source's scan went.
#[derive(Clone, Debug, PartialEq)]
pub struct SourceOutcome {
    pub name: String,
    pub providers: Vec<String>,
    pub ok: bool,
    pub error: Option<String>,
    pub nodes: u64,
    pub edges: u64,
    /// Nodes and edges dropped as malformed (bad CRN, invalid properties, ...).
    pub rejected: u64,
    /// The first reasons for those rejections.
    pub rejections: Vec<String>,
    pub duration_ms: u64,
    /// When the source observed its estate, if not now (a simulated estate).
    pub observed_at: Option<u64>,
}

/// The result of a finished scan (also the payload of SCAN_COMPLETED).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ScanReport {
    pub scan_seq: u64,
    pub started_us: u64,
    pub duration_ms: u64,
    /// Graph generation after the commit.
    pub generation: u64,
    /// Commit time of the previous scan (the pinned time-travel point), 0 for the first.
    pub previous_scan_us: u64,
    pub nodes: u64,
    pub edges: u64,
    pub logically_deleted: u64,
    pub waste: u64,
    pub cost_usd_mo: f64,
    pub waste_usd_mo: f64,
    pub projected_savings_usd_mo: f64,
    pub nodes_ingest: IngestStats,
    pub edges_ingest: IngestStats,
    pub retired_nodes: u64,
    pub retired_edges: u64,
    pub versions_written: u64,
    pub sources: Vec<SourceOutcome>,
    /// How each heuristic plugin did.
    pub heuristics: Vec<AnalyzerOutcome>,
    /// How the built-in rules did.
    pub builtin: BuiltinStats,
    /// When the estate was observed (Unix seconds): now, unless a source
    /// simulates its clock.
    pub observed_at: u64,
    /// Findings kept in the heuristics phase, and nodes whose verdict changed.
    pub findings: u64,
    pub verdicts_changed: u64,
    /// Active nodes per provider.
    pub providers: Vec<(String, u64)>,
    /// Nodes reported in this scan per provider.
    pub discovered: Vec<(String, u64)>,
    /// What the ghost linker matched and added.
    pub links: LinkReport,
    /// Nodes reachable, unreachable and unknown after formal verification.
    pub reachability: [u64; 3],
    /// Nodes whose reachability or removal risk changed in this scan.
    pub assessments_changed: u64,
    /// Ledger sequence of the SCAN_COMPLETED event.
    pub event_seq: u64,
    /// The pattern phase in numbers (groups, outliers, grouped findings).
    pub pattern: serde_json::Value,
    /// What the remediation pipeline did in `engine.sau`.
    pub sau: Option<crate::remediation::ops::SauReport>,
    /// What the policy rules did.
    pub policy: crate::policy::PolicyReport,
}

impl ScanReport {
    /// The SCAN_COMPLETED payload.
    pub fn payload(&self) -> serde_json::Value {
        let sources: Vec<serde_json::Value> = self
            .sources
            .iter()
            .map(|s| {
                serde_json::json!({
                    "name": s.name, "providers": s.providers, "ok": s.ok, "error": s.error,
                    "nodes": s.nodes, "edges": s.edges, "duration_ms": s.duration_ms,
                    "rejected": s.rejected, "rejections": s.rejections,
                })
            })
            .collect();
        let heuristics: Vec<serde_json::Value> = self.heuristics.iter().map(AnalyzerOutcome::payload).collect();
        let providers: serde_json::Map<String, serde_json::Value> =
            self.providers.iter().map(|(p, n)| (p.clone(), (*n).into())).collect();
        serde_json::json!({
            "scan_seq": self.scan_seq,
            "generation": self.generation,
            "duration_ms": self.duration_ms,
            "node_count": self.nodes,
            "edge_count": self.edges,
            "waste_count": self.waste,
            "logically_deleted": self.logically_deleted,
            "cost_usd_mo": round2(self.cost_usd_mo),
            "waste_usd_mo": round2(self.waste_usd_mo),
            "projected_savings_usd_mo": round2(self.projected_savings_usd_mo),
            "savings_usd": round2(self.projected_savings_usd_mo),
            "nodes_added": self.nodes_ingest.inserted + self.nodes_ingest.revived,
            "nodes_changed": self.nodes_ingest.changed,
            "nodes_unchanged": self.nodes_ingest.unchanged,
            "nodes_deleted": self.retired_nodes,
            "edges_added": self.edges_ingest.inserted + self.edges_ingest.revived,
            "edges_deleted": self.retired_edges,
            "edges_dangling": self.edges_ingest.dangling,
            "versions_written": self.versions_written,
            "providers": providers,
            "sources": sources,
            "heuristics": heuristics,
            "builtin": self.builtin.payload(),
            "observed_at": self.observed_at,
            "findings": self.findings,
            "verdicts_changed": self.verdicts_changed,
            "ghost_linker": {
                "matched": self.links.matched(),
                "added": self.links.added,
                "retired": self.links.retired,
                "expired_flows": self.links.expired_flows,
            },
            "assessments_changed": self.assessments_changed,
            "reachability": {
                "reachable": self.reachability[0],
                "unreachable": self.reachability[1],
                "unknown": self.reachability[2],
            },
            "pattern": self.pattern,
            "remediation": self.sau.as_ref().map(|s| {
                let stages: serde_json::Map<String, serde_json::Value> =
                    s.stages.iter().map(|(k, v)| ((*k).to_owned(), (*v).into())).collect();
                serde_json::json!({
                    "stages": stages, "entered": s.entered, "left": s.left, "left_reasons": s.left_reasons,
                    "analyzed": s.analyzed, "written": s.written,
                    "held": s.held, "expired_isolations": s.expired_isolations,
                    "recovered_sagas": s.recovered_sagas,
                })
            }),
            "policy": self.policy.payload(),
        })
    }
}

fn round2(v: f64) -> f64 {
    (v * 100.0).round() / 100.0
}

/// A sink that keeps every batch it receives, with running counts.
#[derive(Default)]
pub struct CollectSink {
    pub nodes: Vec<NodeBatch>,
    pub edges: Vec<EdgeBatch>,
    pub node_count: u64,
    pub edge_count: u64,
}

impl ScanSink for CollectSink {
    fn nodes(&mut self, batch: NodeBatch) {
        self.node_count += batch.len() as u64;
        self.nodes.push(batch);
    }
    fn edges(&mut self, batch: EdgeBatch) {
        self.edge_count += batch.len() as u64;
        self.edges.push(batch);
    }
}

/// Runs every phase once. The caller holds the scan permit.
pub(crate) fn run(
    engine: &Engine,
    sources: &mut [Box<dyn Source>],
    analyzers: &mut [Box<dyn Analyzer>],
    configs: &BTreeMap<String, BTreeMap<String, String>>,
    only: Option<&[String]>,
    limits: ScanLimits,
) -> Result<ScanReport, EngineError> {
    let started = Instant::now();
    let root = info_span!("engine.run", scan_seq = tracing::field::Empty);
    let _root = root.enter();
    let mut report = ScanReport::default();

    let now_us = {
        let _s = info_span!("engine.init").entered();
        let now_us = engine.clock().now_us();
        report.scan_seq = engine.next_scan_seq();
        report.started_us = now_us;
        root.record("scan_seq", report.scan_seq);
        now_us
    };

    {
        let _s = info_span!("engine.time_travel").entered();
        // The previous scan's commit is the pinned point this scan diffs
        // against: its versions are closed, never overwritten, by this commit.
        report.previous_scan_us = engine.last_commit_us();
        debug!(
            previous_scan_us = report.previous_scan_us,
            generation = engine.graph().generation(),
            "pinned"
        );
    }

    {
        let _s = info_span!("engine.plugin_scan").entered();
        let empty = BTreeMap::new();
        let mut ok_providers: Vec<Sym> = Vec::new();
        // Every selected source scans at once, each on its own thread with
        // its own staging; a slow or failing source holds up no other. Their
        // edges meet in one boundary-resolution pool.
        // Sources left out of a scan of some providers answer for nothing
        // in it: what they answer for is held back, as a failed source's is.
        let mut skipped: Vec<(String, Vec<String>)> = Vec::new();
        let mut selected: Vec<&mut Box<dyn Source>> = Vec::new();
        for s in sources.iter_mut() {
            let providers = s.providers();
            if only.is_none_or(|only| providers.iter().any(|p| only.contains(p))) {
                selected.push(s);
            } else {
                skipped.push((s.name().to_owned(), providers));
            }
        }
        let concurrent = selected.len();
        let pool = EdgePool::new(concurrent);
        let staged_nodes = NodeStage::for_graph(&engine.graph());
        let resolvers = std::thread::available_parallelism().map_or(1, usize::from);
        let parent = tracing::Span::current();
        let scan_seq = report.scan_seq;
        // By source number (a source's rows are staged under it).
        let results: Vec<(SourceOutcome, SourceStage)> = std::thread::scope(|scope| {
            let (pool, staged_nodes) = (&pool, &staged_nodes);
            let workers: Vec<_> = (0..resolvers).map(|_| scope.spawn(move || pool.work())).collect();
            let handles: Vec<_> = selected
                .into_iter()
                .enumerate()
                .map(|(k, source)| {
                    let parent = parent.clone();
                    let config = configs.get(source.name()).unwrap_or(&empty);
                    let (name, providers) = (source.name().to_owned(), source.providers());
                    let handle = scope.spawn(move || {
                        let _span = parent.enter();
                        let mut sink =
                            StageSink::new(k, staged_nodes, pool).with_limits(limits.max_nodes, limits.max_edges);
                        let ctx = ScanContext {
                            interner: engine.interner(),
                            scan_seq,
                            now_us,
                            config,
                            timeout: limits.timeout,
                            concurrent,
                        };
                        let outcome = scan_one(source.as_mut(), &mut sink, &ctx);
                        (outcome, sink.stage)
                    });
                    (name, providers, handle)
                })
                .collect();
            let results = handles
                .into_iter()
                .map(|(name, providers, h)| {
                    // A source whose scan panicked failed: nothing of it lands.
                    h.join().unwrap_or_else(|_| {
                        let failed = SourceOutcome {
                            name,
                            providers,
                            ok: false,
                            error: Some("the source's scan panicked".to_owned()),
                            nodes: 0,
                            edges: 0,
                            rejected: 0,
                            rejections: Vec::new(),
                            duration_ms: 0,
                            observed_at: None,
                        };
                        (failed, SourceStage::default())
                    })
                })
                .collect();
            pool.close();
            for w in workers {
                let _ = w.join();
            }
            results
        });
        let mut staged_edges = pool.into_staged();
        let (mut edges, mut edge_parts) = (Vec::new(), Vec::new());
        let (mut ok, mut discovered) = (Vec::new(), BTreeMap::<Sym, u64>::new());
        // What each source answered for when it last succeeded, before this
        // scan's successes replace it.
        let answered = engine.answered();
        let mut held: BTreeSet<String> = BTreeSet::new();
        for (name, declared) in &skipped {
            held.extend(declared.iter().cloned());
            held.extend(answered.get(name).into_iter().flatten().cloned());
        }
        for (k, (outcome, stage)) in results.into_iter().enumerate() {
            ok.push(outcome.ok);
            if outcome.ok {
                info!(source = %outcome.name, nodes = stage.node_count, edges = stage.edge_count, "source scanned");
                ok_providers.extend(outcome.providers.iter().map(|p| engine.interner().intern(p)));
                // A source may report providers beyond those it declares
                // (the mock estate serves four); it answers for those too.
                let mut seen: Vec<Sym> = stage.providers.iter().map(|&(p, _)| p).collect();
                seen.sort_unstable();
                let reader = engine.interner().reader();
                let names: Vec<String> = seen.iter().map(|p| reader.resolve(*p).to_owned()).collect();
                drop(reader);
                engine.record_answered(&outcome.name, outcome.providers.iter().chain(&names).cloned().collect());
                engine.record_served(&outcome.name, names.into_iter());
                ok_providers.extend(seen);
                for &(p, n) in &stage.providers {
                    *discovered.entry(p).or_default() += n;
                }
                for (b, s) in staged_edges.get_mut(k).map(std::mem::take).unwrap_or_default() {
                    edges.push(b);
                    edge_parts.push(s);
                }
            } else {
                // A failed source keeps its resources as they were: none of
                // its staged nodes or edges land, and no provider it answers
                // for is retired, even where another source reported it.
                held.extend(outcome.providers.iter().cloned());
                held.extend(answered.get(&outcome.name).into_iter().flatten().cloned());
                warn!(
                    source = %outcome.name,
                    error = outcome.error.as_deref().unwrap_or(""),
                    "source scan failed; its resources are kept as they were"
                );
            }
            report.sources.push(outcome);
        }
        ok_providers.sort_unstable();
        ok_providers.dedup();
        if !held.is_empty() {
            let reader = engine.interner().reader();
            let before = ok_providers.len();
            ok_providers.retain(|p| !held.contains(reader.resolve(*p)));
            if ok_providers.len() < before {
                warn!(providers = ?held, "a source that failed or was not scanned answers for providers another \
                    source reported: their missing resources are not retired this scan");
            }
        }
        report.sources.sort_by(|a, b| a.name.cmp(&b.name));
        let discovered = {
            let reader = engine.interner().reader();
            discovered
                .into_iter()
                .map(|(p, n)| (reader.resolve(p).to_owned(), n))
                .collect()
        };
        // Only now, with every source done, the staged rows go in under a
        // short write lock.
        let mut graph = engine.graph_mut();
        let t = Instant::now();
        report.nodes_ingest = graph.ingest_node_stage(staged_nodes, &ok, now_us, report.scan_seq as u32);
        let nodes_ms = t.elapsed().as_millis() as u64;
        let t = Instant::now();
        report.edges_ingest = graph.ingest_staged_edges(&edges, &edge_parts, now_us, report.scan_seq as u32);
        drop((edges, edge_parts));
        let edges_ms = t.elapsed().as_millis() as u64;
        let t = Instant::now();
        let (retired_nodes, retired_edges) = graph.retire_unseen(&ok_providers, now_us, report.scan_seq as u32);
        report.retired_nodes = retired_nodes as u64;
        report.retired_edges = retired_edges as u64;
        let retire_ms = t.elapsed().as_millis() as u64;
        let t = Instant::now();
        graph.rebuild_adjacency(now_us);
        debug!(
            nodes_ms,
            edges_ms,
            retire_ms,
            adjacency_ms = t.elapsed().as_millis() as u64,
            "applied"
        );
        report.discovered = discovered;
    }

    {
        let _s = info_span!("engine.heuristics").entered();
        // The estate was observed now, unless every source that scanned
        // keeps its own clock; when none scanned, it is as last observed.
        let scanned: Vec<&SourceOutcome> = report.sources.iter().filter(|s| s.ok).collect();
        report.observed_at = match scanned.iter().filter_map(|s| s.observed_at).max() {
            Some(t) => t,
            None if scanned.is_empty() && engine.observed_s() > 0 => engine.observed_s(),
            None => now_us / 1_000_000,
        };
        let started = Instant::now();
        let selection = engine.rule_selection();
        // Node and edge rows changed since the last pass (the adjacency
        // index is current): whose answers, and whose ends', may differ.
        let changes = engine.graph_mut().take_row_changes();
        let mut rules = engine.rule_cache.lock();
        let pass = rules.run(&engine.graph(), &changes, now_us, report.observed_at, &selection);
        drop(changes);
        let builtin_ms = started.elapsed().as_millis() as u64;
        // Plugins run after the built-in rules.
        let (mut others, mut outcomes) = {
            let graph = engine.graph();
            heuristics::analyzer::run_analyzers(&graph, analyzers, now_us, limits.timeout)
        };
        let stats = BuiltinStats {
            rules: heuristics::builtin::rules().filter(|r| selection.allows(r)).count() as u64,
            evaluated: pass.evaluated,
            checks: pass.checks,
            kept: pass.kept,
            findings: pass.findings,
            ignored: pass.ignored,
            duration_ms: builtin_ms,
        };
        carry_over(engine, now_us, &mut others, &mut outcomes);
        // Policy verdicts of rules still in the book stand until the
        // policy phase decides again.
        others.extend(crate::policy::phase::carried(engine, now_us));
        let t = Instant::now();
        if pass.full {
            let mut set = FindingSet::grouped(report.scan_seq, rules.findings_by_node(), others, outcomes);
            set.ignored = rules.ignored().map(|(id, why)| (id, why.clone())).collect();
            drop(rules);
            set.builtin = stats.clone();
            set.as_of_s = report.observed_at;
            report.findings = set.len() as u64;
            report.verdicts_changed = heuristics::join::apply(&mut engine.graph_mut(), &set, now_us) as u64;
            report.heuristics = set.analyzers.clone();
            engine.set_findings(set);
        } else {
            // The last scan's findings, changed where this scan's differ:
            // the built-in answers worked out again, and every plugin and
            // carried policy finding replaced.
            let builtin_touched = pass.touched;
            let mut touched = builtin_touched.clone();
            engine.update_findings(|set| {
                let mut emptied = Vec::new();
                for (id, list) in set.by_node.iter_mut() {
                    if list.iter().any(|f| f.source != FindingSource::Builtin) {
                        list.retain(|f| f.source == FindingSource::Builtin);
                        touched.push(*id);
                        if list.is_empty() {
                            emptied.push(*id);
                        }
                    }
                }
                for id in emptied {
                    set.by_node.remove(&id);
                }
                for id in &builtin_touched {
                    match rules.findings_of(*id) {
                        [] => set.by_node.remove(id),
                        found => set.by_node.insert(*id, found.to_vec()),
                    };
                    match rules.ignored_of(*id) {
                        Some(why) => set.ignored.insert(*id, why.clone()),
                        None => set.ignored.remove(id),
                    };
                }
                for f in others {
                    touched.push(f.node);
                    set.by_node.entry(f.node).or_default().push(f);
                }
                touched.sort_unstable();
                touched.dedup();
                for id in &touched {
                    if let Some(list) = set.by_node.get_mut(id) {
                        list.sort_by(heuristics::join::precedence);
                    }
                }
                set.scan_seq = report.scan_seq;
                set.analyzers = outcomes;
                set.builtin = stats.clone();
                set.as_of_s = report.observed_at;
                report.findings = set.len() as u64;
                report.heuristics = set.analyzers.clone();
            });
            drop(rules);
            let set = engine.findings();
            report.verdicts_changed =
                heuristics::join::apply_to(&mut engine.graph_mut(), &set, now_us, &touched) as u64;
        }
        debug!(
            join_ms = t.elapsed().as_millis() as u64,
            heuristics_ms = started.elapsed().as_millis() as u64,
            "joined"
        );
        report.builtin = stats;
        debug!(
            findings = report.findings,
            changed = report.verdicts_changed,
            builtin_ms,
            evaluated = report.builtin.evaluated,
            kept = report.builtin.kept,
            "verdicts joined"
        );
    }

    {
        let _s = info_span!("engine.pattern").entered();
        // Verdicts are in the graph now; the deciding findings price them.
        let findings = engine.findings();
        let savings = |id: NodeId| findings.deciding(id).map(|f| f.projected_savings_usd_mo);
        let mut pattern = crate::analysis::pattern::run(&engine.graph(), now_us, &savings);
        pattern.scan_seq = report.scan_seq;
        debug!(
            groups = pattern.groups,
            outliers = pattern.outliers_total,
            grouped = pattern.grouped_total,
            duration_ms = pattern.duration_ms,
            "patterns found"
        );
        report.pattern = pattern.payload();
        engine.set_pattern(pattern);
    }

    {
        let _s = info_span!("engine.ghost_linker").entered();
        let mut graph = engine.graph_mut();
        let mut cache = engine.link_cache.lock();
        let mut links = linker::run_with(&mut cache, &mut graph, now_us, report.scan_seq as u32);
        let facts_read = cache.read;
        drop(cache);
        links.expired_flows = traffic::expire(&mut graph, now_us, report.scan_seq as u32) as u64;
        if links.added + links.retired + links.expired_flows > 0 {
            graph.rebuild_adjacency(now_us);
        }
        debug!(
            matched = links.matched(),
            added = links.added,
            retired = links.retired,
            facts_read,
            ms = links.duration_ms,
            "linked"
        );
        report.links = links.clone();
        engine.set_links(links);
    }

    {
        let _s = info_span!("engine.formal_verify").entered();
        // Nodes of a provider whose scan failed may be missing edges.
        let failed: Vec<Sym> = report
            .sources
            .iter()
            .filter(|s| !s.ok)
            .flat_map(|s| s.providers.iter())
            .filter_map(|p| engine.interner().get(p))
            .collect();
        let mut assessment = if engine.oracle_enabled() {
            reach::run(&engine.graph(), now_us, report.scan_seq, &failed)
        } else {
            Assessment::disabled(report.scan_seq, now_us)
        };
        let changed = engine.graph_mut().apply_assessment(now_us, |id| assessment.verdict(id));
        assessment.release_verdicts();
        debug!(
            reachable = assessment.reachable,
            unreachable = assessment.unreachable,
            unknown = assessment.unknown,
            changed,
            ms = assessment.duration_ms,
            "verified"
        );
        report.reachability = [assessment.reachable, assessment.unreachable, assessment.unknown];
        report.assessments_changed = changed as u64;
        engine.set_assessment(assessment);
    }

    {
        let _s = info_span!("engine.sau").entered();
        // Enforcing `block` rules as the last policy pass left them; what
        // this scan's pass adds holds items from the next one, and approve
        // checks again.
        // Read once: the pass asks for every item.
        let outcome = engine.policies().outcome();
        let blocked = |id: NodeId| {
            outcome
                .blocked
                .get(&id)
                .map(|rules| rules.iter().map(|rule| format!("policy:{rule}")).collect())
                .unwrap_or_default()
        };
        match engine.sau_pass(sources, now_us, &blocked) {
            Ok(sau) => {
                debug!(
                    entered = sau.entered,
                    left = sau.left,
                    analyzed = sau.analyzed,
                    held = sau.held,
                    "remediation pipeline advanced"
                );
                report.sau = Some(sau);
            }
            Err(e) => warn!(error = %e, "the remediation pipeline did not advance"),
        }
    }

    {
        let _s = info_span!("engine.policy").entered();
        report.policy = crate::policy::phase::run(engine, report.scan_seq, now_us, report.observed_at);
        debug!(
            rules = report.policy.rules,
            fast = report.policy.fast_rules,
            matches = report.policy.matches,
            errors = report.policy.errors,
            flagged = report.policy.flagged,
            blocked = report.policy.blocked,
            ms = report.policy.duration_ms,
            "policies evaluated"
        );
    }

    let signal;
    {
        let _s = info_span!("engine.signal_analysis").entered();
        let graph = engine.graph();
        let stats = graph.stats(now_us);
        let reader = engine.interner().reader();
        report.nodes = stats.active_nodes;
        report.edges = stats.total_edges;
        report.logically_deleted = stats.logically_deleted;
        report.waste = stats.waste_nodes;
        report.cost_usd_mo = stats.total_cost_usd_mo;
        (report.waste_usd_mo, report.projected_savings_usd_mo) = engine.findings().totals();
        report.providers = stats
            .providers
            .iter()
            .map(|(p, n)| (reader.resolve(*p).to_owned(), *n))
            .collect();
        drop(reader);
        signal = engine
            .signal()
            .analyze(&graph, &engine.findings(), now_us, report.scan_seq);
    }

    // Commit: versions to graph.redb in one transaction, then SCAN_COMPLETED.
    let commit_started = Instant::now();
    let rows = engine.graph_mut().take_dirty_rows();
    let (nodes, edges) = rows.counts();
    report.versions_written = (nodes + edges) as u64;
    report.generation = engine.graph().generation();
    engine.commit(
        rows,
        CommitMeta {
            generation: report.generation,
            scan_seq: report.scan_seq,
            commit_us: now_us,
            rows: 0,
            observed_s: report.observed_at,
        },
    )?;
    let t = Instant::now();
    engine.signal().install(engine.store(), engine.interner(), signal);
    debug!(ms = t.elapsed().as_millis() as u64, "cost history stored");
    report.duration_ms = started.elapsed().as_millis() as u64;
    info!(
        scan_seq = report.scan_seq,
        nodes = report.nodes,
        edges = report.edges,
        versions = report.versions_written,
        commit_ms = commit_started.elapsed().as_millis() as u64,
        duration_ms = report.duration_ms,
        "scan committed"
    );
    // The scan's staged batches, messages and commit pages are freed by
    // now, most of them under rows that stay.
    let t = Instant::now();
    let released = crate::malloc::release();
    debug!(
        ms = t.elapsed().as_millis() as u64,
        released, "freed memory handed back"
    );
    Ok(report)
}

/// Appends SCAN_COMPLETED for a committed scan. Runs after the scan permit
/// is released, so whoever hears the event can start the next scan.
pub(crate) fn announce(engine: &Engine, report: &mut ScanReport) -> Result<(), EngineError> {
    let message = format!(
        "scan {} completed: {} nodes, {} edges, {} waste (${:.2}/mo)",
        report.scan_seq, report.nodes, report.edges, report.waste, report.waste_usd_mo
    );
    let event = engine.ledger().append_one(NewEvent {
        event_type: "SCAN_COMPLETED".into(),
        crn: None,
        actor: "engine".into(),
        message,
        payload: report.payload(),
    })?;
    report.event_seq = event.seq;
    Ok(())
}

/// Scans one source into `sink`.
fn scan_one(source: &mut dyn Source, sink: &mut StageSink<'_>, ctx: &ScanContext<'_>) -> SourceOutcome {
    let t = Instant::now();
    let mut result = source.scan(ctx, sink);
    if let Some(why) = sink.refused() {
        // What it sent up to the limit is not a whole scan either.
        result = Err(SourceError::Failed(why.to_owned()));
    }
    let (rejected, rejections) = source.rejections();
    SourceOutcome {
        name: source.name().to_owned(),
        providers: source.providers(),
        ok: result.is_ok(),
        error: result.err().map(|e| e.to_string()),
        nodes: sink.stage.node_count,
        edges: sink.stage.edge_count,
        rejected,
        rejections,
        duration_ms: t.elapsed().as_millis() as u64,
        observed_at: source.observed_at(),
    }
}

/// Keeps the verdicts of each analyzer that failed this scan, for nodes
/// still visible: a plugin that crashes or hangs leaves the verdicts it gave
/// as they were, as a failed provider leaves its resources. Its findings of
/// the previous scan are kept whole; a waste verdict in the graph named by
/// its rule (after a restart, when no findings are in memory) is kept as a
/// finding rebuilt from the node.
fn carry_over(engine: &Engine, now_us: u64, findings: &mut Vec<Finding>, outcomes: &mut [AnalyzerOutcome]) {
    let previous = engine.findings();
    let graph = engine.graph();
    let interner = engine.interner();
    for o in outcomes.iter_mut().filter(|o| !o.ok) {
        let source = FindingSource::Plugin(o.name.clone());
        let before = findings.len();
        let mut kept: HashSet<NodeId> = HashSet::new();
        let mut rules: HashSet<Sym> = interner.get(&o.rule).into_iter().collect();
        for (id, list) in &previous.by_node {
            for f in list.iter().filter(|f| f.source == source) {
                rules.extend(interner.get(&f.rule));
                if graph.is_node_visible(*id, now_us) && kept.insert(*id) {
                    findings.push(f.clone());
                }
            }
        }
        if !rules.is_empty() {
            for n in graph.nodes() {
                let named = n.verdict().is_some_and(|v| rules.contains(&v));
                if named && n.is_waste() && n.is_visible(now_us) && !kept.contains(&n.id()) {
                    findings.push(Finding {
                        node: n.id(),
                        source: source.clone(),
                        rule: n
                            .verdict()
                            .map(|v| interner.resolve(v).to_string())
                            .unwrap_or_default()
                            .into(),
                        is_waste: true,
                        // The finding's own risk is not kept in the graph; a plugin's
                        // is capped at 79.
                        risk_score: 79,
                        reason: n.waste_reason().to_owned(),
                        suggested_action: Default::default(),
                        projected_savings_usd_mo: f64::from(n.cost_usd_mo()),
                        annotations: Vec::new(),
                    });
                }
            }
        }
        o.carried_over = (findings.len() - before) as u64;
        if o.carried_over > 0 {
            warn!(plugin = %o.name, kept = o.carried_over, "heuristic plugin failed; the verdicts it gave are kept");
        }
    }
}
