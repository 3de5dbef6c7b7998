//! A heuristic plugin's answers, from arbitrary bytes: a `MetadataResponse`
//! and then `HeuristicFinding`s, each length-delimited, decoded with prost
//! and taken as the host takes them (`svc_ingest::host::heuristic`), then
//! through the engine's pass over a small estate. Nothing panics, and what
//! the engine keeps is within its bounds: only nodes that were sent, risk
//! at most 79, savings finite and not negative, texts and annotations cut
//! to their limits, annotations sorted, and the outcome's counts agree.

#![no_main]

#[path = "common/estate.rs"]
mod estate;

use std::ops::ControlFlow;
use std::sync::mpsc::Receiver;
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use prost::Message;
use svc_engine::Graph;
use svc_engine::heuristics::analyzer::run_analyzers;
use svc_engine::heuristics::{AnalyzeBatch, Analyzer, AnalyzerSpec, FINDINGS_SLACK, MAX_PLUGIN_RISK, PluginFinding};
use svc_engine::scan::SourceError;
use svc_ingest::host::heuristic::{from_wire, spec_from_wire};
use svc_proto::heuristic::v1 as hpb;

static GRAPH: LazyLock<Graph> = LazyLock::new(estate::graph);

/// Longest text kept from a plugin, in bytes.
const MAX_TEXT: usize = 1024;
/// Most annotations kept per finding.
const MAX_ANNOTATIONS: usize = 32;

struct Replay {
    spec: AnalyzerSpec,
    findings: Vec<PluginFinding>,
    /// The CRNs of the nodes the pass sent.
    sent: Arc<Mutex<Vec<String>>>,
}

impl Analyzer for Replay {
    fn name(&self) -> &str {
        "replay"
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
        let mut sent = self.sent.lock().expect("not poisoned");
        for b in batches {
            sent.extend(b.nodes.iter().map(|n| n.crn.clone()));
            if b.is_last {
                break;
            }
        }
        for mut f in std::mem::take(&mut self.findings) {
            // A CRN written as a number names the node sent at that place,
            // so that findings reach nodes the pass knows.
            if let (Ok(k), false) = (f.crn.parse::<usize>(), sent.is_empty()) {
                f.crn = sent[k % sent.len()].clone();
            }
            if found(f).is_break() {
                break;
            }
        }
        Ok(())
    }
}

fuzz_target!(|data: &[u8]| {
    let mut rest = data;
    let Ok(metadata) = hpb::MetadataResponse::decode_length_delimited(&mut rest) else {
        return;
    };
    let mut findings = Vec::new();
    while !rest.is_empty() {
        match hpb::HeuristicFinding::decode_length_delimited(&mut rest) {
            Ok(f) => findings.push(from_wire(f)),
            Err(_) => break,
        }
    }
    let given = findings.len() as u64;
    let sent = Arc::new(Mutex::new(Vec::new()));
    let mut analyzers: Vec<Box<dyn Analyzer>> = vec![Box::new(Replay {
        spec: spec_from_wire(metadata),
        findings,
        sent: sent.clone(),
    })];
    let g = &*GRAPH;
    let (kept, outcomes) = run_analyzers(g, &mut analyzers, estate::NOW_US, None);
    let [outcome] = &outcomes[..] else {
        panic!("one analyzer, {} outcomes", outcomes.len());
    };
    if given <= FINDINGS_SLACK {
        assert!(outcome.ok, "{outcome:?}");
    }
    assert_eq!(outcome.findings, kept.len() as u64);
    assert!(outcome.findings + outcome.discarded <= given, "{outcome:?}");
    assert!(outcome.waste <= outcome.findings);
    let sent = sent.lock().expect("not poisoned");
    assert_eq!(outcome.nodes_sent, sent.len() as u64);
    for f in &kept {
        assert!(sent.contains(&g.crn(f.node)), "a finding about a node not sent: {f:?}");
        assert!(f.risk_score <= MAX_PLUGIN_RISK, "{f:?}");
        assert!(
            f.projected_savings_usd_mo.is_finite() && f.projected_savings_usd_mo >= 0.0,
            "{f:?}"
        );
        assert!(f.reason.len() <= MAX_TEXT && f.suggested_action.len() <= MAX_TEXT);
        assert!(f.annotations.len() <= MAX_ANNOTATIONS);
        assert!(
            f.annotations
                .iter()
                .all(|(k, v)| k.len() <= MAX_TEXT && v.len() <= MAX_TEXT)
        );
        assert!(f.annotations.is_sorted(), "{f:?}");
    }
});
