//! The sources and heuristic analyzers a scan runs, their configuration,
//! and what each source answered for.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use svc_graph::sync::{Mutex, MutexGuard, RwLock};
use tracing::warn;

use crate::heuristics::Analyzer;
use crate::ranks;
use crate::scan::{ScanLimits, Source};
use crate::store::GraphStore;

/// What runs as each scan starts ([`crate::Engine::set_before_scan`]).
pub type BeforeScan = std::sync::Arc<dyn Fn() + Send + Sync>;

/// Locks `sources` (rank 10), `analyzers` (11), `pending_sources` (12),
/// `pending_analyzers` (13); the rest are leaves.
pub(crate) struct Sources {
    /// Locked for a whole scan and for each remediation step; use
    /// [`Sources::lock`] and [`Sources::try_lock_for`].
    sources: Mutex<Vec<Box<dyn Source>>>,
    analyzers: Mutex<Vec<Box<dyn Analyzer>>>,
    /// Sources and analyzers set while the lists were in use (a scan or a
    /// remediation step held them): whoever locks a list next puts them in
    /// its place, so a configuration change never waits for a scan.
    pending_sources: Mutex<Option<Vec<Box<dyn Source>>>>,
    pending_analyzers: Mutex<Option<Vec<Box<dyn Analyzer>>>>,
    config: RwLock<BTreeMap<String, BTreeMap<String, String>>>,
    /// Provider -> the source whose last scan reported it, for routing
    /// remediation to a plugin that serves providers beyond its name.
    served: RwLock<BTreeMap<String, String>>,
    /// Source -> the providers its last successful scan declared or
    /// reported (kept in the graph store): a scan in which it fails retires
    /// none of their resources, whichever other source reports them.
    answered: RwLock<BTreeMap<String, BTreeSet<String>>>,
    /// Whether the stored `answered` could be read at start.
    answered_read: bool,
    /// Called as each scan starts, before it takes the sources.
    before_scan: RwLock<Option<BeforeScan>>,
    /// What each source may take and send in a scan.
    limits: RwLock<ScanLimits>,
}

/// Puts `newer` in `held`'s place, except that each one with the identity
/// of one in `held` gives way to it (which keeps its running plugin);
/// returns those of `held` that were replaced.
fn keep_same<T: ?Sized>(held: &mut Vec<Box<T>>, newer: Vec<Box<T>>, identity: fn(&T) -> Option<String>) -> Vec<Box<T>> {
    let mut old: Vec<Option<Box<T>>> = std::mem::take(held).into_iter().map(Some).collect();
    for new in newer {
        let same = identity(&*new).and_then(|id| {
            old.iter_mut()
                .find(|o| {
                    o.as_deref()
                        .is_some_and(|o| identity(o).as_deref() == Some(id.as_str()))
                })
                .and_then(Option::take)
        });
        held.push(same.unwrap_or(new));
    }
    old.into_iter().flatten().collect()
}

/// Stops what was replaced (plugin processes are asked to shut down and
/// given their grace period) on a thread of its own, so whoever replaced
/// them does not wait for it.
fn stop_in_background<T: Send + 'static>(what: &'static str, old: Vec<T>, stop: fn(&mut T)) {
    if old.is_empty() {
        return;
    }
    let spawned = std::thread::Builder::new()
        .name("svc-stop-replaced".into())
        .spawn(move || {
            for mut item in old {
                stop(&mut item);
            }
        });
    if let Err(e) = spawned {
        // Dropped here instead: their processes are killed outright.
        warn!(what, error = %e, "cannot start a thread to stop what was replaced");
    }
}

impl Sources {
    /// `answered` as stored, and whether it could be read.
    pub(crate) fn new(answered: BTreeMap<String, BTreeSet<String>>, answered_read: bool) -> Sources {
        Sources {
            sources: Mutex::new(ranks::SOURCES, Vec::new()),
            analyzers: Mutex::new(ranks::ANALYZERS, Vec::new()),
            pending_sources: Mutex::new(ranks::PENDING_SOURCES, None),
            pending_analyzers: Mutex::new(ranks::PENDING_ANALYZERS, None),
            config: RwLock::new(ranks::SOURCE_CONFIG, BTreeMap::new()),
            served: RwLock::new(ranks::SERVED, BTreeMap::new()),
            answered: RwLock::new(ranks::ANSWERED, answered),
            answered_read,
            before_scan: RwLock::new(ranks::BEFORE_SCAN, None),
            limits: RwLock::new(ranks::LIMITS, ScanLimits::default()),
        }
    }

    /// Replaces the sources from the next lock of the list on.
    pub(crate) fn set_sources(&self, sources: Vec<Box<dyn Source>>) {
        *self.pending_sources.lock() = Some(sources);
        // At once when no scan or remediation step holds the list (the
        // sources replaced stop now); otherwise when it lets go.
        if let Some(mut held) = self.sources.try_lock() {
            self.take_pending_sources(&mut held);
        }
    }

    /// Replaces the analyzers from the next lock of the list on.
    pub(crate) fn set_analyzers(&self, analyzers: Vec<Box<dyn Analyzer>>) {
        *self.pending_analyzers.lock() = Some(analyzers);
        if let Some(mut held) = self.analyzers.try_lock() {
            self.take_pending_analyzers(&mut held);
        }
    }

    /// The analyzers, with those set since the list was last locked.
    pub(crate) fn lock_analyzers(&self) -> MutexGuard<'_, Vec<Box<dyn Analyzer>>> {
        let mut held = self.analyzers.lock();
        self.take_pending_analyzers(&mut held);
        held
    }

    fn take_pending_analyzers(&self, held: &mut Vec<Box<dyn Analyzer>>) {
        if let Some(newer) = self.pending_analyzers.lock().take() {
            let replaced = keep_same(held, newer, |a| a.identity());
            stop_in_background("analyzers", replaced, |a| a.stop());
        }
    }

    /// The sources, with those set since the list was last locked.
    pub(crate) fn lock(&self) -> MutexGuard<'_, Vec<Box<dyn Source>>> {
        let mut held = self.sources.lock();
        self.take_pending_sources(&mut held);
        held
    }

    /// [`Sources::lock`], waiting at most `wait`.
    pub(crate) fn try_lock_for(&self, wait: Duration) -> Option<MutexGuard<'_, Vec<Box<dyn Source>>>> {
        let mut held = self.sources.try_lock_for(wait)?;
        self.take_pending_sources(&mut held);
        Some(held)
    }

    fn take_pending_sources(&self, held: &mut Vec<Box<dyn Source>>) {
        if let Some(newer) = self.pending_sources.lock().take() {
            let replaced = keep_same(held, newer, |s| s.identity());
            stop_in_background("sources", replaced, |s| s.stop());
        }
    }

    /// Stops every source and analyzer, waiting up to `wait` for whoever
    /// holds the lists; returns whether it got them.
    pub(crate) fn stop_all(&self, wait: Duration) -> bool {
        let (Some(mut sources), Some(mut analyzers)) =
            (self.sources.try_lock_for(wait), self.analyzers.try_lock_for(wait))
        else {
            return false;
        };
        for s in sources.iter_mut() {
            s.stop();
        }
        for a in analyzers.iter_mut() {
            a.stop();
        }
        true
    }

    pub(crate) fn set_config(&self, source: &str, config: BTreeMap<String, String>) {
        self.config.write().insert(source.to_owned(), config);
    }

    /// Each source's scan configuration, by name.
    pub(crate) fn configs(&self) -> BTreeMap<String, BTreeMap<String, String>> {
        self.config.read().clone()
    }

    pub(crate) fn set_before_scan(&self, hook: BeforeScan) {
        *self.before_scan.write() = Some(hook);
    }

    pub(crate) fn before_scan(&self) -> Option<BeforeScan> {
        self.before_scan.read().clone()
    }

    pub(crate) fn set_limits(&self, limits: ScanLimits) {
        *self.limits.write() = limits;
    }

    pub(crate) fn limits(&self) -> ScanLimits {
        *self.limits.read()
    }

    /// Records that source `name` reported resources of `providers`.
    pub(crate) fn record_served(&self, name: &str, providers: impl Iterator<Item = String>) {
        let mut served = self.served.write();
        for p in providers {
            served.insert(p, name.to_owned());
        }
    }

    /// Provider -> the source that last reported it.
    pub(crate) fn served(&self) -> BTreeMap<String, String> {
        self.served.read().clone()
    }

    /// The sources that have ever completed a scan, by name; `None` when
    /// that is not known ([`crate::Engine::sources_seen`]).
    pub(crate) fn seen(&self) -> Option<Vec<String>> {
        let answered = self.answered.read();
        (self.answered_read || !answered.is_empty()).then(|| answered.keys().cloned().collect())
    }

    /// Source -> the providers its last successful scan answered for.
    pub(crate) fn answered(&self) -> BTreeMap<String, BTreeSet<String>> {
        self.answered.read().clone()
    }

    /// Records what source `name`'s successful scan answered for, and
    /// writes it to `store` when that changed.
    pub(crate) fn record_answered(&self, store: &GraphStore, name: &str, providers: BTreeSet<String>) {
        let mut answered = self.answered.write();
        if answered.get(name) == Some(&providers) {
            return;
        }
        if let Err(e) = store.put_source_providers(name, &providers) {
            warn!(source = name, error = %e, "cannot store which providers the source answered for");
        }
        answered.insert(name.to_owned(), providers);
    }
}
