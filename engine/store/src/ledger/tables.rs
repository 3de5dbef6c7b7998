//! Tables of `events.redb` and the small records kept in `meta`.
//!
//! - `events`: seq -> encoded event ([`super::codec`]).
//! - Time has no index: timestamps never decrease with seq, so a time bound
//!   maps to a seq bound by a binary search over `events` (about 24 reads at
//!   10M events).
//! - `by_type_blocks`: the type index ([`super::type_index`]): (type, seq)
//!   -> the ordinal of a block's first event and the seqs of one commit's
//!   events of that type. Counting the events of one type between two seqs
//!   takes two lookups (ordinals are consecutive); a commit writes one value
//!   per type it appends.
//! - `crn_recent` and `crn_runs`: the CRN postings ([`super::postings`]):
//!   a (crn hash, seq) pair per event naming a resource, one sorted block
//!   per commit at the right edge of `crn_recent`, compacted every 65,536
//!   postings (or 512 values) into a run of one block per hash bucket (1024
//!   buckets) in `crn_runs`. `meta` `crn_recent` counts the postings in
//!   `crn_recent`.
//! - Format 1 files (`meta` `format` 1) kept a key per event instead:
//!   `by_type` ((type, seq) -> ordinal), `crn_postings` ((bucket, seq) ->
//!   hash, 256 buckets) or before it `by_crn` ((crn, seq) -> ordinal), and
//!   before that a `by_time` table. Opening one builds both indexes from
//!   `events` in one pass, drops the old tables and writes format 2, in one
//!   transaction (under 2 minutes for the 10M-event bench file).
//! - `sessions`: session id -> (first_us, last_us, count, first_seq, last_seq).
//! - `meta`: `format`, `head` (last seq, last ts, last hash), `anchor` (first
//!   seq the chain is verified from and the hash that event must link to),
//!   `savings` (sum of `payload.savings_usd` over the stored events, f64),
//!   `scans` (the highest `scan_seq` a `SCAN_COMPLETED` or `SCAN_RECOVERED`
//!   event recorded, u64; absent in files written before it was kept).
//! - `export`: `exported_through` -> the last seq the compliance export has
//!   written to its bucket. Created on first use, so older files open as is.

use redb::{ReadableTable, TableDefinition};

use super::error::LedgerError;
use crate::bytes::{DecodeError, Reader, Writer};

pub const EVENTS: TableDefinition<u64, &[u8]> = TableDefinition::new("events");
/// The time index of older files, dropped when such a file is opened.
pub const LEGACY_BY_TIME: TableDefinition<(u64, u64), ()> = TableDefinition::new("by_time");
/// The type index ([`super::type_index`]).
pub const BY_TYPE: TableDefinition<(&str, u64), &[u8]> = TableDefinition::new("by_type_blocks");
/// The type index of format 1 files ((type, seq) -> ordinal, a key per
/// event), replaced when such a file is opened.
pub const LEGACY_BY_TYPE: TableDefinition<(&str, u64), u64> = TableDefinition::new("by_type");
/// CRN postings, one value per commit ([`super::postings`]).
pub const CRN_RECENT: TableDefinition<u64, &[u8]> = TableDefinition::new("crn_recent");
/// CRN postings compacted into runs, one value per bucket and run.
pub const CRN_RUNS: TableDefinition<(u16, u64), &[u8]> = TableDefinition::new("crn_runs");
/// The CRN postings of older files ((bucket, seq) -> hash, a key per
/// event), replaced when such a file is opened.
pub const LEGACY_CRN_POSTINGS: TableDefinition<(u16, u64), u64> = TableDefinition::new("crn_postings");
/// The CRN index of older files still ((crn, seq) -> ordinal), replaced
/// when such a file is opened.
pub const LEGACY_BY_CRN: TableDefinition<(&str, u64), u64> = TableDefinition::new("by_crn");
pub const SESSIONS: TableDefinition<&str, (u64, u64, u64, u64, u64)> = TableDefinition::new("sessions");
pub const META: TableDefinition<&str, &[u8]> = TableDefinition::new("meta");
pub const EXPORT: TableDefinition<&str, u64> = TableDefinition::new("export");
pub const EXPORTED_THROUGH: &str = "exported_through";

pub const FORMAT_KEY: &str = "format";
/// 2: the type index and the CRN postings hold one value per commit (and
/// type, or run and bucket) instead of one key per event. Format 1 files
/// are upgraded when opened.
pub const FORMAT_VERSION: u64 = 2;
pub const FORMAT_V1: u64 = 1;
const HEAD_KEY: &str = "head";
const ANCHOR_KEY: &str = "anchor";
const SAVINGS_KEY: &str = "savings";
const CRN_RECENT_KEY: &str = "crn_recent";
const SCANS_KEY: &str = "scans";

/// The newest event: what the next append links to.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Head {
    pub seq: u64,
    pub ts_us: u64,
    pub hash: [u8; 32],
}

/// Where verification starts: the first stored seq and the hash its
/// `prev_hash` must equal (all zeros until something is pruned).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Anchor {
    pub seq: u64,
    pub prev_hash: [u8; 32],
}

impl Default for Anchor {
    fn default() -> Self {
        Anchor {
            seq: 1,
            prev_hash: [0; 32],
        }
    }
}

/// One row of the `sessions` table.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SessionRow {
    pub first_us: u64,
    pub last_us: u64,
    pub count: u64,
    pub first_seq: u64,
    pub last_seq: u64,
}

impl SessionRow {
    /// `row` with one more event (`seq` at `ts_us`), or the first one.
    pub fn grown(row: Option<SessionRow>, ts_us: u64, seq: u64) -> SessionRow {
        match row {
            None => SessionRow {
                first_us: ts_us,
                last_us: ts_us,
                count: 1,
                first_seq: seq,
                last_seq: seq,
            },
            Some(r) => SessionRow {
                last_us: ts_us,
                count: r.count + 1,
                last_seq: seq,
                ..r
            },
        }
    }

    pub fn from_tuple(t: (u64, u64, u64, u64, u64)) -> Self {
        SessionRow {
            first_us: t.0,
            last_us: t.1,
            count: t.2,
            first_seq: t.3,
            last_seq: t.4,
        }
    }
    pub fn to_tuple(self) -> (u64, u64, u64, u64, u64) {
        (self.first_us, self.last_us, self.count, self.first_seq, self.last_seq)
    }
}

fn corrupt(what: &str) -> LedgerError {
    LedgerError::Corrupt(format!("meta record {what} is malformed"))
}

/// A meta record read by `read`; anything it cannot read makes the record `what` malformed.
fn record<T>(
    raw: &[u8],
    what: &str,
    read: impl FnOnce(&mut Reader<'_>) -> Result<T, DecodeError>,
) -> Result<T, LedgerError> {
    read(&mut Reader::new(raw)).map_err(|_| corrupt(what))
}

fn read_raw<T: ReadableTable<&'static str, &'static [u8]>>(
    meta: &T,
    key: &str,
) -> Result<Option<Vec<u8>>, LedgerError> {
    Ok(meta.get(key)?.map(|g| g.value().to_vec()))
}

pub fn read_format<T: ReadableTable<&'static str, &'static [u8]>>(meta: &T) -> Result<Option<u64>, LedgerError> {
    match read_raw(meta, FORMAT_KEY)? {
        None => Ok(None),
        Some(raw) => record(&raw, FORMAT_KEY, |r| r.u64("format")).map(Some),
    }
}

pub fn read_head<T: ReadableTable<&'static str, &'static [u8]>>(meta: &T) -> Result<Head, LedgerError> {
    match read_raw(meta, HEAD_KEY)? {
        None => Ok(Head::default()),
        Some(raw) if raw.len() == 48 => record(&raw, HEAD_KEY, |r| {
            Ok(Head {
                seq: r.u64("seq")?,
                ts_us: r.u64("ts_us")?,
                hash: r.array("hash")?,
            })
        }),
        Some(_) => Err(corrupt(HEAD_KEY)),
    }
}

pub fn read_anchor<T: ReadableTable<&'static str, &'static [u8]>>(meta: &T) -> Result<Anchor, LedgerError> {
    match read_raw(meta, ANCHOR_KEY)? {
        None => Ok(Anchor::default()),
        Some(raw) if raw.len() == 40 => record(&raw, ANCHOR_KEY, |r| {
            Ok(Anchor {
                seq: r.u64("seq")?,
                prev_hash: r.array("prev_hash")?,
            })
        }),
        Some(_) => Err(corrupt(ANCHOR_KEY)),
    }
}

pub fn read_savings<T: ReadableTable<&'static str, &'static [u8]>>(meta: &T) -> Result<f64, LedgerError> {
    match read_raw(meta, SAVINGS_KEY)? {
        None => Ok(0.0),
        Some(raw) => record(&raw, SAVINGS_KEY, |r| r.f64("savings")),
    }
}

/// Postings held in `crn_recent`.
pub fn read_crn_recent<T: ReadableTable<&'static str, &'static [u8]>>(meta: &T) -> Result<u64, LedgerError> {
    match read_raw(meta, CRN_RECENT_KEY)? {
        None => Ok(0),
        Some(raw) => record(&raw, CRN_RECENT_KEY, |r| r.u64("count")),
    }
}

pub fn write_crn_recent(meta: &mut redb::Table<&str, &[u8]>, count: u64) -> Result<(), LedgerError> {
    meta.insert(CRN_RECENT_KEY, count.to_le_bytes().as_slice())?;
    Ok(())
}

/// The highest scan seq a scan event recorded; `None` in a file written
/// before the record was kept.
pub fn read_scans<T: ReadableTable<&'static str, &'static [u8]>>(meta: &T) -> Result<Option<u64>, LedgerError> {
    match read_raw(meta, SCANS_KEY)? {
        None => Ok(None),
        Some(raw) => record(&raw, SCANS_KEY, |r| r.u64("scan_seq")).map(Some),
    }
}

pub fn write_scans(meta: &mut redb::Table<&str, &[u8]>, scan_seq: u64) -> Result<(), LedgerError> {
    meta.insert(SCANS_KEY, scan_seq.to_le_bytes().as_slice())?;
    Ok(())
}

pub fn write_format(meta: &mut redb::Table<&str, &[u8]>) -> Result<(), LedgerError> {
    meta.insert(FORMAT_KEY, FORMAT_VERSION.to_le_bytes().as_slice())?;
    Ok(())
}

pub fn write_head(meta: &mut redb::Table<&str, &[u8]>, h: &Head) -> Result<(), LedgerError> {
    let mut raw = Vec::with_capacity(48);
    let mut w = Writer::new(&mut raw);
    w.u64(h.seq);
    w.u64(h.ts_us);
    w.raw(&h.hash);
    meta.insert(HEAD_KEY, raw.as_slice())?;
    Ok(())
}

pub fn write_anchor(meta: &mut redb::Table<&str, &[u8]>, a: &Anchor) -> Result<(), LedgerError> {
    let mut raw = Vec::with_capacity(40);
    let mut w = Writer::new(&mut raw);
    w.u64(a.seq);
    w.raw(&a.prev_hash);
    meta.insert(ANCHOR_KEY, raw.as_slice())?;
    Ok(())
}

pub fn write_savings(meta: &mut redb::Table<&str, &[u8]>, v: f64) -> Result<(), LedgerError> {
    meta.insert(SAVINGS_KEY, v.to_le_bytes().as_slice())?;
    Ok(())
}

/// The first seq whose timestamp is at or after `ts_us`: a binary search
/// over the stored seqs, which have non-decreasing timestamps.
pub fn seq_at_or_after<T: ReadableTable<u64, &'static [u8]>>(
    events: &T,
    ts_us: u64,
) -> Result<Option<u64>, LedgerError> {
    let Some((first, last)) = seq_bounds(events)? else {
        return Ok(None);
    };
    let ts_of = |seq: u64| -> Result<u64, LedgerError> {
        let v = events
            .get(seq)?
            .ok_or_else(|| LedgerError::Corrupt(format!("event {seq} is missing inside the chain")))?;
        super::codec::peek_ts(v.value()).map_err(|e| LedgerError::Corrupt(format!("event {seq}: {e}")))
    };
    // Invariant: every seq below `lo` is earlier than `ts_us`, `hi` is the
    // answer or one past the last event.
    let (mut lo, mut hi) = (first, last + 1);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if ts_of(mid)? < ts_us {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    Ok((lo <= last).then_some(lo))
}

/// First and last stored seq, `None` when the ledger is empty.
pub fn seq_bounds<T: ReadableTable<u64, &'static [u8]>>(events: &T) -> Result<Option<(u64, u64)>, LedgerError> {
    let first = match events.first()? {
        Some((k, _)) => k.value(),
        None => return Ok(None),
    };
    let last = match events.last()? {
        Some((k, _)) => k.value(),
        None => first,
    };
    Ok(Some((first, last)))
}

#[cfg(test)]
mod tests {
    use redb::backends::InMemoryBackend;
    use redb::{Database, ReadableDatabase};

    use super::*;

    /// The meta records' stored bytes, spelled out, and read back.
    #[test]
    fn meta_records_keep_their_layout() {
        let db = Database::builder().create_with_backend(InMemoryBackend::new()).unwrap();
        let head = Head {
            seq: 0x0102,
            ts_us: 7,
            hash: [0xab; 32],
        };
        let anchor = Anchor {
            seq: 3,
            prev_hash: [0xcd; 32],
        };
        let txn = db.begin_write().unwrap();
        {
            let mut meta = txn.open_table(META).unwrap();
            write_head(&mut meta, &head).unwrap();
            write_anchor(&mut meta, &anchor).unwrap();
            write_savings(&mut meta, 2.5).unwrap();
            write_crn_recent(&mut meta, 9).unwrap();
            write_format(&mut meta).unwrap();
        }
        txn.commit().unwrap();
        let txn = db.begin_read().unwrap();
        let meta = txn.open_table(META).unwrap();
        let raw = |k: &str| meta.get(k).unwrap().unwrap().value().to_vec();
        let le = |v: u64| v.to_le_bytes().to_vec();
        assert_eq!(raw(HEAD_KEY), [le(0x0102), le(7), vec![0xab; 32]].concat());
        assert_eq!(raw(ANCHOR_KEY), [le(3), vec![0xcd; 32]].concat());
        assert_eq!(raw(SAVINGS_KEY), 2.5f64.to_le_bytes());
        assert_eq!(raw(CRN_RECENT_KEY), le(9));
        assert_eq!(raw(FORMAT_KEY), le(FORMAT_VERSION));
        assert_eq!(read_head(&meta).unwrap(), head);
        assert_eq!(read_anchor(&meta).unwrap(), anchor);
        assert_eq!(read_savings(&meta).unwrap(), 2.5);
        assert_eq!(read_crn_recent(&meta).unwrap(), 9);
        assert_eq!(read_format(&meta).unwrap(), Some(FORMAT_VERSION));
    }
}
