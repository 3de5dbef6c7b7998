//! The ingest pipeline's engine half (DESIGN.md section 4 step 3): node
//! batches go, as they arrive from a source, to the scan's [`NodeStage`],
//! shared by every source (rows for shards still empty are copied into one
//! staged batch per shard; a batch with rows for any other is kept); edge
//! batches go through a channel bounded at [`EDGE_CHANNEL`] edges to a
//! boundary-resolution pool (one worker per CPU) that groups them by the
//! edge shard of their source node. Endpoints are resolved when the scan's
//! staged rows are applied, after every node of every source is in, so an
//! edge may name a node from a later batch or from another source. Nothing
//! touches the graph until then: the API keeps reading it meanwhile.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};

use crossbeam_channel::{Receiver, Sender};

use crate::graph::{EdgeBatch, NodeBatch, NodeStage, Staged};
use crate::ids::Sym;
use crate::source::{ReadGraph, ScanSink};

/// Edges in flight between the sources and the boundary-resolution pool.
pub const EDGE_CHANNEL: usize = 8192;

/// What one source sent: its nodes by provider (the CRN's first
/// segment), in order of first appearance, and its node and edge counts.
/// The rows themselves are in the scan's [`NodeStage`] and [`EdgePool`].
#[derive(Default)]
pub struct SourceStage {
    pub providers: Vec<(Sym, u64)>,
    pub node_count: u64,
    pub edge_count: u64,
}

/// What a source has sent so far, readable while it sends (a scan's
/// progress).
#[derive(Debug, Default)]
pub struct SourceCounts {
    nodes: AtomicU64,
    edges: AtomicU64,
}

impl SourceCounts {
    pub fn nodes(&self) -> u64 {
        self.nodes.load(Ordering::Relaxed)
    }

    pub fn edges(&self) -> u64 {
        self.edges.load(Ordering::Relaxed)
    }
}

/// Counts edges in flight so the channel holds at most [`EDGE_CHANNEL`]
/// of them (a batch larger than that travels alone).
struct Credit {
    in_flight: Mutex<usize>,
    freed: Condvar,
}

impl Credit {
    fn lock(&self) -> MutexGuard<'_, usize> {
        self.in_flight.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn take(&self, n: usize) {
        let mut in_flight = self.lock();
        while *in_flight > 0 && *in_flight + n > EDGE_CHANNEL {
            in_flight = self.freed.wait(in_flight).unwrap_or_else(|p| p.into_inner());
        }
        *in_flight += n;
    }

    fn give(&self, n: usize) {
        *self.lock() -= n;
        self.freed.notify_all();
    }
}

/// The boundary-resolution pool of one scan.
pub struct EdgePool {
    tx: Mutex<Option<Sender<(usize, EdgeBatch)>>>,
    rx: Receiver<(usize, EdgeBatch)>,
    credit: Credit,
    done: Mutex<Vec<Vec<(EdgeBatch, Staged)>>>,
}

impl EdgePool {
    /// A pool for `sources` sources.
    pub fn new(sources: usize) -> EdgePool {
        let (tx, rx) = crossbeam_channel::unbounded();
        EdgePool {
            tx: Mutex::new(Some(tx)),
            rx,
            credit: Credit {
                in_flight: Mutex::new(0),
                freed: Condvar::new(),
            },
            done: Mutex::new((0..sources).map(|_| Vec::new()).collect()),
        }
    }

    /// Sends a batch of `source`'s edges; waits while [`EDGE_CHANNEL`]
    /// edges are already on their way.
    pub fn send(&self, source: usize, batch: EdgeBatch) {
        self.credit.take(batch.len());
        let n = batch.len();
        let tx = self.tx.lock().unwrap_or_else(|p| p.into_inner());
        // Once closed (the scan is over) a late batch is dropped.
        if tx.as_ref().is_none_or(|tx| tx.send((source, batch)).is_err()) {
            self.credit.give(n);
        }
    }

    /// One worker: groups batches until every sender is gone.
    pub fn work(&self) {
        for (source, mut batch) in self.rx.iter() {
            batch.seal();
            let n = batch.len();
            let staged = Staged::edges(&batch);
            self.credit.give(n);
            let mut done = self.done.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(list) = done.get_mut(source) {
                list.push((batch, staged));
            }
        }
    }

    /// Closes the channel: workers finish what is queued and return.
    pub fn close(&self) {
        *self.tx.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }

    /// After the workers returned: each source's grouped edge batches.
    pub fn into_staged(self) -> Vec<Vec<(EdgeBatch, Staged)>> {
        self.done.into_inner().unwrap_or_else(|p| p.into_inner())
    }
}

/// A source's sink: stages nodes on arrival, hands edges to the pool.
pub struct StageSink<'p> {
    pub stage: SourceStage,
    source: usize,
    nodes: &'p NodeStage,
    /// The graph the stage was made for: with it, a later scan's rows are
    /// sifted as they arrive ([`NodeStage::add_sifted`]).
    graph: Option<&'p ReadGraph<'p>>,
    pool: &'p EdgePool,
    /// The last node batch the stage handed back, emptied
    /// ([`ScanSink::spare_nodes`]).
    spare: Option<NodeBatch>,
    /// Nodes and edges the source may report in all.
    max_nodes: u64,
    max_edges: u64,
    /// Set once the source passed one of them; nothing is staged after.
    refused: Option<String>,
    /// Where the counts are published as batches arrive.
    counts: Option<&'p SourceCounts>,
}

impl<'p> StageSink<'p> {
    /// The sink of source number `source` (its index in the scan's `ok`
    /// list when the stage is applied).
    pub fn new(source: usize, nodes: &'p NodeStage, pool: &'p EdgePool) -> StageSink<'p> {
        StageSink {
            stage: SourceStage::default(),
            source,
            nodes,
            graph: None,
            pool,
            spare: None,
            max_nodes: u64::MAX,
            max_edges: u64::MAX,
            refused: None,
            counts: None,
        }
    }

    /// Publishes what the source has sent, batch by batch, in `counts`.
    pub fn with_counts(mut self, counts: &'p SourceCounts) -> StageSink<'p> {
        self.counts = Some(counts);
        self
    }

    /// Takes at most `max_nodes` nodes and `max_edges` edges from the
    /// source; past either, the batch that would pass it and every one
    /// after is dropped, and [`ScanSink::refused`] says why.
    pub fn with_limits(mut self, max_nodes: u64, max_edges: u64) -> StageSink<'p> {
        self.max_nodes = max_nodes;
        self.max_edges = max_edges;
        self
    }

    /// Sifts a later scan's rows against the graph `read` locks, batch by
    /// batch, so only what changes it is held until the scan ends.
    pub fn with_graph(mut self, read: &'p ReadGraph<'p>) -> StageSink<'p> {
        self.graph = Some(read);
        self
    }

    /// Whether `batch` more `what` (nodes or edges) stay within `max`;
    /// refuses the source when they do not.
    fn admits(&mut self, count: u64, batch: usize, max: u64, what: &str) -> bool {
        if self.refused.is_some() {
            return false;
        }
        if count.saturating_add(batch as u64) <= max {
            return true;
        }
        self.refused = Some(format!(
            "sent more than {max} {what} in one scan (daemon.scan_max_{what}); the scan was stopped there"
        ));
        false
    }
}

impl ScanSink for StageSink<'_> {
    fn nodes(&mut self, batch: NodeBatch) {
        let count = batch.nodes();
        if !self.admits(self.stage.node_count, count, self.max_nodes, "nodes") {
            return;
        }
        self.stage.node_count += count as u64;
        if let Some(c) = self.counts {
            c.nodes.fetch_add(count as u64, Ordering::Relaxed);
        }
        let providers = &mut self.stage.providers;
        let found = batch.found.iter().map(|f| f.provider);
        for p in batch.rows.iter().map(|n| n.syms[0]).chain(found) {
            // A source serves a few providers, mostly one batch after another.
            match providers.iter_mut().rev().find(|(q, _)| *q == p) {
                Some((_, n)) => *n += 1,
                None => providers.push((p, 1)),
            }
        }
        let spare = match self.graph {
            Some(read) => {
                let (stage, source) = (self.nodes, self.source);
                let (mut batch, mut spare) = (Some(batch), None);
                read(&mut |g| {
                    if let Some(b) = batch.take() {
                        spare = stage.add_sifted(source, b, g);
                    }
                });
                spare
            }
            None => self.nodes.add(self.source, batch),
        };
        if let Some(mut spare) = spare {
            spare.clear();
            self.spare = Some(spare);
        }
    }

    fn spare_nodes(&mut self) -> Option<NodeBatch> {
        self.spare.take()
    }

    fn edges(&mut self, batch: EdgeBatch) {
        if !self.admits(self.stage.edge_count, batch.len(), self.max_edges, "edges") {
            return;
        }
        self.stage.edge_count += batch.len() as u64;
        if let Some(c) = self.counts {
            c.edges.fetch_add(batch.len() as u64, Ordering::Relaxed);
        }
        self.pool.send(self.source, batch);
    }

    fn refused(&self) -> Option<&str> {
        self.refused.as_deref()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use super::*;
    use crate::graph::{Graph, NodeInput, NodeKeyRef};
    use crate::{Interner, Relation};

    fn key<'a>(i: &Interner, id: &'a str) -> NodeKeyRef<'a> {
        NodeKeyRef {
            provider: i.intern("aws"),
            region: i.intern("us-east-1"),
            service: i.intern("ec2"),
            kind: i.intern("volume"),
            account: i.intern("1"),
            id,
        }
    }

    fn nodes(i: &Interner, ids: &[&str]) -> NodeBatch {
        let mut b = NodeBatch::default();
        for id in ids {
            let input = NodeInput {
                key: key(i, id),
                ty: i.intern("ec2:volume"),
                state: i.intern("in-use"),
                cost_usd_mo: 1.0,
                creation_ts: 0,
            };
            b.push(input, &[], |_| {});
        }
        b
    }

    fn edges(i: &Interner, pairs: &[(&str, &str)]) -> EdgeBatch {
        let mut b = EdgeBatch::default();
        for (a, z) in pairs {
            b.push(key(i, a), key(i, z), Relation::Uses, |_| {});
        }
        b
    }

    /// Applies what the given sources staged, as the pipeline does for the
    /// sources whose scan succeeded.
    fn apply(g: &mut Graph, nodes: NodeStage, pool: EdgePool, ok: &[bool]) -> (u64, usize) {
        let staged_edges = pool.into_staged();
        let (mut e, mut se) = (Vec::new(), Vec::new());
        for (staged, ok) in staged_edges.into_iter().zip(ok) {
            if *ok {
                for (b, s) in staged {
                    e.push(b);
                    se.push(s);
                }
            }
        }
        g.ingest_node_stage(nodes, ok, 1, 1);
        let st = g.ingest_staged_edges(&e, &se, 1, 1);
        (st.inserted as u64, st.dangling)
    }

    #[test]
    fn edges_resolve_across_batches_and_sources_and_a_failed_source_lands_nothing() {
        let i = Arc::new(Interner::new());
        let pool = EdgePool::new(3);
        let staged = NodeStage::new();
        let stages = std::thread::scope(|s| {
            let worker = s.spawn(|| pool.work());
            let mut a = StageSink::new(0, &staged, &pool);
            let mut b = StageSink::new(1, &staged, &pool);
            let mut failed = StageSink::new(2, &staged, &pool);
            // Source 0 names `b1` (source 1's) and its own `a2` before either arrives.
            a.edges(edges(&i, &[("a1", "b1"), ("a1", "a2"), ("a1", "nowhere")]));
            a.nodes(nodes(&i, &["a1"]));
            b.nodes(nodes(&i, &["b1"]));
            a.nodes(nodes(&i, &["a2"]));
            b.edges(edges(&i, &[("b1", "a2")]));
            failed.nodes(nodes(&i, &["f1"]));
            failed.edges(edges(&i, &[("f1", "a1"), ("a1", "f1")]));
            pool.close();
            worker.join().expect("pool worker");
            vec![a.stage, b.stage, failed.stage]
        });
        assert_eq!(stages.iter().map(|s| s.node_count).collect::<Vec<_>>(), [2, 1, 1]);
        assert_eq!(stages[0].providers, [(i.intern("aws"), 2)]);
        let mut g = Graph::new(i.clone());
        let (inserted, dangling) = apply(&mut g, staged, pool, &[true, true, false]);
        assert_eq!(g.node_rows(), 3, "the failed source's node did not land");
        assert_eq!(inserted, 3, "a1->b1, a1->a2 and b1->a2 resolved");
        assert_eq!(dangling, 1, "a1->nowhere never found its target");
        assert_eq!(g.edge_rows(), 3);
    }

    #[test]
    fn the_edge_channel_holds_at_most_its_capacity() {
        let i = Interner::new();
        let pool = EdgePool::new(1);
        let ids: Vec<String> = (0..1000).map(|k| format!("v{k}")).collect();
        let pairs: Vec<(&str, &str)> = ids.iter().map(|s| (s.as_str(), "v0")).collect();
        let batch = || edges(&i, &pairs);
        let sent = std::sync::atomic::AtomicUsize::new(0);
        std::thread::scope(|s| {
            s.spawn(|| {
                for _ in 0..20 {
                    pool.send(0, batch());
                    sent.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                }
            });
            // No worker yet: the sender stops once 8 batches (8000 edges) wait.
            let until = Instant::now() + Duration::from_millis(300);
            while Instant::now() < until {
                assert!(*pool.credit.lock() <= EDGE_CHANNEL);
                assert!(sent.load(std::sync::atomic::Ordering::SeqCst) <= EDGE_CHANNEL / 1000);
                std::thread::yield_now();
            }
            let worker = s.spawn(|| pool.work());
            while sent.load(std::sync::atomic::Ordering::SeqCst) < 20 {
                std::thread::yield_now();
            }
            pool.close();
            worker.join().expect("pool worker");
        });
        let staged = pool.into_staged();
        assert_eq!(staged[0].iter().map(|(b, _)| b.len()).sum::<usize>(), 20_000);
    }

    #[test]
    fn a_sink_publishes_what_it_took_as_it_takes_it() {
        let counts = SourceCounts::default();
        let interner = Arc::new(Interner::new());
        let graph = Graph::new(interner.clone());
        let stage = NodeStage::for_graph(&graph);
        let pool = EdgePool::new(1);
        let worker = std::thread::scope(|s| {
            let w = s.spawn(|| pool.work());
            let mut sink = StageSink::new(0, &stage, &pool).with_counts(&counts).with_limits(3, 10);
            sink.nodes(nodes(&interner, &["a", "b"]));
            sink.edges(edges(&interner, &[("a", "b")]));
            let taken = (counts.nodes(), counts.edges());
            // Past the limit nothing more is taken, or counted.
            sink.nodes(nodes(&interner, &["c", "d"]));
            let refused = sink.refused().is_some();
            pool.close();
            let _ = w.join();
            (taken, counts.nodes(), refused)
        });
        assert_eq!(worker, ((2, 1), 2, true));
    }
}
