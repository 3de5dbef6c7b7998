//! The first phases: the scan's time and number, the pinned previous
//! generation, and every source's resources staged and applied.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use tracing::{debug, info, warn};

use super::context::Scan;
use super::report::SourceOutcome;
use super::stage::{EdgePool, SourceStage, StageSink};
use crate::engine::EngineError;
use crate::graph::{Coverage, Hole, NodeStage};
use crate::ids::Sym;
use svc_graph::source::{ScanContext, ScanSink, Source, SourceError};

/// `engine.init`: the scan's time and sequence number.
pub(super) fn init(cx: &mut Scan<'_>) -> Result<(), EngineError> {
    cx.now_us = cx.core.now_us();
    cx.report.scan_seq = cx.scans.next_seq();
    cx.report.started_us = cx.now_us;
    cx.root.record("scan_seq", cx.report.scan_seq);
    compact_if_due(cx);
    Ok(())
}

/// Drops the retired rows from memory when enough are retired
/// ([`crate::graph::Graph::compaction_due`]), before anything of this
/// scan is read or written: every holder of node ids or row numbers is
/// reset as a restart leaves it (the remediation items' nodes, the caches,
/// findings, links, patterns, assessment and policy outcome) or renumbered
/// (the cost baseline), under the graph's write lock, so no reader sees
/// a compacted graph with ids from before. The scan then runs its passes
/// from scratch, as the first scan after a restart does.
fn compact_if_due(cx: &mut Scan<'_>) {
    let now_us = cx.now_us;
    let min_rows = cx.core.compact_min_rows();
    if !cx.core.graph().compaction_due(now_us, min_rows) {
        return;
    }
    let started = std::time::Instant::now();
    let mut rules = cx.findings.lock_rule_cache();
    let mut graph = cx.core.graph_mut();
    let rows = graph.node_rows();
    let done = graph.compact(now_us);
    if done.is_empty() {
        return;
    }
    cx.findings.forget_rows(&mut rules);
    cx.policy.book().set_outcome(Default::default());
    cx.costs.compacted(&done.kept);
    cx.remediation.forget_nodes();
    let node_rows = graph.node_rows();
    drop(graph);
    drop(rules);
    info!(
        rows,
        node_rows,
        nodes_dropped = done.nodes_dropped,
        edges_dropped = done.edges_dropped,
        ms = started.elapsed().as_millis() as u64,
        "retired rows compacted"
    );
}

/// `engine.time_travel`: pins the previous generation.
pub(super) fn time_travel(cx: &mut Scan<'_>) -> Result<(), EngineError> {
    let report = &mut cx.report;
    // The previous scan's commit is the pinned point this scan diffs
    // against: its versions are closed, never overwritten, by this commit.
    report.previous_scan_us = cx.scans.last_commit_us();
    debug!(
        previous_scan_us = report.previous_scan_us,
        generation = cx.core.graph().generation(),
        "pinned"
    );
    Ok(())
}

/// `engine.plugin_scan`: every selected source scans at once; the staged
/// rows go in, and what no source reported any more is retired.
pub(super) fn plugin_scan(cx: &mut Scan<'_>) -> Result<(), EngineError> {
    let (core, registry) = (cx.core, cx.registry);
    let now_us = cx.now_us;
    let sources = &mut *cx.sources;
    let configs = cx.configs;
    let only = cx.only;
    let limits = cx.limits;
    let report = &mut cx.report;
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
    let progress = cx
        .scans
        .progress
        .sources(selected.iter().map(|s| s.name().to_owned()).collect());
    let pool = EdgePool::new(concurrent);
    let staged_nodes = NodeStage::for_graph(&core.graph());
    // A later scan's rows are sifted against the graph as they arrive: the
    // read lock is taken a batch at a time, so the API reads on meanwhile.
    let read_graph = |f: &mut dyn FnMut(&crate::graph::Graph)| f(&core.graph());
    // A source that can look its nodes up before decoding them does so
    // against the graph as it is (the stage applies nothing until the end).
    let lookup: Option<&super::ReadGraph<'_>> = staged_nodes.held_rows().then_some(&read_graph);
    let resolvers = std::thread::available_parallelism().map_or(1, usize::from);
    let parent = tracing::Span::current();
    let scan_seq = report.scan_seq;
    // By source number (a source's rows are staged under it).
    let results: Vec<(SourceOutcome, SourceStage)> = std::thread::scope(|scope| {
        let (pool, staged_nodes, read_graph, progress) = (&pool, &staged_nodes, &read_graph, &progress);
        let workers: Vec<_> = (0..resolvers).map(|_| scope.spawn(move || pool.work())).collect();
        let handles: Vec<_> = selected
            .into_iter()
            .enumerate()
            .map(|(k, source)| {
                let parent = parent.clone();
                let config = configs.get(source.name()).unwrap_or(&empty);
                let (name, providers) = (source.name().to_owned(), source.providers());
                let tracked = progress.get(k);
                let handle = scope.spawn(move || {
                    let _span = parent.enter();
                    let mut sink = StageSink::new(k, staged_nodes, pool)
                        .with_limits(limits.max_nodes, limits.max_edges)
                        .with_graph(read_graph);
                    if let Some(t) = tracked {
                        sink = sink.with_counts(&t.counts);
                    }
                    let ctx = ScanContext {
                        interner: core.interner(),
                        scan_seq,
                        now_us,
                        config,
                        timeout: limits.timeout,
                        concurrent,
                        graph: lookup,
                    };
                    let outcome = scan_one(source.as_mut(), &mut sink, &ctx);
                    if let Some(t) = tracked {
                        t.finished(outcome.error.clone());
                    }
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
                        unlisted: Vec::new(),
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
    let answered = registry.answered();
    let mut held: BTreeSet<String> = BTreeSet::new();
    let mut holes: Vec<Hole> = Vec::new();
    for (name, declared) in &skipped {
        held.extend(declared.iter().cloned());
        held.extend(answered.get(name).into_iter().flatten().cloned());
    }
    for (k, (outcome, stage)) in results.into_iter().enumerate() {
        ok.push(outcome.ok);
        if outcome.ok {
            info!(source = %outcome.name, nodes = stage.node_count, edges = stage.edge_count, "source scanned");
            ok_providers.extend(outcome.providers.iter().map(|p| core.interner().intern(p)));
            // A source may report providers beyond those it declares
            // (the mock estate serves four); it answers for those too.
            let mut seen: Vec<Sym> = stage.providers.iter().map(|&(p, _)| p).collect();
            seen.sort_unstable();
            let reader = core.interner().reader();
            let names: Vec<String> = seen.iter().map(|p| reader.resolve(*p).to_owned()).collect();
            drop(reader);
            registry.record_answered(
                core.store(),
                &outcome.name,
                outcome.providers.iter().chain(&names).cloned().collect(),
            );
            // What it could not list stays as it was, for each provider
            // the part names (or that the source answers for).
            for u in &outcome.unlisted {
                warn!(source = %outcome.name, provider = ?u.provider, account = ?u.account, region = ?u.region,
                    service = ?u.service, error = %u.error, "part of the source's estate was not listed; \
                    its resources are kept as they were");
                let providers: Vec<&str> = match &u.provider {
                    Some(p) => vec![p.as_str()],
                    None => outcome.providers.iter().chain(&names).map(String::as_str).collect(),
                };
                let interner = core.interner();
                let sym = |v: &Option<String>| v.as_deref().map(|v| interner.intern(v));
                for p in providers {
                    holes.push(Hole {
                        provider: interner.intern(p),
                        account: sym(&u.account),
                        region: sym(&u.region),
                        service: sym(&u.service),
                    });
                }
            }
            registry.record_served(&outcome.name, names.into_iter());
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
        let reader = core.interner().reader();
        let before = ok_providers.len();
        ok_providers.retain(|p| !held.contains(reader.resolve(*p)));
        if ok_providers.len() < before {
            warn!(providers = ?held, "a source that failed or was not scanned answers for providers another \
                source reported: their missing resources are not retired this scan");
        }
    }
    report.sources.sort_by(|a, b| a.name.cmp(&b.name));
    let discovered = {
        let reader = core.interner().reader();
        discovered
            .into_iter()
            .map(|(p, n)| (reader.resolve(p).to_owned(), n))
            .collect()
    };
    // Only now, with every source done, the staged rows go in under a
    // short write lock.
    let mut graph = core.graph_mut();
    let t = Instant::now();
    report.nodes_ingest = graph.ingest_node_stage(staged_nodes, &ok, now_us, report.scan_seq as u32);
    let nodes_ms = t.elapsed().as_millis() as u64;
    let t = Instant::now();
    report.edges_ingest = graph.ingest_staged_edges(&edges, &edge_parts, now_us, report.scan_seq as u32);
    drop((edges, edge_parts));
    let edges_ms = t.elapsed().as_millis() as u64;
    let t = Instant::now();
    let mut coverage = Coverage::of(&ok_providers);
    for h in holes {
        coverage.except(h);
    }
    let (retired_nodes, retired_edges) = graph.retire_uncovered(&coverage, now_us, report.scan_seq as u32);
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
    let ok = result.is_ok();
    SourceOutcome {
        name: source.name().to_owned(),
        providers: source.providers(),
        ok,
        error: result.err().map(|e| e.to_string()),
        nodes: sink.stage.node_count,
        edges: sink.stage.edge_count,
        rejected,
        rejections,
        duration_ms: t.elapsed().as_millis() as u64,
        observed_at: source.observed_at(),
        unlisted: if ok { source.unlisted() } else { Vec::new() },
    }
}
