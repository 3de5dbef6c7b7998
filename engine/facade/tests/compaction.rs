//! Retired rows are compacted: a churning estate keeps the graph's rows
//! near the live count, scans after a compaction answer as scans of an
//! engine that never compacted (and as a fresh one over the same estate),
//! ids from before name nothing, and the graph store still has every
//! retired resource for time travel.

#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use svc_engine::clock::{Clock, ManualClock};
use svc_engine::graph::{EdgeBatch, NodeBatch, NodeInput, NodeKeyRef};
use svc_engine::scan::{ScanContext, ScanSink, Source, SourceError};
use svc_engine::{Crn, Engine, Relation};

const LIVE: u64 = 300;
const CHURN: u64 = 15;

fn volume(v: u64) -> String {
    format!("crn:svc:aws:us-east-1:ec2:volume:1:vol-{v}")
}

fn instance(k: u64) -> String {
    format!("crn:svc:aws:us-east-1:ec2:instance:1:i-{k}")
}

/// At epoch `e`: volumes `e * CHURN ..` (`LIVE` of them; the oldest
/// `CHURN` are gone each epoch, as many new), odd ones attached to one of
/// 10 instances, even ones unattached (waste), and the instances.
struct Churn(Arc<AtomicU64>);

impl Source for Churn {
    fn name(&self) -> &str {
        "churn"
    }
    fn providers(&self) -> Vec<String> {
        vec!["aws".into()]
    }
    fn scan(&mut self, ctx: &ScanContext<'_>, sink: &mut dyn ScanSink) -> Result<(), SourceError> {
        let i = ctx.interner;
        let e = self.0.load(Ordering::SeqCst);
        let mut nodes = NodeBatch::default();
        let mut edges = EdgeBatch::default();
        let (size, env) = (i.intern("size_gib"), (i.intern("env"), i.intern("prod")));
        for k in 0..10 {
            let c = Crn::parse(&instance(k)).unwrap();
            let input = NodeInput {
                key: NodeKeyRef::intern(i, &c),
                ty: i.intern("ec2:instance"),
                state: i.intern("running"),
                cost_usd_mo: 70.0,
                creation_ts: 1_600_000_000,
            };
            nodes.push(input, &[env], |w| w.int(size, 8));
        }
        for v in e * CHURN..e * CHURN + LIVE {
            let c = Crn::parse(&volume(v)).unwrap();
            let attached = v % 2 == 1;
            let input = NodeInput {
                key: NodeKeyRef::intern(i, &c),
                ty: i.intern("ec2:volume"),
                state: i.intern(if attached { "in-use" } else { "available" }),
                cost_usd_mo: 4.0 + (v % 7) as f32,
                creation_ts: 1_600_000_000,
            };
            nodes.push(input, &[env], |w| w.int(size, 100));
            if attached {
                let inst = Crn::parse(&instance(v % 10)).unwrap();
                edges.push(
                    NodeKeyRef::intern(i, &c),
                    NodeKeyRef::intern(i, &inst),
                    Relation::AttachedTo,
                    |_| {},
                );
            }
        }
        sink.nodes(nodes);
        sink.edges(edges);
        Ok(())
    }
}

struct Daemon {
    engine: Arc<Engine>,
    clock: Arc<ManualClock>,
    epoch: Arc<AtomicU64>,
}

impl Daemon {
    fn open(dir: &Path, start_us: u64, min_rows: usize) -> Daemon {
        let clock = Arc::new(ManualClock::new(start_us));
        let engine = Arc::new(Engine::open(dir, "s", clock.clone()).unwrap());
        let epoch = Arc::new(AtomicU64::new(0));
        engine.set_sources(vec![Box::new(Churn(epoch.clone()))]);
        engine.set_compaction_min_rows(min_rows);
        Daemon { engine, clock, epoch }
    }

    fn scan(&self, epoch: u64) {
        self.epoch.store(epoch, Ordering::SeqCst);
        self.clock.advance(3_600_000_000);
        self.engine.try_start_scan().unwrap().run().unwrap();
    }

    /// What the last scan decided, by CRN: each visible node's verdict,
    /// reachability and risk, each finding, each remediation item.
    fn answers(&self) -> (Vec<String>, Vec<String>, Vec<String>) {
        let g = self.engine.graph();
        let now = self.engine.now_us();
        let mut nodes: Vec<String> = g
            .nodes()
            .filter(|n| n.is_visible(now))
            .map(|n| {
                format!(
                    "{} waste={} reason={} rule={:?} reach={:?} risk={} phase={:?}",
                    n.crn(),
                    n.is_waste(),
                    n.waste_reason(),
                    n.verdict().map(|r| g.interner().resolve(r).to_string()),
                    n.reachability(),
                    n.risk_score(),
                    n.phase()
                )
            })
            .collect();
        nodes.sort();
        let findings = self.engine.findings();
        let mut found: Vec<String> = findings
            .by_node
            .iter()
            .flat_map(|(id, list)| {
                let crn = g.node(*id).unwrap().crn();
                list.iter().map(move |f| {
                    format!(
                        "{crn} {} waste={} risk={} {} {}",
                        f.rule, f.is_waste, f.risk_score, f.reason, f.projected_savings_usd_mo
                    )
                })
            })
            .collect();
        found.sort();
        drop(g);
        let mut items: Vec<String> = self
            .engine
            .remediation_items()
            .unwrap()
            .iter()
            .map(|i| format!("{i:?}"))
            .collect();
        items.sort();
        (nodes, found, items)
    }
}

#[test]
fn a_churning_estate_keeps_the_rows_near_the_live_count_and_answers_as_without_compaction() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let start = 1_700_000_000_000_000;
    let compacting = Daemon::open(a.path(), start, 16);
    let keeping = Daemon::open(b.path(), start, usize::MAX);
    let live = (LIVE + 10) as usize;
    let mut compactions = 0;
    let mut before: Vec<(svc_engine::NodeId, String)> = Vec::new();
    for epoch in 1..=40 {
        let rows = compacting.engine.graph().node_rows();
        if epoch == 5 {
            let g = compacting.engine.graph();
            before = g.nodes().map(|n| (n.id(), n.crn())).collect();
        }
        compacting.scan(epoch);
        keeping.scan(epoch);
        let now = compacting.engine.now_us();
        let after = compacting.engine.graph().node_rows();
        compactions += usize::from(after < rows);
        assert!(
            after <= live + live / 8 + 2 * CHURN as usize,
            "epoch {epoch}: {after} rows"
        );
        assert_eq!(
            keeping.engine.graph().node_rows(),
            live + (epoch as usize - 1) * CHURN as usize
        );
        assert_eq!(compacting.engine.graph().stats(now).active_nodes, live as u64);
        assert_eq!(compacting.answers(), keeping.answers(), "epoch {epoch}");
    }
    assert!(compactions >= 5, "{compactions} compactions");
    // An id taken before a compaction names nothing, or the same resource.
    let g = compacting.engine.graph();
    let mut stale = 0;
    for (id, crn) in &before {
        match g.node(*id) {
            Some(n) => assert_eq!(&n.crn(), crn),
            None => stale += 1,
        }
    }
    assert!(stale > 0);
    drop(g);
    // A fresh engine over the same estate finds the same and decides the same.
    let c = tempfile::tempdir().unwrap();
    let fresh = Daemon::open(c.path(), compacting.clock.now_us() - 3_600_000_000, 16);
    fresh.scan(40);
    let (nodes, found, _) = compacting.answers();
    let (fresh_nodes, fresh_found, _) = fresh.answers();
    assert_eq!(fresh_found, found);
    assert_eq!(fresh_nodes.len(), nodes.len());
}

#[test]
fn the_store_keeps_every_retired_resource_for_time_travel() {
    let dir = tempfile::tempdir().unwrap();
    let d = Daemon::open(dir.path(), 1_700_000_000_000_000, 16);
    d.scan(1);
    let first = d.engine.now_us();
    for epoch in 2..=20 {
        d.scan(epoch);
    }
    // The first volume of epoch 1 was retired at epoch 2 and is gone from memory...
    let gone = Crn::parse(&volume(CHURN)).unwrap();
    assert!(d.engine.graph().find(&gone).is_none());
    // ...but the graph as it was after the first scan has it, live.
    let then = d.engine.store().graph_at(first).unwrap();
    let crns: Vec<&str> = then.nodes.iter().map(|n| n.crn.as_str()).collect();
    assert!(crns.contains(&volume(CHURN).as_str()));
    assert_eq!(then.nodes.len(), (LIVE + 10) as usize);
    // And now, only the live estate.
    let now = d.engine.store().graph_at(d.engine.now_us()).unwrap();
    assert_eq!(now.nodes.len(), (LIVE + 10) as usize);
    assert!(!now.nodes.iter().any(|n| n.crn == volume(CHURN)));
}

#[test]
fn a_restart_drops_the_retired_rows() {
    let dir = tempfile::tempdir().unwrap();
    let d = Daemon::open(dir.path(), 1_700_000_000_000_000, usize::MAX);
    for epoch in 1..=6 {
        d.scan(epoch);
    }
    let live = (LIVE + 10) as usize;
    assert_eq!(d.engine.graph().node_rows(), live + 5 * CHURN as usize);
    let answers = d.answers();
    let now = d.clock.now_us();
    drop(d);
    for snapshot in [true, false] {
        if !snapshot {
            std::fs::remove_file(dir.path().join(svc_engine::engine::SNAPSHOT_FILE)).unwrap();
        }
        let again = Daemon::open(dir.path(), now, usize::MAX);
        assert_eq!(again.engine.graph().node_rows(), live, "from the snapshot: {snapshot}");
        assert_eq!(again.engine.graph().stats(now).active_nodes, live as u64);
        // The verdicts stored with the nodes are as they were.
        assert_eq!(again.answers().0, answers.0);
    }
}
