//! One node's versions through time: every distinct row the commits wrote
//! for its CRN, newest first. A CRN's records live in one segment shard of
//! each commit, so this reads one segment per commit (a checkpoint repeats
//! the row a delta wrote before it; equal neighbours are kept once).

use redb::{ReadableDatabase, ReadableTable};
use svc_graph::graph::NodeRow;

use super::error::StoreError;
use super::segments::{SEGMENT_SHARDS, decompress, records, segment_shard};
use super::store::{COMMITS, GraphStore, PART_NODES, PART_NODES_LZ4, SEGMENTS};
use crate::bytes::DecodeError;
use crate::codec::decode_node;

/// A node's stored versions, newest first.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NodeHistory {
    pub versions: Vec<NodeRow>,
    /// Versions stored in all, listed or not.
    pub total: u64,
}

impl GraphStore {
    /// At most `limit` of `crn`'s versions, newest first (empty when the
    /// store never held the CRN).
    pub fn node_versions(&self, crn: &str, limit: usize) -> Result<NodeHistory, StoreError> {
        let err = self.db_err();
        let txn = self.database()?.begin_read().map_err(|e| err(e.into()))?;
        let commits = txn.open_table(COMMITS).map_err(|e| err(e.into()))?;
        let segs = txn.open_table(SEGMENTS).map_err(|e| err(e.into()))?;
        let shard = segment_shard(crn.as_bytes());
        let mut out = NodeHistory::default();
        let mut last: Option<NodeRow> = None;
        for item in commits.iter().map_err(|e| err(e.into()))?.rev() {
            let (commit, _) = item.map_err(|e| err(e.into()))?;
            let commit = commit.value();
            let (stored, compressed) = match segs.get((commit, PART_NODES_LZ4, shard)).map_err(|e| err(e.into()))? {
                Some(v) => {
                    // Its pieces after the first, in order (`segments::pieces`).
                    let mut stored = v.value().to_vec();
                    let more = (shard + SEGMENT_SHARDS..=u16::MAX).step_by(usize::from(SEGMENT_SHARDS));
                    for field in more {
                        match segs.get((commit, PART_NODES_LZ4, field)).map_err(|e| err(e.into()))? {
                            Some(piece) => stored.extend_from_slice(piece.value()),
                            None => break,
                        }
                    }
                    (stored, true)
                }
                None => match segs.get((commit, PART_NODES, shard)).map_err(|e| err(e.into()))? {
                    Some(v) => (v.value().to_vec(), false),
                    None => continue,
                },
            };
            let row =
                row_in(&stored, compressed, crn.as_bytes()).map_err(|e| self.corrupt("node segment".into(), e))?;
            let Some(row) = row else { continue };
            if last.as_ref() == Some(&row) {
                continue;
            }
            out.total += 1;
            if out.versions.len() < limit {
                out.versions.push(row.clone());
            }
            last = Some(row);
        }
        Ok(out)
    }
}

/// The row a segment holds for `key` (its last record of the key).
fn row_in(stored: &[u8], compressed: bool, key: &[u8]) -> Result<Option<NodeRow>, DecodeError> {
    let plain;
    let seg: &[u8] = if compressed {
        plain = decompress(stored)?;
        &plain
    } else {
        stored
    };
    let mut found = None;
    for rec in records(seg) {
        let (k, v) = rec?;
        if k == key {
            found = Some(v);
        }
    }
    found.map(decode_node).transpose()
}
