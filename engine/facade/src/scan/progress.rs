//! What a running scan has done so far, and how the last one ended: the
//! phase it is in, and per source the nodes and edges received. Read at
//! any time (`GET /api/v1/engine/scan/progress`); written by the scan's
//! own threads. Its locks are leaves (`ranks::SCAN_PROGRESS`, then a
//! source's `ranks::SOURCE_PROGRESS`).

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Instant;

use svc_graph::sync::Mutex;

use super::stage::SourceCounts;
use crate::ranks;

use super::report::spans;

/// How a source's part of the scan stands.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum SourceState {
    Scanning,
    Done,
    Failed,
}

/// One source of the running scan.
pub struct SourceProgress {
    pub name: String,
    pub counts: SourceCounts,
    state: AtomicU8,
    error: Mutex<Option<String>>,
}

impl SourceProgress {
    fn new(name: String) -> SourceProgress {
        SourceProgress {
            name,
            counts: SourceCounts::default(),
            state: AtomicU8::new(0),
            error: Mutex::new(ranks::SOURCE_PROGRESS, None),
        }
    }

    /// The source finished: `error` when it failed.
    pub(crate) fn finished(&self, error: Option<String>) {
        let failed = error.is_some();
        *self.error.lock() = error;
        self.state.store(if failed { 2 } else { 1 }, Ordering::Relaxed);
    }

    fn state(&self) -> SourceState {
        match self.state.load(Ordering::Relaxed) {
            0 => SourceState::Scanning,
            1 => SourceState::Done,
            _ => SourceState::Failed,
        }
    }
}

/// How a finished scan ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finished {
    pub scan_seq: u64,
    /// Why it failed (nothing of it was committed).
    pub error: Option<String>,
    pub duration_ms: u64,
    pub nodes: u64,
    pub edges: u64,
}

struct Running {
    scan_seq: u64,
    started: Instant,
    /// Index into the SPEC phases; `PHASES.len()` while committing.
    phase: usize,
    sources: Vec<Arc<SourceProgress>>,
}

#[derive(Default)]
struct State {
    running: Option<Running>,
    last: Option<Finished>,
}

/// A source of the running scan, as read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceView {
    pub name: String,
    pub nodes: u64,
    pub edges: u64,
    pub state: SourceState,
    pub error: Option<String>,
}

/// The running scan, as read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunningView {
    pub scan_seq: u64,
    pub elapsed_ms: u64,
    /// The SPEC phase (`engine.plugin_scan`), or `commit` once every phase ran.
    pub phase: &'static str,
    /// 1-based among [`spans::PHASES`]; their count while committing.
    pub phase_index: usize,
    pub sources: Vec<SourceView>,
}

/// The name of the step after the last phase.
pub const COMMIT: &str = "commit";

/// The scan progress an engine keeps.
pub struct Progress {
    state: Mutex<State>,
}

impl Default for Progress {
    fn default() -> Progress {
        Progress {
            state: Mutex::new(ranks::SCAN_PROGRESS, State::default()),
        }
    }
}

impl Progress {
    /// A scan starts.
    pub(crate) fn start(&self) {
        self.state.lock().running = Some(Running {
            scan_seq: 0,
            started: Instant::now(),
            phase: 0,
            sources: Vec::new(),
        });
    }

    /// The running scan enters phase `index` of [`spans::PHASES`] (the
    /// commit at their count), under its sequence number once known.
    pub(crate) fn phase(&self, index: usize, scan_seq: u64) {
        if let Some(r) = self.state.lock().running.as_mut() {
            r.phase = index;
            r.scan_seq = scan_seq;
        }
    }

    /// The sources the running scan asks, in order: each one's progress.
    pub(crate) fn sources(&self, names: Vec<String>) -> Vec<Arc<SourceProgress>> {
        let sources: Vec<Arc<SourceProgress>> = names.into_iter().map(|n| Arc::new(SourceProgress::new(n))).collect();
        if let Some(r) = self.state.lock().running.as_mut() {
            r.sources = sources.clone();
        }
        sources
    }

    /// The running scan ended as `finished`.
    pub(crate) fn finish(&self, finished: Finished) {
        let mut st = self.state.lock();
        st.running = None;
        st.last = Some(finished);
    }

    /// The scan running now, if one is.
    pub fn running(&self) -> Option<RunningView> {
        let st = self.state.lock();
        let r = st.running.as_ref()?;
        let (phase, phase_index) = match spans::PHASES.get(r.phase) {
            Some(name) => (*name, r.phase + 1),
            None => (COMMIT, spans::PHASES.len()),
        };
        Some(RunningView {
            scan_seq: r.scan_seq,
            elapsed_ms: r.started.elapsed().as_millis() as u64,
            phase,
            phase_index,
            sources: r
                .sources
                .iter()
                .map(|s| SourceView {
                    name: s.name.clone(),
                    nodes: s.counts.nodes(),
                    edges: s.counts.edges(),
                    state: s.state(),
                    error: s.error.lock().clone(),
                })
                .collect(),
        })
    }

    /// How the last finished scan of this run ended.
    pub fn last(&self) -> Option<Finished> {
        self.state.lock().last.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scan_is_read_as_it_goes_and_as_it_ended() {
        let p = Progress::default();
        assert_eq!(p.running(), None);
        p.start();
        p.phase(2, 7);
        let sources = p.sources(vec!["mock".into(), "aws".into()]);
        sources[1].finished(Some("denied".into()));
        let r = p.running().unwrap();
        assert_eq!((r.scan_seq, r.phase, r.phase_index), (7, spans::PHASES[2], 3));
        assert_eq!(r.sources[0].state, SourceState::Scanning);
        assert_eq!(
            (r.sources[1].state, r.sources[1].error.as_deref()),
            (SourceState::Failed, Some("denied"))
        );
        p.phase(spans::PHASES.len(), 7);
        assert_eq!(p.running().unwrap().phase, COMMIT);
        let done = Finished {
            scan_seq: 7,
            error: None,
            duration_ms: 5,
            nodes: 3,
            edges: 2,
        };
        p.finish(done.clone());
        assert_eq!((p.running(), p.last()), (None, Some(done)));
    }
}
