//! The daemon's scan workers (`[workers]`): one [`RemoteSource`] per
//! configured source, scanned through the live worker the assignment
//! names. The assignment is a watch: without an etcd cluster it is the
//! static one `[workers]` gives (each source's `worker`); a cluster's
//! membership sends its own through [`Workers::assignment`] instead, and
//! the static one is then left alone.

use std::sync::Arc;

use anyhow::Context;
use parking_lot::Mutex;
use svc_engine::Engine;
use svc_engine::scan::Source;
use svc_ingest::host::SourceOptions;
use svc_ingest::remote::{Assignment, AssignmentRx, RemoteSource, assignment};
use tokio::runtime::Handle;
use tokio::sync::watch;
use tracing::{info, warn};

use crate::config::WorkersSettings;
use crate::plugins::{MakeSource, Plugins};

/// The remote sources and the assignment they read.
pub struct Workers {
    engine: Arc<Engine>,
    plugins: Arc<Plugins>,
    handle: Handle,
    tx: watch::Sender<Arc<Assignment>>,
    rx: AssignmentRx,
    /// Whether a cluster's membership sends the assignment.
    clustered: Mutex<bool>,
    /// What was applied last.
    applied: Mutex<Option<WorkersSettings>>,
    /// Builds of the sources so far: a source of a new build replaces the
    /// running one (new TLS settings), where an equal one would give way.
    builds: std::sync::atomic::AtomicU64,
}

impl Workers {
    pub fn new(engine: Arc<Engine>, plugins: Arc<Plugins>, handle: Handle) -> Workers {
        let (tx, rx) = assignment::channel(Assignment::new());
        Workers {
            engine,
            plugins,
            handle,
            tx,
            rx,
            clustered: Mutex::new(false),
            applied: Mutex::new(None),
            builds: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// The sender a cluster's membership drives (svc-cluster's watch of
    /// the live workers, put through its `assign`): from then on the
    /// static `[workers]` assignment is not sent any more.
    #[allow(dead_code)]
    pub fn assignment(&self) -> watch::Sender<Arc<Assignment>> {
        *self.clustered.lock() = true;
        self.tx.clone()
    }

    /// The names of the sources workers run (what a cluster's `assign`
    /// spreads over its live workers).
    #[allow(dead_code)]
    pub fn sources(&self) -> Vec<String> {
        self.applied
            .lock()
            .as_ref()
            .map(|a| a.sources.iter().map(|(s, _)| s.name.clone()).collect())
            .unwrap_or_default()
    }

    /// Applies `[workers]`: each source's scan settings, the static
    /// assignment, and the sources themselves when they changed. An error
    /// (the TLS files cannot be read) leaves the sources as they were.
    pub fn configure(&self, settings: WorkersSettings) -> anyhow::Result<()> {
        for (spec, config) in &settings.sources {
            self.engine.set_source_config(&spec.name, config.clone());
        }
        if !*self.clustered.lock() {
            let assignment = Arc::new(settings.assignment.clone());
            self.tx.send_if_modified(|cur| {
                let changed = **cur != *assignment;
                *cur = assignment.clone();
                changed
            });
        }
        let same_sources = self
            .applied
            .lock()
            .as_ref()
            .is_some_and(|a| a.tls == settings.tls && specs(a) == specs(&settings));
        if same_sources {
            return Ok(());
        }
        let makers: Vec<MakeSource> = match &settings.tls {
            None => Vec::new(),
            Some(files) => {
                let tls = files.client().context("workers: the daemon's TLS files")?;
                let build = self.builds.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
                settings
                    .sources
                    .iter()
                    .map(|(spec, _)| {
                        let (spec, tls, rx, handle) = (spec.clone(), tls.clone(), self.rx.clone(), self.handle.clone());
                        let make: MakeSource = Box::new(move || -> Box<dyn Source> {
                            // Timeouts and limits come with each scan.
                            let mut opts = SourceOptions::default();
                            opts.launch.env = crate::telemetry::plugin_env();
                            let source = RemoteSource::new(spec.clone(), rx.clone(), tls.clone(), opts, handle.clone());
                            Box::new(source.with_generation(build))
                        });
                        make
                    })
                    .collect()
            }
        };
        let names: Vec<&str> = settings.sources.iter().map(|(s, _)| s.name.as_str()).collect();
        info!(sources = ?names, "sources run by scan workers");
        self.plugins.set_remote_sources(makers);
        *self.applied.lock() = Some(settings);
        Ok(())
    }

    /// [`Workers::configure`] for a configuration changed while the daemon
    /// runs: an error is logged, and the sources stay as they were.
    pub fn reconfigure(&self, settings: WorkersSettings) {
        if let Err(e) = self.configure(settings) {
            warn!(error = %format!("{e:#}"), "the [workers] settings were not applied");
        }
    }
}

fn specs(s: &WorkersSettings) -> Vec<&svc_ingest::remote::RemoteSpec> {
    s.sources.iter().map(|(spec, _)| spec).collect()
}
