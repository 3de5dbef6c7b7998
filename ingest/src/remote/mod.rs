//! Scan workers: provider plugins run on another machine, reached over
//! the provider protocol on TCP with mutual TLS.
//!
//! - [`relay`]: the worker's side (`svc worker`): serves
//!   `svc.provider.v1.Provider` and `Remediator` over the worker's plugin
//!   processes, one per source it is asked for (`plugins`); a `Scan`
//!   answer's HTTP/2 frames and trailers pass through as they are
//!   (`scan_relay`).
//! - [`source`]: the daemon's side: a [`RemoteSource`] is an engine
//!   source whose scans go to the worker the [`assignment`] names, decoded
//!   and staged as a local plugin's are.
//! - [`assignment`]: which live worker runs each source, as a watch.
//! - [`tls`]: certificate, key and CA files to tonic's rustls settings.
//!
//! Every call names the source it is for in the request metadata
//! ([`SOURCE_HEADER`], [`PLUGIN_HEADER`]): the worker needs no list of
//! sources of its own, and a `ScanRequest`'s config reaches the plugin
//! exactly as the daemon wrote it.

pub mod assignment;
mod plugins;
pub mod relay;
mod scan_relay;
pub mod source;
pub mod tls;

pub use assignment::{Assignment, AssignmentRx, WorkerAddr};
pub use plugins::WorkerOptions;
pub use relay::Relay;
pub use scan_relay::ProviderRoutes;
pub use source::{RemoteSource, RemoteSpec};
pub use tls::{TlsError, TlsFiles};

/// The request metadata naming the source a call is for: the worker keeps
/// one plugin process per source.
pub const SOURCE_HEADER: &str = "svc-source";
/// The request metadata naming the plugin that runs the source
/// (`svc-plugin-<name>` in the worker's plugin directory).
pub const PLUGIN_HEADER: &str = "svc-plugin";

/// Whether `name` may name a source: 1 to 128 ASCII letters, digits and
/// `-`, `_`, `.`, `:`.
pub fn valid_source_name(name: &str) -> bool {
    (1..=128).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':'))
}

/// Whether `name` may name a plugin: ASCII letters, digits, `-` and `_`,
/// as `svc plugins install-local` names them.
pub fn valid_plugin_name(name: &str) -> bool {
    (1..=64).contains(&name.len()) && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// The major version of a version string (`v1.2.3`, `0.1.0`); `None` when
/// it does not start with a number.
pub(crate) fn major(version: &str) -> Option<u64> {
    let v = version.trim();
    let v = v.strip_prefix('v').unwrap_or(v);
    v.split(['.', '-', '+']).next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_versions() {
        for ok in ["acct-a", "aws:123456789012:eu-west-1", "k8s.prod_1"] {
            assert!(valid_source_name(ok), "{ok}");
        }
        for bad in ["", "a/b", "a b", "ü", &"x".repeat(129)] {
            assert!(!valid_source_name(bad), "{bad}");
        }
        assert!(valid_plugin_name("mock") && valid_plugin_name("my_plugin-2"));
        assert!(!valid_plugin_name("../mock") && !valid_plugin_name("a.b") && !valid_plugin_name(""));
        assert_eq!(major("0.1.0"), Some(0));
        assert_eq!(major("v12.3"), Some(12));
        assert_eq!(major("1-beta"), Some(1));
        assert_eq!(major("beta"), None);
    }
}
