//! The ledger's replicated log: batches of encoded ledger events in etcd.
//!
//! Keys under the log's prefix `P`:
//! - `P/log/<first seq, 20 digits>`: one batch, the events from that seq on;
//! - `P/head`: the last appended seq, in decimal;
//! - `P/applied/<member>`: the seq a member has applied, on its lease.
//!
//! Only the leader appends: each batch is one transaction guarded by the
//! leader's election key ([`Leadership::fence`]) and by the head being the
//! seq just before the batch, so a stale leader's append is refused and the
//! log has no gap and no overlap. Batches larger than etcd's request limit
//! are split into several transactions. Followers list the log and then
//! watch it from the listed revision, receiving every batch in seq order.
//! Batches every live member has applied are deleted by [`ReplicatedLog::compact`].

use std::time::Duration;

use tokio::sync::mpsc;

use crate::client::Etcd;
use crate::election::{Leadership, dir};
use crate::error::{Error, Result, show_key};
use crate::lease::Lease;
use crate::ops;
use crate::pb::etcdserverpb::{RangeRequest, response_op};
use crate::pb::mvccpb::{KeyValue, event::EventType};
use crate::util::AbortOnDrop;

/// etcd's default limit on a request (`--max-request-bytes`).
pub const ETCD_MAX_REQUEST_BYTES: usize = 1536 * 1024;

/// The default limit on one batch's value: etcd's request limit less room
/// for the keys and the transaction around it.
pub const DEFAULT_MAX_BATCH_BYTES: usize = 1024 * 1024;

/// The format byte that starts every stored batch, followed by the number
/// of entries (u32, little-endian) and the entries.
const FORMAT: u8 = 1;
/// Bytes before the first entry: format and count.
const HEADER: usize = 5;
/// Bytes of an entry's frame: seq (u64) and length (u32), little-endian.
const FRAME: usize = 12;

/// One encoded ledger event and its seq.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The event's seq (from 1, gap-free).
    pub seq: u64,
    /// The encoded event.
    pub bytes: Vec<u8>,
}

/// Consecutive entries, as appended in one transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Batch {
    /// The entries, in seq order; never empty.
    pub entries: Vec<Entry>,
}

impl Batch {
    /// The first entry's seq.
    pub fn first_seq(&self) -> u64 {
        self.entries.first().map_or(0, |e| e.seq)
    }

    /// The last entry's seq.
    pub fn last_seq(&self) -> u64 {
        self.entries.last().map_or(0, |e| e.seq)
    }
}

fn encode(entries: &[Entry]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER + entries.iter().map(|e| FRAME + e.bytes.len()).sum::<usize>());
    out.push(FORMAT);
    // Batches are bounded by the batch limit, so the count fits.
    out.extend_from_slice(&u32::try_from(entries.len()).unwrap_or(u32::MAX).to_le_bytes());
    for e in entries {
        out.extend_from_slice(&e.seq.to_le_bytes());
        // Entries are bounded by the batch limit, far below u32::MAX.
        out.extend_from_slice(&u32::try_from(e.bytes.len()).unwrap_or(u32::MAX).to_le_bytes());
        out.extend_from_slice(&e.bytes);
    }
    out
}

/// Decodes a stored batch, checking its format, framing and that its seqs
/// are consecutive from the one its key names.
pub fn decode(key: &[u8], value: &[u8]) -> Result<Batch> {
    let bad = |reason: String| Error::Malformed {
        key: show_key(key),
        reason,
    };
    let first = std::str::from_utf8(key)
        .ok()
        .and_then(|k| k.rsplit('/').next())
        .and_then(|s| s.parse::<u64>().ok())
        .ok_or_else(|| bad("the key does not end in a seq".into()))?;
    let (&format, rest) = value.split_first().ok_or_else(|| bad("empty batch".into()))?;
    if format != FORMAT {
        return Err(bad(format!("unknown batch format {format}")));
    }
    let (count, mut rest) = rest
        .split_at_checked(4)
        .ok_or_else(|| bad("truncated batch header".into()))?;
    let count = u32::from_le_bytes(count.try_into().map_err(|_| bad("header".into()))?) as usize;
    let mut entries = Vec::new();
    while !rest.is_empty() {
        let (frame, tail) = rest
            .split_at_checked(FRAME)
            .ok_or_else(|| bad("truncated entry frame".into()))?;
        let seq = u64::from_le_bytes(frame[..8].try_into().map_err(|_| bad("frame".into()))?);
        let len = u32::from_le_bytes(frame[8..].try_into().map_err(|_| bad("frame".into()))?) as usize;
        let (bytes, tail) = tail
            .split_at_checked(len)
            .ok_or_else(|| bad(format!("entry {seq} truncated")))?;
        let expected = first + entries.len() as u64;
        if seq != expected {
            return Err(bad(format!("entry seq {seq} where {expected} was due")));
        }
        entries.push(Entry {
            seq,
            bytes: bytes.to_vec(),
        });
        rest = tail;
    }
    if entries.is_empty() {
        return Err(bad("batch without entries".into()));
    }
    if entries.len() != count {
        return Err(bad(format!("{} entries where the header says {count}", entries.len())));
    }
    Ok(Batch { entries })
}

/// The log under one prefix.
#[derive(Debug, Clone)]
pub struct ReplicatedLog {
    etcd: Etcd,
    prefix: Vec<u8>,
    max_batch_bytes: usize,
}

fn seq_value(kv: Option<&KeyValue>) -> Result<u64> {
    let Some(kv) = kv else { return Ok(0) };
    std::str::from_utf8(&kv.value)
        .ok()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| Error::Malformed {
            key: show_key(&kv.key),
            reason: "not a seq".into(),
        })
}

impl ReplicatedLog {
    /// The log under `prefix` (a `/` is added when missing).
    pub fn new(etcd: &Etcd, prefix: &str) -> ReplicatedLog {
        ReplicatedLog {
            etcd: etcd.clone(),
            prefix: dir(prefix),
            max_batch_bytes: DEFAULT_MAX_BATCH_BYTES,
        }
    }

    /// Sets the limit on one stored batch (at most etcd's request limit
    /// less 64 KiB); an append larger than it is split.
    pub fn with_max_batch_bytes(mut self, bytes: usize) -> ReplicatedLog {
        self.max_batch_bytes = bytes.clamp(HEADER + FRAME + 1, ETCD_MAX_REQUEST_BYTES - 64 * 1024);
        self
    }

    fn log_prefix(&self) -> Vec<u8> {
        [self.prefix.as_slice(), b"log/"].concat()
    }

    fn batch_key(&self, first: u64) -> Vec<u8> {
        [self.prefix.as_slice(), format!("log/{first:020}").as_bytes()].concat()
    }

    fn head_key(&self) -> Vec<u8> {
        [self.prefix.as_slice(), b"head"].concat()
    }

    fn applied_prefix(&self) -> Vec<u8> {
        [self.prefix.as_slice(), b"applied/"].concat()
    }

    /// The last appended seq (0 for an empty log).
    pub async fn head(&self) -> Result<u64> {
        seq_value(self.etcd.get(self.head_key()).await?.as_ref())
    }

    /// Appends consecutive `entries`, the first of which follows the head,
    /// as the leader `leader`. Returns once etcd has accepted every part;
    /// [`Error::NotLeader`] when `leader` no longer leads, and
    /// [`Error::LogConflict`] when the head is elsewhere.
    pub async fn append(&self, leader: &Leadership, entries: &[Entry]) -> Result<()> {
        let Some(first) = entries.first() else { return Ok(()) };
        if first.seq == 0 {
            return Err(Error::InvalidAppend("seqs start at 1".into()));
        }
        if let Some(w) = entries.windows(2).find(|w| w[1].seq != w[0].seq + 1) {
            return Err(Error::InvalidAppend(format!("seq {} follows {}", w[1].seq, w[0].seq)));
        }
        if let Some(e) = entries
            .iter()
            .find(|e| HEADER + FRAME + e.bytes.len() > self.max_batch_bytes)
        {
            return Err(Error::InvalidAppend(format!(
                "entry {} has {} bytes, more than a batch may hold ({})",
                e.seq,
                e.bytes.len(),
                self.max_batch_bytes - FRAME - HEADER
            )));
        }
        let mut start = 0;
        while start < entries.len() {
            let mut size = HEADER;
            let mut end = start;
            while end < entries.len() && size + FRAME + entries[end].bytes.len() <= self.max_batch_bytes {
                size += FRAME + entries[end].bytes.len();
                end += 1;
            }
            self.append_one(leader, &entries[start..end]).await?;
            start = end;
        }
        Ok(())
    }

    async fn append_one(&self, leader: &Leadership, entries: &[Entry]) -> Result<()> {
        // etcd's guard decides, not this node's view of its leadership: a
        // leader that lost its key but has not noticed yet is refused too.
        let not_leader = || Error::NotLeader {
            key: show_key(leader.key()),
        };
        let first = entries[0].seq;
        let last = first + entries.len() as u64 - 1;
        let head = self.head_key();
        let key = self.batch_key(first);
        let value = encode(entries);
        let head_guard = if first == 1 {
            ops::create_revision_is(&head, 0)
        } else {
            ops::value_is(&head, (first - 1).to_string().as_bytes())
        };
        let resp = self
            .etcd
            .txn(ops::txn(
                vec![leader.fence(), head_guard],
                vec![
                    ops::put(&key, value.clone(), 0),
                    ops::put(&head, last.to_string().into_bytes(), 0),
                ],
                vec![ops::get(leader.key()), ops::get(&head), ops::get(&key)],
            ))
            .await?;
        if resp.succeeded {
            return Ok(());
        }
        let mut found = resp.responses.into_iter().map(|r| match r.response {
            Some(response_op::Response::ResponseRange(range)) => range.kvs.into_iter().next(),
            _ => None,
        });
        let (election, head_kv, stored) = (found.next().flatten(), found.next().flatten(), found.next().flatten());
        if election.is_none_or(|kv| kv.create_revision != leader.revision()) {
            return Err(not_leader());
        }
        let found = seq_value(head_kv.as_ref())?;
        // A retry (after an endpoint failed mid-call) of a part etcd had
        // already taken: the same bytes are there.
        if found >= last && stored.is_some_and(|kv| kv.value == value) {
            return Ok(());
        }
        Err(Error::LogConflict {
            first,
            expected: first - 1,
            found,
        })
    }

    /// As the leader, starts an empty log after `seq`: the first append is
    /// then `seq + 1` (a ledger that held events before the cluster
    /// existed). Does nothing when the log has a head already.
    pub async fn start_at(&self, leader: &Leadership, seq: u64) -> Result<()> {
        let head = self.head_key();
        let resp = self
            .etcd
            .txn(ops::txn(
                vec![leader.fence(), ops::create_revision_is(&head, 0)],
                vec![ops::put(&head, seq.to_string().into_bytes(), 0)],
                vec![ops::get(leader.key())],
            ))
            .await?;
        if resp.succeeded {
            return Ok(());
        }
        let still_leader = resp.responses.into_iter().any(|r| match r.response {
            Some(response_op::Response::ResponseRange(range)) => range
                .kvs
                .first()
                .is_some_and(|kv| kv.create_revision == leader.revision()),
            _ => false,
        });
        if still_leader {
            Ok(())
        } else {
            Err(Error::NotLeader {
                key: show_key(leader.key()),
            })
        }
    }

    /// Every entry after `seq`, in order. [`Error::Compacted`] when some of
    /// them were already compacted away.
    pub async fn read_after(&self, seq: u64) -> Result<Vec<Entry>> {
        let (kvs, revision) = self.etcd.get_prefix(&self.log_prefix()).await?;
        let mut out = Vec::new();
        let mut next = seq + 1;
        for kv in &kvs {
            let batch = decode(&kv.key, &kv.value)?;
            if batch.last_seq() < next {
                continue;
            }
            if batch.first_seq() > next {
                return Err(compacted(next, batch.first_seq()));
            }
            next = batch.last_seq() + 1;
            out.extend(batch.entries.into_iter().filter(|e| e.seq > seq));
        }
        if out.is_empty() {
            let head = self
                .etcd
                .range(RangeRequest {
                    key: self.head_key(),
                    revision,
                    ..Default::default()
                })
                .await?
                .kvs
                .into_iter()
                .next();
            let head = seq_value(head.as_ref())?;
            if head > seq {
                return Err(compacted(seq + 1, head + 1));
            }
        }
        Ok(out)
    }

    /// Follows the log from the entry after `after` on.
    pub fn follow(&self, after: u64) -> Follower {
        let (tx, rx) = mpsc::channel(64);
        let task = tokio::spawn(follow(self.clone(), after + 1, tx));
        Follower {
            rx,
            _task: AbortOnDrop(task),
        }
    }

    /// Publishes that `member` has applied everything through `seq`, on
    /// its lease (so that a dead member stops holding compaction back).
    pub async fn publish_applied(&self, member: &str, lease: &Lease, seq: u64) -> Result<()> {
        let key = [self.applied_prefix().as_slice(), member.as_bytes()].concat();
        self.etcd.put(key, seq.to_string().into_bytes(), lease.id()).await?;
        Ok(())
    }

    /// The seq every live member has applied (the smallest published), or
    /// `None` when no member published one.
    pub async fn applied_by_all(&self) -> Result<Option<u64>> {
        let (kvs, _) = self.etcd.get_prefix(&self.applied_prefix()).await?;
        let mut min = None;
        for kv in &kvs {
            let seq = seq_value(Some(kv))?;
            min = Some(min.map_or(seq, |m: u64| m.min(seq)));
        }
        Ok(min)
    }

    /// As the leader, deletes the batches every live member has applied
    /// (keeping the last one, so the log never looks empty behind its
    /// head). Returns the first seq still stored.
    pub async fn compact(&self, leader: &Leadership) -> Result<Option<u64>> {
        let Some(through) = self.applied_by_all().await? else {
            return Ok(None);
        };
        let prefix = self.log_prefix();
        let resp = self
            .etcd
            .range(RangeRequest {
                key: prefix.clone(),
                range_end: crate::client::prefix_end(&prefix),
                keys_only: true,
                ..Default::default()
            })
            .await?;
        let mut firsts = Vec::with_capacity(resp.kvs.len());
        for kv in &resp.kvs {
            let seq = std::str::from_utf8(&kv.key[prefix.len()..])
                .ok()
                .and_then(|s| s.parse::<u64>().ok())
                .ok_or_else(|| Error::Malformed {
                    key: show_key(&kv.key),
                    reason: "not a batch key".into(),
                })?;
            firsts.push(seq);
        }
        // The batch holding `through + 1` (or the last one) is the first
        // that must stay; every batch before it ends at or before `through`.
        let Some(&cut) = firsts.iter().rev().find(|&&f| f <= through + 1) else {
            return Ok(firsts.first().copied());
        };
        if firsts.first() == Some(&cut) {
            return Ok(Some(cut));
        }
        let resp = self
            .etcd
            .txn(ops::txn(
                vec![leader.fence()],
                vec![ops::delete_range(&prefix, self.batch_key(cut))],
                Vec::new(),
            ))
            .await?;
        if !resp.succeeded {
            return Err(Error::NotLeader {
                key: show_key(leader.key()),
            });
        }
        Ok(Some(cut))
    }
}

fn compacted(wanted: u64, first: u64) -> Error {
    Error::Compacted(format!(
        "the replicated log starts at seq {first}, entry {wanted} is gone"
    ))
}

/// Batches of the log in seq order, delivered by a background task that
/// re-lists and re-watches when the connection breaks; dropping it stops.
pub struct Follower {
    rx: mpsc::Receiver<Result<Batch>>,
    _task: AbortOnDrop,
}

impl Follower {
    /// The next batch; an error ([`Error::Compacted`], or a malformed
    /// batch) ends the follower.
    pub async fn next(&mut self) -> Option<Result<Batch>> {
        self.rx.recv().await
    }
}

async fn follow(log: ReplicatedLog, mut next: u64, tx: mpsc::Sender<Result<Batch>>) {
    loop {
        match follow_once(&log, &mut next, &tx).await {
            Ok(()) => return,
            Err(e @ (Error::Compacted(_) | Error::Malformed { .. })) => {
                let _ = tx.send(Err(e)).await;
                return;
            }
            Err(e) => {
                tracing::debug!(error = %e, next, "following the replicated log; listing again");
                tokio::time::sleep(Duration::from_millis(300)).await;
            }
        }
        if tx.is_closed() {
            return;
        }
    }
}

/// Hands `batch` on from `next`: drops what was already delivered, and
/// refuses a gap.
async fn deliver(batch: Batch, next: &mut u64, tx: &mpsc::Sender<Result<Batch>>) -> Result<bool> {
    if batch.last_seq() < *next {
        return Ok(true);
    }
    if batch.first_seq() > *next {
        return Err(Error::WatchEnded {
            key: "replicated log".into(),
            reason: format!("gap before seq {}", *next),
        });
    }
    let entries: Vec<Entry> = batch.entries.into_iter().filter(|e| e.seq >= *next).collect();
    let last = entries.last().map_or(*next - 1, |e| e.seq);
    if tx.send(Ok(Batch { entries })).await.is_err() {
        return Ok(false);
    }
    *next = last + 1;
    Ok(true)
}

/// Lists and then watches; `Ok` when the receiver is gone.
async fn follow_once(log: &ReplicatedLog, next: &mut u64, tx: &mpsc::Sender<Result<Batch>>) -> Result<()> {
    let prefix = log.log_prefix();
    let (kvs, revision) = log.etcd.get_prefix(&prefix).await?;
    let mut batches = Vec::with_capacity(kvs.len());
    for kv in &kvs {
        batches.push(decode(&kv.key, &kv.value)?);
    }
    if let Some(first) = batches.iter().find(|b| b.last_seq() >= *next)
        && first.first_seq() > *next
    {
        return Err(compacted(*next, first.first_seq()));
    }
    for batch in batches {
        if !deliver(batch, next, tx).await? {
            return Ok(());
        }
    }
    let mut watch = log.etcd.watch_prefix(&prefix, revision + 1).await?;
    loop {
        let changes = watch.next().await?;
        for event in changes.events {
            if event.r#type == EventType::Delete as i32 {
                continue;
            }
            let Some(kv) = event.kv else { continue };
            if !deliver(decode(&kv.key, &kv.value)?, next, tx).await? {
                return Ok(());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(first: u64, n: u64) -> Vec<Entry> {
        (first..first + n)
            .map(|seq| Entry {
                seq,
                bytes: format!("event {seq}").into_bytes(),
            })
            .collect()
    }

    #[test]
    fn a_batch_round_trips() {
        let e = entries(41, 3);
        let batch = decode(b"svc/ledger/log/00000000000000000041", &encode(&e)).unwrap();
        assert_eq!(batch.entries, e);
        assert_eq!((batch.first_seq(), batch.last_seq()), (41, 43));
    }

    #[test]
    fn malformed_batches_are_errors_not_panics() {
        let key = b"p/log/00000000000000000001";
        let good = encode(&entries(1, 2));
        assert!(decode(key, &[]).is_err());
        assert!(decode(key, &[9]).is_err());
        assert!(decode(key, &[FORMAT]).is_err());
        assert!(decode(key, &[FORMAT, 0, 0, 0, 0]).is_err(), "a batch without entries");
        for cut in 1..good.len() {
            assert!(decode(key, &good[..cut]).is_err(), "truncated at {cut}");
        }
        assert!(
            decode(b"p/log/00000000000000000002", &good).is_err(),
            "seq not the key's"
        );
        assert!(decode(b"p/log/x", &good).is_err());
        let mut gap = encode(&entries(1, 2));
        let third = encode(&entries(3, 1));
        let second_at = HEADER + FRAME + entries(1, 1)[0].bytes.len();
        gap.truncate(second_at);
        gap.extend_from_slice(&third[HEADER..]);
        assert!(decode(key, &gap).is_err(), "a gap inside a batch");
    }
}
