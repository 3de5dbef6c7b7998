//! A map of values computed once per key, shared between threads.
//!
//! The map's lock is held only to find a key's slot; the value is computed
//! under the slot's own lock, so threads asking for the same key wait for
//! one computation while other keys proceed. A failed computation leaves
//! the slot empty, and the next caller tries again.

use std::borrow::Borrow;
use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// One key's value, empty until first computed.
type Slot<V> = Arc<Mutex<Option<Arc<V>>>>;

/// Values by key, each computed at most once successfully.
pub(super) struct Memo<K, V> {
    slots: Mutex<HashMap<K, Slot<V>>>,
}

impl<K: Eq + Hash, V> Memo<K, V> {
    /// An empty map.
    pub(super) fn new() -> Self {
        Memo {
            slots: Mutex::new(HashMap::new()),
        }
    }

    /// The value for `key`, computed by `make` if no caller computed it yet.
    pub(super) fn get_or_try_init<Q, E>(&self, key: &Q, make: impl FnOnce() -> Result<V, E>) -> Result<Arc<V>, E>
    where
        K: Borrow<Q>,
        Q: Eq + Hash + ToOwned<Owned = K> + ?Sized,
    {
        let slot = self.slot(key);
        let mut value = lock(&slot);
        if let Some(value) = value.as_ref() {
            return Ok(Arc::clone(value));
        }
        let made = Arc::new(make()?);
        *value = Some(Arc::clone(&made));
        Ok(made)
    }

    /// The values computed so far.
    pub(super) fn values(&self) -> Vec<Arc<V>> {
        let slots: Vec<Slot<V>> = lock(&self.slots).values().cloned().collect();
        slots.iter().filter_map(|slot| lock(slot).clone()).collect()
    }

    /// The slot of `key`, created empty on first use.
    fn slot<Q>(&self, key: &Q) -> Slot<V>
    where
        K: Borrow<Q>,
        Q: Eq + Hash + ToOwned<Owned = K> + ?Sized,
    {
        let mut slots = lock(&self.slots);
        if let Some(slot) = slots.get(key) {
            return Arc::clone(slot);
        }
        let slot = Slot::default();
        slots.insert(key.to_owned(), Arc::clone(&slot));
        slot
    }
}

/// Locks `mutex`, also after a panic in another holder: every write here
/// replaces a whole value, so the data is never half-updated.
pub(super) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
