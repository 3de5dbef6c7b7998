//! svc-plugin-sdk: write an svc plugin as a tonic service and let the SDK
//! handle the process framing (DESIGN 7, SPEC 4.8).
//!
//! The framing is HashiCorp go-plugin's: the daemon starts the plugin with
//! the magic cookie (`SVC_PLUGIN=svc`, or `SVC_HEURISTIC_PLUGIN=svc-heuristic`)
//! and `PLUGIN_PROTOCOL_VERSIONS=1`; the plugin listens on a Unix socket in a
//! fresh temporary directory (or on TCP `127.0.0.1` when
//! `SVC_PLUGIN_TRANSPORT=tcp`, in `PLUGIN_MIN_PORT..=PLUGIN_MAX_PORT` when
//! set), serves its service plus `grpc.health.v1.Health` (SERVING for
//! `plugin`), `plugin.GRPCController` and `plugin.GRPCStdio`, and then prints
//! one line on stdout: `1|1|unix|/path/plugin.sock|grpc|`. Logs go to stderr
//! as hclog JSON lines. `GRPCController/Shutdown` stops the server and the
//! call returns; the socket directory is removed. So do SIGTERM and the end
//! of the process that started the plugin (checked every 500 ms), so a
//! daemon killed outright leaves no plugin running.
//!
//! ```no_run
//! # use svc_proto::provider::v1::provider_server::Provider;
//! # async fn run<P: Provider>(my_provider: P) -> std::process::ExitCode {
//! svc_plugin_sdk::exit_code(svc_plugin_sdk::serve_provider(my_provider).await)
//! # }
//! ```

pub mod encoded;
mod framework;
pub mod handshake;
pub mod log;
mod serve;

use std::pin::Pin;

use svc_proto::heuristic::v1::heuristic_plugin_server::{self, HeuristicPlugin, HeuristicPluginServer};
use svc_proto::provider::v1::ScanResponse;
use svc_proto::provider::v1::provider_server::{self, Provider, ProviderServer};
use svc_proto::provider::v1::remediator_server::{self, Remediator, RemediatorServer};
use tokio::sync::mpsc;
use tokio_stream::Stream;
use tokio_stream::wrappers::ReceiverStream;
use tonic::Status;

pub use encoded::{EncodedProviderServer, EncodedScan, EncodedScanResponse, EncodedScanStream, ScanResponseWriter};
pub use handshake::{Cookie, HEURISTIC_COOKIE, ListenAddr, PROVIDER_COOKIE};
pub use serve::{SHUTDOWN_GRACE, check_startup, exit_now};

/// A server-streaming response body.
pub type ResponseStream<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send + 'static>>;

/// The response stream of `Provider::Scan`.
pub type ScanStream = ResponseStream<ScanResponse>;

/// Why a plugin did not start or stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum SdkError {
    #[error("not started by the svc daemon: {key} is not {value:?}")]
    NotStartedByDaemon { key: &'static str, value: &'static str },
    #[error("unsupported plugin protocol versions {offered:?}: this plugin speaks version 1")]
    UnsupportedProtocol { offered: String },
    #[error("invalid {name} {value:?}: expected a port number")]
    InvalidEnv { name: &'static str, value: String },
    #[error("no free port in {min}..={max}")]
    NoFreePort { min: u16, max: u16 },
    #[error("listen: {0}")]
    Io(#[from] std::io::Error),
    #[error("serve: {0}")]
    Transport(#[from] tonic::transport::Error),
}

/// Serves a provider plugin (scan-only: no `Remediator`).
pub async fn serve_provider<P: Provider>(provider: P) -> Result<(), SdkError> {
    serve::serve(&PROVIDER_COOKIE, &[provider_server::SERVICE_NAME], |r| {
        r.add_service(ProviderServer::new(provider))
    })
    .await
}

/// Serves a provider plugin with the optional `Remediator` service.
pub async fn serve_provider_with_remediator<P: Provider, R: Remediator>(
    provider: P,
    remediator: R,
) -> Result<(), SdkError> {
    serve::serve(
        &PROVIDER_COOKIE,
        &[provider_server::SERVICE_NAME, remediator_server::SERVICE_NAME],
        |r| {
            r.add_service(ProviderServer::new(provider))
                .add_service(RemediatorServer::new(remediator))
        },
    )
    .await
}

/// Serves a provider plugin with the optional `Remediator` service,
/// answering `Scan` with the responses the plugin encodes itself
/// ([`EncodedScan`]).
pub async fn serve_encoded_provider_with_remediator<P: Provider + EncodedScan, R: Remediator>(
    provider: P,
    remediator: R,
) -> Result<(), SdkError> {
    serve::serve(
        &PROVIDER_COOKIE,
        &[provider_server::SERVICE_NAME, remediator_server::SERVICE_NAME],
        |r| {
            r.add_service(EncodedProviderServer::new(provider))
                .add_service(RemediatorServer::new(remediator))
        },
    )
    .await
}

/// Serves a heuristic plugin.
pub async fn serve_heuristic<H: HeuristicPlugin>(heuristic: H) -> Result<(), SdkError> {
    serve::serve(&HEURISTIC_COOKIE, &[heuristic_plugin_server::SERVICE_NAME], |r| {
        r.add_service(HeuristicPluginServer::new(heuristic))
    })
    .await
}

/// The process exit code for a serve result: 0 after a clean stop, 1
/// otherwise (the startup checks have already explained themselves on
/// stderr; other errors are logged here).
pub fn exit_code(result: Result<(), SdkError>) -> std::process::ExitCode {
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(SdkError::NotStartedByDaemon { .. } | SdkError::UnsupportedProtocol { .. }) => {
            std::process::ExitCode::FAILURE
        }
        Err(e) => {
            tracing::error!(error = %e, "plugin failed");
            eprintln!("{e}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// A bounded channel feeding a response stream: the producer waits when the
/// daemon reads slower than it produces.
pub fn response_channel<T: Send + 'static>(capacity: usize) -> (mpsc::Sender<Result<T, Status>>, ResponseStream<T>) {
    let (tx, rx) = mpsc::channel(capacity.max(1));
    (tx, Box::pin(ReceiverStream::new(rx)))
}

/// Encodes node properties for `Node.properties` (JSON bytes).
pub fn json_properties(value: &serde_json::Value) -> Vec<u8> {
    value.to_string().into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_properties_round_trip() {
        let v = serde_json::json!({"size_gb": 100, "name": "données", "tags": {"env": "prod"}});
        let bytes = json_properties(&v);
        let back: serde_json::Value = serde_json::from_slice(&bytes).expect("valid JSON");
        assert_eq!(back, v);
    }
}
