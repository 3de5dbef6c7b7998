//! The CRN index: a posting `(crn hash, seq)` for every event that names a
//! resource, kept so that an append writes one value at the right edge of a
//! table instead of one key per event in hundreds of places.
//!
//! - `crn_recent`: seq -> block. One value per commit that posts anything,
//!   keyed by the highest seq it posts, holding that commit's postings.
//! - `crn_runs`: (bucket, seq) -> block. When `crn_recent` holds
//!   [`COMPACT_POSTINGS`] postings or [`COMPACT_ROWS`] values, the writer
//!   moves all of them into one run: one value per bucket (the hash modulo
//!   [`RUN_BUCKETS`]), each keyed by the highest seq of the run.
//!
//! A block is a list of `(hash, seq)` pairs, 16 bytes each (two u64 LE),
//! sorted by hash then seq, so a lookup is a binary search. The values
//! partition the seqs in key order: every posting in a value has a seq at or
//! below its key and above the key of the value before it (in its bucket for
//! runs; every run's key is below every `crn_recent` key). So a query for
//! the seqs `lo..hi` reads the bucket's runs from key `lo` on, then
//! `crn_recent`, and stops after the first value keyed at or above `hi`:
//! 1/1024 of the run postings plus the recent ones, a few values per run.
//!
//! The hash is the first 8 bytes of the CRN's SHA-256, stable across
//! versions. Two resources of one ledger with the same 64-bit hash share
//! postings; callers that return events check the CRN.

use redb::{ReadableTable, ReadableTableMetadata, Table, WriteTransaction};

use super::error::LedgerError;
use super::tables;

/// A posting: the CRN hash and the seq of the event.
pub type Pair = (u64, u64);

/// Buckets of `crn_runs`.
pub const RUN_BUCKETS: u64 = 1024;
/// Postings in `crn_recent` that start a compaction into a run.
pub const COMPACT_POSTINGS: u64 = 65_536;
/// Values in `crn_recent` that start a compaction into a run (many small
/// commits).
pub const COMPACT_ROWS: u64 = 512;

const PAIR_LEN: usize = 16;

/// The 64-bit hash under which `crn`'s events are posted.
pub fn crn_hash(crn: &str) -> u64 {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(crn.as_bytes());
    let mut h = [0u8; 8];
    h.copy_from_slice(&digest[..8]);
    u64::from_be_bytes(h)
}

fn bucket_of(hash: u64) -> u16 {
    (hash % RUN_BUCKETS) as u16
}

/// The block of `pairs`, which must be sorted.
fn encode(pairs: &[Pair]) -> Vec<u8> {
    let mut out = Vec::with_capacity(pairs.len() * PAIR_LEN);
    for (hash, seq) in pairs {
        out.extend_from_slice(&hash.to_le_bytes());
        out.extend_from_slice(&seq.to_le_bytes());
    }
    out
}

/// A stored block, checked for length.
struct Block<'a> {
    bytes: &'a [u8],
}

impl<'a> Block<'a> {
    fn new(bytes: &'a [u8], key: u64) -> Result<Block<'a>, LedgerError> {
        if !bytes.len().is_multiple_of(PAIR_LEN) {
            return Err(LedgerError::Corrupt(format!(
                "crn postings block {key}: {} bytes is not a whole number of postings",
                bytes.len()
            )));
        }
        Ok(Block { bytes })
    }

    fn len(&self) -> usize {
        self.bytes.len() / PAIR_LEN
    }

    fn pair(&self, i: usize) -> Pair {
        let at = i * PAIR_LEN;
        let mut h = [0u8; 8];
        let mut s = [0u8; 8];
        h.copy_from_slice(&self.bytes[at..at + 8]);
        s.copy_from_slice(&self.bytes[at + 8..at + PAIR_LEN]);
        (u64::from_le_bytes(h), u64::from_le_bytes(s))
    }

    fn pairs(&self) -> impl Iterator<Item = Pair> + '_ {
        (0..self.len()).map(|i| self.pair(i))
    }

    /// Index of the first pair not below `key`.
    fn lower_bound(&self, key: Pair) -> usize {
        let (mut a, mut b) = (0, self.len());
        while a < b {
            let m = a + (b - a) / 2;
            if self.pair(m) < key {
                a = m + 1;
            } else {
                b = m;
            }
        }
        a
    }

    /// Appends the seqs in `lo..hi` posted under `hash`, ascending.
    fn seqs_into(&self, hash: u64, lo: u64, hi: u64, out: &mut Vec<u64>) {
        let from = self.lower_bound((hash, lo));
        let to = self.lower_bound((hash, hi));
        out.extend((from..to).map(|i| self.pair(i).1));
    }
}

/// Seqs in `lo..hi` posted under `crn`'s hash, ascending. (A hash collision
/// can add another resource's events; callers that return events check the
/// CRN.)
pub fn crn_seqs<R, U>(recent: &R, runs: &U, crn: &str, lo: u64, hi: u64) -> Result<Vec<u64>, LedgerError>
where
    R: ReadableTable<u64, &'static [u8]>,
    U: ReadableTable<(u16, u64), &'static [u8]>,
{
    let mut out = Vec::new();
    if lo >= hi {
        return Ok(out);
    }
    let hash = crn_hash(crn);
    let bucket = bucket_of(hash);
    // A value keyed at or above `hi` is the last one that can hold seqs
    // below `hi`: every later value (runs, then recent) holds higher seqs.
    for item in runs.range((bucket, lo)..=(bucket, u64::MAX))? {
        let (k, v) = item?;
        let key = k.value().1;
        Block::new(v.value(), key)?.seqs_into(hash, lo, hi, &mut out);
        if key >= hi {
            return Ok(out);
        }
    }
    for item in recent.range(lo..)? {
        let (k, v) = item?;
        let key = k.value();
        Block::new(v.value(), key)?.seqs_into(hash, lo, hi, &mut out);
        if key >= hi {
            break;
        }
    }
    Ok(out)
}

/// The postings tables of one write transaction, with the postings of the
/// events appended since the last [`Postings::flush`].
pub struct Postings<'t> {
    recent: Table<'t, u64, &'static [u8]>,
    runs: Table<'t, (u16, u64), &'static [u8]>,
    pending: Vec<Pair>,
}

impl<'t> Postings<'t> {
    pub fn open(txn: &'t WriteTransaction) -> Result<Postings<'t>, LedgerError> {
        Ok(Postings {
            recent: txn.open_table(tables::CRN_RECENT)?,
            runs: txn.open_table(tables::CRN_RUNS)?,
            pending: Vec::new(),
        })
    }

    pub fn add(&mut self, crn: &str, seq: u64) {
        self.pending.push((crn_hash(crn), seq));
    }

    /// Writes the pending postings as one `crn_recent` value and compacts
    /// `crn_recent` into a run when it has grown past its limits.
    /// `recent_count` is the number of postings in `crn_recent`, kept in
    /// `meta`; returns its new value.
    pub fn flush(&mut self, recent_count: u64) -> Result<u64, LedgerError> {
        if self.pending.is_empty() {
            return Ok(recent_count);
        }
        self.pending.sort_unstable();
        let key = self.pending.iter().map(|p| p.1).max().unwrap_or(0);
        self.recent.insert(key, encode(&self.pending).as_slice())?;
        // The count is read from the file: one past any limit only brings
        // the compaction (which starts it over) forward.
        let count = recent_count.saturating_add(self.pending.len() as u64);
        self.pending.clear();
        if count >= COMPACT_POSTINGS || self.recent.len()? >= COMPACT_ROWS {
            self.compact()?;
            return Ok(0);
        }
        Ok(count)
    }

    /// Moves every `crn_recent` value into one run keyed by the highest of
    /// their keys.
    fn compact(&mut self) -> Result<(), LedgerError> {
        let mut pairs = Vec::new();
        let mut run_key = None;
        for item in self.recent.iter()? {
            let (k, v) = item?;
            let key = k.value();
            pairs.extend(Block::new(v.value(), key)?.pairs());
            run_key = Some(key);
        }
        let Some(run_key) = run_key else {
            return Ok(());
        };
        self.recent.retain(|_, _| false)?;
        write_run(&mut self.runs, pairs, run_key)
    }

    /// Removes the postings of seqs at or below `through` (after the pending
    /// ones are flushed) and returns the number of postings left in
    /// `crn_recent`.
    pub fn prune(&mut self, through: u64, recent_count: u64) -> Result<u64, LedgerError> {
        self.flush(recent_count)?;
        let above = through.saturating_add(1);
        for bucket in 0..RUN_BUCKETS as u16 {
            self.runs.retain_in((bucket, 0)..=(bucket, through), |_, _| false)?;
            // The first value above `through` may still hold pruned seqs.
            let first = match self.runs.range((bucket, above)..=(bucket, u64::MAX))?.next() {
                Some(item) => {
                    let (k, v) = item?;
                    let key = k.value().1;
                    Some((key, kept_after(v.value(), key, through)?))
                }
                None => None,
            };
            if let Some((key, Some(kept))) = first {
                replace(&mut self.runs, (bucket, key), &kept)?;
            }
        }
        self.recent.retain_in(..=through, |_, _| false)?;
        let first = match self.recent.range(above..)?.next() {
            Some(item) => {
                let (k, v) = item?;
                let key = k.value();
                Some((key, kept_after(v.value(), key, through)?))
            }
            None => None,
        };
        if let Some((key, Some(kept))) = first {
            replace(&mut self.recent, key, &kept)?;
        }
        let mut count = 0u64;
        for item in self.recent.iter()? {
            let (k, v) = item?;
            count += Block::new(v.value(), k.value())?.len() as u64;
        }
        Ok(count)
    }
}

/// The pairs of a block with a seq above `through`, `None` when that is all
/// of them.
fn kept_after(bytes: &[u8], key: u64, through: u64) -> Result<Option<Vec<Pair>>, LedgerError> {
    let block = Block::new(bytes, key)?;
    let kept: Vec<Pair> = block.pairs().filter(|p| p.1 > through).collect();
    Ok((kept.len() != block.len()).then_some(kept))
}

/// Stores `pairs` under `key`, or removes the value when there are none.
fn replace<K: redb::Key + 'static>(
    table: &mut Table<'_, K, &'static [u8]>,
    key: K::SelfType<'_>,
    pairs: &[Pair],
) -> Result<(), LedgerError> {
    if pairs.is_empty() {
        table.remove(key)?;
    } else {
        table.insert(key, encode(pairs).as_slice())?;
    }
    Ok(())
}

/// Writes `pairs` (any order, every seq at or below `run_key` and above the
/// previous run's key) as one run: a value per bucket that has postings.
fn write_run(
    runs: &mut Table<'_, (u16, u64), &'static [u8]>,
    mut pairs: Vec<Pair>,
    run_key: u64,
) -> Result<(), LedgerError> {
    pairs.sort_unstable_by_key(|&(hash, seq)| (bucket_of(hash), hash, seq));
    for chunk in pairs.chunk_by(|a, b| bucket_of(a.0) == bucket_of(b.0)) {
        runs.insert((bucket_of(chunk[0].0), run_key), encode(chunk).as_slice())?;
    }
    Ok(())
}

/// Builds the postings of existing events into `crn_runs`, as runs of
/// [`COMPACT_POSTINGS`] postings.
pub struct Rebuild {
    pairs: Vec<Pair>,
}

impl Rebuild {
    pub fn new() -> Rebuild {
        Rebuild { pairs: Vec::new() }
    }

    /// Adds the posting of event `seq`; seqs must come in ascending order.
    pub fn add(
        &mut self,
        runs: &mut Table<'_, (u16, u64), &'static [u8]>,
        crn: &str,
        seq: u64,
    ) -> Result<(), LedgerError> {
        self.pairs.push((crn_hash(crn), seq));
        if self.pairs.len() as u64 >= COMPACT_POSTINGS {
            write_run(runs, std::mem::take(&mut self.pairs), seq)?;
        }
        Ok(())
    }

    pub fn finish(self, runs: &mut Table<'_, (u16, u64), &'static [u8]>) -> Result<(), LedgerError> {
        match self.pairs.last() {
            Some(&(_, last)) => write_run(runs, self.pairs, last),
            None => Ok(()),
        }
    }
}
