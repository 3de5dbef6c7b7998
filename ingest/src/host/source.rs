//! A provider plugin as a scan [`Source`]: launched on first use and after
//! a crash, scanned through `Provider.Scan`, its stream decoded into the
//! engine's batches.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

use crossbeam_channel::{Receiver, Sender};
use tokio::sync::mpsc;

use bytes::Bytes;
use svc_engine::graph::{EdgeBatch, NodeBatch};
use svc_engine::scan::{
    QuarantineOutcome, ReadGraph, RemediateOutcome, RemediateRequest, ReversibilityAsk, ReversibilityProof,
    ScanContext, ScanSink, Source, SourceError, Unlisted,
};
use svc_proto::provider::v1 as pb;
use tokio::runtime::Handle;
use tonic::metadata::MetadataMap;
use tonic::transport::Channel;
use tracing::Instrument;

use super::launch::{
    LaunchOptions, MAX_MESSAGE_BYTES, PluginProcess, drop_if_stale, exited_after_error, fmt_duration, plugin_name,
};
use super::manifest::Role;
use super::{HostError, scan_call, status_text, unlisted};
use crate::decode::{DecodeStats, Decoder, WireError};

/// Rejection reasons repeated in the log after a scan.
const LOGGED_REASONS: usize = 5;

/// Raw messages queued per decode worker between the gRPC reader and the
/// decoders; when the queue is full the reader stops reading, and HTTP/2
/// flow control stops the plugin.
const MESSAGES_PER_WORKER: usize = 2;
/// Decoded batches queued per decode worker on their way to the sink; when
/// full, the decoders wait for the sink.
const BATCHES_PER_WORKER: usize = 2;

/// `CheckReversibility` calls a plugin has in flight at once when the
/// engine proves many resources: enough to hide a call's round trip over
/// the local socket, few enough that a slow plugin is not flooded.
pub const PROOFS_IN_FLIGHT: usize = 32;

/// The `CheckReversibility` request for `ask`.
pub(crate) fn proof_request(ask: &ReversibilityAsk) -> pb::ReversibilityRequest {
    pb::ReversibilityRequest {
        crn: ask.crn.clone(),
        properties: ask.properties.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
    }
}

/// A plugin's `ReversibilityProof` as the engine takes it.
pub(crate) fn proof_of(p: pb::ReversibilityProof) -> ReversibilityProof {
    ReversibilityProof {
        safe: p.safe,
        reason: p.reason,
    }
}

/// The same failure for each of `asks`.
pub(crate) fn failed_proofs(
    asks: &[ReversibilityAsk],
    why: &str,
) -> Vec<Option<Result<ReversibilityProof, SourceError>>> {
    asks.iter()
        .map(|_| Some(Err(SourceError::Failed(why.to_owned()))))
        .collect()
}

/// Decode workers per plugin scan: one per CPU.
pub fn decode_workers() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

/// A decoded batch on its way to the sink.
enum Decoded {
    Nodes(NodeBatch),
    Edges(EdgeBatch),
}

/// How a provider plugin is scanned.
#[derive(Clone, Debug)]
pub struct SourceOptions {
    pub launch: LaunchOptions,
    /// A scan still streaming after this is cancelled and the plugin killed.
    pub scan_timeout: Duration,
    /// Nodes (and edges) per batch handed to the sink.
    pub batch_size: usize,
    /// Threads decoding plugin streams (default: one per CPU), shared by
    /// the sources of a scan: a plugin scanned beside others takes its
    /// share of them ([`ScanContext::concurrent`]), at least one.
    pub decode_workers: usize,
}

/// Nodes or edges a decode worker puts in one batch by default. An edge
/// batch keeps each endpoint it names once, and each is found by text once
/// and resolved once: a scan's edges name each node several times, mostly
/// close together, so larger batches keep fewer endpoints in all (a 1M
/// plugin ingest takes ~4% less CPU than at 4,096; docs/perf-log.md). At the edge
/// channel's capacity ([`svc_engine::scan::stage::EDGE_CHANNEL`]) one edge
/// batch fills it.
pub const BATCH_ROWS: usize = 8192;

impl Default for SourceOptions {
    fn default() -> SourceOptions {
        SourceOptions {
            launch: LaunchOptions::default(),
            scan_timeout: Duration::from_secs(600),
            batch_size: BATCH_ROWS,
            decode_workers: decode_workers(),
        }
    }
}

/// One provider plugin, scanned as a [`Source`].
pub struct PluginSource {
    name: String,
    path: PathBuf,
    providers: Vec<String>,
    opts: SourceOptions,
    handle: Handle,
    process: Option<PluginProcess>,
    last_stats: DecodeStats,
    /// What the last scan, which succeeded, could not list.
    last_unlisted: Vec<Unlisted>,
}

/// Why a `PreflightCheck` did not pass.
enum Preflight {
    /// The plugin answered: it cannot scan (its words).
    Refused(SourceError),
    /// The call itself failed (the process may have died).
    Broken(HostError),
}

impl PluginSource {
    /// A source for the plugin binary at `path`, serving the provider named
    /// after it. `handle` is the runtime the plugin's I/O runs on; `scan`
    /// blocks on it, so it must be called outside that runtime's workers
    /// (on a blocking thread).
    pub fn new(path: impl Into<PathBuf>, opts: SourceOptions, handle: Handle) -> PluginSource {
        let path = path.into();
        let name = plugin_name(&path);
        PluginSource {
            providers: vec![name.clone()],
            name,
            path,
            opts,
            handle,
            process: None,
            last_stats: DecodeStats::default(),
            last_unlisted: Vec::new(),
        }
    }

    /// Replaces the providers this plugin reports (by default its name).
    pub fn with_providers(mut self, providers: Vec<String>) -> PluginSource {
        self.providers = providers;
        self
    }

    /// What the decoder saw in the last scan, rejections included.
    pub fn last_stats(&self) -> &DecodeStats {
        &self.last_stats
    }

    /// The running process, if any.
    pub fn process(&self) -> Option<&PluginProcess> {
        self.process.as_ref()
    }

    /// The running process, launched (or relaunched after it exited) if needed.
    pub async fn running(&mut self) -> Result<&mut PluginProcess, HostError> {
        drop_if_stale(&mut self.process, &self.opts.launch).await?;
        let process = match self.process.take() {
            Some(p) => p,
            None => PluginProcess::launch(&self.path, Role::Provider, &self.opts.launch).await?,
        };
        Ok(self.process.insert(process))
    }

    /// Stops the plugin if it is running.
    pub async fn shutdown(&mut self) {
        if let Some(p) = self.process.take() {
            p.shutdown().await;
        }
    }

    /// Runs the plugin's optional `PreflightCheck`; a plugin that reports
    /// its credentials or settings unusable fails its scan with its words.
    async fn preflight(&mut self, config: &HashMap<String, String>) -> Result<(), Preflight> {
        let within = self.opts.launch.handshake_timeout;
        let Some(process) = self.process.as_ref() else {
            return Ok(());
        };
        match process.preflight(config.clone(), within).await {
            Ok(None) => Ok(()),
            Ok(Some(r)) if r.ok => {
                if !r.missing.is_empty() {
                    tracing::warn!(plugin = %self.name, missing = ?r.missing, message = %r.message,
                        "plugin preflight check passed, but parts of the estate may not be listed");
                }
                Ok(())
            }
            Ok(Some(r)) => {
                let mut why = format!("plugin {} preflight check failed: {}", self.name, r.message);
                if !r.missing.is_empty() {
                    why.push_str(&format!(" (missing: {})", r.missing.join(", ")));
                }
                Err(Preflight::Refused(SourceError::Failed(why)))
            }
            Err(e) => Err(Preflight::Broken(e)),
        }
    }

    async fn scan_async(&mut self, ctx: &ScanContext<'_>, sink: &mut dyn ScanSink) -> Result<(), SourceError> {
        let name = self.name.clone();
        self.last_unlisted.clear();
        let mut config: HashMap<String, String> = ctx.config.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        config.insert("scan_seq".to_owned(), ctx.scan_seq.to_string());
        // A plugin that died since the last scan (killed, crashed) may not
        // be known to have exited yet: its first call breaks. Found exited
        // then, it is launched again, once.
        let mut relaunched = false;
        let channel = loop {
            let channel = self
                .running()
                .await
                .map_err(|e| SourceError::Failed(e.to_string()))?
                .channel();
            match self.preflight(&config).await {
                Ok(()) => break channel,
                Err(Preflight::Refused(e)) => return Err(e),
                Err(Preflight::Broken(e)) => match exited_after_error(&mut self.process).await {
                    Some(exit) if !relaunched => {
                        tracing::warn!(plugin = %name, %exit, "plugin exited since its last call; restarting it");
                        relaunched = true;
                    }
                    _ => return Err(SourceError::Failed(e.to_string())),
                },
            }
        };

        let span = tracing::info_span!("plugin.scan", plugin = %name, scan_seq = ctx.scan_seq);
        let limit = ctx.timeout.unwrap_or(self.opts.scan_timeout);
        let call = ScanCall {
            channel,
            request: pb::ScanRequest { config },
            headers: tonic::codegen::http::HeaderMap::new(),
        };
        let Streamed {
            outcome,
            stats,
            malformed,
        } = stream_into(call, ctx, sink, &self.opts, &self.handle, span, limit);
        self.last_stats = stats;
        if let Some(why) = sink.refused() {
            // A plugin that sends without end may not stop on a cancelled
            // call; the next scan starts it again.
            tracing::warn!(plugin = %name, reason = %why, "plugin passed a scan limit; killing the plugin");
            if let Some(mut p) = self.process.take() {
                p.kill().await;
            }
            return Err(SourceError::Failed(format!("plugin {name} {why}")));
        }
        let stats = &self.last_stats;
        if stats.rejected_nodes + stats.rejected_edges > 0 {
            let first = &stats.reasons[..stats.reasons.len().min(LOGGED_REASONS)];
            tracing::warn!(plugin = %name, rejected_nodes = stats.rejected_nodes, rejected_edges = stats.rejected_edges,
                first = ?first, "plugin sent malformed items; they were skipped");
        }
        if let Some(fault) = malformed {
            return Err(SourceError::Failed(format!(
                "plugin {name} sent a malformed ScanResponse: {fault}"
            )));
        }
        match outcome {
            Ok(Ok(trailers)) => {
                let unlisted = unlisted::from_trailers(trailers.as_ref())
                    .map_err(|why| SourceError::Failed(format!("plugin {name} ended its scan badly: {why}")))?;
                tracing::info!(plugin = %name, nodes = stats.nodes, unchanged = stats.unchanged, edges = stats.edges,
                    decoders = stats.decoders, unlisted = unlisted.len(), "plugin scan finished");
                self.last_unlisted = unlisted;
                Ok(())
            }
            Ok(Err(status)) => {
                let error = status_text(&status);
                match exited_after_error(&mut self.process).await {
                    Some(exit) => Err(SourceError::Failed(format!(
                        "plugin {name} crashed mid-scan: it exited ({exit}); {error}"
                    ))),
                    None => Err(SourceError::Failed(format!("plugin {name} scan failed: {error}"))),
                }
            }
            Err(_) => {
                let after = fmt_duration(limit);
                tracing::warn!(plugin = %name, timeout = %after, "plugin scan timed out; killing the plugin");
                if let Some(mut p) = self.process.take() {
                    p.kill().await;
                }
                Err(SourceError::Timeout(after))
            }
        }
    }
}

impl Source for PluginSource {
    fn name(&self) -> &str {
        &self.name
    }

    fn identity(&self) -> Option<String> {
        Some(self.path.display().to_string())
    }

    fn providers(&self) -> Vec<String> {
        self.providers.clone()
    }

    fn scan(&mut self, ctx: &ScanContext<'_>, sink: &mut dyn ScanSink) -> Result<(), SourceError> {
        let handle = self.handle.clone();
        handle.block_on(self.scan_async(ctx, sink))
    }

    fn rejections(&self) -> (u64, Vec<String>) {
        let st = self.last_stats();
        (st.rejected_nodes + st.rejected_edges, st.reasons.clone())
    }

    fn unlisted(&self) -> Vec<Unlisted> {
        self.last_unlisted.clone()
    }

    fn stop(&mut self) {
        let handle = self.handle.clone();
        handle.block_on(self.shutdown());
    }

    fn checks_reversibility(&self) -> bool {
        true
    }

    fn check_reversibility(
        &mut self,
        crn: &str,
        properties: &std::collections::BTreeMap<String, String>,
    ) -> Option<Result<ReversibilityProof, SourceError>> {
        svc_engine::scan::check_one(self, crn, properties)
    }

    fn check_reversibility_many(
        &mut self,
        asks: &[ReversibilityAsk],
    ) -> Vec<Option<Result<ReversibilityProof, SourceError>>> {
        use futures::StreamExt;
        let handle = self.handle.clone();
        handle.block_on(async {
            let p: &PluginProcess = match self.running().await {
                Ok(p) => p,
                Err(e) => return failed_proofs(asks, &e.to_string()),
            };
            let calls = asks.iter().map(|a| async move {
                p.check_reversibility(proof_request(a))
                    .await
                    .map(proof_of)
                    .map_err(|e| SourceError::Failed(e.to_string()))
            });
            futures::stream::iter(calls)
                .buffered(PROOFS_IN_FLIGHT)
                .map(Some)
                .collect()
                .await
        })
    }

    fn remediate(&mut self, r: &RemediateRequest<'_>) -> Option<Result<RemediateOutcome, SourceError>> {
        let handle = self.handle.clone();
        let req = pb::RemediateRequest {
            crn: r.crn.to_owned(),
            action: r.action.to_owned(),
            properties: r.properties.clone().into_iter().collect(),
            dry_run: r.dry_run,
        };
        Some(handle.block_on(async {
            let p = self.running().await.map_err(|e| SourceError::Failed(e.to_string()))?;
            let resp = p.remediate(req).await.map_err(|e| SourceError::Failed(e.to_string()))?;
            Ok(RemediateOutcome {
                success: resp.success,
                status: resp.status,
                error: resp.error,
                snapshot: resp.snapshot.into_iter().collect(),
            })
        }))
    }

    fn apply_quarantine(
        &mut self,
        crn: &str,
        action: &str,
        reason: &str,
    ) -> Option<Result<QuarantineOutcome, SourceError>> {
        let handle = self.handle.clone();
        let req = pb::QuarantineRequest {
            crn: crn.to_owned(),
            action: action.to_owned(),
            reason: reason.to_owned(),
        };
        Some(handle.block_on(async {
            let p = self.running().await.map_err(|e| SourceError::Failed(e.to_string()))?;
            let resp = p
                .apply_quarantine(req)
                .await
                .map_err(|e| SourceError::Failed(e.to_string()))?;
            Ok(QuarantineOutcome {
                success: resp.success,
                message: resp.message,
            })
        }))
    }
}

/// How one `Provider.Scan` stream ended and what its decoders saw.
pub(crate) struct Streamed {
    /// `Err` when the scan passed its time limit; else the stream's status,
    /// with the custom trailers of an OK end.
    pub(crate) outcome: Result<Result<Option<MetadataMap>, tonic::Status>, tokio::time::error::Elapsed>,
    pub(crate) stats: DecodeStats,
    /// A message that was not a `ScanResponse` (the stream was stopped).
    pub(crate) malformed: Option<WireError>,
}

/// One `Provider.Scan` call: where, what, and the request metadata that
/// goes with it (a worker reads the source it is for there).
pub(crate) struct ScanCall {
    pub(crate) channel: Channel,
    pub(crate) request: pb::ScanRequest,
    pub(crate) headers: tonic::codegen::http::HeaderMap,
}

/// Streams `call` into `sink`: a reader on `handle` puts each message's
/// bytes in a bounded queue, decode workers (the scan's share of
/// `opts.decode_workers`) turn them into batches, and this thread hands
/// the batches to the sink. A sink that refuses more cancels the call; so
/// does `limit`. Blocks: call it outside `handle`'s workers.
pub(crate) fn stream_into(
    call: ScanCall,
    ctx: &ScanContext<'_>,
    sink: &mut dyn ScanSink,
    opts: &SourceOptions,
    handle: &Handle,
    span: tracing::Span,
    limit: Duration,
) -> Streamed {
    let batch = opts.batch_size.max(1);
    let workers = opts.decode_workers.div_ceil(ctx.concurrent.max(1)).max(1);
    let handle = handle.clone();
    let (raw_tx, raw_rx) = mpsc::channel::<Bytes>(workers * MESSAGES_PER_WORKER);
    let raw_rx = Mutex::new(raw_rx);
    let (outcome, stats, malformed) = std::thread::scope(|scope| {
        let (out_tx, out_rx) = crossbeam_channel::bounded::<Decoded>(workers * BATCHES_PER_WORKER);
        // Node batches the sink let go of, back to the decoders.
        let (spare_tx, spare_rx) = crossbeam_channel::bounded::<NodeBatch>(workers);
        let decoders: Vec<_> = (0..workers)
            .map(|_| {
                let (raw_rx, out_tx, spare_rx) = (&raw_rx, out_tx.clone(), spare_rx.clone());
                let lookup = ctx.graph;
                scope.spawn(move || decode_worker(ctx.interner, lookup, raw_rx, out_tx, &spare_rx, batch))
            })
            .collect();
        drop(out_tx);
        // Told when the sink takes no more: the stream is dropped (the
        // call cancelled), so the decoders run dry and stop.
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let reader = scope.spawn(move || {
            let stream = stream_scan(call, raw_tx).instrument(span);
            handle.block_on(async move {
                tokio::select! {
                    done = tokio::time::timeout(limit, stream) => done,
                    _ = stop_rx => Ok(Err(tonic::Status::cancelled("the daemon stopped reading the scan"))),
                }
            })
        });
        // Batches reach the sink on this thread, as the decoders finish them.
        for decoded in out_rx {
            match decoded {
                Decoded::Nodes(b) => {
                    sink.nodes(b);
                    if let Some(spare) = sink.spare_nodes() {
                        let _ = spare_tx.try_send(spare);
                    }
                }
                Decoded::Edges(b) => sink.edges(b),
            }
            if sink.refused().is_some() {
                let _ = stop_tx.send(());
                break;
            }
        }
        let mut stats = DecodeStats::default();
        let mut malformed = None;
        for d in decoders {
            if let Ok((s, fault)) = d.join() {
                stats.merge(s);
                malformed = malformed.or(fault);
            }
        }
        let outcome = reader
            .join()
            .unwrap_or_else(|_| Ok(Err(tonic::Status::internal("the plugin stream reader panicked"))));
        (outcome, stats, malformed)
    });
    Streamed {
        outcome,
        stats,
        malformed,
    }
}

/// Reads one scan's messages into the decoders' queue; waits (and so
/// stops reading) while the queue is full. Returns the custom trailers of
/// the stream's OK end.
async fn stream_scan(call: ScanCall, raw: mpsc::Sender<Bytes>) -> Result<Option<MetadataMap>, tonic::Status> {
    let mut stream = scan_call::scan(call.channel, call.request, call.headers, MAX_MESSAGE_BYTES).await?;
    while let Some(msg) = stream.message().await? {
        if raw.send(msg).await.is_err() {
            // Every decoder is gone; nothing would land.
            return Err(tonic::Status::internal("the plugin's decoders stopped"));
        }
    }
    Ok(stream.trailers().cloned())
}

/// How full a decode worker lets its batches get, and how large it
/// allocates them: a message's rows go into a batch whole, so a batch is
/// handed on before the next message of the last one's size would overflow
/// it, and its byte buffer is sized from the bytes per row seen so far, so a
/// batch is allocated once instead of doubled and copied as it fills.
struct Fill {
    rows: usize,
    per_message: usize,
    bytes_per_row: usize,
}

impl Fill {
    fn new(rows: usize, bytes_per_row: usize) -> Fill {
        Fill {
            rows,
            per_message: 0,
            bytes_per_row,
        }
    }

    /// Rows the next batch has room for.
    fn capacity(&self) -> usize {
        self.rows.max(self.per_message)
    }

    /// Buffer bytes the next batch has room for: an eighth over the average
    /// seen, rounded up to an eighth of the power of two above it, so that
    /// batches of a scan mostly ask for one size and a batch the sink let
    /// go of has room for the next ([`node_batch`]).
    fn bytes(&self) -> usize {
        let bytes = self.capacity() * (self.bytes_per_row + self.bytes_per_row / 8);
        let step = (bytes.next_power_of_two() / 8).max(1);
        bytes.div_ceil(step) * step
    }

    /// Whether a batch of `len` rows is handed on before the next message
    /// (it would overflow) or after the last (it is full).
    fn full(&self, len: usize, before_next: bool) -> bool {
        len >= self.rows || (before_next && len > 0 && len + self.per_message > self.capacity())
    }

    /// Learns from a message that added `added` rows.
    fn message(&mut self, added: usize) {
        if added > 0 {
            self.per_message = added;
        }
    }
}

/// A batch a decode worker fills.
trait Fillable: Sized {
    fn allocate(fill: &Fill) -> Self;
    fn rows(&self) -> usize;
    fn bytes(&self) -> usize;
    fn decoded(self) -> Decoded;
}

impl Fillable for NodeBatch {
    fn allocate(fill: &Fill) -> Self {
        NodeBatch::with_capacity_bytes(fill.capacity(), fill.bytes())
    }
    /// Nodes found unchanged count as rows: a batch of them is handed on
    /// as often as one of decoded rows.
    fn rows(&self) -> usize {
        self.nodes()
    }
    fn bytes(&self) -> usize {
        self.buffer_len()
    }
    fn decoded(self) -> Decoded {
        Decoded::Nodes(self)
    }
}

impl Fillable for EdgeBatch {
    fn allocate(fill: &Fill) -> Self {
        EdgeBatch::with_capacity_bytes(fill.capacity(), fill.bytes())
    }
    fn rows(&self) -> usize {
        self.len()
    }
    fn bytes(&self) -> usize {
        self.buffer_len()
    }
    fn decoded(self) -> Decoded {
        Decoded::Edges(self)
    }
}

/// A node batch for `fill`: one the sink let go of when it has the room,
/// a new one otherwise.
fn node_batch(fill: &Fill, spare: &Receiver<NodeBatch>) -> NodeBatch {
    match spare.try_recv() {
        Ok(b) if b.capacity().0 >= fill.capacity() && b.capacity().1 >= fill.bytes() => b,
        _ => NodeBatch::allocate(fill),
    }
}

/// Hands `batch` on when `fill` says it is full, with the one `next` gives
/// in its place; `false` when the sink is gone.
fn hand_on<B: Fillable>(
    fill: &mut Fill,
    batch: &mut B,
    before_next: bool,
    out: &Sender<Decoded>,
    next: impl FnOnce(&Fill) -> B,
) -> bool {
    if !fill.full(batch.rows(), before_next) {
        return true;
    }
    if batch.rows() > 0 {
        fill.bytes_per_row = batch.bytes().div_ceil(batch.rows());
    }
    let full = std::mem::replace(batch, next(fill));
    out.send(full.decoded()).is_ok()
}

/// One decode worker: takes raw messages until the reader is done, decodes
/// them into batches of about `batch` nodes or edges, and hands full
/// batches on. A message that is not a `ScanResponse` closes the queue (the
/// reader stops, the scan fails) and is returned. With `graph`, each
/// message is decoded with the graph read-locked, and the nodes it holds
/// as they are sent are carried as their rows, undecoded
/// ([`Decoder::wire_in`]).
fn decode_worker(
    interner: &svc_engine::Interner,
    graph: Option<&ReadGraph<'_>>,
    raw: &Mutex<mpsc::Receiver<Bytes>>,
    out: Sender<Decoded>,
    spare: &Receiver<NodeBatch>,
    batch: usize,
) -> (DecodeStats, Option<WireError>) {
    let mut fault = None;
    let mut decoder = Decoder::new(interner);
    let (mut node_fill, mut edge_fill) = (Fill::new(batch, 160), Fill::new(batch, 48));
    let next_nodes = |fill: &Fill| node_batch(fill, spare);
    let mut nodes = NodeBatch::allocate(&node_fill);
    let mut edges = EdgeBatch::allocate(&edge_fill);
    loop {
        // The lock is held only while waiting for the next message.
        let msg = match raw.lock() {
            Ok(mut rx) => rx.blocking_recv(),
            Err(_) => None,
        };
        let Some(msg) = msg else { break };
        if !hand_on(&mut node_fill, &mut nodes, true, &out, next_nodes)
            || !hand_on(&mut edge_fill, &mut edges, true, &out, EdgeBatch::allocate)
        {
            break;
        }
        let before = (nodes.nodes(), edges.len());
        let decoded = match graph {
            Some(read) => {
                let mut decoded = Ok(());
                read(&mut |g| decoded = decoder.wire_in(&msg, &mut nodes, &mut edges, Some(g)));
                decoded
            }
            None => decoder.wire(&msg, &mut nodes, &mut edges),
        };
        if let Err(e) = decoded {
            if let Ok(mut rx) = raw.lock() {
                rx.close();
            }
            fault = Some(e);
            break;
        }
        drop(msg);
        node_fill.message(nodes.nodes() - before.0);
        edge_fill.message(edges.len() - before.1);
        if !hand_on(&mut node_fill, &mut nodes, false, &out, next_nodes)
            || !hand_on(&mut edge_fill, &mut edges, false, &out, EdgeBatch::allocate)
        {
            break;
        }
    }
    if !nodes.is_empty() {
        let _ = out.send(Decoded::Nodes(nodes));
    }
    if !edges.is_empty() {
        let _ = out.send(Decoded::Edges(edges));
    }
    let mut stats = decoder.stats;
    stats.decoders = 1;
    (stats, fault)
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;

    fn message(k: usize) -> Bytes {
        let m = pb::ScanResponse {
            nodes: vec![pb::Node {
                crn: format!("crn:svc:aws:us-east-1:1:volume:vol-{k}"),
                properties: br#"{"state":"in-use"}"#.to_vec(),
                cost: 1.0,
            }],
            edges: vec![],
        };
        Bytes::from(prost::Message::encode_to_vec(&m))
    }

    #[test]
    fn a_node_batch_the_sink_let_go_of_is_filled_again_when_it_has_the_room() {
        let fill = Fill::new(100, 160);
        let new = (100, fill.bytes());
        let (tx, rx) = crossbeam_channel::bounded(2);
        assert_eq!(node_batch(&fill, &rx).capacity(), new, "no spare: a new batch");
        let mut roomy = NodeBatch::with_capacity_bytes(200, new.1 + 1000);
        let at = roomy.capacity();
        roomy.clear();
        tx.send(roomy).expect("spare");
        assert_eq!(node_batch(&fill, &rx).capacity(), at, "the spare is taken");
        for small in [(99, new.1 + 1000), (200, new.1 - 1)] {
            tx.send(NodeBatch::with_capacity_bytes(small.0, small.1))
                .expect("spare");
            assert_eq!(node_batch(&fill, &rx).capacity(), new, "{small:?} is too small");
        }
    }

    #[test]
    fn a_batch_is_handed_on_before_the_next_message_would_overflow_it() {
        let mut fill = Fill::new(4096, 160);
        let (mut len, mut handed) = (0, Vec::new());
        for _ in 0..9 {
            if fill.full(len, true) {
                handed.push(len);
                len = 0;
            }
            len += 2000;
            fill.message(2000);
            if fill.full(len, false) {
                handed.push(len);
                len = 0;
            }
        }
        assert_eq!((handed, len), (vec![4000; 4], 2000));
        assert_eq!(fill.capacity(), 4096);
        // A message larger than a batch gets a batch of its own size.
        fill.message(10_000);
        assert!(fill.full(1, true));
        assert_eq!(fill.capacity(), 10_000);
        // 1,800,000 bytes, rounded up to a multiple of 2^21 / 8.
        assert_eq!(fill.bytes(), 7 * (1 << 18));
    }

    #[test]
    fn a_stalled_sink_stops_the_reader_after_a_bounded_number_of_messages() {
        let interner = svc_engine::Interner::new();
        let (raw_tx, raw_rx) = mpsc::channel::<Bytes>(2);
        let raw_rx = Mutex::new(raw_rx);
        let (out_tx, out_rx) = crossbeam_channel::bounded::<Decoded>(1);
        std::thread::scope(|s| {
            let worker = s.spawn(|| decode_worker(&interner, None, &raw_rx, out_tx, &crossbeam_channel::never(), 1));
            // Nobody drains the batches: the worker parks one batch in the
            // queue, holds a second, and the reader's queue fills behind it.
            let mut accepted = 0;
            let until = Instant::now() + Duration::from_millis(300);
            while Instant::now() < until {
                if raw_tx.try_send(message(accepted)).is_ok() {
                    accepted += 1;
                }
                std::thread::yield_now();
            }
            assert!(accepted <= 2 + 2, "{accepted} messages buffered");
            assert!(accepted >= 2, "the queue takes its capacity");
            drop(raw_tx);
            let landed: usize = out_rx
                .iter()
                .map(|d| match d {
                    Decoded::Nodes(b) => b.len(),
                    Decoded::Edges(b) => b.len(),
                })
                .sum();
            let (stats, fault) = worker.join().expect("worker");
            assert_eq!((landed, stats.nodes as usize, fault), (accepted, accepted, None));
        });
    }

    #[test]
    fn decoders_share_one_stream_and_every_message_lands_once() {
        let interner = svc_engine::Interner::new();
        let (raw_tx, raw_rx) = mpsc::channel::<Bytes>(4);
        let raw_rx = Mutex::new(raw_rx);
        let (out_tx, out_rx) = crossbeam_channel::bounded::<Decoded>(4);
        let stats = std::thread::scope(|s| {
            let workers: Vec<_> = (0..3)
                .map(|_| {
                    let (raw_rx, out_tx, interner) = (&raw_rx, out_tx.clone(), &interner);
                    s.spawn(move || decode_worker(interner, None, raw_rx, out_tx, &crossbeam_channel::never(), 7))
                })
                .collect();
            drop(out_tx);
            s.spawn(move || {
                for k in 0..1000 {
                    raw_tx.blocking_send(message(k)).expect("decoders alive");
                }
            });
            let landed: usize = out_rx
                .iter()
                .map(|d| match d {
                    Decoded::Nodes(b) => b.len(),
                    Decoded::Edges(b) => b.len(),
                })
                .sum();
            assert_eq!(landed, 1000);
            let mut stats = DecodeStats::default();
            for w in workers {
                let (s, fault) = w.join().expect("worker");
                assert_eq!(fault, None);
                stats.merge(s);
            }
            stats
        });
        assert_eq!((stats.nodes, stats.rejected_nodes), (1000, 0));
    }

    #[test]
    fn a_message_that_is_not_a_scan_response_closes_the_queue_and_is_reported() {
        let interner = svc_engine::Interner::new();
        let (raw_tx, raw_rx) = mpsc::channel::<Bytes>(8);
        let raw_rx = Mutex::new(raw_rx);
        let (out_tx, out_rx) = crossbeam_channel::bounded::<Decoded>(8);
        raw_tx.try_send(message(0)).expect("room");
        // Field 1 (nodes) claiming 5 bytes, with 1 left.
        raw_tx.try_send(Bytes::from_static(&[0x0a, 0x05, 0x0a])).expect("room");
        raw_tx.try_send(message(1)).expect("room");
        let (stats, fault) = decode_worker(&interner, None, &raw_rx, out_tx, &crossbeam_channel::never(), 100);
        assert!(matches!(fault, Some(WireError::Length { .. })), "{fault:?}");
        assert!(raw_tx.try_send(message(2)).is_err(), "the reader sees the queue closed");
        assert_eq!(stats.nodes, 1, "the message before the fault is decoded");
        assert_eq!(out_rx.iter().count(), 1);
    }
}
