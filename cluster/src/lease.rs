//! [`Lease`]: an etcd lease kept alive by a background task.
//!
//! The task sends a keep-alive every third of the TTL on a stream it
//! re-opens (on any endpoint) when the connection breaks. It knows the
//! lease lives at least until the send time of the last acknowledged
//! keep-alive plus the TTL etcd answered; when that moment passes without a
//! newer acknowledgement, or etcd answers that the lease is gone, the state
//! turns [`LeaseState::Lost`] for good. Holders watch that state and stop
//! acting at once: etcd cannot have expired the lease earlier than this
//! client declares it lost.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::sync::{mpsc, watch};
use tokio::time::Instant;
use tokio_stream::wrappers::ReceiverStream;

use crate::client::Etcd;
use crate::error::Result;
use crate::pb::etcdserverpb::{LeaseKeepAliveRequest, lease_client::LeaseClient};
use crate::util::AbortOnDrop;

/// Whether a lease still holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeaseState {
    /// Kept alive: keys tied to it exist.
    Alive,
    /// Expired or revoked (or no longer known to be alive): keys tied to it
    /// are gone or about to be. Final.
    Lost,
}

struct Shared {
    id: i64,
    ttl: Duration,
    etcd: Etcd,
    state: watch::Sender<LeaseState>,
    paused: AtomicBool,
}

struct Inner {
    shared: Arc<Shared>,
    _task: AbortOnDrop,
}

/// A granted lease and its keep-alive; clones share both. Dropping the last
/// clone stops the keep-alive (the lease then expires after its TTL);
/// [`Lease::revoke`] ends it at once.
#[derive(Clone)]
pub struct Lease {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Lease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lease")
            .field("id", &format_args!("{:x}", self.id()))
            .field("ttl", &self.ttl())
            .field("state", &self.state())
            .finish()
    }
}

impl Lease {
    /// Grants a lease of `ttl` (whole seconds, at least 1) and starts its
    /// keep-alive.
    pub async fn grant(etcd: &Etcd, ttl: Duration) -> Result<Lease> {
        let sent = Instant::now();
        let (id, ttl) = etcd.lease_grant(ttl).await?;
        let (state, _) = watch::channel(LeaseState::Alive);
        let shared = Arc::new(Shared {
            id,
            ttl,
            etcd: etcd.clone(),
            state,
            paused: AtomicBool::new(false),
        });
        let task = AbortOnDrop(tokio::spawn(keep_alive(Arc::clone(&shared), sent + ttl)));
        Ok(Lease {
            inner: Arc::new(Inner { shared, _task: task }),
        })
    }

    /// The lease id (tie keys to it with `lease` on a put).
    pub fn id(&self) -> i64 {
        self.inner.shared.id
    }

    /// The TTL etcd granted.
    pub fn ttl(&self) -> Duration {
        self.inner.shared.ttl
    }

    /// The current state.
    pub fn state(&self) -> LeaseState {
        *self.inner.shared.state.borrow()
    }

    /// Whether the lease is still known to be alive.
    pub fn is_alive(&self) -> bool {
        self.state() == LeaseState::Alive
    }

    /// A receiver of the state, to `select!` on.
    pub fn subscribe(&self) -> watch::Receiver<LeaseState> {
        self.inner.shared.state.subscribe()
    }

    /// Resolves once the lease is lost.
    pub async fn lost(&self) {
        let mut rx = self.subscribe();
        // An error means the sender is gone, which only happens with the
        // lease itself; either way there is nothing left to wait for.
        let _ = rx.wait_for(|s| *s == LeaseState::Lost).await;
    }

    /// Stops sending keep-alives without revoking: the lease expires in
    /// etcd after its TTL and turns lost here at the same moment, as for a
    /// holder cut off from etcd.
    pub fn stop_keep_alive(&self) {
        self.inner.shared.paused.store(true, Ordering::Relaxed);
    }

    /// Turns the state lost (so holders stop first), then revokes the lease
    /// in etcd, which deletes every key tied to it.
    pub async fn revoke(&self) -> Result<()> {
        let shared = &self.inner.shared;
        shared.paused.store(true, Ordering::Relaxed);
        shared.state.send_replace(LeaseState::Lost);
        shared.etcd.lease_revoke(shared.id).await
    }
}

/// How a keep-alive stream ended.
enum End {
    /// etcd no longer knows the lease.
    Gone,
    /// The stream broke or could not be opened; try again.
    Broken,
    /// Keep-alives were stopped.
    Paused,
}

async fn keep_alive(shared: Arc<Shared>, mut expires: Instant) {
    loop {
        if shared.paused.load(Ordering::Relaxed) {
            tokio::time::sleep_until(expires).await;
            break;
        }
        if Instant::now() >= expires {
            break;
        }
        match session(&shared, &mut expires).await {
            End::Gone => break,
            End::Paused => {}
            End::Broken => {
                let retry = (Instant::now() + Duration::from_millis(300)).min(expires);
                tokio::time::sleep_until(retry).await;
            }
        }
    }
    if shared.state.send_replace(LeaseState::Lost) == LeaseState::Alive {
        tracing::warn!(lease = format_args!("{:x}", shared.id), "etcd lease lost");
    }
}

/// One keep-alive stream: sends a keep-alive every third of the TTL and
/// moves `expires` on with every answer.
async fn session(shared: &Shared, expires: &mut Instant) -> End {
    let request = LeaseKeepAliveRequest { id: shared.id };
    for (url, channel) in shared.etcd.channels() {
        let (tx, rx) = mpsc::channel(1);
        let mut sent = Instant::now();
        // etcd answers the stream's headers only with the first answer, so
        // the first request goes out with the call. The receiver is alive.
        let _ = tx.send(request).await;
        let limit = shared.etcd.timeout().min(expires.saturating_duration_since(sent));
        let mut client = LeaseClient::new(channel);
        let opened = tokio::time::timeout(limit, client.lease_keep_alive(ReceiverStream::new(rx)));
        let mut inbound = match opened.await {
            Ok(Ok(resp)) => resp.into_inner(),
            Ok(Err(_)) | Err(_) => continue,
        };
        shared.etcd.prefer(url);
        loop {
            let limit = shared
                .etcd
                .timeout()
                .min(expires.saturating_duration_since(Instant::now()));
            match tokio::time::timeout(limit, inbound.message()).await {
                Ok(Ok(Some(resp))) if resp.ttl > 0 => {
                    let ttl = Duration::from_secs(u64::try_from(resp.ttl).unwrap_or(0));
                    *expires = (*expires).max(sent + ttl);
                    tokio::time::sleep((ttl / 3).max(Duration::from_millis(100))).await;
                }
                Ok(Ok(Some(_))) => return End::Gone,
                Ok(Ok(None)) | Ok(Err(_)) | Err(_) => return End::Broken,
            }
            if shared.paused.load(Ordering::Relaxed) {
                return End::Paused;
            }
            sent = Instant::now();
            if tx.send(request).await.is_err() {
                return End::Broken;
            }
        }
    }
    End::Broken
}
