//! What a plugin's `main` calls: one function per kind of plugin, each
//! serving that kind's services under its cookie until the daemon stops
//! it, and the exit code for the result.

use svc_proto::heuristic::v1::heuristic_plugin_server::{self, HeuristicPlugin, HeuristicPluginServer};
use svc_proto::provider::v1::provider_server::{self, Provider, ProviderServer};
use svc_proto::provider::v1::remediator_server::{self, Remediator, RemediatorServer};

use crate::encoded::{EncodedProviderServer, EncodedScan};
use crate::error::SdkError;
use crate::handshake::{HEURISTIC_COOKIE, PROVIDER_COOKIE};
use crate::serve::serve;

/// Serves a provider plugin (scan-only: no `Remediator`).
pub async fn serve_provider<P: Provider>(provider: P) -> Result<(), SdkError> {
    serve(&PROVIDER_COOKIE, &[provider_server::SERVICE_NAME], |r| {
        r.add_service(ProviderServer::new(provider))
    })
    .await
}

/// Serves a provider plugin with the optional `Remediator` service.
pub async fn serve_provider_with_remediator<P: Provider, R: Remediator>(
    provider: P,
    remediator: R,
) -> Result<(), SdkError> {
    serve(
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
    serve(
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
    serve(&HEURISTIC_COOKIE, &[heuristic_plugin_server::SERVICE_NAME], |r| {
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
