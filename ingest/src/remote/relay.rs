//! The worker's side of a scan worker (`svc worker`): it serves
//! `svc.provider.v1.Provider` and `Remediator` and relays each call to the
//! local plugin process of the source the call names ([`SOURCE_HEADER`]),
//! launched with the plugin host's own code (integrity check, handshake,
//! health) on the source's first call and again after it exited.
//!
//! `Scan` is relayed at the HTTP/2 level: the request body goes to the
//! plugin as the daemon sent it, and the plugin's response (headers, DATA
//! frames, trailers: the status and the unlisted-parts trailer) comes back
//! as the plugin sent it, frame by frame, so nothing is decoded or encoded
//! again on the way and HTTP/2 flow control reaches from the daemon to the
//! plugin. A plugin that breaks off its stream ends the relayed one with a
//! status naming the worker, the source and the plugin; a relayed scan the
//! daemon cancels (its timeout or limits, or the daemon gone) kills the
//! plugin, as the daemon does with a local one, and the next call starts it
//! again. The other calls go through the generated client and server.
//!
//! A worker acts on nothing by itself: it scans, quarantines or remediates
//! only when a daemon asks through the protocol, and deletes nothing.

use std::collections::HashMap;
use std::convert::Infallible;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Frame, SizeHint};
use svc_proto::provider::v1 as pb;
use svc_proto::provider::v1::provider_client::ProviderClient;
use svc_proto::provider::v1::provider_server::{Provider, ProviderServer};
use svc_proto::provider::v1::remediator_client::RemediatorClient;
use svc_proto::provider::v1::remediator_server::{Remediator, RemediatorServer};
use tonic::body::Body;
use tonic::codegen::http::{self, HeaderMap};
use tonic::codegen::{BoxFuture, Service};
use tonic::server::NamedService;
use tonic::transport::Channel;
use tonic::{Request, Response, Status};
use tower::ServiceExt;

use super::{PLUGIN_HEADER, SOURCE_HEADER, major, valid_plugin_name, valid_source_name};
use crate::host::discover::{Integrity, PLUGIN_PREFIX, discover};
use crate::host::launch::{LaunchOptions, MAX_MESSAGE_BYTES, PluginProcess, drop_if_stale};
use crate::host::manifest::Role;
use crate::host::{HostError, status_text};

const SCAN_PATH: &str = "/svc.provider.v1.Provider/Scan";

/// What a worker is and where its plugins are.
#[derive(Clone, Debug)]
pub struct WorkerOptions {
    /// Its id, in its answers and errors.
    pub id: String,
    /// Where `svc-plugin-<name>` binaries and their manifests are.
    pub plugin_dir: PathBuf,
    /// How plugins are launched (each launch adds its integrity check).
    pub launch: LaunchOptions,
}

/// The worker's services over its plugin processes; cheap to clone.
#[derive(Clone)]
pub struct Relay {
    inner: Arc<Inner>,
}

struct Inner {
    opts: WorkerOptions,
    /// One plugin process per source, by source name.
    slots: Mutex<HashMap<String, Arc<tokio::sync::Mutex<Slot>>>>,
    /// Each plugin binary's integrity check, kept across launches.
    integrity: Mutex<HashMap<String, Arc<Integrity>>>,
}

/// The plugin process that runs one source.
#[derive(Default)]
struct Slot {
    plugin: String,
    process: Option<PluginProcess>,
}

/// The source and plugin a call names.
#[derive(Clone, Debug)]
struct Route {
    source: String,
    plugin: String,
}

impl Route {
    fn of(headers: &HeaderMap) -> Result<Route, Status> {
        let get = |key: &str| -> Result<String, Status> {
            let value = headers
                .get(key)
                .ok_or_else(|| Status::invalid_argument(format!("the call names no {key} (request metadata)")))?;
            value
                .to_str()
                .map(str::to_owned)
                .map_err(|_| Status::invalid_argument(format!("{key} is not ASCII text")))
        };
        let (source, plugin) = (get(SOURCE_HEADER)?, get(PLUGIN_HEADER)?);
        if !valid_source_name(&source) {
            return Err(Status::invalid_argument(format!(
                "invalid {SOURCE_HEADER} {source:?}: 1 to 128 letters, digits, '-', '_', '.', ':'"
            )));
        }
        if !valid_plugin_name(&plugin) {
            return Err(Status::invalid_argument(format!(
                "invalid {PLUGIN_HEADER} {plugin:?}: letters, digits, '-' and '_'"
            )));
        }
        Ok(Route { source, plugin })
    }
}

/// A plugin host error as the status a worker answers with.
fn host_status(worker: &str, route: &Route, e: &HostError) -> Status {
    let message = format!("worker {worker}, source {}: {e}", route.source);
    match e {
        HostError::Rpc { .. } | HostError::Connect { .. } => Status::unavailable(message),
        _ => Status::failed_precondition(message),
    }
}

impl Relay {
    pub fn new(opts: WorkerOptions) -> Relay {
        Relay {
            inner: Arc::new(Inner {
                opts,
                slots: Mutex::new(HashMap::new()),
                integrity: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// The provider plugins in the plugin directory, by name (what this
    /// worker can run).
    pub fn plugins(&self) -> Vec<String> {
        discover(&self.inner.opts.plugin_dir)
            .into_iter()
            .filter(|d| d.manifest.as_ref().is_ok_and(|m| m.role == Role::Provider))
            .map(|d| d.name)
            .collect()
    }

    /// `Provider` (with `Scan` relayed frame by frame) and `Remediator`,
    /// to add to a tonic server.
    pub fn services(&self) -> (ProviderRoutes, RemediatorServer<Relay>) {
        let provider = ProviderRoutes {
            relay: self.clone(),
            generated: ProviderServer::new(self.clone()).max_decoding_message_size(MAX_MESSAGE_BYTES),
        };
        (provider, RemediatorServer::new(self.clone()))
    }

    /// The process id of the plugin that runs `source`, while one runs.
    pub async fn plugin_pid(&self, source: &str) -> Option<u32> {
        let slot = self
            .inner
            .slots
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(source)
            .cloned()?;
        let mut held = slot.lock().await;
        let process = held.process.as_mut()?;
        if process.exit_status().is_some() {
            return None;
        }
        process.id()
    }

    /// Stops every plugin process.
    pub async fn shutdown(&self) {
        let slots: Vec<_> = self
            .inner
            .slots
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .drain()
            .map(|(_, s)| s)
            .collect();
        for slot in slots {
            if let Some(p) = slot.lock().await.process.take() {
                p.shutdown().await;
            }
        }
    }
}

impl Inner {
    fn launch_options(&self, plugin: &str) -> LaunchOptions {
        let integrity = self
            .integrity
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(plugin.to_owned())
            .or_default()
            .clone();
        LaunchOptions {
            integrity: Some(integrity),
            ..self.opts.launch.clone()
        }
    }

    /// The slot of `route`'s source and a channel to its running plugin,
    /// launched (or launched again: it exited, its binary was installed
    /// again, or the source now names another plugin) when needed.
    async fn channel(&self, route: &Route) -> Result<(Arc<tokio::sync::Mutex<Slot>>, Channel, Option<u32>), Status> {
        let worker = &self.opts.id;
        let slot = self
            .slots
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(route.source.clone())
            .or_default()
            .clone();
        let mut held = slot.lock().await;
        if held.plugin != route.plugin {
            if let Some(p) = held.process.take() {
                p.shutdown().await;
            }
            held.plugin = route.plugin.clone();
        }
        let opts = self.launch_options(&route.plugin);
        drop_if_stale(&mut held.process, &opts)
            .await
            .map_err(|e| host_status(worker, route, &e))?;
        if held.process.is_none() {
            let path = self.opts.plugin_dir.join(format!("{PLUGIN_PREFIX}{}", route.plugin));
            if !path.is_file() {
                return Err(Status::failed_precondition(format!(
                    "worker {worker} has no plugin {}: no {} (install it with `svc plugins install-local`)",
                    route.plugin,
                    path.display()
                )));
            }
            let process = PluginProcess::launch(&path, Role::Provider, &opts)
                .await
                .map_err(|e| host_status(worker, route, &e))?;
            tracing::info!(source = %route.source, plugin = %route.plugin, pid = process.id(),
                "plugin started for a source");
            held.process = Some(process);
        }
        let (channel, pid) = match held.process.as_ref() {
            Some(p) => (p.channel(), p.id()),
            None => return Err(Status::internal("the plugin process went away")),
        };
        drop(held);
        Ok((slot, channel, pid))
    }

    /// Routes a unary call: the request's source, and its plugin's channel.
    async fn unary<T>(&self, request: &Request<T>) -> Result<(Route, Channel), Status> {
        let route = Route::of(request.metadata().as_ref())?;
        let (_, channel, _) = self.channel(&route).await?;
        Ok((route, channel))
    }

    /// The status of a relayed call that failed: the plugin's own, with
    /// the worker and source named.
    fn relayed_error(&self, route: &Route, status: Status) -> Status {
        Status::new(
            status.code(),
            format!(
                "worker {}, source {} (plugin {}): {}",
                self.opts.id,
                route.source,
                route.plugin,
                status_text(&status)
            ),
        )
    }
}

/// `message` with the metadata a plugin call carries on: the trace context.
fn forward<T, U>(request: &Request<T>, message: U) -> Request<U> {
    let mut out = Request::new(message);
    if let Some(v) = request.metadata().get(crate::host::trace::TRACEPARENT) {
        out.metadata_mut().insert(crate::host::trace::TRACEPARENT, v.clone());
    }
    out
}

#[tonic::async_trait]
impl Provider for Relay {
    /// The worker's own answer: compatible with a daemon of its major version.
    async fn handshake(
        &self,
        request: Request<pb::HandshakeRequest>,
    ) -> Result<Response<pb::HandshakeResponse>, Status> {
        let ours = env!("CARGO_PKG_VERSION");
        let theirs = &request.get_ref().daemon_version;
        let compatible = major(theirs).is_some() && major(theirs) == major(ours);
        let message = if compatible {
            format!("svc worker {}", self.inner.opts.id)
        } else {
            format!(
                "svc worker {} is version {ours}; daemon version {theirs:?} has another major version",
                self.inner.opts.id
            )
        };
        Ok(Response::new(pb::HandshakeResponse {
            compatible,
            plugin_version: ours.to_owned(),
            message,
        }))
    }

    type ScanStream = tokio_stream::wrappers::ReceiverStream<Result<pb::ScanResponse, Status>>;

    /// Never reached: [`ProviderRoutes`] relays `Scan` before the generated server sees it.
    async fn scan(&self, _request: Request<pb::ScanRequest>) -> Result<Response<Self::ScanStream>, Status> {
        Err(Status::internal(
            "Scan is relayed before it reaches the generated server",
        ))
    }

    async fn apply_quarantine(
        &self,
        request: Request<pb::QuarantineRequest>,
    ) -> Result<Response<pb::QuarantineResponse>, Status> {
        let (route, channel) = self.inner.unary(&request).await?;
        let call = forward(&request, request.get_ref().clone());
        ProviderClient::new(channel)
            .apply_quarantine(call)
            .await
            .map_err(|s| self.inner.relayed_error(&route, s))
    }

    async fn check_reversibility(
        &self,
        request: Request<pb::ReversibilityRequest>,
    ) -> Result<Response<pb::ReversibilityProof>, Status> {
        let (route, channel) = self.inner.unary(&request).await?;
        let call = forward(&request, request.get_ref().clone());
        ProviderClient::new(channel)
            .check_reversibility(call)
            .await
            .map_err(|s| self.inner.relayed_error(&route, s))
    }

    async fn preflight_check(
        &self,
        request: Request<pb::PreflightRequest>,
    ) -> Result<Response<pb::PreflightResponse>, Status> {
        let (route, channel) = self.inner.unary(&request).await?;
        let call = forward(&request, request.get_ref().clone());
        ProviderClient::new(channel).preflight_check(call).await.map_err(|s| {
            // Unimplemented passes as it is: the daemon reads it as "no preflight".
            if s.code() == tonic::Code::Unimplemented {
                s
            } else {
                self.inner.relayed_error(&route, s)
            }
        })
    }
}

#[tonic::async_trait]
impl Remediator for Relay {
    async fn remediate(
        &self,
        request: Request<pb::RemediateRequest>,
    ) -> Result<Response<pb::RemediateResponse>, Status> {
        let (route, channel) = self.inner.unary(&request).await?;
        let call = forward(&request, request.get_ref().clone());
        RemediatorClient::new(channel).remediate(call).await.map_err(|s| {
            if s.code() == tonic::Code::Unimplemented {
                s
            } else {
                self.inner.relayed_error(&route, s)
            }
        })
    }
}

/// `svc.provider.v1.Provider` with `Scan` relayed frame by frame and
/// every other method the generated server's.
#[derive(Clone)]
pub struct ProviderRoutes {
    relay: Relay,
    generated: ProviderServer<Relay>,
}

impl NamedService for ProviderRoutes {
    const NAME: &'static str = pb::provider_server::SERVICE_NAME;
}

impl Service<http::Request<Body>> for ProviderRoutes {
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture<Self::Response, Self::Error>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<Body>) -> Self::Future {
        if req.uri().path() != SCAN_PATH {
            return self.generated.call(req);
        }
        let inner = self.relay.inner.clone();
        Box::pin(async move { Ok(relay_scan(inner, req).await) })
    }
}

/// Headers of the daemon's `Scan` request that are not passed to the plugin.
fn relayed_header(name: &http::HeaderName) -> bool {
    !matches!(name.as_str(), SOURCE_HEADER | PLUGIN_HEADER | "host" | "connection")
}

/// One relayed `Scan`: the daemon's request to the source's plugin, the
/// plugin's answer back.
async fn relay_scan(inner: Arc<Inner>, req: http::Request<Body>) -> http::Response<Body> {
    let route = match Route::of(req.headers()) {
        Ok(r) => r,
        Err(status) => return status.into_http(),
    };
    let (slot, channel, pid) = match inner.channel(&route).await {
        Ok(c) => c,
        Err(status) => return status.into_http(),
    };
    let (parts, body) = req.into_parts();
    let mut forward = http::Request::new(body);
    *forward.method_mut() = http::Method::POST;
    *forward.uri_mut() = http::Uri::from_static(SCAN_PATH);
    *forward.version_mut() = http::Version::HTTP_2;
    for (name, value) in &parts.headers {
        if relayed_header(name) {
            forward.headers_mut().append(name.clone(), value.clone());
        }
    }
    tracing::info!(source = %route.source, plugin = %route.plugin, "scan relayed to the plugin");
    let response = match channel.oneshot(forward).await {
        Ok(r) => r,
        Err(e) => {
            let status = Status::unavailable(format!(
                "worker {}, source {} (plugin {}): the plugin could not be called: {e}",
                inner.opts.id, route.source, route.plugin
            ));
            return status.into_http();
        }
    };
    let (parts, body) = response.into_parts();
    let relayed = Relayed {
        body,
        done: false,
        cancel: Some(Cancel { slot, pid, route }),
        worker: inner.opts.id.clone(),
    };
    http::Response::from_parts(parts, Body::new(relayed))
}

/// What stops the plugin of a scan the daemon gave up on.
struct Cancel {
    slot: Arc<tokio::sync::Mutex<Slot>>,
    /// The process that serves the scan (a later one is left alone).
    pid: Option<u32>,
    route: Route,
}

/// A plugin's `Scan` answer on its way to the daemon: its frames as they
/// are, until its trailers.
struct Relayed {
    body: Body,
    done: bool,
    /// Taken when the answer ended, one way or another.
    cancel: Option<Cancel>,
    worker: String,
}

impl http_body::Body for Relayed {
    type Data = Bytes;
    type Error = Status;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
        let this = self.get_mut();
        if this.done {
            return Poll::Ready(None);
        }
        match Pin::new(&mut this.body).poll_frame(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Some(Ok(frame))) => {
                if frame.is_trailers() {
                    this.done = true;
                    this.cancel = None;
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(None) => {
                this.done = true;
                this.cancel = None;
                Poll::Ready(None)
            }
            Poll::Ready(Some(Err(status))) => {
                // The plugin broke off (it crashed, or its connection did):
                // the daemon gets a status that says where.
                this.done = true;
                let route = this.cancel.take().map(|c| c.route);
                let (source, plugin) = route.map(|r| (r.source, r.plugin)).unwrap_or_default();
                let broke = Status::unavailable(format!(
                    "worker {}, source {source} (plugin {plugin}): the plugin broke off its scan: {}",
                    this.worker,
                    status_text(&status)
                ));
                tracing::warn!(%source, %plugin, error = %status_text(&status), "relayed scan broken off by the plugin");
                let mut trailers = HeaderMap::new();
                if broke.add_header(&mut trailers).is_err() {
                    let _ = Status::unavailable("the plugin broke off its scan").add_header(&mut trailers);
                }
                Poll::Ready(Some(Ok(Frame::trailers(trailers))))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.done || self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

impl Drop for Relayed {
    /// A scan dropped before its end (the daemon cancelled it or went
    /// away): its plugin may not stop streaming by itself, so it is killed;
    /// the source's next call starts it again.
    fn drop(&mut self) {
        let Some(cancel) = self.cancel.take() else { return };
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            return;
        };
        handle.spawn(async move {
            let mut held = cancel.slot.lock().await;
            if held.process.as_ref().is_some_and(|p| p.id() == cancel.pid)
                && let Some(mut p) = held.process.take()
            {
                tracing::warn!(source = %cancel.route.source, plugin = %cancel.route.plugin,
                    "the daemon cancelled a relayed scan; killing its plugin");
                p.kill().await;
            }
        });
    }
}
