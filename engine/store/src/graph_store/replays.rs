//! The graph as it was at a time ([`GraphAt`]), and the sharing of whole
//! states replayed from the segments ([`Replays`]).
//!
//! A state is replayed from the latest checkpoint and the deltas after it
//! (`GraphStore::state_as_of`, `graph_store/store.rs`), which at a million
//! nodes takes seconds and one to two gigabytes. So replays run one at a
//! time, and a state is shared: the questions about times that end at the
//! same commit, asked while it is replayed or while a reader holds it, get
//! the same replayed state. Nothing keeps a state beyond its last reader,
//! and its memory goes back to the kernel then: glibc would otherwise keep
//! the million small allocations of a replay in its heaps after they are
//! freed (a 1M-node daemon held ~1.6 GB more after one `/graph/at`, and
//! concurrent requests each replayed on their own; docs/perf-log.md, the
//! soak).

use std::sync::{Arc, Weak};

use parking_lot::{Condvar, Mutex, MutexGuard};
use svc_graph::graph::{EdgeVersion, NodeVersion};

use super::error::StoreError;

/// The graph as it was at one time, nodes sorted by CRN.
#[derive(Debug, Default)]
pub struct GraphAt {
    pub nodes: Vec<NodeVersion>,
    pub edges: Vec<EdgeVersion>,
}

/// Every row as of one commit (the latest version of each written at or
/// before it, live or not), nodes sorted by CRN, shared by the questions
/// about times that end at that commit.
#[derive(Debug, Default)]
pub struct Replayed {
    state: GraphAt,
}

impl Replayed {
    /// Every node, sorted by CRN.
    pub fn nodes(&self) -> &[NodeVersion] {
        &self.state.nodes
    }

    /// Every edge, in no particular order.
    pub fn edges(&self) -> &[EdgeVersion] {
        &self.state.edges
    }
}

impl Drop for Replayed {
    fn drop(&mut self) {
        // Frees the rows first, then hands the pages they leave free in
        // the middle of the allocator's heaps back to the kernel.
        drop(std::mem::take(&mut self.state));
        svc_graph::malloc::release();
    }
}

/// The store's replays: one at a time, each shared by the questions
/// about its commit that are asked while it runs or while a reader holds
/// it. Commit keys only increase and a commit's segments never change, so
/// the state as of a commit is the same whenever it is replayed.
#[derive(Default)]
pub(crate) struct Replays {
    slots: Mutex<Slots>,
    /// Signalled when a replay ends.
    ended: Condvar,
}

#[derive(Default)]
struct Slots {
    /// A replay is running.
    running: bool,
    /// The states replayed, by the commit they end at (`None`: before the
    /// first commit), while a reader holds them.
    held: Vec<(Option<u64>, Weak<Replayed>)>,
    /// The questions waiting for a commit's state, and the state once it is
    /// replayed, kept for them until the last of them has taken it.
    waiting: Vec<Waiting>,
}

struct Waiting {
    key: Option<u64>,
    questions: usize,
    state: Option<Arc<Replayed>>,
}

impl Slots {
    fn held(&mut self, key: Option<u64>) -> Option<Arc<Replayed>> {
        self.held.retain(|(_, w)| w.strong_count() > 0);
        self.held.iter().find(|(k, _)| *k == key).and_then(|(_, w)| w.upgrade())
    }

    fn waiting(&mut self, key: Option<u64>) -> Option<&mut Waiting> {
        self.waiting.iter_mut().find(|w| w.key == key)
    }

    /// One question less waits for `key`, taking the state if there is one.
    fn leave(&mut self, key: Option<u64>) -> Option<Arc<Replayed>> {
        let i = self.waiting.iter().position(|w| w.key == key)?;
        let w = &mut self.waiting[i];
        w.questions -= 1;
        let state = w.state.clone();
        if w.questions == 0 {
            self.waiting.swap_remove(i);
        }
        state
    }
}

impl Replays {
    /// Shares no state replayed so far with later questions (their readers
    /// keep them): the store's commits were written by another store.
    pub(crate) fn forget(&self) {
        self.slots.lock().held.clear();
    }

    /// The state as of commit `key`: one a reader holds, one replayed for
    /// this question while it waited, or `replay`'s, run once no other
    /// replay runs.
    pub(super) fn get(
        &self,
        key: Option<u64>,
        replay: impl FnOnce() -> Result<GraphAt, StoreError>,
    ) -> Result<Arc<Replayed>, StoreError> {
        let mut slots = self.slots.lock();
        if let Some(state) = slots.held(key) {
            return Ok(state);
        }
        match slots.waiting(key) {
            Some(w) => w.questions += 1,
            None => slots.waiting.push(Waiting {
                key,
                questions: 1,
                state: None,
            }),
        }
        loop {
            if slots.waiting(key).is_some_and(|w| w.state.is_some())
                && let Some(state) = slots.leave(key)
            {
                return Ok(state);
            }
            if !slots.running {
                slots.running = true;
                let replayed = MutexGuard::unlocked(&mut slots, || {
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(replay))
                });
                slots.running = false;
                self.ended.notify_all();
                let replayed = match replayed {
                    Ok(replayed) => replayed,
                    Err(panic) => {
                        slots.leave(key);
                        drop(slots);
                        std::panic::resume_unwind(panic);
                    }
                };
                return match replayed {
                    Ok(state) => {
                        let state = Arc::new(Replayed { state });
                        slots.held.push((key, Arc::downgrade(&state)));
                        if let Some(w) = slots.waiting(key) {
                            w.state = Some(state.clone());
                        }
                        slots.leave(key);
                        Ok(state)
                    }
                    Err(e) => {
                        // Another question waiting for this commit replays it again.
                        slots.leave(key);
                        Err(e)
                    }
                };
            }
            self.ended.wait(&mut slots);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Questions about one commit asked while its replay runs all get
    /// that replay; questions about another wait until it has ended; once
    /// every reader has let go, nothing is kept.
    #[test]
    fn questions_asked_during_a_replay_share_it_and_replays_run_one_at_a_time() {
        use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
        use std::sync::mpsc;

        let replays = Replays::default();
        let runs = AtomicUsize::new(0);
        let running = AtomicBool::new(false);
        let (release, released) = mpsc::channel::<()>();
        let released = Mutex::new(released);
        let replay = || {
            assert!(!running.swap(true, SeqCst), "two replays at once");
            runs.fetch_add(1, SeqCst);
            // The first replay waits until every question has been asked.
            let _ = released.lock().recv();
            running.store(false, SeqCst);
            Ok(GraphAt::default())
        };
        let questions = |key| {
            let mut waiting = replays.slots.lock();
            waiting.waiting(key).map_or(0, |w| w.questions)
        };
        let (first, others, other_key) = std::thread::scope(|s| {
            let first = s.spawn(|| replays.get(Some(1), replay).unwrap());
            let others: Vec<_> = (0..7)
                .map(|_| s.spawn(|| replays.get(Some(1), replay).unwrap()))
                .collect();
            let other_key = s.spawn(|| replays.get(Some(2), replay).unwrap());
            while questions(Some(1)) < 8 || questions(Some(2)) < 1 {
                std::thread::yield_now();
            }
            release.send(()).unwrap();
            drop(release);
            (
                first.join().unwrap(),
                others.into_iter().map(|h| h.join().unwrap()).collect::<Vec<_>>(),
                other_key.join().unwrap(),
            )
        });
        assert_eq!(runs.load(SeqCst), 2, "one replay for each commit");
        assert!(others.iter().all(|o| Arc::ptr_eq(o, &first)));
        assert!(!Arc::ptr_eq(&other_key, &first));
        let gone = Arc::downgrade(&first);
        drop((first, others, other_key));
        assert!(gone.upgrade().is_none());
        assert!(replays.slots.lock().waiting.is_empty());
    }
}
