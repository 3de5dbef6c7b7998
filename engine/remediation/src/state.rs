//! The pipeline's state in memory: items by CRN, ignore entries and sagas
//! cut short, with the per-CRN locks that guard a saga or quarantine. The
//! store ([`crate::store`]) holds the same; the engine's operations read
//! and change it under [`Remediation::state`]. A daemon may start serving
//! before the items are read ([`Remediation::pending`]): until they are
//! installed, whoever asks for the state waits for them.

use std::collections::{BTreeMap, HashSet};
use std::time::Instant;

use hashbrown::{HashTable, hash_table};
use parking_lot::Condvar;
use rayon::iter::{IntoParallelIterator, ParallelIterator};
use rustc_hash::FxBuildHasher;
use std::hash::BuildHasher;
use svc_graph::sync::{Mutex, Rank};
use tracing::warn;

use svc_graph::graph::Phase;
use svc_graph::ids::NodeId;
use svc_store::{GraphStore, StoreError};

use crate::store::{ItemsWrite, RemediationStore};
use crate::{Isolation, Item, Saga, SagaStep};

/// The remediation state's place in the engine's lock order: after the
/// graph and its passes' locks, before a store write or a ledger append.
pub const STATE_RANK: Rank = Rank::new(50, "remediation state");

/// Items, ignore entries and sagas cut short, in memory; the store holds
/// the same.
pub struct Remediation {
    state: Mutex<State>,
    /// Whether the stored items are in `state` yet ([`Remediation::pending`]).
    load: parking_lot::Mutex<Load>,
    loaded: Condvar,
    /// CRNs with a saga or quarantine running.
    pub locks: parking_lot::Mutex<HashSet<String>>,
    pub freed: Condvar,
    /// Locks shared with the other nodes of a cluster, taken after the
    /// in-process one; none for a node alone.
    shared: parking_lot::RwLock<Option<std::sync::Arc<dyn SharedLocks>>>,
}

/// Locks on CRNs shared with the other nodes of a cluster (in etcd), so a
/// saga step never runs twice across a failover.
pub trait SharedLocks: Send + Sync {
    /// Locks `crn` cluster-wide within `wait`; the returned guard releases
    /// it when dropped. `Err` says why it was not locked (recorded as
    /// `LOCK_TIMEOUT`).
    fn lock(&self, crn: &str, wait: std::time::Duration) -> Result<Box<dyn SharedGuard>, String>;
}

/// A held cluster-wide lock; released when dropped.
pub trait SharedGuard: Send {
    /// Whether the lock still holds, asked of the cluster (not this node's
    /// belief): a saga checks before each step it runs. `Err` says why not.
    fn check(&self) -> Result<(), String>;
}

/// Where the stored items are.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Load {
    /// Being read: the state is empty, and no one may use it.
    Reading,
    /// In the state.
    Done,
    /// They could not be read (why): the state must never be used, since
    /// acting on an empty pipeline would write over what is stored.
    Failed(String),
}

#[derive(Default)]
pub struct State {
    /// By CRN ([`Items`]).
    pub items: Items,
    pub isolation: BTreeMap<String, Isolation>,
    /// Sagas found running at start: the daemon stopped mid-saga.
    pub interrupted: Vec<Saga>,
    /// Whether a pass since the start rechecked every item's plan hash.
    pub planned: bool,
    /// A pass's write of its items, waiting for its scan's commit or
    /// running behind it (see the engine's `sau_pass`).
    pub behind: Option<Behind>,
    /// A write of items failed: memory holds what the store may not, so
    /// the next pass writes every item and removes every other stored one.
    pub rewrite: bool,
}

/// A pass's write of its items, not yet known to be durable.
pub enum Behind {
    /// Not begun: a scan's write transactions go first.
    Waiting(ItemsWrite),
    /// On a thread of its own ([`RemediationStore::write_items_behind`]).
    Running(std::thread::JoinHandle<Result<(), StoreError>>),
}

impl State {
    /// Makes the pass's write durable: one waiting is written in line, one
    /// running is waited for. A failed one is logged (its items stay as
    /// they are in memory, and the next pass writes them all again:
    /// [`State::rewrite`]).
    pub fn settle(&mut self, store: &GraphStore) {
        let written = match self.behind.take() {
            None => return,
            Some(Behind::Waiting(w)) => store.write_items(w),
            Some(Behind::Running(handle)) => match handle.join() {
                Ok(written) => written,
                Err(_) => {
                    self.rewrite = true;
                    warn!("the remediation pass's item writer stopped unexpectedly");
                    return;
                }
            },
        };
        if let Err(e) = written {
            self.not_written(&e);
        }
    }

    /// Begins a waiting write on a thread of its own: the caller's writes
    /// are done, and later ones wait for this one. A write already running
    /// is left to run.
    pub fn write_behind(&mut self, store: &GraphStore) {
        match self.behind.take() {
            Some(Behind::Waiting(w)) => match store.write_items_behind(w) {
                Ok(handle) => self.behind = Some(Behind::Running(handle)),
                Err(e) => self.not_written(&e),
            },
            running => self.behind = running,
        }
    }

    fn not_written(&mut self, e: &StoreError) {
        self.rewrite = true;
        warn!(error = %e, "the remediation pass's items could not be written; the next pass writes them all");
    }
}

/// The items by CRN, hashed, since a scan looks up every waste
/// resource's item. The table holds boxes keyed by the item's own CRN, not
/// a copy of it: at 10M resources the pipeline holds ~2M items, and a
/// second CRN each cost ~110 bytes. Boxed, so growing the table moves 8
/// bytes an item rather than the whole entry while the old and the new
/// table are both held.
#[derive(Default)]
pub struct Items(HashTable<Box<Entry>>);

fn crn_hash(crn: &str) -> u64 {
    FxBuildHasher.hash_one(crn)
}

impl Items {
    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn reserve(&mut self, more: usize) {
        self.0.reserve(more, |e| crn_hash(&e.item.crn));
    }

    pub fn get(&self, crn: &str) -> Option<&Entry> {
        self.0.find(crn_hash(crn), |e| e.item.crn == crn).map(|e| &**e)
    }

    pub fn get_mut(&mut self, crn: &str) -> Option<&mut Entry> {
        self.0.find_mut(crn_hash(crn), |e| e.item.crn == crn).map(|e| &mut **e)
    }

    pub fn contains_key(&self, crn: &str) -> bool {
        self.get(crn).is_some()
    }

    /// Adds `entry` under its item's CRN; the entry it replaces, if any.
    pub fn insert(&mut self, entry: Box<Entry>) -> Option<Box<Entry>> {
        let hash = crn_hash(&entry.item.crn);
        match self
            .0
            .entry(hash, |e| e.item.crn == entry.item.crn, |e| crn_hash(&e.item.crn))
        {
            hash_table::Entry::Occupied(mut o) => Some(std::mem::replace(o.get_mut(), entry)),
            hash_table::Entry::Vacant(v) => {
                v.insert(entry);
                None
            }
        }
    }

    pub fn remove(&mut self, crn: &str) -> Option<Box<Entry>> {
        match self.0.find_entry(crn_hash(crn), |e| e.item.crn == crn) {
            Ok(o) => Some(o.remove().0),
            Err(_) => None,
        }
    }

    pub fn values(&self) -> impl Iterator<Item = &Entry> {
        self.0.iter().map(|e| &**e)
    }

    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut Entry> {
        self.0.iter_mut().map(|e| &mut **e)
    }

    pub fn par_values(&self) -> impl ParallelIterator<Item = &Entry> {
        (&self.0).into_par_iter().map(|e| &**e)
    }

    pub fn par_values_mut(&mut self) -> impl ParallelIterator<Item = &mut Entry> {
        (&mut self.0).into_par_iter().map(|e| &mut **e)
    }
}

impl FromIterator<Box<Entry>> for Items {
    fn from_iter<I: IntoIterator<Item = Box<Entry>>>(iter: I) -> Items {
        let iter = iter.into_iter();
        let mut items = Items::default();
        // Sized once: growing rehashes every CRN so far.
        items.reserve(iter.size_hint().0);
        for e in iter {
            items.insert(e);
        }
        items
    }
}

/// An item and the node it was matched to.
pub struct Entry {
    pub item: Item,
    /// The waste node the last pass matched the item to. A row never
    /// changes key, and a compaction that moves rows gives their shard the
    /// next generation, which an id carries: while the graph still has
    /// this id, the node is the item's resource and the next pass need not
    /// find it by CRN. `None` for an item loaded at start until a pass
    /// matches it.
    pub node: Option<NodeId>,
    /// Where the pass that matched it listed `node` among the waste nodes:
    /// the pass reads the node's deciding finding there, not through the
    /// findings' index. Meaningless outside that pass.
    pub place: u32,
    /// Whether the last pass changed the item.
    pub dirty: bool,
}

impl Entry {
    pub fn new(item: Item, node: Option<NodeId>) -> Entry {
        Entry {
            item,
            node,
            place: 0,
            dirty: false,
        }
    }
}

/// What one `engine.sau` pass did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SauReport {
    /// Items per stage after the pass, in stage order.
    pub stages: Vec<(&'static str, u64)>,
    pub entered: u64,
    pub left: u64,
    /// Items that left, by reason.
    pub left_reasons: BTreeMap<&'static str, u64>,
    pub analyzed: u64,
    /// Items stored because they changed (entered, moved, or their
    /// finding, proof or plan changed); the others are left as they are.
    pub written: u64,
    pub held: u64,
    pub expired_isolations: u64,
    pub recovered_sagas: u64,
    /// How long reconciling the items took (not in the ledger payload).
    pub duration: std::time::Duration,
}

/// How a saga ended.
#[derive(Clone, Debug, PartialEq)]
pub struct SagaOutcome {
    pub saga_id: String,
    pub crn: String,
    pub applied: bool,
    pub stage: Phase,
    pub failure: Option<String>,
    pub steps: Vec<SagaStep>,
}

/// A CRN lock, released when dropped.
pub struct CrnLock<'a> {
    r: &'a Remediation,
    crn: String,
}

impl Drop for CrnLock<'_> {
    fn drop(&mut self) {
        self.r.locks.lock().remove(&self.crn);
        self.r.freed.notify_all();
    }
}

impl Remediation {
    /// Forgets the node each item was matched to, as a restart does: the
    /// graph was compacted and ids taken before name nothing; the next pass
    /// matches items to nodes by CRN again.
    pub fn forget_nodes(&self) {
        for e in self.state().items.values_mut() {
            e.node = None;
        }
    }

    /// A pipeline whose stored items are still being read: every
    /// [`Remediation::state`] waits until [`Remediation::install`] (or
    /// [`Remediation::fail`]) is called.
    pub fn pending() -> Remediation {
        Remediation {
            state: Mutex::new(STATE_RANK, State::default()),
            load: parking_lot::Mutex::new(Load::Reading),
            loaded: Condvar::new(),
            locks: parking_lot::Mutex::new(HashSet::new()),
            freed: Condvar::new(),
            shared: parking_lot::RwLock::new(None),
        }
    }

    /// Puts the stored items in place and lets those waiting for them go on.
    pub fn install(&self, loaded: crate::store::Loaded) {
        let state = State {
            items: loaded
                .items
                .into_iter()
                .map(|i| Box::new(Entry::new(i, None)))
                .collect(),
            isolation: loaded.isolations.into_iter().map(|i| (i.crn.clone(), i)).collect(),
            interrupted: loaded.sagas.into_iter().filter(|g| g.status == "running").collect(),
            planned: false,
            behind: None,
            rewrite: false,
        };
        *self.state.lock() = state;
        *self.load.lock() = Load::Done;
        self.loaded.notify_all();
    }

    /// The stored items could not be read (`why`): whoever waits for the
    /// state, or asks for it later, panics with the reason rather than act
    /// on an empty pipeline. The daemon stops on the same error.
    pub fn fail(&self, why: String) {
        *self.load.lock() = Load::Failed(why);
        self.loaded.notify_all();
    }

    /// Whether the stored items are in place.
    pub fn is_loaded(&self) -> bool {
        *self.load.lock() == Load::Done
    }

    /// The state, once the stored items are in place (waits for them
    /// while they are read).
    ///
    /// # Panics
    /// When they could not be read ([`Remediation::fail`]).
    pub fn state(&self) -> svc_graph::sync::MutexGuard<'_, State> {
        let mut load = self.load.lock();
        loop {
            match &*load {
                Load::Done => break,
                Load::Reading => self.loaded.wait(&mut load),
                Load::Failed(why) => panic!("the remediation items could not be read: {why}"),
            }
        }
        drop(load);
        self.state.lock()
    }

    /// Sets (or clears) the cluster's shared locks.
    pub fn set_shared_locks(&self, shared: Option<std::sync::Arc<dyn SharedLocks>>) {
        *self.shared.write() = shared;
    }

    /// Locks `crn` cluster-wide when this node is in a cluster: `Ok(None)`
    /// alone, `Ok(Some(guard))` locked, `Err(why)` not locked in time.
    pub fn lock_shared(&self, crn: &str, wait: std::time::Duration) -> Result<Option<Box<dyn SharedGuard>>, String> {
        let shared = self.shared.read().clone();
        shared.map(|s| s.lock(crn, wait)).transpose()
    }

    /// Makes a pass's write durable ([`State::settle`]).
    pub fn settle(&self, store: &GraphStore) {
        // Nothing waits behind a pipeline whose items are not in place.
        if self.is_loaded() {
            self.state.lock().settle(store);
        }
    }

    /// Begins a pass's waiting write behind the caller ([`State::write_behind`]).
    pub fn write_behind(&self, store: &GraphStore) {
        if self.is_loaded() {
            self.state.lock().write_behind(store);
        }
    }

    pub fn lock_crn(&self, crn: &str, wait: std::time::Duration) -> Option<CrnLock<'_>> {
        let deadline = Instant::now() + wait;
        let mut held = self.locks.lock();
        while held.contains(crn) {
            if self.freed.wait_until(&mut held, deadline).timed_out() && held.contains(crn) {
                return None;
            }
        }
        held.insert(crn.to_owned());
        Some(CrnLock {
            r: self,
            crn: crn.to_owned(),
        })
    }
}
