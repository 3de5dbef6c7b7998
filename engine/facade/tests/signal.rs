//! `engine.signal_analysis` through real scans: per-node cost changes scored
//! within their type, per-type history, and what a restart keeps.

#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

use std::path::Path;
use std::sync::{Arc, Mutex};

use svc_engine::clock::ManualClock;
use svc_engine::graph::{NodeBatch, NodeInput, NodeKeyRef};
use svc_engine::scan::{ScanContext, ScanSink, Source, SourceError};
use svc_engine::signal::{BaselineKind, ChangeKind};
use svc_engine::{Crn, Engine};

/// What the source reports: `(crn, monthly cost)`.
type Estate = Arc<Mutex<Vec<(String, f32)>>>;

struct CostSource(Estate);

impl Source for CostSource {
    fn name(&self) -> &str {
        "costs"
    }
    fn providers(&self) -> Vec<String> {
        vec!["aws".into()]
    }
    fn scan(&mut self, ctx: &ScanContext<'_>, sink: &mut dyn ScanSink) -> Result<(), SourceError> {
        let list = self
            .0
            .lock()
            .map_err(|_| SourceError::Failed("poisoned".into()))?
            .clone();
        let i = ctx.interner;
        let mut nodes = NodeBatch::default();
        for (crn, cost) in &list {
            let c = Crn::parse(crn).map_err(|e| SourceError::Failed(e.to_string()))?;
            let input = NodeInput {
                key: NodeKeyRef::intern(i, &c),
                ty: i.intern(&c.node_type()),
                state: i.intern("in-use"),
                cost_usd_mo: *cost,
                creation_ts: 1_700_000_000,
            };
            nodes.push(input, &[], |_| {});
        }
        sink.nodes(nodes);
        Ok(())
    }
}

fn volume(n: u32) -> String {
    format!("crn:svc:aws:us-east-1:ec2:volume:123456789012:vol-{n:02}")
}

fn instance(n: u32) -> String {
    format!("crn:svc:aws:us-east-1:ec2:instance:123456789012:i-{n:02}")
}

/// Twenty $10 volumes and five instances of different sizes.
fn estate() -> Estate {
    let mut list: Vec<(String, f32)> = (0..20).map(|n| (volume(n), 10.0)).collect();
    list.extend((0..5).map(|n| (instance(n), 30.0 * (n + 1) as f32)));
    Arc::new(Mutex::new(list))
}

fn set_cost(estate: &Estate, crn: &str, cost: f32) {
    let mut list = estate.lock().unwrap();
    match list.iter_mut().find(|(c, _)| c == crn) {
        Some(entry) => entry.1 = cost,
        None => list.push((crn.to_owned(), cost)),
    }
}

struct Rig {
    engine: Arc<Engine>,
    clock: Arc<ManualClock>,
}

impl Rig {
    fn open(dir: &Path, estate: &Estate, start_us: u64) -> Rig {
        let clock = Arc::new(ManualClock::new(start_us));
        let engine = Arc::new(Engine::open(dir, "test", clock.clone()).unwrap());
        engine.set_sources(vec![Box::new(CostSource(estate.clone()))]);
        Rig { engine, clock }
    }

    fn scan(&self) {
        self.clock.advance(60_000_000);
        self.engine.try_start_scan().unwrap().run().unwrap();
    }
}

const T0: u64 = 1_750_000_000_000_000;

#[test]
fn one_jump_is_the_only_anomaly() {
    let dir = tempfile::tempdir().unwrap();
    let estate = estate();
    let rig = Rig::open(dir.path(), &estate, T0);

    rig.scan();
    let a = rig.engine.anomalies();
    assert_eq!((a.scan_seq, a.baseline), (1, BaselineKind::None), "{a:?}");
    assert!(
        a.nodes.is_empty() && a.types.is_empty(),
        "the first scan compares nothing: {a:?}"
    );

    // One volume jumps from $10 to $80; another drifts by 5% (not material).
    set_cost(&estate, &volume(7), 80.0);
    set_cost(&estate, &volume(3), 10.5);
    rig.scan();
    let a = rig.engine.anomalies();
    assert_eq!((a.scan_seq, a.previous_scan_seq), (2, 1));
    assert_eq!(a.baseline, BaselineKind::PreviousScan);
    assert_eq!(
        (a.nodes_compared, a.nodes_changed, a.nodes_flagged),
        (25, 2, 1),
        "{a:?}"
    );
    assert_eq!(a.nodes.len(), 1, "{a:?}");
    let n = &a.nodes[0];
    assert_eq!(n.crn, volume(7));
    assert_eq!(
        (n.ty.as_str(), n.provider.as_str(), n.kind),
        ("ec2:volume", "aws", ChangeKind::Changed)
    );
    assert_eq!((n.previous, n.current, n.change()), (10.0, 80.0, 70.0));
    // 18 zeros and two changes (0.5, 70): median 0, MAD 0, so the mean
    // absolute deviation stands in: z = 70 / (1.253314 * 70.5 / 20).
    let want = 70.0 / (1.253314 * (70.5 / 20.0));
    assert!((n.z - want).abs() < 1e-9, "z {} want {want}", n.z);
    assert!(
        a.types.is_empty(),
        "two changes of history are too few to score a type: {a:?}"
    );

    // Nothing changes: nothing is anomalous.
    rig.scan();
    let a = rig.engine.anomalies();
    assert_eq!((a.scan_seq, a.nodes_changed), (3, 0));
    assert!(a.nodes.is_empty() && a.types.is_empty(), "{a:?}");

    // Three scans of history per type, newest last.
    let history = rig.engine.signal().history();
    assert_eq!(history.len(), 3);
    let reader = rig.engine.interner().reader();
    let volumes = history
        .summaries()
        .into_iter()
        .find(|s| reader.resolve(s.key.ty) == "ec2:volume")
        .unwrap();
    assert_eq!(
        (volumes.scans, volumes.first_scan_seq, volumes.last_scan_seq),
        (3, 1, 3)
    );
    assert_eq!(volumes.latest.count, 20);
    assert!((volumes.latest.cost_usd_mo - 270.5).abs() < 1e-9, "{volumes:?}");
    assert_eq!(volumes.min_cost_usd_mo, 200.0);
    assert_eq!(volumes.recent.iter().map(|p| p.0).collect::<Vec<_>>(), [1, 2, 3]);
}

#[test]
fn new_and_removed_nodes_are_cost_changes() {
    let dir = tempfile::tempdir().unwrap();
    let estate = estate();
    let rig = Rig::open(dir.path(), &estate, T0);
    rig.scan();
    // A $500 volume appears; a $150 instance goes away; a $0 volume appears
    // (no change in cost, so not even a change).
    set_cost(&estate, &volume(40), 500.0);
    set_cost(&estate, &volume(41), 0.0);
    estate.lock().unwrap().retain(|(c, _)| *c != instance(4));
    rig.scan();
    let a = rig.engine.anomalies();
    assert_eq!(a.nodes_changed, 2, "{a:?}");
    let mut got: Vec<(String, ChangeKind, f64, f64)> = a
        .nodes
        .iter()
        .map(|n| (n.crn.clone(), n.kind, n.previous, n.current))
        .collect();
    got.sort_by(|x, y| x.0.cmp(&y.0));
    assert_eq!(
        got,
        [
            (instance(4), ChangeKind::Removed, 150.0, 0.0),
            (volume(40), ChangeKind::New, 0.0, 500.0),
        ]
    );
}

#[test]
fn a_type_total_that_breaks_its_history_is_a_type_anomaly() {
    let dir = tempfile::tempdir().unwrap();
    let estate = estate();
    let rig = Rig::open(dir.path(), &estate, T0);
    for _ in 0..6 {
        rig.scan();
    }
    assert!(rig.engine.anomalies().types.is_empty());
    set_cost(&estate, &instance(0), 300.0);
    rig.scan();
    let a = rig.engine.anomalies();
    assert_eq!(a.types.len(), 1, "{a:?}");
    let t = &a.types[0];
    assert_eq!((t.ty.as_str(), t.provider.as_str()), ("ec2:instance", "aws"));
    assert_eq!((t.previous, t.current, t.change()), (450.0, 720.0, 270.0));
    // Six changes: five zeros and 270: MAD 0, MeanAD 45.
    assert!((t.z - 270.0 / (1.253314 * 45.0)).abs() < 1e-9, "{t:?}");
    assert_eq!(t.history_changes, 6);
    assert_eq!(a.nodes.len(), 1, "the instance itself: {a:?}");
}

#[test]
fn a_restart_keeps_history_and_anomalies_and_compares_with_the_last_scan() {
    let dir = tempfile::tempdir().unwrap();
    let estate = estate();
    {
        let rig = Rig::open(dir.path(), &estate, T0);
        rig.scan();
        set_cost(&estate, &volume(7), 80.0);
        rig.scan();
        assert_eq!(rig.engine.anomalies().nodes.len(), 1);
    }
    // After a restart: the last anomalies and the history are still there.
    let rig = Rig::open(dir.path(), &estate, T0 + 600_000_000);
    let a = rig.engine.anomalies();
    assert_eq!(a.scan_seq, 2);
    assert_eq!(a.nodes.iter().map(|n| n.crn.clone()).collect::<Vec<_>>(), [volume(7)]);
    assert_eq!(rig.engine.signal().history().len(), 2);

    // The first scan after it compares with the graph as loaded: nothing
    // changed, so nothing is new and nothing is an anomaly.
    rig.scan();
    let a = rig.engine.anomalies();
    assert_eq!(
        (a.scan_seq, a.previous_scan_seq, a.baseline),
        (3, 2, BaselineKind::Restart)
    );
    assert_eq!((a.nodes_compared, a.nodes_changed), (25, 0), "{a:?}");
    assert!(a.nodes.is_empty(), "{a:?}");
    drop(rig);

    // A change made while the daemon was down is found by the first scan after.
    set_cost(&estate, &volume(9), 0.5);
    let rig = Rig::open(dir.path(), &estate, T0 + 1_200_000_000);
    rig.scan();
    let a = rig.engine.anomalies();
    assert_eq!(a.nodes.iter().map(|n| n.crn.clone()).collect::<Vec<_>>(), [volume(9)]);
    assert_eq!(a.nodes[0].change(), -9.5);
    assert_eq!(rig.engine.signal().history().len(), 4);
}
