//! The scan pipeline end to end inside the engine: sources, ingest,
//! logical deletion, commit, SCAN_COMPLETED, restart.

#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use svc_engine::clock::ManualClock;
use svc_engine::graph::{EdgeBatch, NodeBatch, NodeInput, NodeKeyRef};
use svc_engine::scan::{ScanContext, ScanLimits, ScanSink, Source, SourceError, Unlisted};
use svc_engine::{Crn, Engine, Relation};

/// A source whose estate is a list of `(crn, state)` per scan, edges between
/// consecutive nodes, and a switch that makes it fail.
struct ListSource {
    provider: &'static str,
    scans: Vec<Vec<(String, &'static str)>>,
    fail_on: Option<u64>,
    calls: Arc<AtomicU64>,
}

impl Source for ListSource {
    fn name(&self) -> &str {
        self.provider
    }
    fn providers(&self) -> Vec<String> {
        vec![self.provider.to_owned()]
    }
    fn scan(&mut self, ctx: &ScanContext<'_>, sink: &mut dyn ScanSink) -> Result<(), SourceError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        if self.fail_on == Some(ctx.scan_seq) {
            return Err(SourceError::Failed("credentials expired".into()));
        }
        let idx = ((ctx.scan_seq - 1) as usize).min(self.scans.len() - 1);
        let list = &self.scans[idx];
        let i = ctx.interner;
        let mut nodes = NodeBatch::default();
        let mut edges = EdgeBatch::default();
        let crns: Vec<Crn> = list.iter().map(|(c, _)| Crn::parse(c).unwrap()).collect();
        for (c, (_, state)) in crns.iter().zip(list) {
            let key = NodeKeyRef::intern(i, c);
            let input = NodeInput {
                key,
                ty: i.intern(&c.node_type()),
                state: i.intern(state),
                cost_usd_mo: 10.0,
                creation_ts: 1_700_000_000,
            };
            nodes.push(input, &[], |_| {});
        }
        for w in crns.windows(2) {
            edges.push(
                NodeKeyRef::intern(i, &w[0]),
                NodeKeyRef::intern(i, &w[1]),
                Relation::Uses,
                |_| {},
            );
        }
        sink.nodes(nodes);
        sink.edges(edges);
        Ok(())
    }
}

fn crn(provider: &str, n: u32) -> String {
    format!("crn:svc:{provider}:r1:svc1:thing:acct:id-{n}")
}

fn source(provider: &'static str, fail_on: Option<u64>) -> ListSource {
    ListSource {
        provider,
        scans: vec![
            (0..5).map(|n| (crn(provider, n), "running")).collect(),
            (1..6)
                .map(|n| (crn(provider, n), if n == 2 { "stopped" } else { "running" }))
                .collect(),
        ],
        fail_on,
        calls: Arc::new(AtomicU64::new(0)),
    }
}

#[test]
fn scans_version_retire_and_survive_restart() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(1_000_000));
    let engine = Arc::new(Engine::open(dir.path(), "s1", clock.clone()).unwrap());
    engine.set_sources(vec![Box::new(source("aws", None)), Box::new(source("gcp", Some(2)))]);

    let r1 = engine.try_start_scan().unwrap().run().unwrap();
    assert_eq!((r1.scan_seq, r1.nodes, r1.edges), (1, 10, 8));
    assert_eq!(r1.nodes_ingest.inserted, 10);
    assert!(r1.sources.iter().all(|s| s.ok));

    clock.advance(1_000_000);
    let busy = engine.try_start_scan().unwrap();
    assert!(engine.try_start_scan().is_none(), "one scan at a time");
    let r2 = busy.run().unwrap();
    // aws: id-0 gone, id-5 new, id-2 changed. gcp failed: nothing of it is retired.
    assert_eq!(r2.nodes_ingest.inserted, 1);
    assert_eq!(r2.nodes_ingest.changed, 1);
    assert_eq!(r2.retired_nodes, 1);
    assert_eq!(r2.nodes, 10);
    let gcp = r2.sources.iter().find(|s| s.name == "gcp").unwrap();
    assert!(!gcp.ok);
    assert_eq!(gcp.error.as_deref(), Some("credentials expired"));

    let q = svc_engine::store::ledger::HistoryQuery {
        limit: 100,
        ..Default::default()
    };
    let events = engine.ledger().query(&q).unwrap();
    let scans: Vec<_> = events
        .events
        .iter()
        .filter(|e| e.event_type == "SCAN_COMPLETED")
        .collect();
    assert_eq!(scans.len(), 2);
    assert_eq!(scans[0].payload["node_count"], 10);
    assert_eq!(scans[0].payload["nodes_deleted"], 1);
    assert_eq!(scans[0].payload["sources"][1]["ok"], false);

    let t1 = 1_000_000;
    let diff = engine.store().diff(t1, 2_000_000).unwrap();
    assert_eq!((diff.added.len(), diff.removed.len()), (1, 1));
    // The node the provider changed, and nodes whose verification moved:
    // GCP's failed scan leaves its nodes' reachability unknown.
    let discovered: Vec<&str> = diff
        .changed
        .iter()
        .filter(|(a, b)| {
            a.row.state != b.row.state || a.row.cost_usd_mo != b.row.cost_usd_mo || a.row.props != b.row.props
        })
        .map(|(_, b)| b.crn.as_str())
        .collect();
    assert_eq!(discovered, [crn("aws", 2)]);
    let gcp: Vec<_> = diff.changed.iter().filter(|(_, b)| b.crn.contains("gcp")).collect();
    assert!(!gcp.is_empty());
    assert!(
        gcp.iter()
            .all(|(_, b)| b.row.reachability == svc_engine::graph::Reachability::Unknown)
    );
    let stats = engine.graph().stats(engine.now_us());
    drop(engine);

    // Restart on the same directory.
    let engine = Arc::new(Engine::open(dir.path(), "s2", clock.clone()).unwrap());
    // A start drops the retired row from memory (graph.redb keeps it).
    assert_eq!(stats.logically_deleted, 1);
    let compacted = svc_engine::graph::GraphStats {
        total_nodes: stats.total_nodes - stats.logically_deleted,
        logically_deleted: 0,
        ..stats.clone()
    };
    assert_eq!(engine.graph().stats(engine.now_us()), compacted);
    let stats = compacted;
    assert_eq!(engine.scans_completed(), 2);
    assert!(engine.ledger().verify().unwrap().ok);
    // Proof paths are recomputed for the loaded graph on first use.
    let a = engine.assessment();
    assert!(a.enabled);
    assert_eq!(a.scan_seq, 2);
    assert_eq!(a.reachable + a.unreachable + a.unknown, stats.active_nodes);
    engine.set_sources(vec![Box::new(source("aws", None))]);
    clock.advance(1_000_000);
    let r3 = engine.try_start_scan().unwrap().run().unwrap();
    assert_eq!(r3.scan_seq, 3);
    assert_eq!(r3.nodes_ingest.unchanged, 5, "nothing changed for aws since scan 2");
    assert_eq!(r3.retired_nodes, 0);
    let graph = engine.graph();
    let blast =
        svc_engine::blast::blast_radius(&graph, graph.find(&Crn::parse(&crn("aws", 5)).unwrap()).unwrap(), 10).unwrap();
    assert_eq!(blast.count, 4, "id-1..id-4 use id-5 transitively");
}

/// A source named apart from the provider it reports, as a plugin
/// installed under its own name (`svc-plugin-aws-dev`) reports `aws`.
struct Named(&'static str, ListSource);

impl Source for Named {
    fn name(&self) -> &str {
        self.0
    }
    fn providers(&self) -> Vec<String> {
        vec![self.0.to_owned()]
    }
    fn scan(&mut self, ctx: &ScanContext<'_>, sink: &mut dyn ScanSink) -> Result<(), SourceError> {
        self.1.scan(ctx, sink)
    }
}

/// Two sources reporting the same provider's resources: `aws-prod`, whose
/// second scan no longer has id-0, and `aws-dev`, failing on `fail_on`.
fn two_accounts(fail_on: Option<u64>) -> Vec<Box<dyn Source>> {
    let list = |ids: std::ops::Range<u32>| ids.map(|n| (crn("aws", n), "running")).collect::<Vec<_>>();
    let prod = ListSource {
        provider: "aws",
        scans: vec![list(0..5), list(1..5)],
        fail_on: None,
        calls: Arc::new(AtomicU64::new(0)),
    };
    let dev = ListSource {
        provider: "aws",
        scans: vec![list(100..105)],
        fail_on,
        calls: Arc::new(AtomicU64::new(0)),
    };
    vec![Box::new(Named("aws-prod", prod)), Box::new(Named("aws-dev", dev))]
}

/// A source whose scan `on` succeeds without listing `parts`.
struct Partly {
    inner: ListSource,
    on: u64,
    parts: Vec<Unlisted>,
    last: u64,
}

impl Source for Partly {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn providers(&self) -> Vec<String> {
        self.inner.providers()
    }
    fn scan(&mut self, ctx: &ScanContext<'_>, sink: &mut dyn ScanSink) -> Result<(), SourceError> {
        self.last = ctx.scan_seq;
        self.inner.scan(ctx, sink)
    }
    fn unlisted(&self) -> Vec<Unlisted> {
        if self.last == self.on {
            self.parts.clone()
        } else {
            Vec::new()
        }
    }
}

/// A part of its estate a source could not list keeps its resources and
/// the edges that touch them; elsewhere, what the scan did not report is
/// retired; SCAN_COMPLETED names the part; the next whole scan retires
/// what is gone there too.
#[test]
fn a_part_a_source_could_not_list_keeps_its_resources_and_the_rest_counts() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(1_000_000));
    let engine = Arc::new(Engine::open(dir.path(), "s1", clock.clone()).unwrap());
    let at = |region: &str, service: &str, id: &str| format!("crn:svc:aws:{region}:{service}:thing:acct:{id}");
    let (a1, a2, a3) = (at("r1", "svc1", "a1"), at("r1", "svc1", "a2"), at("r1", "svc1", "a3"));
    let (b1, b2, c1) = (at("r2", "svc1", "b1"), at("r2", "svc1", "b2"), at("r1", "svc2", "c1"));
    let all = [&a1, &a2, &a3, &b1, &b2, &c1];
    let list = |crns: &[&String]| crns.iter().map(|c| ((*c).clone(), "running")).collect::<Vec<_>>();
    let part = |region: &str, service: Option<&str>| Unlisted {
        region: Some(region.into()),
        service: service.map(str::to_owned),
        error: format!("{region} refused"),
        ..Unlisted::default()
    };
    let source = Partly {
        inner: ListSource {
            provider: "aws",
            // Scan 2 lists only a1 and a2 (a3 is gone); scan 3 all but b2.
            scans: vec![list(&all), list(&[&a1, &a2]), list(&[&a1, &a2, &b1, &c1])],
            fail_on: None,
            calls: Arc::new(AtomicU64::new(0)),
        },
        on: 2,
        parts: vec![part("r2", None), part("r1", Some("svc2"))],
        last: 0,
    };
    engine.set_sources(vec![Box::new(source)]);
    let r1 = engine.try_start_scan().unwrap().run().unwrap();
    assert_eq!((r1.nodes, r1.edges), (6, 5));

    clock.advance(1_000_000);
    let r2 = engine.try_start_scan().unwrap().run().unwrap();
    let aws = &r2.sources[0];
    assert!(aws.ok && aws.error.is_none(), "{aws:?}");
    assert_eq!(aws.unlisted.len(), 2);
    // a3 only; of the edges a1-a2 a2-a3 a3-b1 b1-b2 b2-c1, those of a3.
    assert_eq!((r2.retired_nodes, r2.retired_edges), (1, 2));
    let visible = |crn: &String| {
        let graph = engine.graph();
        let id = graph.find(&Crn::parse(crn).unwrap()).unwrap();
        graph.node(id).unwrap().is_visible(engine.now_us())
    };
    assert!(!visible(&a3));
    assert!([&a1, &a2, &b1, &b2, &c1].into_iter().all(visible));
    assert_eq!(r2.edges, 3);
    let q = svc_engine::store::ledger::HistoryQuery {
        limit: 10,
        ..Default::default()
    };
    let events = engine.ledger().query(&q).unwrap();
    let completed = events.events.iter().find(|e| e.event_type == "SCAN_COMPLETED").unwrap();
    let unlisted = &completed.payload["sources"][0]["unlisted"];
    assert_eq!(completed.payload["scan_seq"], 2);
    assert_eq!(unlisted[0]["region"], "r2", "{unlisted}");
    assert_eq!(unlisted[0]["service"], serde_json::Value::Null, "{unlisted}");
    assert_eq!(unlisted[1]["service"], "svc2", "{unlisted}");
    assert_eq!(unlisted[1]["error"], "r1 refused", "{unlisted}");

    // Listed whole again: b2, gone, is retired with its edges.
    clock.advance(1_000_000);
    let r3 = engine.try_start_scan().unwrap().run().unwrap();
    assert!(r3.sources[0].unlisted.is_empty());
    assert_eq!(r3.retired_nodes, 1);
    assert!(!visible(&b2));
    assert!([&a1, &a2, &b1, &c1].into_iter().all(visible));
}

/// A source that fails, or is left out of a scan, keeps the resources of
/// every provider it answered for, also where another source reports that
/// provider, and also after a restart, before it has succeeded again.
#[test]
fn a_failed_or_skipped_source_keeps_a_provider_another_source_also_reports() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(1_000_000));
    let engine = Arc::new(Engine::open(dir.path(), "s1", clock.clone()).unwrap());
    engine.set_sources(two_accounts(Some(2)));
    let r1 = engine.try_start_scan().unwrap().run().unwrap();
    assert_eq!((r1.nodes, r1.retired_nodes), (10, 0));

    // aws-dev fails: aws-prod's success does not retire aws-dev's five
    // resources (nor, for this scan, aws-prod's id-0).
    clock.advance(1_000_000);
    let r2 = engine.try_start_scan().unwrap().run().unwrap();
    assert!(!r2.sources.iter().find(|s| s.name == "aws-dev").unwrap().ok);
    assert_eq!(r2.retired_nodes, 0, "nothing of a provider a failed source answers for");
    assert_eq!(engine.graph().stats(engine.now_us()).active_nodes, 10);
    drop(engine);

    // After a restart it fails again before succeeding once: the same.
    let engine = Arc::new(Engine::open(dir.path(), "s2", clock.clone()).unwrap());
    engine.set_sources(two_accounts(Some(3)));
    clock.advance(1_000_000);
    let r3 = engine.try_start_scan().unwrap().run().unwrap();
    assert!(!r3.sources.iter().find(|s| s.name == "aws-dev").unwrap().ok);
    assert_eq!(r3.retired_nodes, 0, "what it answered for was kept in the store");

    // A scan of aws-prod alone: aws-dev did not answer, so the same.
    clock.advance(1_000_000);
    let only = engine
        .try_start_scan()
        .unwrap()
        .run_only(Some(vec!["aws-prod".into()]))
        .unwrap();
    assert_eq!(only.sources.len(), 1);
    assert_eq!(only.retired_nodes, 0, "a source left out answers for nothing");

    // Both succeed: id-0, gone from aws-prod, is retired.
    clock.advance(1_000_000);
    let r4 = engine.try_start_scan().unwrap().run().unwrap();
    assert!(r4.sources.iter().all(|s| s.ok));
    assert_eq!(r4.retired_nodes, 1);
    assert!(engine.graph().find(&Crn::parse(&crn("aws", 100)).unwrap()).is_some());
}

/// A source that stages its estate, then panics.
struct Panics(ListSource);

impl Source for Panics {
    fn name(&self) -> &str {
        self.0.name()
    }
    fn providers(&self) -> Vec<String> {
        self.0.providers()
    }
    fn scan(&mut self, ctx: &ScanContext<'_>, sink: &mut dyn ScanSink) -> Result<(), SourceError> {
        self.0.scan(ctx, sink)?;
        panic!("a bug in the source");
    }
}

#[test]
fn a_source_that_panics_fails_alone_and_the_sources_after_it_still_land() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(1_000_000));
    let engine = Arc::new(Engine::open(dir.path(), "s1", clock).unwrap());
    engine.set_sources(vec![
        Box::new(Panics(source("azure", None))),
        Box::new(source("aws", None)),
    ]);
    let r = engine.try_start_scan().unwrap().run().unwrap();
    let azure = r.sources.iter().find(|s| s.name == "azure").unwrap();
    assert!(!azure.ok);
    assert_eq!(azure.error.as_deref(), Some("the source's scan panicked"));
    assert!(r.sources.iter().find(|s| s.name == "aws").unwrap().ok);
    assert_eq!(
        r.nodes_ingest.inserted, 5,
        "aws's nodes land, the staged azure nodes do not"
    );
    let g = engine.graph();
    assert!(g.find(&Crn::parse(&crn("aws", 4)).unwrap()).is_some());
    assert!(g.find(&Crn::parse(&crn("azure", 0)).unwrap()).is_none());
}

/// A source that sends more than a scan takes fails that scan alone and
/// keeps its resources; the limits apply from the next scan when changed.
#[test]
fn a_source_past_a_scan_limit_fails_alone_and_keeps_its_resources() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(1_000_000));
    let engine = Arc::new(Engine::open(dir.path(), "s1", clock.clone()).unwrap());
    // gcp reports 3 resources, then 8 (a paging loop gone wrong, say).
    let mut gcp = source("gcp", None);
    gcp.scans = vec![
        (0..3).map(|n| (crn("gcp", n), "running")).collect(),
        (0..8).map(|n| (crn("gcp", n), "running")).collect(),
    ];
    engine.set_sources(vec![Box::new(source("aws", None)), Box::new(gcp)]);
    let limits = ScanLimits {
        max_nodes: 6,
        ..ScanLimits::default()
    };
    engine.set_scan_limits(limits);
    let r1 = engine.try_start_scan().unwrap().run().unwrap();
    assert!(r1.sources.iter().all(|s| s.ok), "5 and 3 nodes are within 6");
    assert_eq!(r1.nodes, 8);

    clock.advance(1_000_000);
    let r2 = engine.try_start_scan().unwrap().run().unwrap();
    let gcp = r2.sources.iter().find(|s| s.name == "gcp").unwrap();
    assert!(!gcp.ok);
    assert_eq!(
        gcp.error.as_deref(),
        Some("sent more than 6 nodes in one scan (daemon.scan_max_nodes); the scan was stopped there")
    );
    assert_eq!(gcp.nodes, 0, "nothing past the limit is staged");
    assert!(r2.sources.iter().find(|s| s.name == "aws").unwrap().ok);
    assert_eq!(r2.retired_nodes, 1, "aws's id-0 went; gcp's three stay");
    let g = engine.graph();
    for n in 0..3 {
        assert!(g.find(&Crn::parse(&crn("gcp", n)).unwrap()).is_some());
    }
    assert!(g.find(&Crn::parse(&crn("gcp", 7)).unwrap()).is_none());
    drop(g);

    // Edges have their own limit: aws's four are one too many.
    engine.set_scan_limits(ScanLimits {
        max_nodes: 100,
        max_edges: 3,
        ..limits
    });
    clock.advance(1_000_000);
    let r3 = engine.try_start_scan().unwrap().run().unwrap();
    let aws = r3.sources.iter().find(|s| s.name == "aws").unwrap();
    assert_eq!(
        (aws.ok, aws.error.as_deref()),
        (
            false,
            Some("sent more than 3 edges in one scan (daemon.scan_max_edges); the scan was stopped there")
        )
    );
    let gcp = r3.sources.iter().find(|s| s.name == "gcp").unwrap();
    assert!(!gcp.ok, "gcp's seven edges are past it too");

    // Raised again: both land, gcp's eight resources with them.
    engine.set_scan_limits(ScanLimits::default());
    clock.advance(1_000_000);
    let r4 = engine.try_start_scan().unwrap().run().unwrap();
    assert!(r4.sources.iter().all(|s| s.ok));
    assert!(engine.graph().find(&Crn::parse(&crn("gcp", 7)).unwrap()).is_some());
}

/// A `source_providers` table that cannot be read or written (here: one
/// of another type) neither stops the engine nor its scans: what each
/// source answered for is learnt again in memory, so a failed source
/// still holds its providers back.
#[test]
fn an_unusable_source_providers_table_is_learnt_again_in_memory() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(1_000_000));
    drop(Engine::open(dir.path(), "s1", clock.clone()).unwrap());
    {
        let db = redb::Database::open(dir.path().join("graph.redb")).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let wrong: redb::TableDefinition<u64, u64> = redb::TableDefinition::new("source_providers");
            txn.open_table(wrong).unwrap().insert(1, 1).unwrap();
        }
        txn.commit().unwrap();
    }
    let engine = Arc::new(Engine::open(dir.path(), "s2", clock.clone()).unwrap());
    engine.set_sources(two_accounts(Some(2)));
    let r1 = engine.try_start_scan().unwrap().run().unwrap();
    assert!(r1.sources.iter().all(|s| s.ok));
    assert_eq!(r1.nodes, 10);
    clock.advance(1_000_000);
    let r2 = engine.try_start_scan().unwrap().run().unwrap();
    assert!(!r2.sources.iter().find(|s| s.name == "aws-dev").unwrap().ok);
    assert_eq!(r2.retired_nodes, 0, "aws-dev's answer was kept in memory");
}

/// A scan committed to the graph store whose SCAN_COMPLETED never reached
/// the ledger (the daemon was killed in between: here, the ledger file is
/// put back as it was before that scan) is recorded by one SCAN_RECOVERED
/// at the next open, once; the chain stays whole and later scans are
/// recorded as usual.
#[test]
fn a_committed_scan_the_ledger_missed_is_recorded_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(1_700_000_000_000_000));
    let events = dir.path().join("events.redb");
    let saved = dir.path().join("events.before");
    let scan = |session: &str| {
        let engine = Arc::new(Engine::open(dir.path(), session, clock.clone()).unwrap());
        engine.set_sources(vec![Box::new(source("aws", None))]);
        let report = engine.try_start_scan().unwrap().run().unwrap();
        engine.stop_plugins(std::time::Duration::from_secs(1));
        report
    };
    assert_eq!(scan("s1").scan_seq, 1);
    std::fs::copy(&events, &saved).unwrap();
    assert_eq!(scan("s2").scan_seq, 2);
    std::fs::rename(&saved, &events).unwrap();

    let engine = Engine::open(dir.path(), "s3", clock.clone()).unwrap();
    let ledger = engine.ledger();
    let last = ledger.get(ledger.last_seq()).unwrap().unwrap();
    assert_eq!(last.event_type, "SCAN_RECOVERED");
    assert_eq!(last.payload["first_scan_seq"], 2);
    assert_eq!(last.payload["scan_seq"], 2);
    assert!(last.payload["committed_us"].as_u64().unwrap() > 0);
    assert!(
        last.message.starts_with("scan 2 committed without a SCAN_COMPLETED"),
        "{}",
        last.message
    );
    assert!(ledger.verify().unwrap().ok);
    assert_eq!(ledger.recorded_scan_seq().unwrap(), 2);
    let seq = ledger.last_seq();
    assert!(engine.record_scans().unwrap().is_none(), "recorded once");
    drop(engine);
    let engine = Arc::new(Engine::open(dir.path(), "s4", clock.clone()).unwrap());
    assert_eq!(engine.ledger().last_seq(), seq, "nothing more at the next open");
    engine.set_sources(vec![Box::new(source("aws", None))]);
    let r3 = engine.try_start_scan().unwrap().run().unwrap();
    let completed = engine.ledger().get(r3.event_seq).unwrap().unwrap();
    assert_eq!((completed.event_type.as_str(), r3.scan_seq), ("SCAN_COMPLETED", 3));
    assert_eq!(r3.event_seq, seq + 1);
}
