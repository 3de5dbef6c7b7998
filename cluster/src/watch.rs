//! Watches: a stream of a key range's changes from a revision on.
//!
//! A [`WatchStream`] is one etcd watcher on its own gRPC stream. It ends
//! (with an error) when the connection does or etcd cancels it; whoever
//! holds it re-creates it from the revision after the last one it saw.

use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

use crate::client::{Etcd, prefix_end};
use crate::error::{Error, Result, show_key};
use crate::pb::etcdserverpb::{
    WatchCreateRequest, WatchRequest, WatchResponse, watch_client::WatchClient, watch_request::RequestUnion,
};
use crate::pb::mvccpb::Event;

/// The events of one revision (or several) that a watch delivered.
#[derive(Debug, Clone)]
pub struct WatchBatch {
    /// The store's revision when etcd sent the batch.
    pub revision: i64,
    /// The changes, in revision order.
    pub events: Vec<Event>,
}

/// One open watcher.
pub struct WatchStream {
    key: Vec<u8>,
    // Keeps the request side open: etcd ends the watch when it closes.
    _requests: mpsc::Sender<WatchRequest>,
    inbound: tonic::Streaming<WatchResponse>,
}

impl std::fmt::Debug for WatchStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WatchStream")
            .field("key", &show_key(&self.key))
            .finish()
    }
}

fn ended(key: &[u8], resp: &WatchResponse) -> Error {
    if resp.compact_revision > 0 {
        Error::Compacted(format!(
            "watch on {:?} starts before revision {}, the oldest etcd keeps",
            show_key(key),
            resp.compact_revision
        ))
    } else {
        let reason = if resp.cancel_reason.is_empty() {
            "cancelled by etcd".to_owned()
        } else {
            resp.cancel_reason.clone()
        };
        Error::WatchEnded {
            key: show_key(key),
            reason,
        }
    }
}

impl Etcd {
    /// Watches `[key, range_end)` (only `key` when `range_end` is empty)
    /// from `start_revision` on (0: from now). Returns once etcd confirmed
    /// the watcher.
    pub async fn watch(&self, key: &[u8], range_end: Vec<u8>, start_revision: i64) -> Result<WatchStream> {
        let create = WatchRequest {
            request_union: Some(RequestUnion::CreateRequest(WatchCreateRequest {
                key: key.to_vec(),
                range_end,
                start_revision,
                ..Default::default()
            })),
        };
        let timeout = self.timeout();
        let mut last = None;
        for (url, channel) in self.channels() {
            let (tx, rx) = mpsc::channel(4);
            // The receiver is alive, so this cannot fail.
            let _ = tx.send(create.clone()).await;
            let open = async {
                let mut inbound = WatchClient::new(channel)
                    .watch(ReceiverStream::new(rx))
                    .await?
                    .into_inner();
                let first = inbound.message().await?;
                Ok::<_, tonic::Status>((inbound, first))
            };
            match tokio::time::timeout(timeout, open).await {
                Ok(Ok((inbound, Some(first)))) => {
                    if first.canceled {
                        return Err(ended(key, &first));
                    }
                    self.prefer(url);
                    return Ok(WatchStream {
                        key: key.to_vec(),
                        _requests: tx,
                        inbound,
                    });
                }
                Ok(Ok((_, None))) => {
                    last = Some(Error::WatchEnded {
                        key: show_key(key),
                        reason: format!("{url} closed the stream"),
                    })
                }
                Ok(Err(status)) if crate::client::retry_elsewhere(&status) => {
                    last = Some(Error::Unavailable {
                        op: "Watch",
                        endpoints: self.endpoints().join(", "),
                        message: format!("{url}: {}", status.message()),
                    });
                }
                Ok(Err(status)) => {
                    return Err(Error::Rpc {
                        op: "Watch",
                        endpoint: url.to_owned(),
                        code: status.code(),
                        message: status.message().to_owned(),
                    });
                }
                Err(_) => {
                    last = Some(Error::Timeout {
                        op: "Watch",
                        endpoint: url.to_owned(),
                        timeout,
                    })
                }
            }
        }
        Err(last.unwrap_or_else(|| Error::Config("no endpoints".into())))
    }

    /// Watches every key under `prefix` from `start_revision` on.
    pub async fn watch_prefix(&self, prefix: &[u8], start_revision: i64) -> Result<WatchStream> {
        self.watch(prefix, prefix_end(prefix), start_revision).await
    }
}

impl WatchStream {
    /// The next batch of changes. An error ends the watcher: the connection
    /// broke, or etcd cancelled it (a compacted start revision).
    pub async fn next(&mut self) -> Result<WatchBatch> {
        loop {
            match self.inbound.message().await {
                Ok(Some(resp)) => {
                    if resp.canceled {
                        return Err(ended(&self.key, &resp));
                    }
                    if resp.events.is_empty() {
                        continue;
                    }
                    let revision = resp.header.as_ref().map_or(0, |h| h.revision);
                    return Ok(WatchBatch {
                        revision,
                        events: resp.events,
                    });
                }
                Ok(None) => {
                    return Err(Error::WatchEnded {
                        key: show_key(&self.key),
                        reason: "etcd closed the stream".into(),
                    });
                }
                Err(status) => {
                    return Err(Error::WatchEnded {
                        key: show_key(&self.key),
                        reason: status.message().to_owned(),
                    });
                }
            }
        }
    }
}
