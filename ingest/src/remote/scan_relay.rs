//! `Scan` relayed at the HTTP/2 level: the daemon's request body goes to
//! the source's plugin as it came, and the plugin's answer (headers, DATA
//! frames, trailers: the status and the unlisted-parts trailer) goes back
//! as the plugin sent it, frame by frame, so nothing is decoded or encoded
//! again on the way and HTTP/2 flow control reaches from the daemon to the
//! plugin. A plugin that breaks off its stream ends the relayed one with a
//! status naming the worker, the source and the plugin; a relayed scan the
//! daemon cancels (its timeout or limits, or the daemon gone) kills the
//! plugin, as the daemon does with a local one, and the next call starts it
//! again.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Frame, SizeHint};
use svc_proto::provider::v1 as pb;
use svc_proto::provider::v1::provider_server::{Provider, ProviderServer};
use tonic::Status;
use tonic::body::Body;
use tonic::codegen::http::{self, HeaderMap};
use tonic::codegen::{BoxFuture, Service};
use tonic::server::NamedService;
use tower::ServiceExt;

use super::plugins::{PluginTable, Route, Slot};
use super::{PLUGIN_HEADER, SOURCE_HEADER};
use crate::host::status_text;

const SCAN_PATH: &str = "/svc.provider.v1.Provider/Scan";

/// `svc.provider.v1.Provider` with `Scan` relayed frame by frame and
/// every other method the generated server's.
#[derive(Clone)]
pub struct ProviderRoutes<P> {
    pub(super) table: Arc<PluginTable>,
    pub(super) generated: ProviderServer<P>,
}

impl<P> NamedService for ProviderRoutes<P> {
    const NAME: &'static str = pb::provider_server::SERVICE_NAME;
}

impl<P: Provider> Service<http::Request<Body>> for ProviderRoutes<P> {
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
        let table = self.table.clone();
        Box::pin(async move { Ok(relay_scan(table, req).await) })
    }
}

/// Headers of the daemon's `Scan` request that are not passed to the plugin.
fn relayed_header(name: &http::HeaderName) -> bool {
    !matches!(name.as_str(), SOURCE_HEADER | PLUGIN_HEADER | "host" | "connection")
}

/// One relayed `Scan`: the daemon's request to the source's plugin, the
/// plugin's answer back.
async fn relay_scan(inner: Arc<PluginTable>, req: http::Request<Body>) -> http::Response<Body> {
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
