//! The `engine.heuristics` phase with in-process analyzers: what is sent
//! (types, properties, batches), what is kept (known CRNs, capped risk),
//! how findings become verdicts, and that a failing analyzer fails alone.

#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

use std::ops::ControlFlow;
use std::sync::Arc;
use std::sync::mpsc::Receiver;
use std::time::Duration;

use parking_lot::Mutex;
use svc_engine::clock::ManualClock;
use svc_engine::graph::{NodeBatch, NodeInput, NodeKeyRef};
use svc_engine::heuristics::{
    AnalyzeBatch, Analyzer, AnalyzerSpec, FINDINGS_SLACK, MAX_BATCH_SIZE, MAX_FINDINGS_PER_NODE, PluginFinding,
};
use svc_engine::scan::{ScanContext, ScanSink, Source, SourceError};
use svc_engine::{Crn, Engine};

const VOLUMES: usize = 2500;

fn volume_crn(n: usize) -> String {
    format!("crn:svc:aws:us-east-1:ec2:volume:123456789012:vol-{n}")
}
fn disk_crn(n: usize) -> String {
    format!("crn:svc:gcp:europe-west1:compute:disk:proj-1:disk-{n}")
}
fn instance_crn(n: usize) -> String {
    format!("crn:svc:aws:us-east-1:ec2:instance:123456789012:i-{n}")
}

/// 2500 AWS volumes (every tenth detached), 3 GCP disks, 10 instances.
struct Estate;

impl Source for Estate {
    fn name(&self) -> &str {
        "estate"
    }
    fn providers(&self) -> Vec<String> {
        vec!["aws".into(), "gcp".into()]
    }
    fn scan(&mut self, ctx: &ScanContext<'_>, sink: &mut dyn ScanSink) -> Result<(), SourceError> {
        let i = ctx.interner;
        let (state, size, secret, enc, iops, extra) = (
            i.intern("attachment_state"),
            i.intern("size_gib"),
            i.intern("secret"),
            i.intern("encrypted"),
            i.intern("iops_ratio"),
            i.intern("attached_to"),
        );
        let mut nodes = NodeBatch::default();
        let mut push = |crn: String, props: &dyn Fn(&mut svc_engine::props::PropWriter<'_>)| {
            let c = Crn::parse(&crn).expect("test CRN");
            let input = NodeInput {
                key: NodeKeyRef::intern(i, &c),
                ty: i.intern(&c.node_type()),
                state: i.intern("available"),
                cost_usd_mo: 40.0,
                creation_ts: 1_700_000_000,
            };
            nodes.push(input, &[], |w| props(w));
        };
        for n in 0..VOLUMES {
            push(volume_crn(n), &|w| {
                w.str(state, if n % 10 == 0 { "detached" } else { "attached" });
                w.int(size, 500);
                w.bool(enc, true);
                w.float(iops, 0.5);
                w.null(extra);
                w.str(secret, "do not send");
            });
        }
        for n in 0..3 {
            push(disk_crn(n), &|w| w.json(state, "[\"vm-1\"]"));
        }
        for n in 0..10 {
            push(instance_crn(n), &|w| w.str(state, "running"));
        }
        sink.nodes(nodes);
        Ok(())
    }
}

type Findings = Arc<dyn Fn(&AnalyzeBatch) -> Vec<PluginFinding> + Send + Sync>;

/// An analyzer that records what it was sent and answers with `findings`.
struct Fake {
    name: &'static str,
    spec: AnalyzerSpec,
    seen: Arc<Mutex<Vec<AnalyzeBatch>>>,
    findings: Findings,
    fail: Option<&'static str>,
}

impl Analyzer for Fake {
    fn name(&self) -> &str {
        self.name
    }
    fn spec(&mut self) -> Result<AnalyzerSpec, SourceError> {
        Ok(self.spec.clone())
    }
    fn analyze(
        &mut self,
        batches: Receiver<AnalyzeBatch>,
        _timeout: Option<Duration>,
        found: &mut dyn FnMut(PluginFinding) -> ControlFlow<()>,
    ) -> Result<(), SourceError> {
        for b in batches {
            for f in (self.findings)(&b) {
                if found(f).is_break() {
                    return Err(SourceError::Failed("stopped".into()));
                }
            }
            let last = b.is_last;
            self.seen.lock().push(b);
            if last {
                break;
            }
        }
        match self.fail {
            Some(why) => Err(SourceError::Failed(why.into())),
            None => Ok(()),
        }
    }
}

fn spec(types: &[&str], props: &[&str], batch: i32) -> AnalyzerSpec {
    AnalyzerSpec {
        name: "detached".into(),
        version: "1.0.0".into(),
        resource_type_filter: types.iter().map(|s| (*s).into()).collect(),
        required_properties: props.iter().map(|s| (*s).into()).collect(),
        preferred_batch_size: batch,
        ..AnalyzerSpec::default()
    }
}

/// Waste for every node sent with `attachment_state = detached`.
fn detached(risk: i32) -> Findings {
    Arc::new(move |b: &AnalyzeBatch| {
        b.nodes
            .iter()
            .filter(|n| {
                n.properties
                    .iter()
                    .any(|(k, v)| k == "attachment_state" && v == "detached")
            })
            .map(|n| PluginFinding {
                crn: n.crn.clone(),
                is_waste: true,
                risk_score: risk,
                reason: "attached to nothing".into(),
                suggested_action: "snapshot_delete".into(),
                projected_savings_usd: n.cost_usd,
                ..PluginFinding::default()
            })
            .collect()
    })
}

fn engine() -> (tempfile::TempDir, Arc<Engine>) {
    let dir = tempfile::tempdir().expect("temp dir");
    let engine = Engine::open(dir.path(), "s1", Arc::new(ManualClock::new(1_000_000))).expect("engine");
    engine.set_sources(vec![Box::new(Estate)]);
    (dir, Arc::new(engine))
}

#[test]
fn sends_declared_types_and_properties_in_capped_batches() {
    let (_dir, engine) = engine();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let by_kind = Arc::new(Mutex::new(Vec::new()));
    engine.set_analyzers(vec![
        Box::new(Fake {
            name: "volumes",
            spec: spec(
                &["ec2:volume"],
                &[
                    "attachment_state",
                    "size_gib",
                    "encrypted",
                    "iops_ratio",
                    "attached_to",
                    "unknown_key",
                ],
                5000,
            ),
            seen: seen.clone(),
            findings: Arc::new(|_: &AnalyzeBatch| Vec::new()),
            fail: None,
        }),
        Box::new(Fake {
            name: "disks",
            spec: spec(&["disk"], &["attachment_state"], 2),
            seen: by_kind.clone(),
            findings: Arc::new(|_: &AnalyzeBatch| Vec::new()),
            fail: None,
        }),
    ]);
    let report = engine.try_start_scan().expect("idle").run().expect("scan");

    let seen = seen.lock();
    let sizes: Vec<usize> = seen.iter().map(|b| b.nodes.len()).collect();
    assert_eq!(
        sizes,
        vec![MAX_BATCH_SIZE, MAX_BATCH_SIZE, VOLUMES - 2 * MAX_BATCH_SIZE]
    );
    assert_eq!(seen.iter().filter(|b| b.is_last).count(), 1);
    assert!(seen.last().is_some_and(|b| b.is_last));
    let all: Vec<_> = seen.iter().flat_map(|b| &b.nodes).collect();
    assert!(all.iter().all(|n| n.resource_type == "ec2:volume"));
    let first = all.iter().find(|n| n.crn == volume_crn(0)).expect("volume 0 sent");
    let mut props = first.properties.clone();
    props.sort();
    assert_eq!(
        props,
        vec![
            ("attached_to".to_string(), "null".to_string()),
            ("attachment_state".to_string(), "detached".to_string()),
            ("encrypted".to_string(), "true".to_string()),
            ("iops_ratio".to_string(), "0.5".to_string()),
            ("size_gib".to_string(), "500".to_string()),
        ],
        "only declared keys, as strings; `secret` is stripped"
    );
    assert_eq!(first.cost_usd, 40.0);

    // A kind alone matches across services; a small preference is honoured.
    let disks = by_kind.lock();
    let sizes: Vec<usize> = disks.iter().map(|b| b.nodes.len()).collect();
    assert_eq!(sizes, vec![2, 1]);
    assert_eq!(disks[0].nodes[0].resource_type, "compute:disk");
    assert_eq!(
        disks[0].nodes[0].properties,
        vec![("attachment_state".into(), "[\"vm-1\"]".into())]
    );

    let volumes = report.heuristics.iter().find(|h| h.name == "volumes").expect("outcome");
    assert!(volumes.ok);
    assert_eq!((volumes.nodes_sent, volumes.batches_sent), (VOLUMES as u64, 3));
}

#[test]
fn findings_become_verdicts_unknown_crns_are_discarded_and_risk_is_capped() {
    let (_dir, engine) = engine();
    let findings = detached(95);
    let extra: Findings = Arc::new(move |b: &AnalyzeBatch| {
        let mut out = findings(b);
        if b.is_last {
            for crn in [
                instance_crn(1),
                "crn:svc:aws:us-east-1:ec2:volume:123456789012:vol-none".into(),
                "nonsense".into(),
            ] {
                out.push(PluginFinding {
                    crn,
                    is_waste: true,
                    risk_score: 10,
                    ..PluginFinding::default()
                });
            }
        }
        out
    });
    let seen = Arc::new(Mutex::new(Vec::new()));
    engine.set_analyzers(vec![Box::new(Fake {
        name: "detached",
        spec: spec(&["volume"], &["attachment_state"], 100),
        seen,
        findings: extra,
        fail: None,
    })]);
    let report = engine.try_start_scan().expect("idle").run().expect("scan");
    let h = &report.heuristics[0];
    assert!(h.ok, "{h:?}");
    assert_eq!(h.findings, (VOLUMES / 10) as u64);
    assert_eq!(h.waste, (VOLUMES / 10) as u64);
    assert_eq!(
        h.discarded, 3,
        "the instance was not sent, the volume does not exist, nonsense is no CRN"
    );
    assert_eq!(h.capped, (VOLUMES / 10) as u64);
    assert_eq!(report.waste, (VOLUMES / 10) as u64);
    assert_eq!(report.findings, (VOLUMES / 10) as u64);

    let graph = engine.graph();
    let id = graph.find(&Crn::parse(&volume_crn(10)).unwrap()).expect("volume 10");
    let node = graph.node(id).expect("node");
    assert!(node.is_waste());
    assert_eq!(node.waste_reason(), "attached to nothing");
    let rule = node.verdict().map(|v| engine.interner().resolve(v).to_string());
    assert_eq!(rule.as_deref(), Some("detached"));
    let kept = engine.findings();
    assert_eq!(kept.of(id).len(), 1);
    assert_eq!(kept.of(id)[0].risk_score, 79, "plugin risk is capped at 79");
    assert_eq!(kept.of(id)[0].suggested_action, "snapshot_delete");
    let not_waste = graph.find(&Crn::parse(&volume_crn(11)).unwrap()).expect("volume 11");
    assert!(!graph.node(not_waste).expect("node").is_waste());
    let instance = graph.find(&Crn::parse(&instance_crn(1)).unwrap()).expect("instance 1");
    assert!(!graph.node(instance).expect("node").is_waste());
}

#[test]
fn a_failing_analyzer_fails_alone_keeps_its_verdicts_and_verdicts_clear_when_findings_stop() {
    let (_dir, engine) = engine();
    let none: Findings = Arc::new(|_: &AnalyzeBatch| Vec::new());
    let fake = |name: &'static str, types: &[&str], flag: bool, fail: bool| -> Box<dyn Analyzer> {
        Box::new(Fake {
            name,
            spec: spec(types, &["attachment_state"], 500),
            seen: Arc::new(Mutex::new(Vec::new())),
            findings: if flag { detached(30) } else { none.clone() },
            fail: fail.then_some("plugin crashed"),
        })
    };
    let ten_percent = (VOLUMES / 10) as u64;

    engine.set_analyzers(vec![
        fake("good", &["ec2:volume"], true, false),
        fake("broken", &[], true, true),
    ]);
    let r1 = engine.try_start_scan().expect("idle").run().expect("scan");
    assert_eq!(r1.nodes, (VOLUMES + 13) as u64, "the scan itself lands");
    let broken = r1.heuristics.iter().find(|h| h.name == "broken").expect("outcome");
    assert!(!broken.ok);
    assert_eq!(broken.error.as_deref(), Some("plugin crashed"));
    assert_eq!(
        (broken.findings, broken.carried_over),
        (0, 0),
        "a failed analyzer's findings are dropped"
    );
    assert_eq!(r1.waste, ten_percent, "the other analyzer's findings land");

    // `good` fails now: the verdicts it gave last time stay.
    engine.set_analyzers(vec![
        fake("good", &["ec2:volume"], true, true),
        fake("broken", &[], false, false),
    ]);
    let r2 = engine.try_start_scan().expect("idle").run().expect("scan");
    let good = r2.heuristics.iter().find(|h| h.name == "good").expect("outcome");
    assert!(!good.ok);
    assert_eq!(good.carried_over, ten_percent);
    assert_eq!(r2.waste, ten_percent);
    assert_eq!(r2.verdicts_changed, 0);

    // Nothing flags any more: the verdicts are cleared.
    engine.set_analyzers(vec![fake("good", &["ec2:volume"], false, false)]);
    let r3 = engine.try_start_scan().expect("idle").run().expect("scan");
    assert_eq!(r3.waste, 0);
    assert_eq!(r3.verdicts_changed, ten_percent);
}

/// An analyzer that answers without end (here: a thousand findings for
/// each node it is sent) is stopped once past the findings it may send,
/// fails alone, and keeps the verdicts it gave before.
#[test]
fn an_analyzer_flooding_findings_is_stopped_and_fails_alone() {
    let (_dir, engine) = engine();
    let fake = |findings: Findings| -> Box<dyn Analyzer> {
        Box::new(Fake {
            name: "flood",
            spec: spec(&["ec2:volume"], &["attachment_state"], 500),
            seen: Arc::new(Mutex::new(Vec::new())),
            findings,
            fail: None,
        })
    };
    let ten_percent = (VOLUMES / 10) as u64;
    engine.set_analyzers(vec![fake(detached(30))]);
    let r1 = engine.try_start_scan().expect("idle").run().expect("scan");
    assert_eq!(r1.waste, ten_percent);

    let flag = detached(30);
    let flood: Findings = Arc::new(move |b: &AnalyzeBatch| {
        let once = flag(b);
        let mut all = Vec::new();
        for _ in 0..1000 {
            all.extend(once.iter().cloned());
        }
        all
    });
    engine.set_analyzers(vec![fake(flood)]);
    let r2 = engine.try_start_scan().expect("idle").run().expect("scan");
    let flood = &r2.heuristics[0];
    assert!(!flood.ok);
    // The first batch of 500 volumes (50 detached) brings 50,000 findings,
    // past 4 for each resource sent by then (the producer runs a few
    // batches ahead) and the slack.
    let error = flood.error.clone().unwrap_or_default();
    let words: Vec<&str> = error.split(' ').collect();
    let (allowed, nodes): (u64, u64) = (words[3].parse().unwrap(), words[7].parse().unwrap());
    assert_eq!(
        error,
        format!(
            "sent more than {allowed} findings for the {nodes} resources it was sent \
             (at most {MAX_FINDINGS_PER_NODE} a resource); the pass was stopped there"
        )
    );
    assert_eq!(allowed, MAX_FINDINGS_PER_NODE * nodes + FINDINGS_SLACK);
    assert!((500..=VOLUMES as u64).contains(&nodes), "{error}");
    assert_eq!(
        flood.carried_over, ten_percent,
        "its verdicts of the last pass are kept"
    );
    assert_eq!((r2.waste, r2.verdicts_changed), (ten_percent, 0));
}

/// A finding's text is kept up to 1 KiB a field and 32 annotations, cut at
/// a character boundary; a "CRN" of megabytes is discarded, and the reason
/// given for it is not megabytes long.
#[test]
fn a_findings_text_is_cut_to_what_is_kept() {
    let (_dir, engine) = engine();
    let long: Findings = Arc::new(|b: &AnalyzeBatch| {
        let Some(first) = b.nodes.first().filter(|_| b.is_last) else {
            return Vec::new();
        };
        let big = |c: &str| c.repeat(3000);
        vec![
            PluginFinding {
                crn: first.crn.clone(),
                is_waste: true,
                reason: big("é"),
                suggested_action: big("a"),
                annotations: (0..40).map(|k| (format!("k{k:02}{}", big("k")), big("v"))).collect(),
                ..PluginFinding::default()
            },
            PluginFinding {
                crn: big("crn:"),
                is_waste: true,
                ..PluginFinding::default()
            },
        ]
    });
    engine.set_analyzers(vec![Box::new(Fake {
        name: "long",
        spec: spec(&["volume"], &[], 5000),
        seen: Arc::new(Mutex::new(Vec::new())),
        findings: long,
        fail: None,
    })]);
    let report = engine.try_start_scan().expect("idle").run().expect("scan");
    let h = &report.heuristics[0];
    assert_eq!((h.findings, h.discarded), (1, 1), "{h:?}");
    assert!(
        h.discard_reasons[0].len() < 2 * 2048 + 200,
        "{}",
        h.discard_reasons[0].len()
    );

    let findings = engine.findings();
    let f = findings
        .by_node
        .values()
        .flat_map(|l| l.iter())
        .next()
        .expect("the kept finding");
    assert_eq!(f.reason.len(), 1024, "512 two-byte characters");
    assert!(f.reason.chars().all(|c| c == 'é'));
    assert_eq!(f.suggested_action.len(), 1024);
    assert_eq!(f.annotations.len(), 32);
    assert!(f.annotations.iter().all(|(k, v)| k.len() == 1024 && v.len() == 1024));
}
