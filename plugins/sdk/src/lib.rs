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
//!
//! The crate's files: `entry_points` (a plugin's `main`: `serve_provider`,
//! `serve_heuristic`, ... and `exit_code`), `serve` (listening, the
//! handshake line, stopping), `handshake` (cookie, protocol versions, the
//! line's format), `framework` (health, controller and stdio services),
//! `encoded` (scan responses the plugin encodes itself), `stream` (response
//! streams), `compat` (a provider's answer to the daemon's version),
//! `properties`, `log` and `error`; `trace`, a span per call of the daemon,
//! exported when the daemon exports its own (SPEC 4.9).

mod compat;
pub mod encoded;
mod entry_points;
mod error;
mod framework;
pub mod handshake;
pub mod log;
mod properties;
mod serve;
mod stream;
pub mod trace;
mod unlisted;

pub use compat::{compatibility, major};
pub use encoded::{EncodedProviderServer, EncodedScan, EncodedScanResponse, EncodedScanStream, ScanResponseWriter};
pub use entry_points::{
    exit_code, serve_encoded_provider_with_remediator, serve_heuristic, serve_provider, serve_provider_with_remediator,
};
pub use error::SdkError;
pub use handshake::{Cookie, HEURISTIC_COOKIE, ListenAddr, PROVIDER_COOKIE};
pub use properties::json_properties;
pub use serve::{SHUTDOWN_GRACE, check_startup, exit_now};
pub use stream::{ResponseStream, ScanStream, response_channel};
pub use unlisted::{UnlistedPart, scan_end_unlisted};
