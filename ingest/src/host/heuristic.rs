//! A heuristic plugin as an engine [`Analyzer`]: launched on first use and
//! after it exited, asked `Metadata` once per start, fed through the
//! bidirectional `Analyze` stream (SPEC 4.7).

use std::ops::ControlFlow;
use std::path::PathBuf;
use std::sync::mpsc::Receiver;
use std::time::Duration;

use svc_engine::heuristics::{AnalyzeBatch, Analyzer, AnalyzerSpec, PluginFinding};
use svc_engine::scan::SourceError;
use svc_proto::heuristic::v1 as hpb;
use svc_proto::heuristic::v1::heuristic_plugin_client::HeuristicPluginClient;
use tokio::runtime::Handle;
use tokio_stream::wrappers::ReceiverStream;
use tonic::transport::Channel;

use super::launch::{PluginProcess, drop_if_stale, exited_after_error, fmt_duration, plugin_name};
use super::manifest::Role;
use super::source::SourceOptions;
use super::{HostError, status_text};

/// Largest findings message accepted from a plugin.
const MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;
/// Batches converted ahead of what the plugin has read.
const BATCHES_BUFFERED: usize = 2;

/// One heuristic plugin binary.
pub struct HeuristicPlugin {
    name: String,
    path: PathBuf,
    opts: SourceOptions,
    handle: Handle,
    process: Option<PluginProcess>,
    /// `Metadata` of the running process.
    spec: Option<AnalyzerSpec>,
}

impl HeuristicPlugin {
    /// An analyzer for the plugin binary at `path`. `handle` is the runtime
    /// the plugin's I/O runs on; the [`Analyzer`] methods block on it, so
    /// they must be called outside that runtime's workers.
    pub fn new(path: impl Into<PathBuf>, opts: SourceOptions, handle: Handle) -> HeuristicPlugin {
        let path = path.into();
        HeuristicPlugin {
            name: plugin_name(&path),
            path,
            opts,
            handle,
            process: None,
            spec: None,
        }
    }

    /// The running process, if any.
    pub fn process(&self) -> Option<&PluginProcess> {
        self.process.as_ref()
    }

    /// Stops the plugin if it is running.
    pub async fn shutdown(&mut self) {
        if let Some(p) = self.process.take() {
            p.shutdown().await;
        }
    }

    fn client(&self) -> Option<HeuristicPluginClient<Channel>> {
        self.process
            .as_ref()
            .map(|p| HeuristicPluginClient::new(p.channel()).max_decoding_message_size(MAX_MESSAGE_BYTES))
    }

    /// Launches the plugin unless it runs, and asks its `Metadata` once per start.
    async fn ensure(&mut self) -> Result<AnalyzerSpec, HostError> {
        drop_if_stale(&mut self.process, &self.opts.launch).await?;
        if self.process.is_none() {
            self.spec = None;
            self.process = Some(PluginProcess::launch(&self.path, Role::Heuristic, &self.opts.launch).await?);
        }
        if let Some(spec) = &self.spec {
            return Ok(spec.clone());
        }
        let Some(mut client) = self.client() else {
            return Err(HostError::NoHandshake {
                name: self.name.clone(),
                reason: "the process is gone".into(),
            });
        };
        let t = self.opts.launch.handshake_timeout;
        let reply = match tokio::time::timeout(t, client.metadata(hpb::MetadataRequest {})).await {
            Err(_) => {
                return Err(HostError::NoHandshake {
                    name: self.name.clone(),
                    reason: format!("Metadata not answered within {}", fmt_duration(t)),
                });
            }
            Ok(Err(status)) => return Err(HostError::rpc(&self.name, "Metadata", &status)),
            Ok(Ok(r)) => r.into_inner(),
        };
        let spec = spec_from_wire(reply);
        tracing::info!(plugin = %self.name, rule = %spec.name, version = %spec.version,
            types = ?spec.resource_type_filter, properties = ?spec.required_properties,
            batch = spec.batch_size(), "heuristic plugin ready");
        self.spec = Some(spec.clone());
        Ok(spec)
    }

    async fn analyze_async(
        &mut self,
        batches: Receiver<AnalyzeBatch>,
        timeout: Option<Duration>,
        found: &mut dyn FnMut(PluginFinding) -> ControlFlow<()>,
    ) -> Result<(), SourceError> {
        let name = self.name.clone();
        let Some(mut client) = self.client() else {
            return Err(SourceError::Failed(format!("heuristic plugin {name} is not running")));
        };
        // The engine produces batches on a plain thread; a bridge thread
        // converts them and waits for room in the request stream, so the
        // plugin's reading pace holds the producer back.
        let (tx, rx) = tokio::sync::mpsc::channel::<hpb::NodeBatch>(BATCHES_BUFFERED);
        std::thread::Builder::new()
            .name(format!("heuristic-{name}"))
            .spawn(move || {
                for b in batches {
                    let last = b.is_last;
                    if tx.blocking_send(to_wire(b)).is_err() || last {
                        break;
                    }
                }
            })
            .map_err(|e| SourceError::Failed(format!("heuristic plugin {name}: cannot start its feeder: {e}")))?;
        let limit = timeout.unwrap_or(self.opts.scan_timeout);
        let mut refused = false;
        // Inside the engine's `plugin.analyze` span: the plugin's span joins it.
        let request = super::trace::request(&tracing::Span::current(), ReceiverStream::new(rx));
        let stream = async {
            let mut findings = client.analyze(request).await?.into_inner();
            while let Some(f) = findings.message().await? {
                if found(from_wire(f)).is_break() {
                    // Dropping the stream cancels the call.
                    refused = true;
                    break;
                }
            }
            Ok::<(), tonic::Status>(())
        };
        let result = tokio::time::timeout(limit, stream).await;
        if refused {
            // One that answers without end may not stop on a cancelled call;
            // the next pass starts it again.
            tracing::warn!(plugin = %name, "the engine stopped taking a heuristic plugin's findings; killing it");
            if let Some(mut p) = self.process.take() {
                p.kill().await;
            }
            self.spec = None;
            return Err(SourceError::Failed(format!(
                "heuristic plugin {name}: the engine stopped taking its findings"
            )));
        }
        match result {
            Ok(Ok(())) => Ok(()),
            Ok(Err(status)) => {
                let error = status_text(&status);
                match exited_after_error(&mut self.process).await {
                    Some(exit) => {
                        self.spec = None;
                        Err(SourceError::Failed(format!(
                            "heuristic plugin {name} crashed during Analyze: it exited ({exit}); {error}"
                        )))
                    }
                    None => Err(SourceError::Failed(format!(
                        "heuristic plugin {name} Analyze failed: {error}"
                    ))),
                }
            }
            Err(_) => {
                let after = fmt_duration(limit);
                tracing::warn!(plugin = %name, timeout = %after, "heuristic plugin timed out; killing it");
                if let Some(mut p) = self.process.take() {
                    p.kill().await;
                }
                self.spec = None;
                Err(SourceError::Timeout(after))
            }
        }
    }
}

fn to_wire(b: AnalyzeBatch) -> hpb::NodeBatch {
    hpb::NodeBatch {
        nodes: b
            .nodes
            .into_iter()
            .map(|n| hpb::GraphNode {
                crn: n.crn,
                resource_type: n.resource_type,
                cost_usd: n.cost_usd,
                properties: n.properties.into_iter().collect(),
            })
            .collect(),
        is_last: b.is_last,
    }
}

/// A plugin's `Metadata` answer as the engine takes it. Public for the
/// fuzz targets.
#[doc(hidden)]
pub fn spec_from_wire(reply: hpb::MetadataResponse) -> AnalyzerSpec {
    AnalyzerSpec {
        name: reply.name,
        description: reply.description,
        version: reply.version,
        resource_type_filter: reply.resource_type_filter,
        required_properties: reply.required_properties,
        preferred_batch_size: reply.preferred_batch_size,
    }
}

/// One of a plugin's findings as the engine takes it, unchecked. Public
/// for the fuzz targets.
#[doc(hidden)]
pub fn from_wire(f: hpb::HeuristicFinding) -> PluginFinding {
    PluginFinding {
        crn: f.crn,
        is_waste: f.is_waste,
        risk_score: f.risk_score,
        reason: f.reason,
        suggested_action: f.suggested_action,
        projected_savings_usd: f.projected_savings_usd,
        annotations: f.annotations.into_iter().collect(),
    }
}

impl Analyzer for HeuristicPlugin {
    fn name(&self) -> &str {
        &self.name
    }

    fn identity(&self) -> Option<String> {
        Some(self.path.display().to_string())
    }

    fn spec(&mut self) -> Result<AnalyzerSpec, SourceError> {
        let handle = self.handle.clone();
        handle
            .block_on(self.ensure())
            .map_err(|e| SourceError::Failed(e.to_string()))
    }

    fn analyze(
        &mut self,
        batches: Receiver<AnalyzeBatch>,
        timeout: Option<Duration>,
        found: &mut dyn FnMut(PluginFinding) -> ControlFlow<()>,
    ) -> Result<(), SourceError> {
        let handle = self.handle.clone();
        handle.block_on(self.analyze_async(batches, timeout, found))
    }

    fn stop(&mut self) {
        let handle = self.handle.clone();
        handle.block_on(self.shutdown());
    }
}
