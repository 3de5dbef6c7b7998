//! State records from an engine to a standby: engine A ships every write
//! of its `graph.redb` (scans, remediation, sagas, quarantine, the ignore
//! list, policies); a fresh directory B applies them; the engine opened
//! on B then holds A's graph, remediation and policies. A saga whose
//! cluster lock is lost stops before it acts again.

#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

use std::collections::BTreeMap;
use std::sync::Arc;

use parking_lot::Mutex;
use svc_engine::clock::ManualClock;
use svc_engine::engine::write_snapshot_of;
use svc_engine::graph::{EdgeBatch, NodeBatch, NodeInput, NodeKeyRef, Phase};
use svc_engine::policy::{Action, Mode, RuleSpec};
use svc_engine::remediation::{RemediationError, RemediationStore, SharedGuard, SharedLocks};
use svc_engine::scan::{
    QuarantineOutcome, RemediateOutcome, RemediateRequest, ScanContext, ScanSink, Source, SourceError,
};
use svc_engine::store::GraphStore;
use svc_engine::store::replica::{Shipper, contents};
use svc_engine::{Crn, Engine, Relation};

/// Every `(seq, record)` the leader shipped.
type Shipped = Arc<Mutex<Vec<(u64, Vec<u8>)>>>;

/// Elastic IPs attached to nothing (waste), by number, each used by an
/// instance; the source remediates and quarantines whatever it is asked,
/// and keeps the actions it took (not the dry runs).
struct Estate(Arc<Mutex<Vec<u32>>>, Acted);

type Acted = Arc<Mutex<Vec<String>>>;

fn eip(n: u32) -> String {
    format!("crn:svc:aws:us-east-1:ec2:eip:111:eipalloc-{n}")
}

fn instance(n: u32) -> String {
    format!("crn:svc:aws:us-east-1:ec2:instance:111:i-{n}")
}

impl Source for Estate {
    fn name(&self) -> &str {
        "aws"
    }
    fn providers(&self) -> Vec<String> {
        vec!["aws".to_owned()]
    }
    fn scan(&mut self, ctx: &ScanContext<'_>, sink: &mut dyn ScanSink) -> Result<(), SourceError> {
        let i = ctx.interner;
        let mut nodes = NodeBatch::default();
        let mut edges = EdgeBatch::default();
        for n in self.0.lock().iter() {
            let (e, m) = (Crn::parse(&eip(*n)).unwrap(), Crn::parse(&instance(*n)).unwrap());
            for (c, state, cost) in [(&e, "available", 3.6), (&m, "running", 70.0)] {
                let input = NodeInput {
                    key: NodeKeyRef::intern(i, c),
                    ty: i.intern(&c.node_type()),
                    state: i.intern(state),
                    cost_usd_mo: cost,
                    creation_ts: 1_600_000_000,
                };
                nodes.push(input, &[], |_| {});
            }
            edges.push(
                NodeKeyRef::intern(i, &m),
                NodeKeyRef::intern(i, &e),
                Relation::Uses,
                |_| {},
            );
        }
        sink.nodes(nodes);
        sink.edges(edges);
        Ok(())
    }
    fn remediate(&mut self, request: &RemediateRequest<'_>) -> Option<Result<RemediateOutcome, SourceError>> {
        if !request.dry_run {
            self.1.lock().push(format!("{} {}", request.action, request.crn));
        }
        Some(Ok(RemediateOutcome {
            success: true,
            status: "done".to_owned(),
            error: String::new(),
            snapshot: BTreeMap::from([("released".to_owned(), request.crn.to_owned())]),
        }))
    }
    fn apply_quarantine(
        &mut self,
        _crn: &str,
        _action: &str,
        _reason: &str,
    ) -> Option<Result<QuarantineOutcome, SourceError>> {
        Some(Ok(QuarantineOutcome {
            success: true,
            message: "isolated".to_owned(),
        }))
    }
}

fn rule(id: &str, condition: &str) -> RuleSpec {
    RuleSpec {
        id: id.into(),
        condition: condition.into(),
        action: Action::Warn,
        message: format!("{id} matched"),
        mode: Mode::Enforcing,
    }
}

/// What an engine holds that a standby must hold too.
#[derive(Debug, PartialEq)]
struct Held {
    nodes: usize,
    edges: usize,
    crns: Vec<String>,
    items: Vec<svc_engine::remediation::Item>,
    isolations: Vec<svc_engine::remediation::Isolation>,
    sagas: Vec<svc_engine::remediation::Saga>,
    rules: String,
    stored_rules: Vec<svc_engine::store::StoredRule>,
}

fn held(e: &Engine) -> Held {
    let g = e.graph();
    let now = e.now_us();
    let mut crns: Vec<String> = g
        .nodes()
        .filter(|n| g.is_node_visible(n.id(), now))
        .map(|n| n.crn())
        .collect();
    crns.sort();
    let mut sagas = e.store().load_remediation().unwrap().sagas;
    sagas.sort_by(|a, b| a.id.cmp(&b.id));
    Held {
        nodes: crns.len(),
        edges: g.edges().filter(|x| g.is_edge_visible(x.id(), now)).count(),
        crns,
        items: e.remediation_items().unwrap(),
        isolations: e.isolations(),
        sagas,
        rules: format!("{:?}", e.policies().rules()),
        stored_rules: e.store().load_policies().unwrap(),
    }
}

#[test]
fn a_standby_applying_the_records_opens_as_the_leader() {
    let (a_dir, b_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let clock = Arc::new(ManualClock::new(1_700_000_000_000_000));
    let present = Arc::new(Mutex::new((0..6).collect::<Vec<u32>>()));
    let a = Arc::new(Engine::open(a_dir.path(), "a", clock.clone()).unwrap());
    let shipped: Shipped = Arc::default();
    let into = Arc::clone(&shipped);
    let shipper: Shipper = Arc::new(move |seq, record: &[u8]| {
        into.lock().push((seq, record.to_vec()));
        Ok(())
    });
    a.set_state_shipper(Some(shipper));
    a.set_sources(vec![Box::new(Estate(Arc::clone(&present), Acted::default()))]);
    let scan = || {
        clock.advance(3_600_000_000);
        a.try_start_scan().unwrap().run().unwrap()
    };

    scan();
    a.add_policies(
        &[rule("costly", "cost >= 50.0"), rule("eips", "type == 'ec2:eip'")],
        "test",
    )
    .unwrap();
    present.lock().retain(|n| *n != 2);
    present.lock().push(7);
    scan();
    a.remove_policy("eips", "test").unwrap();
    let pending: Vec<_> = a
        .remediation_items()
        .unwrap()
        .into_iter()
        .filter(|i| i.stage == Phase::Pending)
        .collect();
    assert!(pending.len() >= 3, "{pending:?}");
    let outcome = a.approve(&pending[0].crn, &pending[0].plan_hash, "test").unwrap();
    assert!(outcome.applied, "{outcome:?}");
    a.reject(&pending[1].crn, &pending[1].plan_hash, "test", "not now")
        .unwrap();
    a.quarantine(&instance(3), "ISOLATE", "suspicious", "test").unwrap();
    a.isolate(&pending[2].crn, "keep", 0, "test").unwrap();
    scan();
    a.isolate(&eip(4), "keep", 0, "test").unwrap();
    a.remove_isolation(&eip(4), "test").unwrap();

    let records = shipped.lock().clone();
    let seqs: Vec<u64> = records.iter().map(|(s, _)| *s).collect();
    assert_eq!(
        seqs,
        (1..=records.len() as u64).collect::<Vec<_>>(),
        "every write shipped, gap-free"
    );
    assert_eq!(a.state_seq().unwrap(), records.len() as u64);

    let b_store = GraphStore::open(&b_dir.path().join("graph.redb")).unwrap();
    for (seq, record) in &records {
        assert!(b_store.apply_record(*seq, record).unwrap(), "record {seq}");
    }
    assert_eq!(
        contents(&b_store.database().unwrap()).unwrap(),
        contents(&a.store().database().unwrap()).unwrap(),
        "every table, row for row"
    );
    // The standby keeps a snapshot of what it applied: written once, then
    // found matching; the engine opened after maps it.
    assert!(write_snapshot_of(&b_store, b_dir.path()).unwrap());
    assert!(
        !write_snapshot_of(&b_store, b_dir.path()).unwrap(),
        "the snapshot matches"
    );
    drop(b_store);

    let b = Engine::open(b_dir.path(), "b", clock.clone()).unwrap();
    assert_eq!(b.loaded_from(), "snapshot");
    let (ours, theirs) = (held(&a), held(&b));
    assert!(ours.nodes > 0 && !ours.sagas.is_empty() && !ours.isolations.is_empty());
    assert_eq!(ours.stored_rules.len(), 1);
    assert_eq!(theirs, ours);
    assert_eq!(b.state_seq().unwrap(), a.state_seq().unwrap());
}

/// A cluster's lock that is granted, then found lost at every check.
struct LostLocks;
struct LostGuard;

impl SharedLocks for LostLocks {
    fn lock(&self, _: &str, _: std::time::Duration) -> Result<Box<dyn SharedGuard>, String> {
        Ok(Box::new(LostGuard))
    }
}

impl SharedGuard for LostGuard {
    fn check(&self) -> Result<(), String> {
        Err("its key is gone".to_owned())
    }
}

#[test]
fn a_saga_whose_cluster_lock_is_lost_acts_no_more_and_is_compensated_as_interrupted() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(1_700_000_000_000_000));
    let present = Arc::new(Mutex::new((0..4).collect::<Vec<u32>>()));
    let acted = Acted::default();
    let a = Arc::new(Engine::open(dir.path(), "a", clock.clone()).unwrap());
    a.set_sources(vec![Box::new(Estate(Arc::clone(&present), acted.clone()))]);
    let scan = || {
        clock.advance(3_600_000_000);
        a.try_start_scan().unwrap().run().unwrap()
    };
    scan();
    a.add_policies(&[rule("eips", "type == 'ec2:eip'")], "test").unwrap();
    scan();
    let item = a
        .remediation_items()
        .unwrap()
        .into_iter()
        .find(|i| i.stage == Phase::Pending)
        .expect("a pending item");

    a.set_shared_locks(Some(Arc::new(LostLocks)));
    let e = a.approve(&item.crn, &item.plan_hash, "test").unwrap_err();
    assert!(
        matches!(&e, RemediationError::LockLost(m) if m.contains("was lost")),
        "{e}"
    );
    assert!(acted.lock().is_empty(), "nothing acted: {:?}", acted.lock());
    let sagas = a.store().load_remediation().unwrap().sagas;
    assert_eq!(sagas.len(), 1);
    assert_eq!(sagas[0].status, "running", "stored as it stopped");

    // Still leading, the next scan compensates it as interrupted, once.
    a.set_shared_locks(None);
    let report = scan();
    assert_eq!(report.sau.as_ref().unwrap().recovered_sagas, 1);
    assert!(acted.lock().is_empty(), "no step had acted: nothing to undo");
    let sagas = a.store().load_remediation().unwrap().sagas;
    assert_eq!(sagas[0].status, "compensated");
    let after = a.remediation_item(&item.crn).unwrap();
    assert_eq!(after.stage, Phase::Pending);
    assert!(after.notes().failure.is_some(), "{after:?}");
    assert_eq!(scan().sau.unwrap().recovered_sagas, 0);
}
