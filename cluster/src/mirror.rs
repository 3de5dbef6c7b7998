//! [`Mirror`]: a live copy of the keys under a prefix.
//!
//! A task lists the prefix, then watches it from the revision after the
//! list, applying every put and delete; when the watch breaks it lists
//! again. Readers get the whole map through a watch channel, published only
//! when it changed.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use crate::client::Etcd;
use crate::error::{Error, show_key};
use crate::pb::mvccpb::{KeyValue, event::EventType};
use crate::util::AbortOnDrop;

/// The keys under a prefix and their values.
pub type KeyMap = Arc<BTreeMap<Vec<u8>, KeyValue>>;

/// A live copy of a prefix; dropping it stops the watch.
pub struct Mirror {
    rx: watch::Receiver<KeyMap>,
    synced: watch::Receiver<bool>,
    _task: AbortOnDrop,
}

impl Mirror {
    /// Starts mirroring `prefix`.
    pub fn start(etcd: &Etcd, prefix: &[u8]) -> Mirror {
        let (tx, rx) = watch::channel(KeyMap::default());
        let (synced_tx, synced) = watch::channel(false);
        let task = tokio::spawn(run(etcd.clone(), prefix.to_vec(), tx, synced_tx));
        Mirror {
            rx,
            synced,
            _task: AbortOnDrop(task),
        }
    }

    /// The current copy.
    pub fn current(&self) -> KeyMap {
        Arc::clone(&self.rx.borrow())
    }

    /// A receiver of the copy, to wait for changes.
    pub fn subscribe(&self) -> watch::Receiver<KeyMap> {
        self.rx.clone()
    }

    /// Whether the copy follows etcd now (false before the first list and
    /// while the watch is being re-established).
    pub fn is_synced(&self) -> bool {
        *self.synced.borrow()
    }
}

async fn run(etcd: Etcd, prefix: Vec<u8>, tx: watch::Sender<KeyMap>, synced: watch::Sender<bool>) {
    loop {
        if let Err(e) = follow(&etcd, &prefix, &tx, &synced).await {
            synced.send_replace(false);
            tracing::debug!(error = %e, prefix = %show_key(&prefix), "etcd mirror interrupted; listing again");
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
        if tx.is_closed() {
            return;
        }
    }
}

async fn follow(
    etcd: &Etcd,
    prefix: &[u8],
    tx: &watch::Sender<KeyMap>,
    synced: &watch::Sender<bool>,
) -> Result<(), Error> {
    let (kvs, revision) = etcd.get_prefix(prefix).await?;
    let mut map: BTreeMap<Vec<u8>, KeyValue> = kvs.into_iter().map(|kv| (kv.key.clone(), kv)).collect();
    publish(tx, &map);
    let mut watch = etcd.watch_prefix(prefix, revision + 1).await?;
    synced.send_replace(true);
    loop {
        let batch = watch.next().await?;
        for event in batch.events {
            let Some(kv) = event.kv else { continue };
            if event.r#type == EventType::Delete as i32 {
                map.remove(&kv.key);
            } else {
                map.insert(kv.key.clone(), kv);
            }
        }
        publish(tx, &map);
    }
}

fn publish(tx: &watch::Sender<KeyMap>, map: &BTreeMap<Vec<u8>, KeyValue>) {
    tx.send_if_modified(|cur| {
        if **cur == *map {
            false
        } else {
            *cur = Arc::new(map.clone());
            true
        }
    });
}
