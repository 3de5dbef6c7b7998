//! Per-CRN remediation locks in etcd (the create-revision recipe of
//! `queue.rs`), tied to the holder's lease.
//!
//! A lock on a CRN is the first key under `prefix/<escaped crn>/`. It is
//! acquired within a deadline (the caller turns [`Error::LockTimeout`] into
//! SPEC 6.1's `LOCK_TIMEOUT` event), released by [`LockGuard::release`] or on
//! drop, and gone with its holder's lease when the holder dies. A step
//! checks it still holds the lock with [`LockGuard::check`] or guards its
//! etcd writes with [`LockGuard::fence`].

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use crate::client::Etcd;
use crate::election::dir;
use crate::error::{Error, Result};
use crate::lease::Lease;
use crate::ops;
use crate::pb::etcdserverpb::Compare;
use crate::queue::{self, Hold, Ticket, Withdraw};

/// The locks one holder takes, on its lease.
#[derive(Clone)]
pub struct Locks {
    etcd: Etcd,
    prefix: Vec<u8>,
    lease: Lease,
    // CRNs this holder holds or waits for: one lease has one key per CRN.
    mine: Arc<Mutex<HashSet<String>>>,
}

impl std::fmt::Debug for Locks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Locks")
            .field("prefix", &String::from_utf8_lossy(&self.prefix))
            .finish()
    }
}

/// A CRN as one key segment: `%` and `/` escaped, so that no CRN's
/// directory contains another's.
fn escape(crn: &str) -> String {
    let mut out = String::with_capacity(crn.len());
    for c in crn.chars() {
        match c {
            '%' => out.push_str("%25"),
            '/' => out.push_str("%2F"),
            c => out.push(c),
        }
    }
    out
}

/// Forgets a CRN from the holder's set when the acquisition or the guard
/// ends.
struct Mine {
    set: Arc<Mutex<HashSet<String>>>,
    crn: String,
}

impl Drop for Mine {
    fn drop(&mut self) {
        self.set.lock().remove(&self.crn);
    }
}

impl Locks {
    /// Locks under `prefix`, held on `lease`.
    pub fn new(etcd: &Etcd, prefix: &str, lease: &Lease) -> Locks {
        Locks {
            etcd: etcd.clone(),
            prefix: dir(prefix),
            lease: lease.clone(),
            mine: Arc::default(),
        }
    }

    /// Acquires the lock on `crn`, waiting at most `timeout`.
    /// [`Error::LockTimeout`] when it did not come in time,
    /// [`Error::LockHeldHere`] when this holder already has it or waits for
    /// it.
    pub async fn acquire(&self, crn: &str, timeout: Duration) -> Result<LockGuard> {
        if !self.mine.lock().insert(crn.to_owned()) {
            return Err(Error::LockHeldHere { crn: crn.to_owned() });
        }
        let mine = Mine {
            set: Arc::clone(&self.mine),
            crn: crn.to_owned(),
        };
        let prefix = [self.prefix.as_slice(), escape(crn).as_bytes(), b"/"].concat();
        let ticket = tokio::time::timeout(timeout, queue::enqueue(&self.etcd, &prefix, &self.lease, Vec::new()))
            .await
            .map_err(|_| Error::LockTimeout {
                crn: crn.to_owned(),
                waited: timeout,
            })??;
        let withdraw = Withdraw::new(&self.etcd, &ticket.key);
        let turn = tokio::time::timeout(timeout, queue::wait_turn(&self.etcd, &prefix, &ticket, &self.lease)).await;
        let failed = match turn {
            Ok(Ok(())) => None,
            Ok(Err(e)) => Some(e),
            Err(_) => Some(Error::LockTimeout {
                crn: crn.to_owned(),
                waited: timeout,
            }),
        };
        if let Some(e) = failed {
            withdraw.now().await;
            return Err(e);
        }
        withdraw.disarm();
        let hold = Hold::watch(&self.etcd, &ticket, &self.lease);
        Ok(LockGuard {
            etcd: self.etcd.clone(),
            crn: crn.to_owned(),
            ticket,
            hold,
            mine: Some(mine),
            released: false,
        })
    }
}

/// A held lock; released on drop (in the background) or by
/// [`LockGuard::release`].
pub struct LockGuard {
    etcd: Etcd,
    crn: String,
    ticket: Ticket,
    hold: Hold,
    // Taken by the background release on drop, so the CRN is free for
    // this holder again only once its key is gone.
    mine: Option<Mine>,
    released: bool,
}

impl std::fmt::Debug for LockGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LockGuard")
            .field("crn", &self.crn)
            .field("revision", &self.ticket.create_revision)
            .finish()
    }
}

impl LockGuard {
    /// The locked resource.
    pub fn crn(&self) -> &str {
        &self.crn
    }

    /// The lock key's create revision: a fencing token that grows with
    /// every acquisition of the CRN.
    pub fn revision(&self) -> i64 {
        self.ticket.create_revision
    }

    /// Whether the lock still holds as far as this holder knows (no etcd
    /// round trip).
    pub fn is_held(&self) -> bool {
        self.hold.is_held()
    }

    /// Resolves when the lock is lost.
    pub async fn lost(&self) {
        self.hold.lost().await;
    }

    /// Asks etcd whether the lock still holds: its key exists with this
    /// guard's revision.
    pub async fn check(&self) -> Result<()> {
        let lost = |reason: &str| Error::Lost {
            what: format!("lock on {:?}", self.crn),
            reason: reason.to_owned(),
        };
        if !self.hold.is_held() {
            return Err(lost("its lease was lost or its key deleted"));
        }
        match self.etcd.get(self.ticket.key.clone()).await? {
            Some(kv) if kv.create_revision == self.ticket.create_revision => Ok(()),
            _ => Err(lost("its key is gone")),
        }
    }

    /// The guard under which a transaction holds only while this lock does.
    pub fn fence(&self) -> Compare {
        ops::create_revision_is(&self.ticket.key, self.ticket.create_revision)
    }

    /// Releases the lock now.
    pub async fn release(mut self) -> Result<()> {
        self.released = true;
        self.delete().await
    }

    async fn delete(&self) -> Result<()> {
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

impl Drop for LockGuard {
    fn drop(&mut self) {
        if self.released {
            return;
        }
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            let etcd = self.etcd.clone();
            let key = self.ticket.key.clone();
            let fence = self.fence();
            let mine = self.mine.take();
            rt.spawn(async move {
                let _mine = mine;
                let del = ops::txn(vec![fence], vec![ops::delete_range(&key, Vec::new())], Vec::new());
                if let Err(e) = etcd.txn(del).await {
                    tracing::warn!(error = %e, "cannot release an etcd lock; it goes with its lease");
                }
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::escape;

    #[test]
    fn escaped_crns_never_nest() {
        assert_eq!(escape("crn:svc:aws:a/b"), "crn:svc:aws:a%2Fb");
        assert_eq!(escape("50%"), "50%25");
        assert_ne!(escape("a/b"), escape("a%2Fb"));
    }
}
