//! The worker's side of a scan worker (`svc worker`): it serves
//! `svc.provider.v1.Provider` and `Remediator` and relays each call to the
//! local plugin process of the source the call names
//! ([`super::plugins`]). `Scan` goes frame by frame
//! ([`super::scan_relay`]); `Handshake` the worker answers itself; the
//! other calls go through the generated client and server.
//!
//! A worker acts on nothing by itself: it scans, quarantines or remediates
//! only when a daemon asks through the protocol, and deletes nothing.

use std::sync::Arc;

use svc_proto::provider::v1 as pb;
use svc_proto::provider::v1::provider_client::ProviderClient;
use svc_proto::provider::v1::provider_server::{Provider, ProviderServer};
use svc_proto::provider::v1::remediator_client::RemediatorClient;
use svc_proto::provider::v1::remediator_server::{Remediator, RemediatorServer};
use tonic::{Request, Response, Status};

use super::major;
use super::plugins::{PluginTable, WorkerOptions};
use super::scan_relay::ProviderRoutes;
use crate::host::launch::MAX_MESSAGE_BYTES;

/// The worker's services over its plugin processes; cheap to clone.
#[derive(Clone)]
pub struct Relay {
    table: Arc<PluginTable>,
}

impl Relay {
    pub fn new(opts: WorkerOptions) -> Relay {
        Relay {
            table: Arc::new(PluginTable::new(opts)),
        }
    }

    /// The provider plugins in the plugin directory, by name (what this
    /// worker can run).
    pub fn plugins(&self) -> Vec<String> {
        self.table.plugins()
    }

    /// `Provider` (with `Scan` relayed frame by frame) and `Remediator`,
    /// to add to a tonic server.
    pub fn services(&self) -> (ProviderRoutes<Relay>, RemediatorServer<Relay>) {
        let provider = ProviderRoutes {
            table: self.table.clone(),
            generated: ProviderServer::new(self.clone()).max_decoding_message_size(MAX_MESSAGE_BYTES),
        };
        (provider, RemediatorServer::new(self.clone()))
    }

    /// The process id of the plugin that runs `source`, while one runs.
    pub async fn plugin_pid(&self, source: &str) -> Option<u32> {
        self.table.plugin_pid(source).await
    }

    /// Stops every plugin process.
    pub async fn shutdown(&self) {
        self.table.shutdown().await;
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
            format!("svc worker {}", self.table.opts.id)
        } else {
            format!(
                "svc worker {} is version {ours}; daemon version {theirs:?} has another major version",
                self.table.opts.id
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
        let (route, channel) = self.table.unary(&request).await?;
        let call = forward(&request, request.get_ref().clone());
        ProviderClient::new(channel)
            .apply_quarantine(call)
            .await
            .map_err(|s| self.table.relayed_error(&route, s))
    }

    async fn check_reversibility(
        &self,
        request: Request<pb::ReversibilityRequest>,
    ) -> Result<Response<pb::ReversibilityProof>, Status> {
        let (route, channel) = self.table.unary(&request).await?;
        let call = forward(&request, request.get_ref().clone());
        ProviderClient::new(channel)
            .check_reversibility(call)
            .await
            .map_err(|s| self.table.relayed_error(&route, s))
    }

    async fn preflight_check(
        &self,
        request: Request<pb::PreflightRequest>,
    ) -> Result<Response<pb::PreflightResponse>, Status> {
        let (route, channel) = self.table.unary(&request).await?;
        let call = forward(&request, request.get_ref().clone());
        ProviderClient::new(channel).preflight_check(call).await.map_err(|s| {
            // Unimplemented passes as it is: the daemon reads it as "no preflight".
            if s.code() == tonic::Code::Unimplemented {
                s
            } else {
                self.table.relayed_error(&route, s)
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
        let (route, channel) = self.table.unary(&request).await?;
        let call = forward(&request, request.get_ref().clone());
        RemediatorClient::new(channel).remediate(call).await.map_err(|s| {
            if s.code() == tonic::Code::Unimplemented {
                s
            } else {
                self.table.relayed_error(&route, s)
            }
        })
    }
}
