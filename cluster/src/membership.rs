//! Membership: workers register `{id, addr, sources}` under their lease;
//! the live set is the keys under the prefix, which vanish with the lease
//! of a worker that dies.

use serde::{Deserialize, Serialize};
use tokio::sync::watch;

use crate::client::Etcd;
use crate::election::dir;
use crate::error::{Error, Result, show_key};
use crate::lease::Lease;
use crate::mirror::{KeyMap, Mirror};
use crate::pb::mvccpb::KeyValue;
use crate::util::AbortOnDrop;

/// A registered worker.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Member {
    /// Unique among the members.
    pub id: String,
    /// Where the worker answers.
    pub addr: String,
    /// What it can run: provider names (`aws`), source keys
    /// (`aws/123456789012/eu-west-1`), or `*` for everything.
    pub sources: Vec<String>,
}

/// The members under one prefix.
#[derive(Debug, Clone)]
pub struct Membership {
    etcd: Etcd,
    prefix: Vec<u8>,
}

fn parse(kv: &KeyValue) -> Result<Member> {
    serde_json::from_slice(&kv.value).map_err(|e| Error::Malformed {
        key: show_key(&kv.key),
        reason: format!("not a member record: {e}"),
    })
}

/// The readable members of a key map, in id order; unreadable records are
/// logged and left out.
fn members_of(keys: &KeyMap) -> Vec<Member> {
    let mut out: Vec<Member> = keys
        .values()
        .filter_map(|kv| match parse(kv) {
            Ok(m) => Some(m),
            Err(e) => {
                tracing::warn!(error = %e, "skipping a member record");
                None
            }
        })
        .collect();
    out.sort_by(|a, b| a.id.cmp(&b.id));
    out
}

impl Membership {
    /// The members under `prefix` (a `/` is added when missing).
    pub fn new(etcd: &Etcd, prefix: &str) -> Membership {
        Membership {
            etcd: etcd.clone(),
            prefix: dir(prefix),
        }
    }

    fn key(&self, id: &str) -> Vec<u8> {
        [self.prefix.as_slice(), id.as_bytes()].concat()
    }

    /// Registers (or updates) `member` on `lease`.
    pub async fn register(&self, lease: &Lease, member: &Member) -> Result<()> {
        if member.id.is_empty() || member.id.contains('/') {
            return Err(Error::Config(format!(
                "member id {:?}: must be non-empty and without '/'",
                member.id
            )));
        }
        let value = serde_json::to_vec(member).map_err(|e| Error::Config(format!("member record: {e}")))?;
        self.etcd.put(self.key(&member.id), value, lease.id()).await?;
        Ok(())
    }

    /// Removes a member's registration.
    pub async fn leave(&self, id: &str) -> Result<()> {
        self.etcd.delete(self.key(id)).await?;
        Ok(())
    }

    /// The members now, read from etcd.
    pub async fn list(&self) -> Result<Vec<Member>> {
        let (kvs, _) = self.etcd.get_prefix(&self.prefix).await?;
        Ok(members_of(&std::sync::Arc::new(
            kvs.into_iter().map(|kv| (kv.key.clone(), kv)).collect(),
        )))
    }

    /// Follows the live set.
    pub fn watch(&self) -> LiveMembers {
        let mirror = Mirror::start(&self.etcd, &self.prefix);
        let mut keys = mirror.subscribe();
        let (tx, rx) = watch::channel(members_of(&keys.borrow()));
        let task = tokio::spawn(async move {
            while keys.changed().await.is_ok() {
                let members = members_of(&keys.borrow_and_update());
                tx.send_if_modified(|cur| {
                    let changed = *cur != members;
                    *cur = members;
                    changed
                });
            }
        });
        LiveMembers {
            rx,
            _mirror: mirror,
            _task: AbortOnDrop(task),
        }
    }
}

/// The live members as they change; dropping it stops the watch.
pub struct LiveMembers {
    rx: watch::Receiver<Vec<Member>>,
    _mirror: Mirror,
    _task: AbortOnDrop,
}

impl LiveMembers {
    /// The members as last seen, in id order.
    pub fn current(&self) -> Vec<Member> {
        self.rx.borrow().clone()
    }

    /// A receiver, to wait for changes.
    pub fn subscribe(&self) -> watch::Receiver<Vec<Member>> {
        self.rx.clone()
    }
}
