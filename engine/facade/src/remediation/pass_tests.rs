//! The `engine.sau` pass over scans whose estate changes: items follow
//! their resources through retire, revive and restart, and a node an item
//! remembers that no longer is its resource is never taken for it.

use std::sync::Arc;

use parking_lot::Mutex;

use crate::clock::ManualClock;
use crate::graph::{EdgeBatch, NodeBatch, NodeInput, NodeKeyRef, Phase};
use crate::scan::{ScanContext, ScanSink, Source, SourceError};
use crate::{Crn, Engine, NodeId};
use svc_remediation::RemediationStore;
use svc_remediation::state::Behind;

/// Elastic IPs attached to nothing (waste by `aws-eip-unassociated`), by
/// number; the test changes which exist between scans.
struct Eips(Arc<Mutex<Vec<u32>>>);

fn crn(n: u32) -> String {
    format!("crn:svc:aws:us-east-1:ec2:eip:111:eipalloc-{n}")
}

impl Source for Eips {
    fn name(&self) -> &str {
        "aws"
    }
    fn providers(&self) -> Vec<String> {
        vec!["aws".to_owned()]
    }
    fn scan(&mut self, ctx: &ScanContext<'_>, sink: &mut dyn ScanSink) -> Result<(), SourceError> {
        let i = ctx.interner;
        let mut nodes = NodeBatch::default();
        for n in self.0.lock().iter() {
            let c = Crn::parse(&crn(*n)).map_err(|e| SourceError::Failed(e.to_string()))?;
            let input = NodeInput {
                key: NodeKeyRef::intern(i, &c),
                ty: i.intern(&c.node_type()),
                state: i.intern("available"),
                cost_usd_mo: 3.6,
                creation_ts: 1_600_000_000,
            };
            nodes.push(input, &[], |_| {});
        }
        sink.nodes(nodes);
        sink.edges(EdgeBatch::default());
        Ok(())
    }
}

struct Fixture {
    _dir: tempfile::TempDir,
    clock: Arc<ManualClock>,
    present: Arc<Mutex<Vec<u32>>>,
}

impl Fixture {
    fn new(present: impl IntoIterator<Item = u32>) -> Fixture {
        Fixture {
            _dir: tempfile::tempdir().unwrap(),
            clock: Arc::new(ManualClock::new(1_700_000_000_000_000)),
            present: Arc::new(Mutex::new(present.into_iter().collect())),
        }
    }

    fn open(&self) -> Arc<Engine> {
        let engine = Arc::new(Engine::open(self._dir.path(), "t", self.clock.clone()).unwrap());
        engine.set_sources(vec![Box::new(Eips(self.present.clone()))]);
        engine
    }

    /// The engine on the same directory, its items not read yet.
    fn open_deferred(&self) -> (Engine, crate::engine::ItemsLoad) {
        let replication = crate::engine::Replication::default();
        Engine::open_deferred(self._dir.path(), "t", self.clock.clone(), replication).unwrap()
    }

    fn scan(&self, engine: &Arc<Engine>) -> super::SauReport {
        self.clock.advance(3_600_000_000);
        let report = engine.try_start_scan().unwrap().run().unwrap();
        report.sau.unwrap()
    }
}

/// The CRNs in the pipeline, and for each that its node carries its stage.
fn items(engine: &Engine) -> Vec<String> {
    let items = engine.remediation_items().unwrap();
    let g = engine.graph();
    for i in &items {
        let id = g.find(&Crn::parse(&i.crn).unwrap()).unwrap();
        assert_eq!(g.node(id).unwrap().phase(), i.stage, "{}", i.crn);
        assert_eq!(g.crn(id), i.crn);
    }
    items.into_iter().map(|i| i.crn).collect()
}

#[test]
fn items_follow_their_resources_through_retire_revive_and_restart() {
    let f = Fixture::new(0..6);
    let engine = f.open();
    let first = f.scan(&engine);
    assert_eq!((first.entered, first.analyzed), (6, 6));
    assert_eq!(items(&engine), (0..6).map(crn).collect::<Vec<_>>());
    assert!(
        engine
            .remediation_items()
            .unwrap()
            .iter()
            .all(|i| i.stage == Phase::Pending)
    );

    // Nothing changed: nothing is written.
    let same = f.scan(&engine);
    assert_eq!((same.entered, same.left, same.written), (0, 0, 0));

    // eipalloc-2 is released: its node is retired and its item leaves.
    f.present.lock().retain(|n| *n != 2);
    let retired = f.scan(&engine);
    assert_eq!((retired.entered, retired.left), (0, 1));
    let id2 = engine.graph().find(&Crn::parse(&crn(2)).unwrap()).unwrap();
    assert_eq!(items(&engine), [0, 1, 3, 4, 5].map(crn));

    // It comes back on the same row, and a new address comes with it.
    f.present.lock().extend([2, 6]);
    let revived = f.scan(&engine);
    assert_eq!((revived.entered, revived.left, revived.analyzed), (2, 0, 2));
    assert_eq!(engine.graph().find(&Crn::parse(&crn(2)).unwrap()), Some(id2));
    assert_eq!(items(&engine), (0..7).map(crn).collect::<Vec<_>>());
    let before = engine.remediation_items().unwrap();
    drop(engine);

    // After a restart every item is found again by its CRN, unchanged.
    let engine = f.open();
    assert_eq!(engine.remediation_items().unwrap(), before);
    let restarted = f.scan(&engine);
    assert_eq!(
        (restarted.entered, restarted.left, restarted.written, restarted.analyzed),
        (0, 0, 0, 0)
    );
    assert_eq!(engine.remediation_items().unwrap(), before);
    assert_eq!(items(&engine).len(), 7);
}

/// A remembered node whose shard a compaction renumbered is not taken for
/// the item: the id carries the shard's older generation, and the item is
/// found again by its CRN.
#[test]
fn items_follow_their_resources_through_a_compaction() {
    let f = Fixture::new(0..600);
    let engine = f.open();
    engine.set_compaction_min_rows(1);
    f.scan(&engine);
    // A third go: retired by the next scan, dropped by the one after,
    // which renumbers the rows of nearly every shard.
    f.present.lock().retain(|n| n % 3 != 0);
    let gone = f.scan(&engine);
    assert_eq!((gone.entered, gone.left), (0, 200));
    let before = engine.remediation_items().unwrap();
    let ids: Vec<NodeId> = engine
        .remediation
        .state()
        .items
        .values()
        .filter_map(|e| e.node)
        .collect();
    let rows = engine.graph().node_rows();
    let again = f.scan(&engine);
    assert!(engine.graph().node_rows() < rows, "the scan compacted the graph");
    let graph = engine.graph();
    let moved = ids.iter().filter(|id| graph.node(**id).is_none()).count();
    assert!(moved > 100, "{moved} of 400 remembered nodes moved");
    assert_eq!((again.entered, again.left, again.written), (0, 0, 0));
    assert_eq!(engine.remediation_items().unwrap(), before);
    for e in engine.remediation.state().items.values() {
        let id = e.node.expect("every item matched again");
        assert_eq!(graph.crn(id), e.item.crn);
    }
}

/// An item a pass wrote is shown only once it is durable: reading it
/// between the pass and its scan's commit writes it first, and reading it
/// after the commit waits for the write begun then.
#[test]
fn items_are_shown_once_durable() {
    let f = Fixture::new(0..3);
    let engine = f.open();
    f.scan(&engine);
    assert!(
        !matches!(engine.remediation.state().behind, Some(Behind::Waiting(_))),
        "the scan began the pass's write after its commit"
    );
    let shown = engine.remediation_items().unwrap();
    assert!(!shown.is_empty());
    assert!(engine.remediation.state().behind.is_none());
    let mut stored = engine.store().load_remediation().unwrap().items;
    stored.sort_by(|a, b| a.crn.cmp(&b.crn));
    assert_eq!(stored, shown);

    // A pass on its own (no commit after it), as in the middle of a scan,
    // with an item to write.
    if let Some(e) = engine.remediation.state().items.values_mut().next() {
        e.item.reason = "stale".into();
    }
    {
        let mut sources = engine.sources.lock();
        let none = |_: NodeId| Vec::<String>::new();
        let sau = engine
            .pipeline()
            .sau_pass(&mut sources[..], engine.now_us(), &none)
            .unwrap();
        assert_eq!(sau.written, 1);
    }
    assert!(matches!(engine.remediation.state().behind, Some(Behind::Waiting(_))));
    let shown = engine.remediation_items().unwrap();
    assert!(
        engine.remediation.state().behind.is_none(),
        "the write waiting behind the pass was written"
    );
    // What is shown is what the store holds.
    let mut stored = engine.store().load_remediation().unwrap().items;
    stored.sort_by(|a, b| a.crn.cmp(&b.crn));
    assert_eq!(stored, shown);
    assert!(shown.iter().all(|i| i.reason != "stale"));
}

#[test]
fn the_queue_counts_every_part_and_copies_only_the_longest_waiting() {
    let f = Fixture::new(0..9);
    let engine = f.open();
    f.scan(&engine);
    let hash = |n: u32| engine.remediation_item(&crn(n)).unwrap().plan_hash;
    // Held for review one by one, later and later; two rejected.
    for n in [7, 3, 5] {
        f.clock.advance(1_000_000);
        engine
            .move_item(&crn(n), &hash(n), Phase::SauGate, "ops", "review")
            .unwrap();
    }
    for n in [1, 8] {
        engine.reject(&crn(n), &hash(n), "ops", "keep").unwrap();
    }

    // What the whole list says each part holds, longest at its stage first.
    let all = engine.remediation_items().unwrap();
    let part_of = |i: &super::Item, name: &str| match &i.notes().rejected {
        Some(_) => name == "rejected",
        None => i.stage.name() == name,
    };
    for limit in [0, 2, 1000] {
        let queue = engine.remediation_queue(limit).unwrap();
        let names: Vec<&str> = queue.iter().map(|p| p.name).collect();
        assert_eq!(
            names,
            [
                "flagged", "analyzed", "codegen", "sau_gate", "pending", "applied", "rejected"
            ]
        );
        for part in &queue {
            let mut of: Vec<&super::Item> = all.iter().filter(|i| part_of(i, part.name)).collect();
            of.sort_by(|a, b| a.stage_us.cmp(&b.stage_us).then(a.crn.cmp(&b.crn)));
            assert_eq!(part.count, of.len() as u64, "{}", part.name);
            let savings: f64 = of.iter().map(|i| i.savings_usd_mo).sum();
            assert!((part.savings_usd_mo - savings).abs() < 1e-9, "{}", part.name);
            let oldest: Vec<&super::Item> = part.oldest.iter().collect();
            assert_eq!(oldest, of.into_iter().take(limit).collect::<Vec<_>>(), "{}", part.name);
        }
        let count = |name: &str| queue.iter().find(|p| p.name == name).map(|p| p.count);
        assert_eq!(
            [count("pending"), count("sau_gate"), count("rejected")],
            [Some(4), Some(3), Some(2)]
        );
    }
    let queue = engine.remediation_queue(2).unwrap();
    let gate = queue.iter().find(|p| p.name == "sau_gate").unwrap();
    let held: Vec<&str> = gate.oldest.iter().map(|i| i.crn.as_str()).collect();
    assert_eq!(held, [crn(7), crn(3)], "held first, listed first");
}

/// An engine opened without its items serves what needs no pipeline; a
/// read of the pipeline meanwhile waits for the items, and gets them all.
#[test]
fn a_pipeline_read_before_its_items_are_loaded_waits_for_them() {
    let f = Fixture::new(0..5);
    let engine = f.open();
    f.scan(&engine);
    let before = engine.remediation_items().unwrap();
    assert_eq!(before.len(), 5);
    drop(engine);

    let (engine, load) = f.open_deferred();
    let engine = Arc::new(engine);
    assert!(!engine.remediation.is_loaded());
    assert_eq!(engine.graph().node_rows(), 5, "the graph is served meanwhile");
    let started = Arc::new(std::sync::Barrier::new(2));
    let reader = std::thread::spawn({
        let (engine, started) = (engine.clone(), started.clone());
        move || {
            started.wait();
            engine.remediation_items().unwrap()
        }
    });
    started.wait();
    load.load(&engine).unwrap();
    assert!(engine.remediation.is_loaded());
    assert_eq!(reader.join().unwrap(), before, "the read waited for every item");
}

/// Items that cannot be read fail the load with the store's name, and the
/// pipeline then refuses to be used rather than act as if it were empty.
#[test]
fn items_that_cannot_be_read_fail_the_load_and_the_pipeline_refuses_use() {
    let f = Fixture::new(0..3);
    let engine = f.open();
    f.scan(&engine);
    drop(engine);
    let path = f._dir.path().join(crate::engine::GRAPH_FILE);
    {
        let db = redb::Database::open(&path).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let def = redb::TableDefinition::<&str, &[u8]>::new("remediation_items");
            let mut t = txn.open_table(def).unwrap();
            t.insert(crn(1).as_str(), &[1u8, 0][..]).unwrap();
        }
        txn.commit().unwrap();
    }

    let (engine, load) = f.open_deferred();
    let e = load.load(&engine).unwrap_err().to_string();
    assert!(e.contains("remediation items") && e.contains("graph.redb"), "{e}");
    let refused = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| engine.remediation_items()));
    let why = refused.err().unwrap();
    let why = why.downcast_ref::<String>().unwrap();
    assert!(why.contains("could not be read"), "{why}");
    // Dropping the engine waits for nothing.
    drop(engine);
}

/// The items proved in a scan are the first by CRN of those waiting, as a
/// sort of them all would give, passing over CRNs that do not parse.
#[test]
fn the_items_proved_are_the_first_by_crn() {
    use svc_remediation::Item;
    use svc_remediation::state::Entry;
    let crns: Vec<String> = (0..2000u32)
        .map(|k| match k % 97 {
            // CRNs that do not parse: sorted after every CRN that does,
            0 => format!("not a crn {k}"),
            // and among them.
            1 | 2 => format!("{} broken", crn((k * 7919) % 5000)),
            _ => crn((k * 7919) % 5000),
        })
        .collect();
    let mut entries: Vec<Entry> = crns.iter().map(|c| Entry::new(Item::new(c.clone(), 0), None)).collect();
    let mut want: Vec<&String> = crns.iter().filter(|c| Crn::parse(c).is_ok()).collect();
    want.sort();
    let mut sorted: Vec<&String> = crns.iter().collect();
    sorted.sort();
    let broken_early = sorted.iter().take(150).filter(|c| Crn::parse(c).is_err()).count();
    assert!(broken_early > 2, "{broken_early}");
    // One piece, then pieces of 64 and 500 rows parted on every core.
    for piece in [usize::MAX, 64, 500] {
        for n in [0, 1, 40, 150, 1979, 5000] {
            let waiting = entries.iter_mut().map(|e| (e, NodeId::new(0, 0, 0), None)).collect();
            let got: Vec<String> = super::first_by_crn_in(waiting, n, piece)
                .into_iter()
                .map(|(e, _, c)| {
                    assert_eq!(c.to_string(), e.item.crn);
                    e.item.crn.clone()
                })
                .collect();
            let expected: Vec<String> = want.iter().take(n).map(|c| (*c).clone()).collect();
            assert_eq!(got, expected, "n {n}, pieces of {piece}");
        }
    }
}
