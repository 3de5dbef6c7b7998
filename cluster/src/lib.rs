//! svc-cluster: coordination of several svc nodes through etcd.
//!
//! etcd's v3 gRPC API is spoken directly with tonic, from the subset of
//! etcd's proto files under `proto/` (compiled by `protox`, no `protoc`).
//! On that client:
//! - [`Etcd`] (`client.rs`, `watch.rs`): endpoints with failover, a timeout
//!   on every call, optional mutual TLS, watches;
//! - [`Lease`] (`lease.rs`): a lease kept alive in the background whose
//!   loss is observable at once;
//! - [`Election`] (`election.rs`): leader election on a lease, with the
//!   leader's id and URL, observation and resignation;
//! - [`Locks`] (`lock.rs`): per-CRN locks with a deadline, tied to the
//!   holder's lease and fenced by their key's create revision;
//! - [`Membership`] (`membership.rs`) and [`assign`] (`assign.rs`): live
//!   workers and a deterministic assignment of sources to them;
//! - [`ReplicatedLog`] (`log.rs`): the ledger's batches, appended by the
//!   leader only, followed in order by standbys, compacted once applied.
//!
//! `queue.rs` holds the create-revision queue election and locks share;
//! `mirror.rs` a live copy of a prefix.

mod assign;
mod client;
mod election;
mod error;
mod lease;
mod lock;
mod log;
mod membership;
mod mirror;
pub mod ops;
mod queue;
mod util;
mod watch;

/// The generated etcd API messages and clients.
#[allow(clippy::all, clippy::pedantic, missing_docs, rustdoc::bare_urls)]
pub mod pb {
    /// Package `etcdserverpb`.
    pub mod etcdserverpb {
        tonic::include_proto!("etcdserverpb");
    }
    /// Package `mvccpb`.
    pub mod mvccpb {
        tonic::include_proto!("mvccpb");
    }
}

pub use assign::{Assignment, Source, assign};
pub use client::{Etcd, EtcdConfig, TlsFiles, prefix_end};
pub use election::{Election, LeaderInfo, Leadership, Observer};
pub use error::{Error, Result};
pub use lease::{Lease, LeaseState};
pub use lock::{LockGuard, Locks};
pub use log::{Batch, DEFAULT_MAX_BATCH_BYTES, ETCD_MAX_REQUEST_BYTES, Entry, Follower, ReplicatedLog, decode};
pub use membership::{LiveMembers, Member, Membership};
pub use mirror::{KeyMap, Mirror};
pub use watch::{WatchBatch, WatchStream};
