//! A provider plugin as a scan [`Source`]: launched on first use and after
//! a crash, scanned through `Provider.Scan`, its stream decoded into the
//! engine's batches.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use svc_engine::graph::{EdgeBatch, NodeBatch};
use svc_engine::scan::{ScanContext, ScanSink, Source, SourceError};
use svc_proto::provider::v1 as pb;
use svc_proto::provider::v1::provider_client::ProviderClient;
use tokio::runtime::Handle;
use tonic::transport::Channel;
use tracing::Instrument;

use super::launch::{LaunchOptions, PluginProcess, fmt_duration, plugin_name};
use super::manifest::Role;
use super::{HostError, status_text};
use crate::decode::{DecodeStats, Decoder};

/// Rejection reasons repeated in the log after a scan.
const LOGGED_REASONS: usize = 5;
/// Time a process gets to be seen exiting after its scan stream broke.
const CRASH_PROBE: Duration = Duration::from_millis(500);

/// How a provider plugin is scanned.
#[derive(Clone, Debug)]
pub struct SourceOptions {
    pub launch: LaunchOptions,
    /// A scan still streaming after this is cancelled and the plugin killed.
    pub scan_timeout: Duration,
    /// Nodes (and edges) per batch handed to the sink.
    pub batch_size: usize,
}

impl Default for SourceOptions {
    fn default() -> SourceOptions {
        SourceOptions {
            launch: LaunchOptions::default(),
            scan_timeout: Duration::from_secs(600),
            batch_size: 4096,
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
        if let Some(p) = self.process.as_mut()
            && let Some(status) = p.exit_status()
        {
            tracing::warn!(plugin = %self.name, %status, "plugin exited; restarting it");
            self.process = None;
        }
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
    async fn preflight(&mut self, config: &HashMap<String, String>) -> Result<(), SourceError> {
        let within = self.opts.launch.handshake_timeout;
        let Some(process) = self.process.as_ref() else {
            return Ok(());
        };
        match process.preflight(config.clone(), within).await {
            Ok(None) => Ok(()),
            Ok(Some(r)) if r.ok => Ok(()),
            Ok(Some(r)) => {
                let mut why = format!("plugin {} preflight check failed: {}", self.name, r.message);
                if !r.missing.is_empty() {
                    why.push_str(&format!(" (missing: {})", r.missing.join(", ")));
                }
                Err(SourceError::Failed(why))
            }
            Err(e) => Err(SourceError::Failed(e.to_string())),
        }
    }

    async fn scan_async(&mut self, ctx: &ScanContext<'_>, sink: &mut dyn ScanSink) -> Result<(), SourceError> {
        let name = self.name.clone();
        let client = self
            .running()
            .await
            .map_err(|e| SourceError::Failed(e.to_string()))?
            .provider();
        let mut config: HashMap<String, String> = ctx.config.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        config.insert("scan_seq".to_owned(), ctx.scan_seq.to_string());
        self.preflight(&config).await?;

        let mut decoder = Decoder::new(ctx.interner);
        let span = tracing::info_span!("plugin.scan", plugin = %name, scan_seq = ctx.scan_seq);
        let stream = stream_scan(client, config, &mut decoder, sink, self.opts.batch_size.max(1));
        let limit = ctx.timeout.unwrap_or(self.opts.scan_timeout);
        let outcome = tokio::time::timeout(limit, stream).instrument(span).await;
        self.last_stats = decoder.stats;
        let stats = &self.last_stats;
        if stats.rejected_nodes + stats.rejected_edges > 0 {
            let first = &stats.reasons[..stats.reasons.len().min(LOGGED_REASONS)];
            tracing::warn!(plugin = %name, rejected_nodes = stats.rejected_nodes, rejected_edges = stats.rejected_edges,
                first = ?first, "plugin sent malformed items; they were skipped");
        }
        match outcome {
            Ok(Ok(())) => {
                tracing::info!(plugin = %name, nodes = stats.nodes, edges = stats.edges, "plugin scan finished");
                Ok(())
            }
            Ok(Err(status)) => {
                let exited = match self.process.as_mut() {
                    Some(p) => p.wait_exit(CRASH_PROBE).await,
                    None => None,
                };
                let error = status_text(&status);
                match exited {
                    Some(exit) => {
                        self.process = None;
                        Err(SourceError::Failed(format!(
                            "plugin {name} crashed mid-scan: it exited ({exit}); {error}"
                        )))
                    }
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

    fn stop(&mut self) {
        let handle = self.handle.clone();
        handle.block_on(self.shutdown());
    }
}

/// Streams one scan into `sink`, a batch every `batch` nodes or edges.
async fn stream_scan(
    mut client: ProviderClient<Channel>,
    config: HashMap<String, String>,
    decoder: &mut Decoder<'_>,
    sink: &mut dyn ScanSink,
    batch: usize,
) -> Result<(), tonic::Status> {
    let mut stream = client.scan(pb::ScanRequest { config }).await?.into_inner();
    let mut nodes = NodeBatch::with_capacity(batch);
    let mut edges = EdgeBatch::with_capacity(batch);
    while let Some(msg) = stream.message().await? {
        decoder.response(&msg, &mut nodes, &mut edges);
        if nodes.len() >= batch {
            sink.nodes(std::mem::replace(&mut nodes, NodeBatch::with_capacity(batch)));
        }
        if edges.len() >= batch {
            sink.edges(std::mem::replace(&mut edges, EdgeBatch::with_capacity(batch)));
        }
    }
    if !nodes.is_empty() {
        sink.nodes(nodes);
    }
    if !edges.is_empty() {
        sink.edges(edges);
    }
    Ok(())
}
