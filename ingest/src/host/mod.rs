//! The plugin host: finds plugin binaries in the plugin directory, verifies
//! them against their manifests, launches them with the go-plugin compatible
//! subprocess protocol and scans through them.
//!
//! - [`manifest`]: the `<binary>.yaml` registry manifest (SPEC 2.8).
//! - [`discover`](mod@discover): `svc-plugin-<name>` binaries in a directory, and their
//!   launch integrity check (executable, SHA-256 equal to the manifest's).
//! - [`handshake`]: the `CORE|APP|NET|ADDR|PROTO|SERVERCERT[|MUX]` line.
//! - [`launch`]: one running plugin process and its gRPC channel.
//! - [`source`]: a provider plugin as an engine [`svc_engine::scan::Source`].
//! - [`trace`]: the `traceparent` each call carries.
//!
//! Every failure of a plugin is a [`HostError`] (or a scan's
//! [`svc_engine::scan::SourceError`]) naming the plugin; a plugin never takes
//! the daemon down.

pub mod discover;
pub mod handshake;
pub mod heuristic;
pub mod launch;
mod logs;
pub mod manifest;
mod scan_call;
pub mod source;
pub mod trace;
pub(crate) mod unlisted;

use std::path::PathBuf;

use thiserror::Error;

pub use discover::{Discovered, Integrity, PLUGIN_PREFIX, discover, verify};
pub use handshake::{Handshake, HandshakeError, Net, parse_handshake};
pub use heuristic::HeuristicPlugin;
pub use launch::{LaunchOptions, PluginProcess};
pub use manifest::{Category, Manifest, PackageType, Pricing, PricingModel, Role, write_manifest_for};
#[doc(hidden)]
pub use scan_call::read_body;
pub use source::{BATCH_ROWS, PluginSource, SourceOptions};

/// Why a plugin could not be verified, launched or called.
#[derive(Debug, Error)]
pub enum HostError {
    #[error("plugin {} is not executable (permission denied)", .path.display())]
    NotExecutable { path: PathBuf },
    #[error("plugin {} failed verification: sha256 {actual} does not match manifest {expected}", .path.display())]
    Verification {
        path: PathBuf,
        actual: String,
        expected: String,
    },
    #[error("plugin {} has no usable manifest: {reason}", .path.display())]
    Manifest { path: PathBuf, reason: String },
    #[error("plugin {}: {source}", .path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("plugin {name} failed to start: no socket directory could be made in {}: {source}", .parent.display())]
    SocketDir {
        name: String,
        parent: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("plugin {name} failed to start: {source}")]
    Spawn {
        name: String,
        #[source]
        source: std::io::Error,
    },
    #[error("plugin {name} printed an invalid handshake line {:?}: {}", .error.line, .error.reason)]
    InvalidHandshake { name: String, error: HandshakeError },
    #[error("plugin {name} did not complete its handshake: {reason}")]
    NoHandshake { name: String, reason: String },
    #[error("plugin {name} could not be reached at {addr}: {reason}")]
    Connect { name: String, addr: String, reason: String },
    #[error("plugin {name} is not serving: health status {status}")]
    Unhealthy { name: String, status: String },
    #[error("plugin {name} is incompatible: {message}")]
    Incompatible { name: String, message: String },
    #[error("plugin {name} {rpc} failed: {message}")]
    Rpc {
        name: String,
        rpc: &'static str,
        message: String,
    },
}

impl HostError {
    pub(crate) fn rpc(name: &str, rpc: &'static str, status: &tonic::Status) -> HostError {
        HostError::Rpc {
            name: name.to_owned(),
            rpc,
            message: status_text(status),
        }
    }
}

/// A gRPC status as one line: the code and the message, when there is one.
pub(crate) fn status_text(status: &tonic::Status) -> String {
    if status.message().is_empty() {
        format!("{:?}", status.code())
    } else {
        format!("{:?}: {}", status.code(), status.message())
    }
}
