//! A shard column's storage: owned memory, or a read-only stretch of a
//! shared buffer (the snapshot file, mapped) that is copied into owned
//! memory the first time the column is written.
//!
//! Reads go through [`std::ops::Deref`] to a slice whichever the storage;
//! every way of writing ([`std::ops::DerefMut`], [`Col::push`],
//! [`Col::to_mut`], ..) first makes the column owned. A shared column
//! keeps its buffer alive (an `Arc`), so a snapshot's mapping lives until
//! the last column reading from it has been written or dropped.
//!
//! This crate does no I/O: what the shared bytes are ([`Backing`]) is the
//! store's business; here they are bytes that never change while any
//! column reads them.

use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use crate::ids::{NodeSlot, Sym};
use crate::relation::Relation;

/// Bytes that stay put and unchanged for as long as the value lives (a
/// read-only mapping of a file nobody writes in place).
pub trait Backing: Send + Sync + 'static {
    /// The same bytes, at the same address, every time it is called.
    fn bytes(&self) -> &[u8];
}

/// A value whose bytes can be read straight from a buffer: a fixed size,
/// no padding, little-endian as stored, and a check of which byte
/// patterns are values.
///
/// # Safety
/// The type has no padding bytes and no interior pointers, and every
/// sequence of `size_of::<Self>()` bytes for which [`Plain::valid`]
/// answers true (for the whole slice holding it) is a valid value of it.
#[allow(unsafe_code)]
pub unsafe trait Plain: Copy + Send + Sync + 'static {
    /// Whether every value in `raw` (whole values, aligned for `Self`,
    /// read as plain bytes) is a valid value of the type.
    fn valid(raw: &[u8]) -> bool;
}

/// Whether every little-endian `u32` of `raw` is non-zero.
fn no_zero_u32(raw: &[u8]) -> bool {
    raw.chunks_exact(4)
        .fold(true, |ok, c| ok & (u32::from_le_bytes([c[0], c[1], c[2], c[3]]) != 0))
}

macro_rules! plain_any {
    ($($t:ty),*) => {$(
        // SAFETY: a primitive with no padding; every bit pattern is a value.
        #[allow(unsafe_code)]
        unsafe impl Plain for $t {
            fn valid(_: &[u8]) -> bool {
                true
            }
        }
    )*};
}

plain_any!(u8, u32, u64, f32);

// SAFETY: `NodeSlot` is `repr(transparent)` over a `u32`, every value a
// slot (a row beyond its shard is checked where slots are read from a snapshot).
#[allow(unsafe_code)]
unsafe impl Plain for NodeSlot {
    fn valid(_: &[u8]) -> bool {
        true
    }
}

// SAFETY: `Sym` is `repr(transparent)` over a `NonZeroU32`: four bytes, no
// padding, every pattern but zero a value, which `valid` checks.
#[allow(unsafe_code)]
unsafe impl Plain for Sym {
    fn valid(raw: &[u8]) -> bool {
        no_zero_u32(raw)
    }
}

// SAFETY: five `Sym`s one after another (an array has no padding), each
// checked as one `Sym` is.
#[allow(unsafe_code)]
unsafe impl Plain for [Sym; 5] {
    fn valid(raw: &[u8]) -> bool {
        no_zero_u32(raw)
    }
}

// SAFETY: `Option` of a `repr(transparent)` wrapper of `NonZeroU32` is
// guaranteed four bytes, all zeros being `None` and any other pattern
// `Some` of the symbol with those bits.
#[allow(unsafe_code)]
unsafe impl Plain for Option<Sym> {
    fn valid(_: &[u8]) -> bool {
        true
    }
}

macro_rules! plain_u8_enum {
    ($($t:ty = $max:expr;)*) => {$(
        // SAFETY: a `repr(u8)` enum with the discriminants `0..=$max`,
        // each byte of which `valid` checks.
        #[allow(unsafe_code)]
        unsafe impl $crate::graph::col::Plain for $t {
            fn valid(raw: &[u8]) -> bool {
                raw.iter().fold(true, |ok, &b| ok & (b <= $max as u8))
            }
        }
    )*};
}

pub(crate) use plain_u8_enum;

plain_u8_enum! {
    Relation = (Relation::ALL.len() - 1);
}

/// A column of `T`: owned, or borrowed from a [`Backing`] until first written.
pub struct Col<T: Plain> {
    repr: Repr<T>,
}

enum Repr<T> {
    Owned(Vec<T>),
    Shared {
        /// Keeps `ptr .. ptr + len` alive and unchanged.
        backing: Arc<dyn Backing>,
        ptr: *const T,
        len: usize,
    },
}

// SAFETY: a shared column only reads bytes its `Backing` (itself `Send +
// Sync`) keeps alive and unchanged; `T` is `Send + Sync` (`Plain`).
#[allow(unsafe_code)]
unsafe impl<T: Plain> Send for Col<T> {}
// SAFETY: as for `Send`: nothing is written through a shared column.
#[allow(unsafe_code)]
unsafe impl<T: Plain> Sync for Col<T> {}

/// Why bytes cannot be read as a column.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ColError {
    /// The stretch runs past the buffer.
    Bounds,
    /// The stretch does not start at a multiple of the value's alignment.
    Misaligned,
    /// A byte pattern that is no value of the type.
    Invalid,
}

/// A buffer of this many bytes or more grows by a quarter when full
/// ([`make_room`]), not twice over.
pub const MODEST_GROWTH_BYTES: usize = 64 * 1024;

/// Makes room in `v` for `more` values. A full buffer of
/// [`MODEST_GROWTH_BYTES`] or more grows by a quarter (at least `more`),
/// a smaller one as `Vec` grows (twice over). Why: shard columns and
/// arenas are sized to their rows, and a later scan adds a few rows to
/// each; doubled, every column of every shard would get as much room
/// again, and the allocator often hands out memory a scan's buffers
/// left resident, so the room costs resident memory as if used (~0.6 GB
/// over a first and a later scan at 10^7 resources, docs/decisions.md).
/// A quarter costs a few more copies over a column's life.
#[inline]
pub fn make_room<T>(v: &mut Vec<T>, more: usize) {
    if v.capacity() - v.len() >= more {
        return;
    }
    if v.len() * std::mem::size_of::<T>() < MODEST_GROWTH_BYTES {
        v.reserve(more);
    } else {
        v.reserve_exact(more.max(v.len() / 4));
    }
}

impl<T: Plain> Col<T> {
    pub const fn new() -> Col<T> {
        Col {
            repr: Repr::Owned(Vec::new()),
        }
    }

    /// The `len` values at byte `off` of `backing`, read where they are,
    /// after checking they are in bounds, aligned and valid ([`Plain::valid`]).
    /// Only on a little-endian machine, the stored byte order; elsewhere
    /// the caller copies.
    pub fn shared(backing: Arc<dyn Backing>, off: usize, len: usize) -> Result<Col<T>, ColError> {
        let size = std::mem::size_of::<T>();
        let bytes = backing.bytes();
        let end = len
            .checked_mul(size)
            .and_then(|n| n.checked_add(off))
            .ok_or(ColError::Bounds)?;
        let raw = bytes.get(off..end).ok_or(ColError::Bounds)?;
        if !cfg!(target_endian = "little") {
            return Err(ColError::Misaligned);
        }
        if !(raw.as_ptr() as usize).is_multiple_of(std::mem::align_of::<T>()) {
            return Err(ColError::Misaligned);
        }
        if !T::valid(raw) {
            return Err(ColError::Invalid);
        }
        let ptr = raw.as_ptr().cast::<T>();
        Ok(Col {
            repr: Repr::Shared { backing, ptr, len },
        })
    }

    /// Whether the column reads from a shared buffer (not yet written).
    pub fn is_shared(&self) -> bool {
        matches!(self.repr, Repr::Shared { .. })
    }

    /// The owned values, copied out of the shared buffer first if need be.
    pub fn to_mut(&mut self) -> &mut Vec<T> {
        if let Repr::Shared { .. } = self.repr {
            let owned = self.as_slice().to_vec();
            self.repr = Repr::Owned(owned);
        }
        match &mut self.repr {
            Repr::Owned(v) => v,
            Repr::Shared { .. } => unreachable!("made owned just above"),
        }
    }

    #[inline]
    pub fn as_slice(&self) -> &[T] {
        match &self.repr {
            Repr::Owned(v) => v,
            // SAFETY: `Col::shared` checked that `ptr .. ptr + len` lies in
            // the backing's bytes, aligned for `T`, each value valid; the
            // `Arc` held beside it keeps those bytes alive and unchanged.
            #[allow(unsafe_code)]
            Repr::Shared { ptr, len, .. } => unsafe { std::slice::from_raw_parts(*ptr, *len) },
        }
    }

    /// Appends `v`; a full column of 64 KiB or more grows by a quarter
    /// ([`make_room`]).
    #[inline]
    pub fn push(&mut self, v: T) {
        let values = self.to_mut();
        make_room(values, 1);
        values.push(v);
    }

    pub fn reserve(&mut self, additional: usize) {
        self.to_mut().reserve(additional);
    }

    /// Owned columns give back spare capacity; shared ones hold none.
    pub fn shrink_to_fit(&mut self) {
        if let Repr::Owned(v) = &mut self.repr {
            v.shrink_to_fit();
        }
    }

    pub fn shrink_to(&mut self, min: usize) {
        if let Repr::Owned(v) = &mut self.repr {
            v.shrink_to(min);
        }
    }

    /// Values the owned memory has room for; 0 while shared.
    pub fn capacity(&self) -> usize {
        match &self.repr {
            Repr::Owned(v) => v.capacity(),
            Repr::Shared { .. } => 0,
        }
    }

    /// Heap bytes held (capacity); a shared column holds none.
    pub fn heap_bytes(&self) -> usize {
        self.capacity() * std::mem::size_of::<T>()
    }

    /// Bytes read from a shared buffer; 0 once owned.
    pub fn shared_bytes(&self) -> usize {
        match &self.repr {
            Repr::Owned(_) => 0,
            Repr::Shared { len, .. } => len * std::mem::size_of::<T>(),
        }
    }

    /// The values as plain bytes, as a snapshot stores them.
    pub fn as_bytes(&self) -> &[u8] {
        let s = self.as_slice();
        // SAFETY: `T: Plain` has no padding, so each of its bytes is
        // initialised; the length is the slice's own in bytes.
        #[allow(unsafe_code)]
        unsafe {
            std::slice::from_raw_parts(s.as_ptr().cast::<u8>(), std::mem::size_of_val(s))
        }
    }
}

impl<T: Plain> Default for Col<T> {
    fn default() -> Col<T> {
        Col::new()
    }
}

impl<T: Plain> Clone for Col<T> {
    fn clone(&self) -> Col<T> {
        match &self.repr {
            Repr::Owned(v) => Col::from(v.clone()),
            Repr::Shared { backing, ptr, len } => Col {
                repr: Repr::Shared {
                    backing: backing.clone(),
                    ptr: *ptr,
                    len: *len,
                },
            },
        }
    }
}

impl<T: Plain + std::fmt::Debug> std::fmt::Debug for Col<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.as_slice()).finish()
    }
}

impl<T: Plain + PartialEq> PartialEq for Col<T> {
    fn eq(&self, other: &Col<T>) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl<T: Plain + PartialEq> PartialEq<Vec<T>> for Col<T> {
    fn eq(&self, other: &Vec<T>) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl<T: Plain> Deref for Col<T> {
    type Target = [T];
    #[inline]
    fn deref(&self) -> &[T] {
        self.as_slice()
    }
}

impl<T: Plain> DerefMut for Col<T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut [T] {
        self.to_mut()
    }
}

impl<T: Plain> From<Vec<T>> for Col<T> {
    fn from(v: Vec<T>) -> Col<T> {
        Col { repr: Repr::Owned(v) }
    }
}

impl<T: Plain> FromIterator<T> for Col<T> {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Col<T> {
        Col::from(iter.into_iter().collect::<Vec<T>>())
    }
}

impl<T: Plain> Extend<T> for Col<T> {
    fn extend<I: IntoIterator<Item = T>>(&mut self, iter: I) {
        self.to_mut().extend(iter);
    }
}

impl<'a, T: Plain> IntoIterator for &'a Col<T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;
    fn into_iter(self) -> std::slice::Iter<'a, T> {
        self.as_slice().iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::schema::{Phase, Reachability};

    #[test]
    fn a_full_column_of_64_kib_or_more_grows_by_a_quarter() {
        // Small: as a Vec grows.
        let mut small: Col<u64> = (0..100).collect();
        small.to_mut().shrink_to_fit();
        small.push(100);
        assert!(small.to_mut().capacity() >= 200);
        // Large (a shard's column sized to its rows): a quarter more.
        let rows = 1 << 16;
        let mut large: Col<u64> = (0..rows).collect();
        large.to_mut().shrink_to_fit();
        large.push(rows);
        let cap = large.to_mut().capacity();
        assert!((rows as usize + 1..=rows as usize * 5 / 4 + 1).contains(&cap), "{cap}");
        // A column read from a shared buffer is copied, then grows the same way.
        let backing: Arc<dyn Backing> = Arc::new(Buf((0..rows).collect()));
        let mut shared: Col<u64> = Col::shared(backing, 0, rows as usize).unwrap();
        shared.push(rows);
        assert_eq!(shared.as_slice().len(), rows as usize + 1);
        assert!(shared.to_mut().capacity() <= rows as usize * 5 / 4 + 1);
        // An arena's bytes too.
        let mut arena = vec![7u8; 1 << 20];
        arena.shrink_to_fit();
        make_room(&mut arena, 16);
        assert!(arena.capacity() <= (1 << 20) * 5 / 4, "{}", arena.capacity());
    }

    struct Buf(Vec<u64>);

    impl Backing for Buf {
        fn bytes(&self) -> &[u8] {
            let s = &self.0[..];
            // SAFETY: u64s have no padding; the length is the slice's in bytes.
            #[allow(unsafe_code)]
            unsafe {
                std::slice::from_raw_parts(s.as_ptr().cast::<u8>(), std::mem::size_of_val(s))
            }
        }
    }

    fn backing(words: Vec<u64>) -> Arc<dyn Backing> {
        Arc::new(Buf(words))
    }

    /// A shared column reads the buffer in place and is copied on its first
    /// write, leaving the buffer as it was.
    #[test]
    fn a_shared_column_is_copied_on_first_write() {
        let b = backing(vec![1, 2, 3, 4]);
        let mut c = Col::<u64>::shared(b.clone(), 8, 2).unwrap();
        assert!(c.is_shared());
        assert_eq!(&c[..], &[2, 3]);
        assert_eq!((c.heap_bytes(), c.shared_bytes()), (0, 16));
        assert_eq!(c.as_slice().as_ptr().cast::<u8>(), b.bytes()[8..].as_ptr());
        c[1] = 9;
        assert!(!c.is_shared());
        assert_eq!(&c[..], &[2, 9]);
        c.push(5);
        assert_eq!(c, vec![2, 9, 5]);
        assert_eq!(&b.bytes()[16..24], &3u64.to_le_bytes());
    }

    /// Each byte an enum column accepts is the discriminant of the variant
    /// its decoder reads from that byte, and no other byte is accepted.
    #[test]
    fn enum_bytes_are_their_variants() {
        for b in 0..=u8::MAX {
            let one = [b];
            assert_eq!(
                <Reachability as Plain>::valid(&one),
                Reachability::from_u8(b) as u8 == b,
                "{b}"
            );
            assert_eq!(<Phase as Plain>::valid(&one), Phase::from_u8(b) as u8 == b, "{b}");
            assert_eq!(
                <Relation as Plain>::valid(&one),
                Relation::from_u8(b).is_some_and(|r| r as u8 == b),
                "{b}"
            );
        }
    }

    /// Bytes out of bounds, misaligned or holding no value are refused.
    #[test]
    fn bad_stretches_are_refused() {
        let b = backing(vec![0, 7, u64::MAX]);
        assert_eq!(Col::<u64>::shared(b.clone(), 8, 3).err(), Some(ColError::Bounds));
        assert_eq!(
            Col::<u64>::shared(b.clone(), usize::MAX, 1).err(),
            Some(ColError::Bounds)
        );
        assert_eq!(Col::<u64>::shared(b.clone(), 4, 1).err(), Some(ColError::Misaligned));
        assert_eq!(Col::<Sym>::shared(b.clone(), 0, 1).err(), Some(ColError::Invalid));
        assert_eq!(
            Col::<Sym>::shared(b.clone(), 8, 1).unwrap()[0],
            Sym::from_raw(7).unwrap()
        );
        assert_eq!(Col::<Option<Sym>>::shared(b.clone(), 0, 2).unwrap()[..], [None, None]);
        assert_eq!(
            Col::<Reachability>::shared(b.clone(), 8, 1).err(),
            Some(ColError::Invalid)
        );
        assert_eq!(
            Col::<Reachability>::shared(b.clone(), 9, 7).unwrap()[0],
            Reachability::Unknown
        );
        assert_eq!(Col::<Relation>::shared(b.clone(), 16, 1).err(), Some(ColError::Invalid));
    }
}
