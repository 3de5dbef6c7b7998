//! The one error type of the crate: every failure names the operation, the
//! endpoint or key involved and what went wrong.

use std::time::Duration;

/// What an etcd operation of this crate can fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The configuration cannot be used (no endpoints, a malformed URL).
    #[error("invalid etcd configuration: {0}")]
    Config(String),
    /// A TLS file could not be read.
    #[error("cannot read etcd TLS {what} {path}: {source}")]
    TlsFile {
        /// `ca`, `certificate` or `key`.
        what: &'static str,
        /// The path as configured.
        path: String,
        /// Why it could not be read.
        source: std::io::Error,
    },
    /// No endpoint answered.
    #[error("etcd unavailable: {op} failed on every endpoint ({endpoints}): {message}")]
    Unavailable {
        /// The operation, e.g. `Range`.
        op: &'static str,
        /// The endpoints tried, comma-separated.
        endpoints: String,
        /// The last endpoint's error.
        message: String,
    },
    /// The call did not finish in time.
    #[error("etcd {op} timed out after {timeout:?} at {endpoint}")]
    Timeout {
        /// The operation.
        op: &'static str,
        /// The endpoint it was sent to.
        endpoint: String,
        /// The limit that passed.
        timeout: Duration,
    },
    /// etcd answered with an error status.
    #[error("etcd {op} failed at {endpoint}: {code:?}: {message}")]
    Rpc {
        /// The operation.
        op: &'static str,
        /// The endpoint that answered.
        endpoint: String,
        /// The gRPC status code.
        code: tonic::Code,
        /// etcd's message, e.g. `etcdserver: requested lease not found`.
        message: String,
    },
    /// A watch stream ended or was cancelled by etcd.
    #[error("etcd watch on {key:?} ended: {reason}")]
    WatchEnded {
        /// The watched key or prefix.
        key: String,
        /// Why.
        reason: String,
    },
    /// etcd no longer holds the history asked for.
    #[error("etcd compacted the history asked for: {0}")]
    Compacted(String),
    /// The lease expired or was revoked; whatever was tied to it is gone.
    #[error("etcd lease {id:x} lost")]
    LeaseLost {
        /// The lease id.
        id: i64,
    },
    /// etcd refused to grant a lease.
    #[error("etcd refused a lease: {0}")]
    LeaseRefused(String),
    /// A lock was not acquired within the time given (SPEC 6.1 `LOCK_TIMEOUT`).
    #[error("lock on {crn:?} not acquired within {waited:?}")]
    LockTimeout {
        /// The resource.
        crn: String,
        /// How long the caller waited.
        waited: Duration,
    },
    /// This holder already holds or is acquiring the lock.
    #[error("lock on {crn:?} is already held or being acquired by this holder")]
    LockHeldHere {
        /// The resource.
        crn: String,
    },
    /// A lock or leadership was lost (its key was deleted or its lease expired).
    #[error("{what} lost: {reason}")]
    Lost {
        /// `lock on "crn:..."` or `leadership`.
        what: String,
        /// Why it is known to be lost.
        reason: String,
    },
    /// The caller is not the current leader, so the log refused the append.
    #[error("not the leader: the replicated log refused an append guarded by election key {key:?}")]
    NotLeader {
        /// The election key the append was guarded by.
        key: String,
    },
    /// The log's head is not where the append expected it.
    #[error("replicated log conflict: append of seq {first} expects head {expected}, found {found}")]
    LogConflict {
        /// The first seq of the refused append.
        first: u64,
        /// The head it expected (`first - 1`).
        expected: u64,
        /// The head etcd holds.
        found: u64,
    },
    /// The entries given to an append are not usable.
    #[error("invalid log append: {0}")]
    InvalidAppend(String),
    /// A value in etcd could not be decoded.
    #[error("malformed value under etcd key {key:?}: {reason}")]
    Malformed {
        /// The key.
        key: String,
        /// What is wrong with it.
        reason: String,
    },
}

/// The crate's result.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A key for messages: UTF-8 where it is, escaped where it is not.
pub(crate) fn show_key(key: &[u8]) -> String {
    String::from_utf8_lossy(key).into_owned()
}
