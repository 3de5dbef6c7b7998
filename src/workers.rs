//! The daemon's scan workers (`[workers]`): one [`RemoteSource`] per
//! configured source, scanned through the live worker the assignment
//! names. The assignment is a watch: without an etcd cluster it is the
//! static one `[workers]` gives (each source's `worker`); in a cluster it
//! is computed from the workers registered in etcd ([`Workers::follow`],
//! [`cluster_assignment`]), and the static one is then left alone.

use std::sync::Arc;

use anyhow::Context;
use parking_lot::Mutex;
use svc_cluster::{LiveMembers, Member};
use svc_engine::Engine;
use svc_engine::scan::Source;
use svc_ingest::host::SourceOptions;
use svc_ingest::remote::{Assignment, AssignmentRx, RemoteSource, WorkerAddr, assignment};
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
    /// The sources to place on workers, as `[workers]` last gave them.
    plan: watch::Sender<Arc<Vec<Planned>>>,
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
            plan: watch::channel(Arc::new(Vec::new())).0,
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

    /// Takes the assignment from a cluster's live workers from now on
    /// (the static `[workers.members]` are left alone): at every change of
    /// the live set or of the `[workers]` sources it is computed again
    /// ([`cluster_assignment`]) and counts from each source's next scan.
    /// The assignment follows until the returned task is dropped.
    pub fn follow(&self, live: LiveMembers) -> Following {
        *self.clustered.lock() = true;
        let tx = self.tx.clone();
        let mut plan = self.plan.subscribe();
        let mut members = live.subscribe();
        let task = self.handle.spawn(async move {
            let _live = live;
            loop {
                let next = {
                    let plan = plan.borrow_and_update().clone();
                    let members = members.borrow_and_update().clone();
                    cluster_assignment(&plan, &members)
                };
                let next = Arc::new(next);
                let changed = tx.send_if_modified(|cur| {
                    let changed = **cur != *next;
                    *cur = next.clone();
                    changed
                });
                if changed {
                    let placed: Vec<String> = next.iter().map(|(s, w)| format!("{s}@{}", w.id)).collect();
                    let orphans: Vec<String> = plan
                        .borrow()
                        .iter()
                        .filter(|p| !next.contains_key(&p.name))
                        .map(|p| p.name.clone())
                        .collect();
                    info!(assignment = ?placed, "sources assigned to the live workers");
                    if !orphans.is_empty() {
                        warn!(sources = ?orphans, "no live worker can run these sources; their scans fail until one joins");
                    }
                }
                let open = tokio::select! {
                    r = plan.changed() => r.is_ok(),
                    r = members.changed() => r.is_ok(),
                };
                if !open {
                    return;
                }
            }
        });
        Following(task)
    }

    /// Applies `[workers]`: each source's scan settings, the static
    /// assignment, and the sources themselves when they changed. An error
    /// (the TLS files cannot be read) leaves the sources as they were.
    pub fn configure(&self, settings: WorkersSettings) -> anyhow::Result<()> {
        for (spec, config) in &settings.sources {
            self.engine.set_source_config(&spec.name, config.clone());
        }
        let plan: Vec<Planned> = settings
            .sources
            .iter()
            .map(|(spec, _)| Planned {
                name: spec.name.clone(),
                plugin: spec.plugin.clone(),
                pin: settings.pins.get(&spec.name).cloned(),
            })
            .collect();
        self.plan.send_if_modified(|cur| {
            let changed = **cur != plan;
            *cur = Arc::new(plan);
            changed
        });
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

/// A source to place on a worker.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Planned {
    name: String,
    plugin: String,
    /// Its `worker`, if it names one.
    pin: Option<String>,
}

/// The task keeping the assignment on the live workers; dropping it stops.
pub struct Following(tokio::task::JoinHandle<()>);

impl Drop for Following {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Whether `member` says it can run `source` (its plugin by name, the
/// source by name, or everything).
fn can_run(member: &Member, source: &Planned) -> bool {
    member
        .sources
        .iter()
        .any(|c| c == "*" || *c == source.plugin || *c == source.name)
}

/// Places the sources on the live members. A source whose `worker` is
/// live (and can run it) stays on it; every other source goes where
/// svc-cluster's rendezvous `assign` puts it among the members able to run
/// it, so every daemon computes the same placement and a member's death
/// moves only its own sources. A source no live member can run is left
/// out: its scans fail and its resources are kept.
fn cluster_assignment(plan: &[Planned], members: &[Member]) -> Assignment {
    let mut out = Assignment::new();
    let mut free = Vec::new();
    for source in plan {
        let pinned = source
            .pin
            .as_ref()
            .and_then(|id| members.iter().find(|m| &m.id == id))
            .filter(|m| can_run(m, source));
        match pinned {
            Some(m) => {
                out.insert(
                    source.name.clone(),
                    WorkerAddr {
                        id: m.id.clone(),
                        addr: m.addr.clone(),
                    },
                );
            }
            None => free.push(svc_cluster::Source {
                provider: source.plugin.clone(),
                key: source.name.clone(),
            }),
        }
    }
    let placed = svc_cluster::assign(&free, members);
    for (source, id) in placed.owner {
        if let Some(m) = members.iter().find(|m| m.id == id) {
            out.insert(
                source,
                WorkerAddr {
                    id: m.id.clone(),
                    addr: m.addr.clone(),
                },
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(id: &str, runs: &[&str]) -> Member {
        Member {
            id: id.into(),
            addr: format!("{id}:7443"),
            sources: runs.iter().map(|s| (*s).into()).collect(),
        }
    }

    fn planned(name: &str, plugin: &str, pin: Option<&str>) -> Planned {
        Planned {
            name: name.into(),
            plugin: plugin.into(),
            pin: pin.map(Into::into),
        }
    }

    #[test]
    fn sources_go_to_live_members_able_to_run_them_and_a_live_pin_wins() {
        let plan: Vec<Planned> = (0..40)
            .map(|i| planned(&format!("s{i}"), "mock", None))
            .chain([planned("pinned", "mock", Some("w2")), planned("gcp-1", "gcp", None)])
            .collect();
        let members = [member("w1", &["mock"]), member("w2", &["mock"])];
        let a = cluster_assignment(&plan, &members);
        assert_eq!(a["pinned"].id, "w2");
        assert_eq!(a["pinned"].addr, "w2:7443");
        assert!(!a.contains_key("gcp-1"), "no member runs gcp");
        let on = |id: &str| a.values().filter(|w| w.id == id).count();
        assert!(on("w1") > 5 && on("w2") > 5, "w1 {} w2 {}", on("w1"), on("w2"));

        // w2 dies: its sources, the pinned one too, move to w1; w1's stay.
        let after = cluster_assignment(&plan, &members[..1]);
        assert_eq!(after.len(), 41);
        assert!(after.values().all(|w| w.id == "w1"));
        // A pin on a member that cannot run the source does not hold.
        let a = cluster_assignment(
            &[planned("x", "aws", Some("w1"))],
            &[member("w1", &["mock"]), member("w3", &["*"])],
        );
        assert_eq!(a["x"].id, "w3");
    }
}
