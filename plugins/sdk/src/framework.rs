//! The framework services every plugin serves next to its own:
//! `grpc.health.v1.Health`, `plugin.GRPCController` and `plugin.GRPCStdio`.

use std::sync::Arc;

use svc_proto::health::v1::health_check_response::ServingStatus;
use svc_proto::health::v1::health_server::Health;
use svc_proto::health::v1::{HealthCheckRequest, HealthCheckResponse};
use svc_proto::plugin::grpc_controller_server::GrpcController;
use svc_proto::plugin::grpc_stdio_server::GrpcStdio;
use svc_proto::plugin::{Empty, StdioData};
use tokio::sync::Notify;
use tokio_stream::StreamExt;
use tonic::{Request, Response, Status};

use crate::stream::ResponseStream;

/// Reports SERVING for `""`, `"plugin"` and each served service name.
pub(crate) struct HealthService {
    pub(crate) serving: Vec<String>,
}

impl HealthService {
    fn status(&self, service: &str) -> Result<HealthCheckResponse, Status> {
        if service.is_empty() || service == "plugin" || self.serving.iter().any(|s| s == service) {
            Ok(HealthCheckResponse {
                status: ServingStatus::Serving as i32,
            })
        } else {
            Err(Status::not_found(format!("unknown service {service:?}")))
        }
    }
}

#[tonic::async_trait]
impl Health for HealthService {
    async fn check(&self, request: Request<HealthCheckRequest>) -> Result<Response<HealthCheckResponse>, Status> {
        self.status(&request.get_ref().service).map(Response::new)
    }

    type WatchStream = ResponseStream<HealthCheckResponse>;

    async fn watch(&self, request: Request<HealthCheckRequest>) -> Result<Response<Self::WatchStream>, Status> {
        let first = self.status(&request.get_ref().service)?;
        let stream = tokio_stream::once(Ok(first)).chain(tokio_stream::pending());
        Ok(Response::new(Box::pin(stream)))
    }
}

/// `Shutdown` asks the server to stop.
pub(crate) struct Controller {
    pub(crate) shutdown: Arc<Notify>,
}

#[tonic::async_trait]
impl GrpcController for Controller {
    async fn shutdown(&self, _request: Request<Empty>) -> Result<Response<Empty>, Status> {
        tracing::info!("shutdown requested by the daemon");
        self.shutdown.notify_one();
        Ok(Response::new(Empty {}))
    }
}

/// Plugin output goes to stderr, which the daemon reads directly, so the
/// stream carries nothing and stays open until the plugin stops.
pub(crate) struct Stdio;

#[tonic::async_trait]
impl GrpcStdio for Stdio {
    type StreamStdioStream = ResponseStream<StdioData>;

    async fn stream_stdio(&self, _request: Request<()>) -> Result<Response<Self::StreamStdioStream>, Status> {
        Ok(Response::new(Box::pin(tokio_stream::pending())))
    }
}
