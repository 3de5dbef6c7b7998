//! The registry client (SPEC 2.8, 4.10): the index of package manifests
//! ([`index`]), fetching from http(s) or a file ([`fetch`]), and the checks
//! a package passes before it is installed ([`stage`]). Where a checked
//! package is placed, and the ledger, are the daemon's (`src/registry.rs`).

pub mod fetch;
pub mod index;
pub mod stage;

use std::path::PathBuf;

use thiserror::Error;

pub use fetch::{Fetcher, location};
pub use index::{Index, PackFile, Package, PackageRef, Version};
pub use stage::{StagedPack, StagedPlugin, stage_pack, stage_plugin};

/// Why a registry operation failed; each names the check that refused.
#[derive(Debug, Error)]
pub enum RegistryError {
    #[error("invalid package {text:?}: {reason}")]
    BadRef { text: String, reason: String },
    #[error("unknown package {0:?}: the registry lists no package of that name")]
    UnknownPackage(String),
    #[error("unknown version {version} of {name}; the registry lists {available}")]
    UnknownVersion {
        name: String,
        version: String,
        available: String,
    },
    #[error("{name} has no stable version (only {available}); ask for one with {name}@<version>")]
    NoStable { name: String, available: String },
    #[error("category check failed: {name} {version} has no category assigned by the registry; it cannot be installed")]
    NoCategory { name: String, version: String },
    #[error(
        "category check failed: {name} has category {category:?}, not one of cloud, database, infrastructure, saas, iot, devops, security"
    )]
    BadCategory { name: String, category: String },
    #[error("{name} is a {}, not a {want}", if *.want == "plugin" { "policy pack" } else { "plugin" })]
    WrongType { name: String, want: &'static str },
    #[error("no binary of {name} {version} for {os}/{arch} (the registry has {available})")]
    NoBinary {
        name: String,
        version: String,
        os: String,
        arch: String,
        available: String,
    },
    #[error("download failed: {url}: {reason}")]
    Download { url: String, reason: String },
    #[error("checksum check failed for {name}: {what} has sha256 {actual}, the manifest says {expected}")]
    Checksum {
        name: String,
        what: String,
        actual: String,
        expected: String,
    },
    #[error("handshake check failed for {name}: {reason}")]
    Handshake { name: String, reason: String },
    #[error("invalid policy pack {name}: {reason}")]
    BadPack { name: String, reason: String },
    #[error("release manifest of {reference} at {url} is not valid: {reason}")]
    BadRelease {
        reference: String,
        url: String,
        reason: String,
    },
    #[error("no registry configured: set registry.url to an index URL or file")]
    NotConfigured,
    #[error("registry index unavailable: {0}")]
    Unavailable(String),
    #[error("{}: {source}", .path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}
