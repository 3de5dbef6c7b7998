//! The daemon's side of a scan worker: a [`RemoteSource`] is one source
//! (an account, a region, a cluster) that a remote worker runs. At each
//! scan it looks up its worker in the assignment, dials it with the
//! daemon's client certificate (once per worker, then the channel is kept),
//! and runs the usual provider scan over it: the same decode workers,
//! staging, limits and timeout as a local plugin's
//! ([`crate::host::source::stream_into`]). A worker that is gone, or dies
//! or errs mid-scan, fails this source only, and a failed source lands
//! nothing and retires nothing.

use std::collections::{BTreeMap, HashMap};

use svc_engine::scan::{
    QuarantineOutcome, RemediateOutcome, RemediateRequest, ReversibilityAsk, ReversibilityProof, ScanContext, ScanSink,
    Source, SourceError, Unlisted,
};
use svc_proto::provider::v1 as pb;
use svc_proto::provider::v1::provider_client::ProviderClient;
use svc_proto::provider::v1::remediator_client::RemediatorClient;
use tokio::runtime::Handle;
use tonic::codegen::http::{HeaderMap, HeaderValue};
use tonic::transport::{Channel, ClientTlsConfig, Endpoint};

use super::assignment::{AssignmentRx, WorkerAddr};
use super::{PLUGIN_HEADER, SOURCE_HEADER};
use crate::decode::DecodeStats;
use crate::host::launch::{MAX_FRAME_BYTES, STREAM_WINDOW_BYTES, error_chain, fmt_duration};
use crate::host::source::{
    PROOFS_IN_FLIGHT, ScanCall, SourceOptions, Streamed, failed_proofs, proof_of, proof_request, stream_into,
};
use crate::host::{status_text, trace, unlisted};

/// What a remote source is: its name, the plugin that runs it on a worker,
/// and the providers it answers for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RemoteSpec {
    /// The source's name: in scan reports, in the assignment, in
    /// [`SOURCE_HEADER`]; its scan settings are the engine's for this name.
    pub name: String,
    /// The plugin that scans it (`svc-plugin-<plugin>` on the worker).
    pub plugin: String,
    /// Providers (CRN provider segments) it answers for; when its scan
    /// fails, their resources are kept as they are.
    pub providers: Vec<String>,
}

/// A source a remote worker runs, as an engine [`Source`].
pub struct RemoteSource {
    spec: RemoteSpec,
    assignment: AssignmentRx,
    tls: ClientTlsConfig,
    opts: SourceOptions,
    handle: Handle,
    /// Which build of the sources this is ([`RemoteSource::with_generation`]).
    generation: u64,
    /// The worker dialled last and its channel.
    link: Option<(WorkerAddr, Channel)>,
    last_stats: DecodeStats,
    last_unlisted: Vec<Unlisted>,
}

impl RemoteSource {
    /// A source scanned through the worker `assignment` names for it.
    /// `handle` is the runtime the calls run on; `scan` blocks on it.
    pub fn new(
        spec: RemoteSpec,
        assignment: AssignmentRx,
        tls: ClientTlsConfig,
        opts: SourceOptions,
        handle: Handle,
    ) -> RemoteSource {
        RemoteSource {
            spec,
            assignment,
            tls,
            opts,
            handle,
            generation: 0,
            link: None,
            last_stats: DecodeStats::default(),
            last_unlisted: Vec::new(),
        }
    }

    /// Marks the source as of build `generation` of the sources: one of
    /// another build replaces it when the sources are rebuilt (its TLS
    /// settings changed), where an equal one would give way to it.
    pub fn with_generation(mut self, generation: u64) -> RemoteSource {
        self.generation = generation;
        self
    }

    fn failed(&self, worker: &WorkerAddr, why: impl std::fmt::Display) -> SourceError {
        SourceError::Failed(format!(
            "source {} on worker {} ({}): {why}",
            self.spec.name, worker.id, worker.addr
        ))
    }

    /// The metadata every call carries: the source and its plugin.
    fn metadata(&self) -> HeaderMap {
        let mut headers = HeaderMap::new();
        // Both names were checked when the source was configured.
        if let (Ok(source), Ok(plugin)) = (
            HeaderValue::from_str(&self.spec.name),
            HeaderValue::from_str(&self.spec.plugin),
        ) {
            headers.insert(SOURCE_HEADER, source);
            headers.insert(PLUGIN_HEADER, plugin);
        }
        headers
    }

    fn request<T>(&self, message: T) -> tonic::Request<T> {
        let span = tracing::Span::current();
        let mut req = trace::request(&span, message);
        req.metadata_mut().as_mut().extend(self.metadata());
        req
    }

    /// The worker that runs this source now, and a channel to it: the one
    /// kept when it is the same worker, else a new one, handshaken.
    async fn link(&mut self) -> Result<(WorkerAddr, Channel), SourceError> {
        let worker = self.assignment.borrow().get(&self.spec.name).cloned();
        let Some(worker) = worker else {
            return Err(SourceError::Failed(format!(
                "source {} is assigned to no live worker",
                self.spec.name
            )));
        };
        if let Some((w, channel)) = &self.link
            && *w == worker
        {
            return Ok((worker, channel.clone()));
        }
        self.link = None;
        let within = self.opts.launch.handshake_timeout;
        let endpoint = Endpoint::from_shared(format!("https://{}", worker.addr))
            .map_err(|e| self.failed(&worker, format!("invalid address: {}", error_chain(&e))))?
            .tls_config(self.tls.clone())
            .map_err(|e| self.failed(&worker, format!("TLS settings refused: {}", error_chain(&e))))?
            .connect_timeout(within)
            .max_frame_size(MAX_FRAME_BYTES)
            .initial_stream_window_size(STREAM_WINDOW_BYTES)
            .initial_connection_window_size(STREAM_WINDOW_BYTES);
        let channel = endpoint
            .connect()
            .await
            .map_err(|e| self.failed(&worker, format!("cannot be reached: {}", error_chain(&e))))?;
        let mut client = ProviderClient::new(channel.clone());
        let call = client.handshake(self.request(pb::HandshakeRequest {
            daemon_version: self.opts.launch.daemon_version.clone(),
        }));
        let reply = match tokio::time::timeout(within, call).await {
            Err(_) => {
                return Err(self.failed(
                    &worker,
                    format!("Handshake not answered within {}", fmt_duration(within)),
                ));
            }
            Ok(Err(status)) => return Err(self.failed(&worker, format!("Handshake failed: {}", status_text(&status)))),
            Ok(Ok(r)) => r.into_inner(),
        };
        if !reply.compatible {
            return Err(self.failed(&worker, format!("the worker is incompatible: {}", reply.message)));
        }
        tracing::info!(source = %self.spec.name, worker = %worker.id, addr = %worker.addr,
            version = %reply.plugin_version, "connected to a scan worker");
        self.link = Some((worker.clone(), channel.clone()));
        Ok((worker, channel))
    }

    /// The relayed `PreflightCheck`: a plugin that reports its credentials
    /// or settings unusable fails the scan with its words.
    async fn preflight(
        &self,
        worker: &WorkerAddr,
        channel: Channel,
        config: &HashMap<String, String>,
    ) -> Result<(), SourceError> {
        // The worker may launch the source's plugin first: its handshake
        // line, health check and Handshake each get the handshake time, and
        // then the check itself.
        let within = self.opts.launch.handshake_timeout * 4;
        let mut client = ProviderClient::new(channel);
        let call = client.preflight_check(self.request(pb::PreflightRequest { config: config.clone() }));
        match tokio::time::timeout(within, call).await {
            Err(_) => Err(self.failed(
                worker,
                format!("PreflightCheck not answered within {}", fmt_duration(within)),
            )),
            Ok(Err(status)) if status.code() == tonic::Code::Unimplemented => Ok(()),
            Ok(Err(status)) => Err(self.failed(worker, format!("PreflightCheck failed: {}", status_text(&status)))),
            Ok(Ok(r)) => {
                let r = r.into_inner();
                if r.ok {
                    return Ok(());
                }
                let mut why = format!("plugin {} preflight check failed: {}", self.spec.plugin, r.message);
                if !r.missing.is_empty() {
                    why.push_str(&format!(" (missing: {})", r.missing.join(", ")));
                }
                Err(self.failed(worker, why))
            }
        }
    }

    async fn scan_async(&mut self, ctx: &ScanContext<'_>, sink: &mut dyn ScanSink) -> Result<(), SourceError> {
        self.last_unlisted.clear();
        let (worker, channel) = self.link().await?;
        let mut config: HashMap<String, String> = ctx.config.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        config.insert("scan_seq".to_owned(), ctx.scan_seq.to_string());
        if let Err(e) = self.preflight(&worker, channel.clone(), &config).await {
            self.link = None;
            return Err(e);
        }
        let name = self.spec.name.clone();
        let span = tracing::info_span!("worker.scan", source = %name, worker = %worker.id, scan_seq = ctx.scan_seq);
        let limit = ctx.timeout.unwrap_or(self.opts.scan_timeout);
        let call = ScanCall {
            channel,
            request: pb::ScanRequest { config },
            headers: self.metadata(),
        };
        let Streamed {
            outcome,
            stats,
            malformed,
        } = stream_into(call, ctx, sink, &self.opts, &self.handle, span, limit);
        self.last_stats = stats;
        if let Some(why) = sink.refused() {
            // The call is cancelled; the worker kills the plugin.
            self.link = None;
            return Err(self.failed(&worker, why));
        }
        let stats = &self.last_stats;
        if stats.rejected_nodes + stats.rejected_edges > 0 {
            let first = &stats.reasons[..stats.reasons.len().min(5)];
            tracing::warn!(source = %name, worker = %worker.id, rejected_nodes = stats.rejected_nodes,
                rejected_edges = stats.rejected_edges, first = ?first, "source sent malformed items; they were skipped");
        }
        if let Some(fault) = malformed {
            return Err(self.failed(&worker, format!("malformed ScanResponse: {fault}")));
        }
        match outcome {
            Ok(Ok(trailers)) => {
                let unlisted = unlisted::from_trailers(trailers.as_ref())
                    .map_err(|why| self.failed(&worker, format!("the scan ended badly: {why}")))?;
                tracing::info!(source = %name, worker = %worker.id, nodes = stats.nodes, edges = stats.edges,
                    unlisted = unlisted.len(), "remote source scan finished");
                self.last_unlisted = unlisted;
                Ok(())
            }
            Ok(Err(status)) => {
                // The next scan dials again: the worker may have died.
                self.link = None;
                Err(self.failed(&worker, format!("scan failed: {}", status_text(&status))))
            }
            Err(_) => {
                self.link = None;
                Err(SourceError::Timeout(fmt_duration(limit)))
            }
        }
    }

    /// Runs a unary call on the source's worker, in the blocking caller's thread.
    fn call<T>(
        &mut self,
        run: impl AsyncFnOnce(Channel, &RemoteSource) -> Result<T, tonic::Status>,
    ) -> Result<T, SourceError> {
        let handle = self.handle.clone();
        handle.block_on(async {
            let (worker, channel) = self.link().await?;
            match run(channel, self).await {
                Ok(v) => Ok(v),
                Err(status) => {
                    self.link = None;
                    Err(self.failed(&worker, status_text(&status)))
                }
            }
        })
    }
}

impl Source for RemoteSource {
    fn name(&self) -> &str {
        &self.spec.name
    }

    fn identity(&self) -> Option<String> {
        Some(format!(
            "remote:{}:{}:{}",
            self.spec.name,
            self.spec.plugin,
            self.spec.providers.join(",")
        ))
    }

    fn providers(&self) -> Vec<String> {
        self.spec.providers.clone()
    }

    fn scan(&mut self, ctx: &ScanContext<'_>, sink: &mut dyn ScanSink) -> Result<(), SourceError> {
        let handle = self.handle.clone();
        handle.block_on(self.scan_async(ctx, sink))
    }

    fn rejections(&self) -> (u64, Vec<String>) {
        let st = &self.last_stats;
        (st.rejected_nodes + st.rejected_edges, st.reasons.clone())
    }

    fn unlisted(&self) -> Vec<Unlisted> {
        self.last_unlisted.clone()
    }

    fn checks_reversibility(&self) -> bool {
        true
    }

    fn check_reversibility(
        &mut self,
        crn: &str,
        properties: &BTreeMap<String, String>,
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
            let (worker, channel) = match self.link().await {
                Ok(link) => link,
                Err(e) => return failed_proofs(asks, &e.to_string()),
            };
            let me = &*self;
            let calls = asks.iter().map(|a| {
                let mut client = ProviderClient::new(channel.clone());
                async move { client.check_reversibility(me.request(proof_request(a))).await }
            });
            let answers: Vec<Result<tonic::Response<pb::ReversibilityProof>, tonic::Status>> =
                futures::stream::iter(calls).buffered(PROOFS_IN_FLIGHT).collect().await;
            let answers: Vec<_> = answers
                .into_iter()
                .map(|r| {
                    Some(
                        r.map(|r| proof_of(r.into_inner()))
                            .map_err(|status| self.failed(&worker, status_text(&status))),
                    )
                })
                .collect();
            // As after a failed single call: the next call links afresh.
            if answers.iter().any(|a| matches!(a, Some(Err(_)))) {
                self.link = None;
            }
            answers
        })
    }

    fn remediate(&mut self, r: &RemediateRequest<'_>) -> Option<Result<RemediateOutcome, SourceError>> {
        let req = pb::RemediateRequest {
            crn: r.crn.to_owned(),
            action: r.action.to_owned(),
            properties: r.properties.clone().into_iter().collect(),
            dry_run: r.dry_run,
        };
        Some(
            self.call(async move |channel, me| RemediatorClient::new(channel).remediate(me.request(req)).await)
                .map(|r| {
                    let r = r.into_inner();
                    RemediateOutcome {
                        success: r.success,
                        status: r.status,
                        error: r.error,
                        snapshot: r.snapshot.into_iter().collect(),
                    }
                }),
        )
    }

    fn apply_quarantine(
        &mut self,
        crn: &str,
        action: &str,
        reason: &str,
    ) -> Option<Result<QuarantineOutcome, SourceError>> {
        let req = pb::QuarantineRequest {
            crn: crn.to_owned(),
            action: action.to_owned(),
            reason: reason.to_owned(),
        };
        Some(
            self.call(async move |channel, me| ProviderClient::new(channel).apply_quarantine(me.request(req)).await)
                .map(|r| {
                    let r = r.into_inner();
                    QuarantineOutcome {
                        success: r.success,
                        message: r.message,
                    }
                }),
        )
    }
}
