//! Leader election on a lease under a prefix (the create-revision recipe of
//! `queue.rs`).
//!
//! Each candidate's key holds its [`LeaderInfo`] (id and advertised URL) as
//! JSON; the leader is the candidate with the smallest create revision. A
//! [`Leadership`] ends when its lease is lost or its key is deleted, and
//! fences writes with [`Leadership::fence`].

use serde::{Deserialize, Serialize};
use tokio::sync::watch;

use crate::client::{Etcd, prefix_end};
use crate::error::{Error, Result, show_key};
use crate::lease::Lease;
use crate::mirror::{KeyMap, Mirror};
use crate::ops;
use crate::pb::etcdserverpb::{Compare, RangeRequest, range_request::SortOrder, range_request::SortTarget};
use crate::pb::mvccpb::KeyValue;
use crate::queue::{self, Hold, Ticket, Withdraw};
use crate::util::AbortOnDrop;

/// Who a candidate is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeaderInfo {
    /// The node's id.
    pub id: String,
    /// Where the node answers (its API's base URL).
    pub url: String,
}

/// An election under one prefix.
#[derive(Debug, Clone)]
pub struct Election {
    etcd: Etcd,
    prefix: Vec<u8>,
}

/// Ends `prefix` with `/`, so that `a` and `ab` never share keys.
pub(crate) fn dir(prefix: &str) -> Vec<u8> {
    let mut p = prefix.as_bytes().to_vec();
    if !p.ends_with(b"/") {
        p.push(b'/');
    }
    p
}

fn parse(kv: &KeyValue) -> Result<LeaderInfo> {
    serde_json::from_slice(&kv.value).map_err(|e| Error::Malformed {
        key: show_key(&kv.key),
        reason: format!("not a leader record: {e}"),
    })
}

impl Election {
    /// The election under `prefix` (a `/` is added when missing).
    pub fn new(etcd: &Etcd, prefix: &str) -> Election {
        Election {
            etcd: etcd.clone(),
            prefix: dir(prefix),
        }
    }

    /// Stands as `me` on `lease` and waits until elected. Fails when the
    /// lease is lost first or etcd cannot be reached; dropping the future
    /// withdraws the candidacy.
    pub async fn campaign(&self, lease: &Lease, me: &LeaderInfo) -> Result<Leadership> {
        let value = serde_json::to_vec(me).map_err(|e| Error::Config(format!("leader record: {e}")))?;
        let ticket = queue::enqueue(&self.etcd, &self.prefix, lease, value).await?;
        let withdraw = Withdraw::new(&self.etcd, &ticket.key);
        if let Err(e) = queue::wait_turn(&self.etcd, &self.prefix, &ticket, lease).await {
            withdraw.now().await;
            return Err(e);
        }
        withdraw.disarm();
        let hold = Hold::watch(&self.etcd, &ticket, lease);
        tracing::info!(id = %me.id, revision = ticket.create_revision, "elected leader");
        Ok(Leadership {
            etcd: self.etcd.clone(),
            ticket,
            info: me.clone(),
            lease: lease.clone(),
            hold,
        })
    }

    /// The current leader, read from etcd.
    pub async fn leader(&self) -> Result<Option<LeaderInfo>> {
        let resp = self
            .etcd
            .range(RangeRequest {
                key: self.prefix.clone(),
                range_end: prefix_end(&self.prefix),
                limit: 1,
                sort_order: SortOrder::Ascend as i32,
                sort_target: SortTarget::Create as i32,
                ..Default::default()
            })
            .await?;
        resp.kvs.first().map(parse).transpose()
    }

    /// Follows the leader as it changes.
    pub fn observe(&self) -> Observer {
        let mirror = Mirror::start(&self.etcd, &self.prefix);
        let mut keys = mirror.subscribe();
        let (tx, rx) = watch::channel(leader_of(&keys.borrow()));
        let task = tokio::spawn(async move {
            while keys.changed().await.is_ok() {
                let leader = leader_of(&keys.borrow_and_update());
                tx.send_if_modified(|cur| {
                    let changed = *cur != leader;
                    *cur = leader;
                    changed
                });
            }
        });
        Observer {
            rx,
            _mirror: mirror,
            _task: AbortOnDrop(task),
        }
    }
}

fn leader_of(keys: &KeyMap) -> Option<LeaderInfo> {
    let first = keys.values().min_by_key(|kv| kv.create_revision)?;
    match parse(first) {
        Ok(info) => Some(info),
        Err(e) => {
            tracing::warn!(error = %e, "unreadable leader record");
            None
        }
    }
}

/// The leader as it changes; dropping it stops the watch.
pub struct Observer {
    rx: watch::Receiver<Option<LeaderInfo>>,
    _mirror: Mirror,
    _task: AbortOnDrop,
}

impl Observer {
    /// The leader as last seen (`None`: none elected, or not read yet).
    pub fn current(&self) -> Option<LeaderInfo> {
        self.rx.borrow().clone()
    }

    /// A receiver, to wait for a change.
    pub fn subscribe(&self) -> watch::Receiver<Option<LeaderInfo>> {
        self.rx.clone()
    }
}

/// Being the leader. Ends with the lease or the key; check
/// [`Leadership::is_leader`] before acting and guard writes with
/// [`Leadership::fence`].
pub struct Leadership {
    etcd: Etcd,
    ticket: Ticket,
    info: LeaderInfo,
    lease: Lease,
    hold: Hold,
}

impl std::fmt::Debug for Leadership {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Leadership")
            .field("id", &self.info.id)
            .field("key", &show_key(&self.ticket.key))
            .field("revision", &self.ticket.create_revision)
            .finish()
    }
}

impl Leadership {
    /// Whether this node is still the leader as far as it knows (its lease
    /// alive, its key not deleted).
    pub fn is_leader(&self) -> bool {
        self.hold.is_held()
    }

    /// Resolves when the leadership is lost.
    pub async fn lost(&self) {
        self.hold.lost().await;
    }

    /// The guard under which a transaction holds only while this leadership
    /// does: the election key still has its create revision.
    pub fn fence(&self) -> Compare {
        ops::create_revision_is(&self.ticket.key, self.ticket.create_revision)
    }

    /// The election key.
    pub fn key(&self) -> &[u8] {
        &self.ticket.key
    }

    /// The election key's create revision (grows with every election).
    pub fn revision(&self) -> i64 {
        self.ticket.create_revision
    }

    /// Who leads.
    pub fn info(&self) -> &LeaderInfo {
        &self.info
    }

    /// The lease the leadership hangs on.
    pub fn lease(&self) -> &Lease {
        &self.lease
    }

    /// Steps down: deletes the election key if it is still this one's.
    pub async fn resign(self) -> Result<()> {
        self.etcd
            .txn(ops::txn(
                vec![self.fence()],
                vec![ops::delete_range(&self.ticket.key, Vec::new())],
                Vec::new(),
            ))
            .await?;
        Ok(())
    }
}
