//! The create-revision queue under which election and locks are built.
//!
//! A contender puts `prefix + lease id` tied to its lease; etcd's revision
//! of that put orders the contenders. A contender's turn comes when no key
//! under the prefix has a smaller create revision: it watches only the key
//! just before its own (no herd wakes on every change). Holding is fenced by
//! the key's create revision: a guard `create_revision(key) == rev` in a
//! transaction holds only while this very contender's key exists.

use std::time::Duration;

use tokio::sync::watch;

use crate::client::{Etcd, prefix_end};
use crate::error::{Error, Result, show_key};
use crate::lease::Lease;
use crate::ops;
use crate::pb::etcdserverpb::{RangeRequest, range_request::SortOrder, range_request::SortTarget, response_op};
use crate::pb::mvccpb::event::EventType;
use crate::util::AbortOnDrop;

/// A contender's place in a queue.
#[derive(Debug, Clone)]
pub(crate) struct Ticket {
    pub(crate) key: Vec<u8>,
    pub(crate) create_revision: i64,
}

/// Puts this lease's key under `prefix` (or finds it there) and returns
/// its place.
pub(crate) async fn enqueue(etcd: &Etcd, prefix: &[u8], lease: &Lease, value: Vec<u8>) -> Result<Ticket> {
    let key = [prefix, format!("{:016x}", lease.id()).as_bytes()].concat();
    let resp = etcd
        .txn(ops::txn(
            vec![ops::create_revision_is(&key, 0)],
            vec![ops::put(&key, value, lease.id())],
            vec![ops::get(&key)],
        ))
        .await?;
    let create_revision = if resp.succeeded {
        resp.header.as_ref().map_or(0, |h| h.revision)
    } else {
        let existing = resp.responses.into_iter().find_map(|r| match r.response {
            Some(response_op::Response::ResponseRange(range)) => range.kvs.into_iter().next(),
            _ => None,
        });
        match existing {
            Some(kv) => kv.create_revision,
            None => {
                return Err(Error::Lost {
                    what: show_key(&key),
                    reason: "deleted while queueing".into(),
                });
            }
        }
    };
    Ok(Ticket { key, create_revision })
}

/// Waits until `ticket` is first under `prefix`. Fails when the lease is
/// lost, the ticket's key disappears, or etcd cannot be reached.
pub(crate) async fn wait_turn(etcd: &Etcd, prefix: &[u8], ticket: &Ticket, lease: &Lease) -> Result<()> {
    let turn = async {
        loop {
            let before = etcd
                .range(RangeRequest {
                    key: prefix.to_vec(),
                    range_end: prefix_end(prefix),
                    limit: 1,
                    sort_order: SortOrder::Descend as i32,
                    sort_target: SortTarget::Create as i32,
                    max_create_revision: ticket.create_revision - 1,
                    ..Default::default()
                })
                .await?;
            let Some(previous) = before.kvs.first() else {
                return match etcd.get(ticket.key.clone()).await? {
                    Some(kv) if kv.create_revision == ticket.create_revision => Ok(()),
                    _ => Err(Error::Lost {
                        what: show_key(&ticket.key),
                        reason: "key deleted while waiting".into(),
                    }),
                };
            };
            let revision = before.header.as_ref().map_or(0, |h| h.revision);
            let mut watch = etcd.watch(&previous.key, Vec::new(), revision + 1).await?;
            'deleted: loop {
                let batch = watch.next().await?;
                if batch.events.iter().any(|e| e.r#type == EventType::Delete as i32) {
                    break 'deleted;
                }
            }
        }
    };
    tokio::select! {
        r = turn => r,
        () = lease.lost() => Err(Error::LeaseLost { id: lease.id() }),
    }
}

/// Deletes a queued key when the future that queued it is dropped before
/// handing it on (a cancelled campaign or lock wait), so that it never
/// comes to hold what nobody waits for.
pub(crate) struct Withdraw {
    etcd: Etcd,
    key: Option<Vec<u8>>,
}

impl Withdraw {
    pub(crate) fn new(etcd: &Etcd, key: &[u8]) -> Withdraw {
        Withdraw {
            etcd: etcd.clone(),
            key: Some(key.to_vec()),
        }
    }

    /// Keeps the key: its holder now owns it.
    pub(crate) fn disarm(mut self) {
        self.key = None;
    }

    /// Deletes the key now.
    pub(crate) async fn now(mut self) {
        if let Some(key) = self.key.take()
            && let Err(e) = self.etcd.delete(key).await
        {
            tracing::warn!(error = %e, "cannot withdraw a queued etcd key; it goes with its lease");
        }
    }
}

impl Drop for Withdraw {
    fn drop(&mut self) {
        if let Some(key) = self.key.take()
            && let Ok(rt) = tokio::runtime::Handle::try_current()
        {
            let etcd = self.etcd.clone();
            rt.spawn(async move {
                let _ = etcd.delete(key).await;
            });
        }
    }
}

/// Whether a held ticket still holds: its key exists with its create
/// revision and its lease is alive. A task watches both; `false` is final.
pub(crate) struct Hold {
    held: watch::Receiver<bool>,
    _task: AbortOnDrop,
}

impl Hold {
    pub(crate) fn watch(etcd: &Etcd, ticket: &Ticket, lease: &Lease) -> Hold {
        let (tx, held) = watch::channel(true);
        let task = tokio::spawn(watch_hold(etcd.clone(), ticket.clone(), lease.clone(), tx));
        Hold {
            held,
            _task: AbortOnDrop(task),
        }
    }

    pub(crate) fn is_held(&self) -> bool {
        *self.held.borrow()
    }

    pub(crate) async fn lost(&self) {
        let mut rx = self.held.clone();
        let _ = rx.wait_for(|h| !*h).await;
    }
}

async fn watch_hold(etcd: Etcd, ticket: Ticket, lease: Lease, tx: watch::Sender<bool>) {
    let deleted = async {
        loop {
            let check = async {
                let resp = etcd
                    .range(RangeRequest {
                        key: ticket.key.clone(),
                        ..Default::default()
                    })
                    .await?;
                match resp.kvs.first() {
                    Some(kv) if kv.create_revision == ticket.create_revision => {}
                    _ => return Ok(()),
                }
                let revision = resp.header.as_ref().map_or(0, |h| h.revision);
                let mut watch = etcd.watch(&ticket.key, Vec::new(), revision + 1).await?;
                loop {
                    let batch = watch.next().await?;
                    let gone = batch.events.iter().any(|e| {
                        e.r#type == EventType::Delete as i32
                            || e.kv
                                .as_ref()
                                .is_some_and(|kv| kv.create_revision != ticket.create_revision)
                    });
                    if gone {
                        return Ok::<(), Error>(());
                    }
                }
            };
            match check.await {
                Ok(()) => return,
                Err(e) => {
                    tracing::debug!(error = %e, key = %show_key(&ticket.key), "watching a held etcd key; retrying");
                    tokio::time::sleep(Duration::from_millis(300)).await;
                }
            }
        }
    };
    let reason = tokio::select! {
        () = deleted => "its key was deleted",
        () = lease.lost() => "its lease was lost",
    };
    tracing::warn!(key = %show_key(&ticket.key), reason, "etcd hold lost");
    tx.send_replace(false);
}
