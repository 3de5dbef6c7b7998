//! Answers worked out from the whole graph (counts, sums, the waste
//! ledger), kept until the graph or the findings change. At ten million
//! resources such a pass takes seconds, and a dashboard asks for the same
//! answers on every refresh and every page; between two scans nothing they
//! read moves.
//!
//! An answer is kept with the [`State`] it was worked out from: the
//! graph's write count ([`Engine::graph_writes`], read under the graph's
//! read lock) and the findings set it read. Any write to the graph, or a
//! new findings set, makes every kept answer stale; a stale answer is never
//! served. One request works a missing answer out (no lock is held while
//! it does); others asking for the same answer meanwhile wait for it rather
//! than each walking the graph again.

use std::any::Any;
use std::sync::{Arc, Weak};

use svc_engine::Engine;
use svc_engine::heuristics::FindingSet;

/// A kept answer, as the body of a response.
pub struct Kept<T>(pub Arc<T>);

impl<T: serde::Serialize> serde::Serialize for Kept<T> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

/// Answers kept at most; the least recently used goes first.
const KEPT: usize = 64;

/// What an answer was worked out from.
#[derive(Clone, Debug)]
pub struct State {
    graph_writes: u64,
    /// Held weakly: a kept answer does not keep an old findings set's
    /// memory alive, and while the weak reference lives no other set can
    /// take its address.
    findings: Weak<FindingSet>,
}

impl State {
    /// The state shown by a graph read guard of `engine` held by the
    /// caller, and `findings`.
    pub fn of(engine: &Engine, findings: &Arc<FindingSet>) -> State {
        State {
            graph_writes: engine.graph_writes(),
            findings: Arc::downgrade(findings),
        }
    }
}

impl PartialEq for State {
    fn eq(&self, other: &State) -> bool {
        self.graph_writes == other.graph_writes && Weak::ptr_eq(&self.findings, &other.findings)
    }
}

struct Answer {
    key: String,
    state: State,
    value: Arc<dyn Any + Send + Sync>,
    used: u64,
}

#[derive(Default)]
struct Slots {
    answers: Vec<Answer>,
    uses: u64,
    /// The answers being worked out now.
    making: Vec<(String, State)>,
    /// Requests waiting for one of them.
    waiting: usize,
}

/// The kept answers, held by the API state.
#[derive(Default)]
pub struct Derived {
    slots: parking_lot::Mutex<Slots>,
    /// Signalled when an answer being worked out is kept, or given up.
    made: parking_lot::Condvar,
}

/// Marks an answer as being worked out; unmarks it and wakes its waiters
/// when dropped, whether it was kept or its work panicked.
struct Making<'a> {
    derived: &'a Derived,
    key: &'a str,
    state: &'a State,
}

impl Drop for Making<'_> {
    fn drop(&mut self) {
        let mut slots = self.derived.slots.lock();
        slots.making.retain(|(k, s)| !(k == self.key && s == self.state));
        drop(slots);
        self.derived.made.notify_all();
    }
}

impl Derived {
    /// The answer kept under `key` for `state`, else `make`'s, kept.
    /// Answers of different types must use different keys.
    /// While another request works the same answer out, waits for it.
    pub fn get_or_make<T: Any + Send + Sync>(&self, key: &str, state: &State, make: impl FnOnce() -> T) -> Arc<T> {
        let mut slots = self.slots.lock();
        loop {
            if let Some(hit) = Self::get::<T>(&mut slots, key, state) {
                return hit;
            }
            if !slots.making.iter().any(|(k, s)| k == key && s == state) {
                break;
            }
            slots.waiting += 1;
            self.made.wait(&mut slots);
            slots.waiting -= 1;
        }
        slots.making.push((key.to_owned(), state.clone()));
        drop(slots);
        let _making = Making {
            derived: self,
            key,
            state,
        };
        let value = Arc::new(make());
        self.put(key, state, value.clone());
        value
    }

    fn get<T: Any + Send + Sync>(slots: &mut Slots, key: &str, state: &State) -> Option<Arc<T>> {
        slots.uses += 1;
        let uses = slots.uses;
        let answer = slots.answers.iter_mut().find(|a| a.key == key && a.state == *state)?;
        answer.used = uses;
        answer.value.clone().downcast::<T>().ok()
    }

    fn put(&self, key: &str, state: &State, value: Arc<dyn Any + Send + Sync>) {
        let mut slots = self.slots.lock();
        // Answers of an older state are never served again.
        slots.answers.retain(|a| a.state == *state && a.key != key);
        if slots.answers.len() >= KEPT
            && let Some(oldest) = slots
                .answers
                .iter()
                .enumerate()
                .min_by_key(|(_, a)| a.used)
                .map(|(i, _)| i)
        {
            slots.answers.swap_remove(oldest);
        }
        slots.uses += 1;
        let used = slots.uses;
        slots.answers.push(Answer {
            key: key.to_owned(),
            state: state.clone(),
            value,
            used,
        });
    }

    /// How many answers are kept.
    pub fn len(&self) -> usize {
        self.slots.lock().answers.len()
    }

    /// How many requests wait for an answer another is working out.
    pub fn waiting(&self) -> usize {
        self.slots.lock().waiting
    }

    /// How many answers are being worked out.
    pub fn making(&self) -> usize {
        self.slots.lock().making.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(writes: u64, findings: &Arc<FindingSet>) -> State {
        State {
            graph_writes: writes,
            findings: Arc::downgrade(findings),
        }
    }

    #[test]
    fn an_answer_is_kept_until_the_graph_or_the_findings_change() {
        let derived = Derived::default();
        let findings = Arc::new(FindingSet::default());
        let mut made = 0;
        let mut ask = |s: &State, key: &str| {
            *derived.get_or_make(key, s, || {
                made += 1;
                made
            })
        };
        let s1 = state(7, &findings);
        assert_eq!((ask(&s1, "a"), ask(&s1, "a")), (1, 1));
        assert_eq!(ask(&s1, "b"), 2);
        // A write to the graph.
        let s2 = state(8, &findings);
        assert_eq!(ask(&s2, "a"), 3);
        // Another findings set, the graph unchanged.
        let other = Arc::new(FindingSet::default());
        let s3 = state(8, &other);
        assert_eq!((ask(&s3, "a"), ask(&s3, "a")), (4, 4));
        // The older states' answers went when a newer one was kept.
        assert_eq!(derived.len(), 1);
        assert_eq!(ask(&s1, "a"), 5);
    }

    #[test]
    fn a_dropped_findings_set_is_a_change() {
        let derived = Derived::default();
        let first = Arc::new(FindingSet::default());
        let s1 = state(1, &first);
        assert_eq!(*derived.get_or_make("k", &s1, || 1u8), 1);
        drop(first);
        let second = Arc::new(FindingSet::default());
        let s2 = state(1, &second);
        assert_ne!(s1, s2);
        assert_eq!(*derived.get_or_make("k", &s2, || 2u8), 2);
    }

    /// Polls `ready` (each poll yields the thread) until it holds; fails
    /// after a few seconds.
    fn until(what: &str, ready: impl Fn() -> bool) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !ready() {
            assert!(std::time::Instant::now() < deadline, "{what} did not happen");
            std::thread::yield_now();
        }
    }

    #[test]
    fn one_request_works_an_answer_out_while_the_others_wait_for_it() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let derived = Arc::new(Derived::default());
        let findings = Arc::new(FindingSet::default());
        let made = Arc::new(AtomicUsize::new(0));
        let (release, held) = std::sync::mpsc::channel::<()>();
        let ask = |hold: Option<std::sync::mpsc::Receiver<()>>| {
            let (derived, made, s) = (derived.clone(), made.clone(), state(3, &findings));
            std::thread::spawn(move || {
                *derived.get_or_make("k", &s, || {
                    made.fetch_add(1, Ordering::SeqCst);
                    if let Some(h) = hold {
                        let _ = h.recv();
                    }
                    42u32
                })
            })
        };
        let first = ask(Some(held));
        until("the first request working the answer out", || derived.making() == 1);
        let others: Vec<_> = (0..3).map(|_| ask(None)).collect();
        until("three requests waiting", || derived.waiting() == 3);
        let _ = release.send(());
        assert_eq!(first.join().ok(), Some(42));
        for o in others {
            assert_eq!(o.join().ok(), Some(42));
        }
        assert_eq!(
            made.load(Ordering::SeqCst),
            1,
            "the answer was worked out more than once"
        );
        assert_eq!((derived.making(), derived.waiting()), (0, 0));
    }

    #[test]
    fn a_request_whose_work_panicked_leaves_the_answer_to_the_next() {
        let derived = Derived::default();
        let findings = Arc::new(FindingSet::default());
        let s = state(1, &findings);
        let failed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            derived.get_or_make("k", &s, || -> u8 { panic!("the pass failed") })
        }));
        assert!(failed.is_err());
        assert_eq!(derived.making(), 0);
        assert_eq!(*derived.get_or_make("k", &s, || 5u8), 5);
    }

    #[test]
    fn the_least_recently_used_answer_goes_first() {
        let derived = Derived::default();
        let findings = Arc::new(FindingSet::default());
        let s = state(1, &findings);
        for k in 0..KEPT {
            derived.get_or_make(&k.to_string(), &s, || k);
        }
        // "0" is used again, so "1" is the oldest.
        assert_eq!(*derived.get_or_make("0", &s, || usize::MAX), 0);
        derived.get_or_make("new", &s, || 0usize);
        assert_eq!(derived.len(), KEPT);
        assert_eq!(*derived.get_or_make("0", &s, || usize::MAX), 0);
        assert_eq!(*derived.get_or_make("1", &s, || usize::MAX), usize::MAX);
    }
}
