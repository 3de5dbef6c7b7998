//! Locks that know their place in the engine's lock order.
//!
//! Every lock of the `Engine` and of the remediation state has a [`Rank`]
//! (`engine/facade/src/ranks.rs` lists them, in the order of ARCHITECTURE.md,
//! "Lock order"). A thread takes locks in increasing rank. In debug builds
//! (every test run) a thread that blocks on a lock whose rank is not above
//! every rank it already holds panics with both names, instead of risking a
//! deadlock that only shows under load; release builds carry the rank and
//! check nothing. A `try_lock` cannot deadlock, so it is not checked, but
//! the lock it takes counts for later ones.
//!
//! The wrappers keep `parking_lot`'s behaviour (fair, no poisoning).

use std::ops::{Deref, DerefMut};
use std::time::Duration;

/// A lock's place in the order, and its name for the panic message.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Rank {
    pub order: u16,
    pub name: &'static str,
}

impl Rank {
    pub const fn new(order: u16, name: &'static str) -> Rank {
        Rank { order, name }
    }
}

#[cfg(debug_assertions)]
mod held {
    use std::cell::RefCell;

    use super::Rank;

    thread_local! {
        static HELD: RefCell<Vec<Rank>> = const { RefCell::new(Vec::new()) };
    }

    /// Panics when `rank` would be taken out of order.
    pub fn check(rank: Rank) {
        HELD.with(|held| {
            let held = held.borrow();
            if let Some(top) = held.iter().max_by_key(|r| r.order)
                && top.order >= rank.order
            {
                panic!(
                    "lock order: `{}` (rank {}) taken while `{}` (rank {}) is held; \
                     see ARCHITECTURE.md, Lock order",
                    rank.name, rank.order, top.name, top.order
                );
            }
        });
    }

    pub fn push(rank: Rank) {
        HELD.with(|held| held.borrow_mut().push(rank));
    }

    pub fn pop(rank: Rank) {
        HELD.with(|held| {
            let mut held = held.borrow_mut();
            if let Some(at) = held.iter().rposition(|r| *r == rank) {
                held.remove(at);
            }
        });
    }
}

#[cfg(not(debug_assertions))]
mod held {
    use super::Rank;

    #[inline(always)]
    pub fn check(_: Rank) {}
    #[inline(always)]
    pub fn push(_: Rank) {}
    #[inline(always)]
    pub fn pop(_: Rank) {}
}

/// A mutex with a rank.
pub struct Mutex<T: ?Sized> {
    rank: Rank,
    inner: parking_lot::Mutex<T>,
}

/// A held [`Mutex`].
pub struct MutexGuard<'a, T: ?Sized> {
    rank: Rank,
    guard: parking_lot::MutexGuard<'a, T>,
}

impl<T> Mutex<T> {
    pub const fn new(rank: Rank, value: T) -> Mutex<T> {
        Mutex {
            rank,
            inner: parking_lot::Mutex::new(value),
        }
    }
}

impl<T: ?Sized> Mutex<T> {
    pub fn lock(&self) -> MutexGuard<'_, T> {
        held::check(self.rank);
        let guard = self.inner.lock();
        held::push(self.rank);
        MutexGuard { rank: self.rank, guard }
    }

    pub fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
        let guard = self.inner.try_lock()?;
        held::push(self.rank);
        Some(MutexGuard { rank: self.rank, guard })
    }

    /// Waits at most `wait`; checked as [`Mutex::lock`] is.
    pub fn try_lock_for(&self, wait: Duration) -> Option<MutexGuard<'_, T>> {
        held::check(self.rank);
        let guard = self.inner.try_lock_for(wait)?;
        held::push(self.rank);
        Some(MutexGuard { rank: self.rank, guard })
    }

    pub fn get_mut(&mut self) -> &mut T {
        self.inner.get_mut()
    }
}

impl<T: ?Sized> Drop for MutexGuard<'_, T> {
    fn drop(&mut self) {
        held::pop(self.rank);
    }
}

impl<T: ?Sized> Deref for MutexGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.guard
    }
}

impl<T: ?Sized> DerefMut for MutexGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.guard
    }
}

/// A reader-writer lock with a rank.
pub struct RwLock<T: ?Sized> {
    rank: Rank,
    inner: parking_lot::RwLock<T>,
}

/// A [`RwLock`] held for reading.
pub struct RwLockReadGuard<'a, T: ?Sized> {
    rank: Rank,
    guard: parking_lot::RwLockReadGuard<'a, T>,
}

/// A [`RwLock`] held for writing.
pub struct RwLockWriteGuard<'a, T: ?Sized> {
    rank: Rank,
    guard: parking_lot::RwLockWriteGuard<'a, T>,
}

impl<T> RwLock<T> {
    pub const fn new(rank: Rank, value: T) -> RwLock<T> {
        RwLock {
            rank,
            inner: parking_lot::RwLock::new(value),
        }
    }
}

impl<T: ?Sized> RwLock<T> {
    /// Checked even when the thread already reads this lock: with fair
    /// locks a second read behind a queued writer never returns.
    pub fn read(&self) -> RwLockReadGuard<'_, T> {
        held::check(self.rank);
        let guard = self.inner.read();
        held::push(self.rank);
        RwLockReadGuard { rank: self.rank, guard }
    }

    pub fn write(&self) -> RwLockWriteGuard<'_, T> {
        held::check(self.rank);
        let guard = self.inner.write();
        held::push(self.rank);
        RwLockWriteGuard { rank: self.rank, guard }
    }

    pub fn get_mut(&mut self) -> &mut T {
        self.inner.get_mut()
    }
}

impl<T: ?Sized> Drop for RwLockReadGuard<'_, T> {
    fn drop(&mut self) {
        held::pop(self.rank);
    }
}

impl<T: ?Sized> Drop for RwLockWriteGuard<'_, T> {
    fn drop(&mut self) {
        held::pop(self.rank);
    }
}

impl<T: ?Sized> Deref for RwLockReadGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.guard
    }
}

impl<T: ?Sized> Deref for RwLockWriteGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.guard
    }
}

impl<T: ?Sized> DerefMut for RwLockWriteGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.guard
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOW: Rank = Rank::new(1, "low");
    const HIGH: Rank = Rank::new(2, "high");

    #[test]
    fn locks_in_rank_order_are_taken_and_released() {
        let (a, b) = (Mutex::new(LOW, 1), RwLock::new(HIGH, 2));
        {
            let x = a.lock();
            let y = b.read();
            assert_eq!(*x + *y, 3);
        }
        // Released: the higher one first, then the lower one, is fine again.
        drop(b.write());
        drop(a.lock());
        // A try_lock out of order cannot deadlock and is allowed.
        let y = b.read();
        assert!(a.try_lock().is_some());
        drop(y);
    }

    #[cfg(debug_assertions)]
    #[test]
    #[should_panic(expected = "lock order: `low` (rank 1) taken while `high` (rank 2) is held")]
    fn a_lock_out_of_order_panics_in_debug_builds() {
        let (a, b) = (Mutex::new(LOW, ()), RwLock::new(HIGH, ()));
        let _y = b.read();
        let _x = a.lock();
    }

    #[cfg(debug_assertions)]
    #[test]
    #[should_panic(expected = "lock order: `high` (rank 2) taken while `high` (rank 2) is held")]
    fn a_second_read_of_the_same_lock_panics_in_debug_builds() {
        let b = RwLock::new(HIGH, ());
        let _first = b.read();
        let _second = b.read();
    }
}
