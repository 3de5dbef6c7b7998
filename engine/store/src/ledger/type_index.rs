//! The type index, `by_type_blocks`: (type, seq) -> block, one value per
//! type per commit, keyed by the highest seq it holds.
//!
//! A block is the ordinal of its first event (u64 LE: the 1-based position
//! of the event among all events ever appended with that type) followed by
//! the seqs of the commit's events of that type (u64 LE each, ascending);
//! their ordinals follow one by one. So the events of one type between two
//! seqs are counted from two ordinals (two lookups), and a commit adds one
//! value per type it appends instead of one key per event. Pruning a prefix
//! removes whole blocks and rewrites the one it cuts, with the ordinal of
//! its first remaining event, so ordinals stay consecutive.

use std::collections::HashMap;

use redb::{AccessGuard, Range, ReadableTable, Table};

use super::error::LedgerError;
use super::tables;

type Key = (&'static str, u64);

/// A stored block, checked for length.
struct Block<'a> {
    bytes: &'a [u8],
}

impl<'a> Block<'a> {
    fn new(bytes: &'a [u8], t: &str, key: u64) -> Result<Block<'a>, LedgerError> {
        if bytes.len() < 16 || !bytes.len().is_multiple_of(8) {
            return Err(LedgerError::Corrupt(format!(
                "type index block ({t:?}, {key}) has {} bytes",
                bytes.len()
            )));
        }
        Ok(Block { bytes })
    }

    fn word(&self, i: usize) -> u64 {
        let mut w = [0u8; 8];
        w.copy_from_slice(&self.bytes[i * 8..i * 8 + 8]);
        u64::from_le_bytes(w)
    }

    fn first_ordinal(&self) -> u64 {
        self.word(0)
    }

    /// The ordinal of the block's `i`-th seq (`i` may be its length: one
    /// past the last); an error when a stored first ordinal leaves no room
    /// for it.
    fn ordinal(&self, i: usize, t: &str, key: u64) -> Result<u64, LedgerError> {
        self.first_ordinal().checked_add(i as u64).ok_or_else(|| {
            LedgerError::Corrupt(format!(
                "type index block ({t:?}, {key}): first ordinal {} leaves no room for its {} seqs",
                self.first_ordinal(),
                self.len()
            ))
        })
    }

    fn len(&self) -> usize {
        self.bytes.len() / 8 - 1
    }

    fn seq(&self, i: usize) -> u64 {
        self.word(i + 1)
    }

    /// Index of the first seq not below `seq`.
    fn lower_bound(&self, seq: u64) -> usize {
        let (mut a, mut b) = (0, self.len());
        while a < b {
            let m = a + (b - a) / 2;
            if self.seq(m) < seq {
                a = m + 1;
            } else {
                b = m;
            }
        }
        a
    }
}

fn encode(first_ordinal: u64, seqs: &[u64]) -> Vec<u8> {
    let mut out = Vec::with_capacity(8 + seqs.len() * 8);
    out.extend_from_slice(&first_ordinal.to_le_bytes());
    for s in seqs {
        out.extend_from_slice(&s.to_le_bytes());
    }
    out
}

/// The highest ordinal stored for `t`, 0 when none.
pub fn last_ordinal<T: ReadableTable<Key, &'static [u8]>>(index: &T, t: &str) -> Result<u64, LedgerError> {
    match index.range((t, 0u64)..=(t, u64::MAX))?.next_back() {
        Some(item) => {
            let (k, v) = item?;
            let key = k.value().1;
            let b = Block::new(v.value(), t, key)?;
            // `Block::new` saw at least one seq.
            b.ordinal(b.len() - 1, t, key)
        }
        None => Ok(0),
    }
}

/// The ordinal of the first event of `t` with a seq at or above `seq`; one
/// past the last ordinal when there is none.
fn ordinal_from<T: ReadableTable<Key, &'static [u8]>>(index: &T, t: &str, seq: u64) -> Result<u64, LedgerError> {
    match index.range((t, seq)..=(t, u64::MAX))?.next() {
        Some(item) => {
            let (k, v) = item?;
            let key = k.value().1;
            let b = Block::new(v.value(), t, key)?;
            b.ordinal(b.lower_bound(seq), t, key)
        }
        None => next_ordinal(last_ordinal(index, t)?, t),
    }
}

/// The ordinal after `last`, of type `t`; an error when a stored ordinal
/// left none.
fn next_ordinal(last: u64, t: &str) -> Result<u64, LedgerError> {
    last.checked_add(1).ok_or_else(|| {
        LedgerError::Corrupt(format!(
            "type index for {t:?}: ordinal {last} leaves no room for another event"
        ))
    })
}

/// How many events of type `t` have a seq in `lo..hi`.
pub fn count<T: ReadableTable<Key, &'static [u8]>>(index: &T, t: &str, lo: u64, hi: u64) -> Result<u64, LedgerError> {
    if lo >= hi {
        return Ok(0);
    }
    let from = ordinal_from(index, t, lo)?;
    let to = ordinal_from(index, t, hi)?;
    to.checked_sub(from)
        .ok_or_else(|| LedgerError::Corrupt(format!("type index ordinals for {t:?} decrease")))
}

/// The seqs of type `t` in `lo..hi`, newest first, read block by block.
pub struct SeqsDesc<'a> {
    t: String,
    range: Range<'a, Key, &'static [u8]>,
    /// The block being read: its key, its bytes and how many of its seqs
    /// are still to be returned.
    block: Option<(u64, AccessGuard<'a, &'static [u8]>, usize)>,
    lo: u64,
    hi: u64,
    done: bool,
}

impl<'a> SeqsDesc<'a> {
    pub fn new<T: ReadableTable<Key, &'static [u8]>>(
        index: &'a T,
        t: &str,
        lo: u64,
        hi: u64,
    ) -> Result<SeqsDesc<'a>, LedgerError> {
        // The first block keyed at or above `hi` is the newest that can
        // hold seqs below it.
        let end = match index.range((t, hi)..=(t, u64::MAX))?.next() {
            Some(item) => item?.0.value().1,
            None => u64::MAX,
        };
        let range = index.range((t, lo)..=(t, end))?;
        Ok(SeqsDesc {
            t: t.to_owned(),
            range,
            block: None,
            lo,
            hi,
            done: lo >= hi,
        })
    }

    fn step(&mut self) -> Result<Option<u64>, LedgerError> {
        loop {
            if let Some((key, guard, next)) = &mut self.block {
                let b = Block::new(guard.value(), &self.t, *key)?;
                while *next > 0 {
                    *next -= 1;
                    let seq = b.seq(*next);
                    if seq < self.lo {
                        self.done = true;
                        return Ok(None);
                    }
                    if seq < self.hi {
                        return Ok(Some(seq));
                    }
                }
                self.block = None;
            }
            match self.range.next_back() {
                Some(item) => {
                    let (k, v) = item?;
                    let key = k.value().1;
                    let len = Block::new(v.value(), &self.t, key)?.len();
                    self.block = Some((key, v, len));
                }
                None => return Ok(None),
            }
        }
    }
}

impl Iterator for SeqsDesc<'_> {
    type Item = Result<u64, LedgerError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let r = self.step().transpose();
        if !matches!(r, Some(Ok(_))) {
            self.done = true;
        }
        r
    }
}

/// The type index in one write transaction, with the events appended since
/// the last [`Types::flush`].
pub struct Types<'t> {
    index: Table<'t, Key, &'static [u8]>,
    /// Per type: the ordinal of the first pending event and the pending seqs.
    pending: HashMap<String, (u64, Vec<u64>)>,
    /// Last ordinal per type, known to this transaction.
    last: HashMap<String, u64>,
}

impl<'t> Types<'t> {
    pub fn open(txn: &'t redb::WriteTransaction) -> Result<Types<'t>, LedgerError> {
        Ok(Types {
            index: txn.open_table(tables::BY_TYPE)?,
            pending: HashMap::new(),
            last: HashMap::new(),
        })
    }

    pub fn add(&mut self, t: &str, seq: u64) -> Result<(), LedgerError> {
        let ord = match self.last.get_mut(t) {
            Some(v) => {
                *v = next_ordinal(*v, t)?;
                *v
            }
            None => {
                let v = next_ordinal(last_ordinal(&self.index, t)?, t)?;
                self.last.insert(t.to_owned(), v);
                v
            }
        };
        match self.pending.get_mut(t) {
            Some((_, seqs)) => seqs.push(seq),
            None => {
                self.pending.insert(t.to_owned(), (ord, vec![seq]));
            }
        }
        Ok(())
    }

    /// Writes the pending events as one block per type.
    pub fn flush(&mut self) -> Result<(), LedgerError> {
        for (t, (first, seqs)) in self.pending.drain() {
            if let Some(&last) = seqs.last() {
                self.index.insert((t.as_str(), last), encode(first, &seqs).as_slice())?;
            }
        }
        Ok(())
    }

    /// Removes the events of the types `types` with a seq at or below
    /// `through`, after writing the pending ones.
    pub fn prune<'a>(&mut self, types: impl Iterator<Item = &'a str>, through: u64) -> Result<(), LedgerError> {
        self.flush()?;
        for t in types {
            self.index.retain_in((t, 0)..=(t, through), |_, _| false)?;
            let cut = match self.index.range((t, through.saturating_add(1))..=(t, u64::MAX))?.next() {
                Some(item) => {
                    let (k, v) = item?;
                    let key = k.value().1;
                    let b = Block::new(v.value(), t, key)?;
                    let from = b.lower_bound(through.saturating_add(1));
                    if from > 0 {
                        let seqs: Vec<u64> = (from..b.len()).map(|i| b.seq(i)).collect();
                        Some((key, encode(b.ordinal(from, t, key)?, &seqs)))
                    } else {
                        None
                    }
                }
                None => None,
            };
            if let Some((key, bytes)) = cut {
                // `from < len`: the block's key, its last seq, is above `through`.
                self.index.insert((t, key), bytes.as_slice())?;
            }
        }
        Ok(())
    }
}

/// Builds the type index of existing events, in blocks of up to 4096 seqs.
pub struct Rebuild {
    pending: HashMap<String, (u64, Vec<u64>)>,
    last: HashMap<String, u64>,
}

const REBUILD_BLOCK: usize = 4096;

impl Rebuild {
    pub fn new() -> Rebuild {
        Rebuild {
            pending: HashMap::new(),
            last: HashMap::new(),
        }
    }

    pub fn add(&mut self, index: &mut Table<'_, Key, &'static [u8]>, t: &str, seq: u64) -> Result<(), LedgerError> {
        let last = self.last.entry(t.to_owned()).or_insert(0);
        *last += 1;
        let ord = *last;
        let entry = self.pending.entry(t.to_owned()).or_insert_with(|| (ord, Vec::new()));
        entry.1.push(seq);
        if entry.1.len() >= REBUILD_BLOCK {
            index.insert((t, seq), encode(entry.0, &entry.1).as_slice())?;
            self.pending.remove(t);
        }
        Ok(())
    }

    pub fn finish(self, index: &mut Table<'_, Key, &'static [u8]>) -> Result<(), LedgerError> {
        for (t, (first, seqs)) in self.pending {
            if let Some(&last) = seqs.last() {
                index.insert((t.as_str(), last), encode(first, &seqs).as_slice())?;
            }
        }
        Ok(())
    }
}
