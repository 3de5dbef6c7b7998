//! The scan pipeline's tracing spans: the ten phases of SPEC section 1, in
//! order, each a child of the root `engine.run`.

#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use svc_engine::Engine;
use svc_engine::clock::SystemClock;
use svc_engine::scan::{ScanContext, ScanSink, Source, SourceError, spans};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

/// A span's name and its parent's name.
type Created = (&'static str, Option<&'static str>);

/// Records `(span name, parent name)` for every span, in creation order.
#[derive(Clone, Default)]
struct Recorder {
    names: Arc<Mutex<Vec<(u64, &'static str)>>>,
    created: Arc<Mutex<Vec<Created>>>,
    stack: Arc<Mutex<Vec<u64>>>,
    next: Arc<AtomicU64>,
}

impl Recorder {
    fn name_of(&self, id: u64) -> Option<&'static str> {
        self.names
            .lock()
            .unwrap()
            .iter()
            .find(|(i, _)| *i == id)
            .map(|(_, n)| *n)
    }
}

impl Subscriber for Recorder {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, attrs: &Attributes<'_>) -> Id {
        let id = self.next.fetch_add(1, Ordering::SeqCst) + 1;
        let parent = if attrs.is_root() {
            None
        } else if let Some(p) = attrs.parent() {
            self.name_of(p.into_u64())
        } else {
            self.stack.lock().unwrap().last().and_then(|p| self.name_of(*p))
        };
        self.names.lock().unwrap().push((id, attrs.metadata().name()));
        self.created.lock().unwrap().push((attrs.metadata().name(), parent));
        Id::from_u64(id)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, _: &Event<'_>) {}
    fn enter(&self, span: &Id) {
        self.stack.lock().unwrap().push(span.into_u64());
    }
    fn exit(&self, span: &Id) {
        let mut stack = self.stack.lock().unwrap();
        if let Some(pos) = stack.iter().rposition(|s| *s == span.into_u64()) {
            stack.remove(pos);
        }
    }
}

struct Empty;

impl Source for Empty {
    fn name(&self) -> &str {
        "empty"
    }
    fn providers(&self) -> Vec<String> {
        vec!["aws".into()]
    }
    fn scan(&mut self, _: &ScanContext<'_>, _: &mut dyn ScanSink) -> Result<(), SourceError> {
        Ok(())
    }
}

#[test]
fn a_scan_traces_the_ten_phases_in_order_under_engine_run() {
    let dir = tempfile::tempdir().unwrap();
    let engine = Arc::new(Engine::open(dir.path(), "s", Arc::new(SystemClock::default())).unwrap());
    engine.set_sources(vec![Box::new(Empty)]);
    let recorder = Recorder::default();
    tracing::subscriber::with_default(recorder.clone(), || {
        engine.try_start_scan().unwrap().run().unwrap();
    });
    let created = recorder.created.lock().unwrap().clone();
    let engine_spans: Vec<_> = created
        .iter()
        .filter(|(n, _)| n.starts_with("engine."))
        .cloned()
        .collect();
    assert_eq!(engine_spans.first(), Some(&(spans::RUN, None)), "{created:?}");
    let phases: Vec<&str> = engine_spans[1..].iter().map(|(n, _)| *n).collect();
    assert_eq!(phases, spans::PHASES.to_vec());
    for (name, parent) in &engine_spans[1..] {
        assert_eq!(*parent, Some(spans::RUN), "{name} must be a child of engine.run");
    }
    assert_eq!(
        spans::PHASES,
        [
            "engine.init",
            "engine.time_travel",
            "engine.plugin_scan",
            "engine.heuristics",
            "engine.pattern",
            "engine.ghost_linker",
            "engine.formal_verify",
            "engine.sau",
            "engine.policy",
            "engine.signal_analysis",
        ],
        "the names of SPEC 4.9"
    );
}
