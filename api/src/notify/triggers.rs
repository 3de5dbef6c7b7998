//! When each kind fires, from what the engine reports. A scan sends at most
//! one notice per kind:
//!
//! - `waste`: the scan's waste (`waste_usd_mo` of SCAN_COMPLETED) rose by
//!   more than `notify.waste_threshold_usd` since the previous scan (the
//!   first scan compares with nothing: all its waste is new).
//! - `approval`: more items wait at `pending` (for an operator's approval)
//!   than after the previous scan.
//! - `anomaly`: the scan's cost analysis flagged node or type anomalies.
//! - `plugin`: a source (provider plugin) or heuristic plugin failed the scan.
//! - `saga`: the first EXECUTION_ROLLBACK of a saga that failed and was
//!   compensated (an operator's revert is not a failure and sends nothing).
//! - `ledger_chain`: verification (at start, or `svc ledger verify`)
//!   found the chain broken; once per break.

use std::collections::VecDeque;

use serde_json::{Value, json};
use svc_engine::scan::ScanReport;
use svc_engine::signal::Anomalies;
use svc_engine::store::ledger::Event;

use super::message::Notice;
use super::settings::{Kind, NotifySettings};

/// How many sagas are remembered as already notified.
const SAGAS_KEPT: usize = 256;
/// How many anomalies, plugins, ... a message names.
const LISTED: usize = 5;

/// What the triggers remember between scans and events.
#[derive(Debug, Default)]
pub struct Triggers {
    /// Waste (USD/month) and items waiting for approval after the last scan.
    last_waste: Option<f64>,
    last_pending: Option<u64>,
    /// Sagas whose failure was sent.
    sagas: VecDeque<String>,
    /// The break already reported (its seq).
    chain_break: Option<u64>,
}

impl Triggers {
    /// Starts from the last scan before this daemon started, so a restart
    /// does not report what was already there.
    pub fn after(report: Option<&ScanReport>) -> Triggers {
        Triggers {
            last_waste: report.map(|r| r.waste_usd_mo),
            last_pending: report.map(pending),
            ..Triggers::default()
        }
    }

    /// The notices of one finished scan, at most one per kind.
    pub fn scan(&mut self, r: &ScanReport, anomalies: Option<&Anomalies>, s: &NotifySettings) -> Vec<Notice> {
        let mut out = Vec::new();
        let previous = self.last_waste.replace(r.waste_usd_mo).unwrap_or(0.0);
        let rise = r.waste_usd_mo - previous;
        if s.wants(Kind::Waste) && rise.is_finite() && rise > s.waste_threshold_usd {
            out.push(
                Notice::new(
                    Kind::Waste,
                    "SCAN_COMPLETED",
                    format!("Waste up {}/mo", usd(rise)),
                    format!(
                        "Scan {} found {} wasted resources costing {}/mo, {} more than the previous scan \
                         (threshold {}).\nProjected savings: {}/mo of {}/mo total spend.",
                        r.scan_seq,
                        r.waste,
                        usd(r.waste_usd_mo),
                        usd(rise),
                        usd(s.waste_threshold_usd),
                        usd(r.projected_savings_usd_mo),
                        usd(r.cost_usd_mo),
                    ),
                    json!({
                        "scan_seq": r.scan_seq,
                        "waste_count": r.waste,
                        "waste_usd_mo": round2(r.waste_usd_mo),
                        "previous_waste_usd_mo": round2(previous),
                        "new_waste_usd_mo": round2(rise),
                        "threshold_usd": s.waste_threshold_usd,
                        "projected_savings_usd_mo": round2(r.projected_savings_usd_mo),
                        "cost_usd_mo": round2(r.cost_usd_mo),
                    }),
                )
                .with_view("#/waste"),
            );
        }
        let waiting = pending(r);
        let before = self.last_pending.replace(waiting).unwrap_or(0);
        if s.wants(Kind::Approval) && waiting > before {
            out.push(
                Notice::new(
                    Kind::Approval,
                    "SCAN_COMPLETED",
                    format!("{} remediations wait for approval", waiting),
                    format!(
                        "Scan {}: {} items wait for an operator's approval, {} more than after the previous scan.",
                        r.scan_seq,
                        waiting,
                        waiting - before
                    ),
                    json!({"scan_seq": r.scan_seq, "waiting": waiting, "new": waiting - before}),
                )
                .with_view("#/remediation"),
            );
        }
        if let Some(a) = anomalies.filter(|a| a.scan_seq == r.scan_seq)
            && s.wants(Kind::Anomaly)
            && (a.nodes_flagged > 0 || !a.types.is_empty())
        {
            out.push(anomaly(r.scan_seq, a));
        }
        if s.wants(Kind::Plugin)
            && let Some(n) = plugin_failures(r)
        {
            out.push(n);
        }
        out
    }

    /// The notice of a ledger event, if it is the first rollback of a
    /// failed saga.
    pub fn event(&mut self, e: &Event, s: &NotifySettings) -> Option<Notice> {
        if e.event_type != "EXECUTION_ROLLBACK" || e.payload.get("compensating_payload_hash").is_some() {
            return None;
        }
        let saga = text(&e.payload, "saga_id");
        if saga.is_empty() || self.sagas.contains(&saga) {
            return None;
        }
        if self.sagas.len() == SAGAS_KEPT {
            self.sagas.pop_front();
        }
        self.sagas.push_back(saga.clone());
        if !s.wants(Kind::Saga) {
            return None;
        }
        let crn = if e.crn.is_empty() {
            text(&e.payload, "crn")
        } else {
            e.crn.clone()
        };
        let status = text(&e.payload, "status");
        let title = if status == "FAILED" {
            format!("Saga {saga} failed, and so did its compensation")
        } else {
            format!("Saga {saga} failed and was compensated")
        };
        let mut summary = format!(
            "{crn}: {}\nCompensating action: {} ({status}).",
            text(&e.payload, "reason"),
            text(&e.payload, "compensating_action")
        );
        if let Some(err) = e.payload.get("error").and_then(Value::as_str) {
            summary.push_str(&format!("\nCompensation error: {err}"));
        }
        let mut payload = e.payload.clone();
        if let Value::Object(p) = &mut payload {
            p.insert("seq".into(), json!(e.seq));
        }
        Some(Notice::new(Kind::Saga, &e.event_type, title, summary, payload).with_view("#/history"))
    }

    /// The notice of a chain found broken at `seq` (`None`: intact), once
    /// per break.
    pub fn chain(&mut self, broken: Option<(u64, String)>, s: &NotifySettings) -> Option<Notice> {
        let Some((seq, reason)) = broken else {
            self.chain_break = None;
            return None;
        };
        if self.chain_break.replace(seq) == Some(seq) || !s.wants(Kind::LedgerChain) {
            return None;
        }
        Some(
            Notice::new(
                Kind::LedgerChain,
                "LEDGER_VERIFY",
                "The audit ledger's hash chain is broken".into(),
                format!(
                    "Verification found event {seq} broken: {reason}.\nAppends are stopped until the \
                     ledger file is restored; `svc ledger verify` shows the break."
                ),
                json!({"first_broken_seq": seq, "reason": reason}),
            )
            .with_view("#/history"),
        )
    }
}

/// Items at `pending` after the scan.
fn pending(r: &ScanReport) -> u64 {
    r.sau
        .as_ref()
        .and_then(|s| s.stages.iter().find(|(stage, _)| *stage == "pending"))
        .map_or(0, |(_, n)| *n)
}

fn anomaly(scan_seq: u64, a: &Anomalies) -> Notice {
    let mut lines = vec![format!(
        "Scan {scan_seq}: {} resources and {} resource types changed cost unusually.",
        a.nodes_flagged,
        a.types.len()
    )];
    for n in a.nodes.iter().take(LISTED) {
        lines.push(format!(
            "• {} ({}): {} → {}/mo, z {:.1}",
            n.crn,
            n.kind.label(),
            usd(n.previous),
            usd(n.current),
            n.z
        ));
    }
    for t in a.types.iter().take(LISTED) {
        lines.push(format!(
            "• {} {}: {} → {}/mo, z {:.1}",
            t.provider,
            t.ty,
            usd(t.previous),
            usd(t.current),
            t.z
        ));
    }
    let nodes: Vec<Value> = a
        .nodes
        .iter()
        .take(LISTED)
        .map(|n| json!({"crn": n.crn, "kind": n.kind.label(), "previous_usd_mo": round2(n.previous), "current_usd_mo": round2(n.current), "z": round2(n.z)}))
        .collect();
    let types: Vec<Value> = a
        .types
        .iter()
        .take(LISTED)
        .map(|t| json!({"type": t.ty, "provider": t.provider, "previous_usd_mo": round2(t.previous), "current_usd_mo": round2(t.current), "z": round2(t.z)}))
        .collect();
    Notice::new(
        Kind::Anomaly,
        "SCAN_COMPLETED",
        format!("{} cost anomalies", a.nodes_flagged + a.types.len() as u64),
        lines.join("\n"),
        json!({"scan_seq": scan_seq, "nodes_flagged": a.nodes_flagged, "types_flagged": a.types.len(), "nodes": nodes, "types": types}),
    )
    .with_view("#/anomalies")
}

fn plugin_failures(r: &ScanReport) -> Option<Notice> {
    let sources: Vec<(&str, &str)> = r
        .sources
        .iter()
        .filter(|s| !s.ok)
        .map(|s| (s.name.as_str(), s.error.as_deref().unwrap_or("failed")))
        .collect();
    let heuristics: Vec<(&str, &str)> = r
        .heuristics
        .iter()
        .filter(|h| !h.ok)
        .map(|h| (h.name.as_str(), h.error.as_deref().unwrap_or("failed")))
        .collect();
    if sources.is_empty() && heuristics.is_empty() {
        return None;
    }
    let mut lines = vec![format!(
        "Scan {}: {} source(s) and {} heuristic plugin(s) failed; a failed source's resources are kept as they were.",
        r.scan_seq,
        sources.len(),
        heuristics.len()
    )];
    for (name, error) in sources.iter().chain(&heuristics).take(LISTED) {
        lines.push(format!("• {name}: {error}"));
    }
    let list = |v: &[(&str, &str)]| -> Vec<Value> { v.iter().map(|(n, e)| json!({"name": n, "error": e})).collect() };
    let names: Vec<&str> = sources.iter().chain(&heuristics).map(|(n, _)| *n).collect();
    Some(
        Notice::new(
            Kind::Plugin,
            "SCAN_COMPLETED",
            format!("Plugin failed: {}", names.join(", ")),
            lines.join("\n"),
            json!({"scan_seq": r.scan_seq, "sources": list(&sources), "heuristics": list(&heuristics)}),
        )
        .with_view("#/settings"),
    )
}

fn text(v: &Value, key: &str) -> String {
    match v.get(key) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// `$1,234.50`.
pub fn usd(x: f64) -> String {
    let cents = (x.abs() * 100.0).round() as u64;
    let whole = (cents / 100).to_string();
    let mut grouped = String::new();
    for (i, c) in whole.chars().enumerate() {
        if i > 0 && (whole.len() - i).is_multiple_of(3) {
            grouped.push(',');
        }
        grouped.push(c);
    }
    let sign = if x < 0.0 && cents > 0 { "-" } else { "" };
    format!("{sign}${grouped}.{:02}", cents % 100)
}

#[cfg(test)]
mod tests {
    use super::*;
    use svc_engine::scan::SourceOutcome;

    fn report(seq: u64, waste: f64, pending_items: u64) -> ScanReport {
        ScanReport {
            scan_seq: seq,
            waste_usd_mo: waste,
            waste: 3,
            sau: Some(svc_engine::remediation::ops::SauReport {
                stages: vec![("flagged", 1), ("pending", pending_items)],
                ..Default::default()
            }),
            ..ScanReport::default()
        }
    }

    fn kinds(v: &[Notice]) -> Vec<&'static str> {
        v.iter().map(|n| n.kind.name()).collect()
    }

    #[test]
    fn a_scan_sends_waste_and_approval_once_each_when_they_rise() {
        let s = NotifySettings {
            slack_webhook: Some("http://127.0.0.1:1/".into()),
            waste_threshold_usd: 50.0,
            ..NotifySettings::default()
        };
        let mut t = Triggers::after(None);
        assert_eq!(kinds(&t.scan(&report(1, 100.0, 2), None, &s)), ["waste", "approval"]);
        // Up by less than the threshold, fewer waiting: nothing.
        assert!(t.scan(&report(2, 140.0, 1), None, &s).is_empty());
        let n = t.scan(&report(3, 200.5, 4), None, &s);
        assert_eq!(kinds(&n), ["waste", "approval"]);
        assert_eq!(n[0].payload["new_waste_usd_mo"], 60.5);
        assert_eq!(n[1].payload["new"], 3);
        // After a restart, the last scan is the baseline.
        let mut t = Triggers::after(Some(&report(3, 200.5, 4)));
        assert!(t.scan(&report(4, 200.5, 4), None, &s).is_empty());
        // Nothing is sent that no destination takes.
        let none = NotifySettings::default();
        assert!(Triggers::after(None).scan(&report(1, 1e6, 9), None, &none).is_empty());
    }

    #[test]
    fn failed_plugins_and_anomalies_make_one_notice_each() {
        let s = NotifySettings {
            slack_webhook: Some("http://127.0.0.1:1/".into()),
            waste_threshold_usd: 1e9,
            ..NotifySettings::default()
        };
        let mut r = report(5, 0.0, 0);
        let failed = |name: &str| SourceOutcome {
            name: name.into(),
            providers: vec![],
            ok: false,
            error: Some(format!("{name} crashed")),
            nodes: 0,
            edges: 0,
            rejected: 0,
            rejections: vec![],
            duration_ms: 0,
            observed_at: None,
            unlisted: vec![],
        };
        r.sources = vec![failed("aws"), failed("gcp")];
        let a = Anomalies {
            scan_seq: 5,
            nodes_flagged: 2,
            ..Anomalies::default()
        };
        let n = Triggers::after(None).scan(&r, Some(&a), &s);
        assert_eq!(kinds(&n), ["anomaly", "plugin"]);
        assert_eq!(n[1].title, "Plugin failed: aws, gcp");
        assert!(n[1].summary.contains("• gcp: gcp crashed"), "{}", n[1].summary);
        // Anomalies of another scan are not this scan's.
        let stale = Anomalies { scan_seq: 4, ..a };
        assert_eq!(kinds(&Triggers::after(None).scan(&r, Some(&stale), &s)), ["plugin"]);
    }

    #[test]
    fn a_saga_is_reported_once_and_a_chain_break_once() {
        let s = NotifySettings {
            slack_webhook: Some("http://127.0.0.1:1/".into()),
            ..NotifySettings::default()
        };
        let rollback = |seq: u64, step: u64| Event {
            seq,
            ts_us: 0,
            event_type: "EXECUTION_ROLLBACK".into(),
            crn: "crn:svc:aws:us-east-1:ec2:volume:1:vol-1".into(),
            actor: "ops".into(),
            message: String::new(),
            session_id: String::new(),
            payload: json!({"saga_id": "saga-1", "step_index": step, "reason": "step 2 (delete) failed: denied",
                "compensating_action": "start", "status": "COMPENSATED", "crn": "x", "error": null}),
            prev_hash: [0; 32],
            hash: [0; 32],
        };
        let mut t = Triggers::default();
        let n = t.event(&rollback(7, 1), &s).expect("first rollback of the saga");
        assert_eq!(n.title, "Saga saga-1 failed and was compensated");
        assert!(
            n.summary
                .starts_with("crn:svc:aws:us-east-1:ec2:volume:1:vol-1: step 2 (delete) failed")
        );
        assert_eq!(n.payload["seq"], 7);
        assert!(t.event(&rollback(8, 0), &s).is_none(), "one notice per saga");
        let mut revert = rollback(9, 0);
        revert.payload["saga_id"] = json!("saga-2");
        revert.payload["compensating_payload_hash"] = json!("ab");
        assert!(t.event(&revert, &s).is_none(), "a revert is no failure");

        assert!(t.chain(None, &s).is_none());
        assert!(t.chain(Some((12, "hash mismatch".into())), &s).is_some());
        assert!(t.chain(Some((12, "hash mismatch".into())), &s).is_none());
        assert!(t.chain(None, &s).is_none());
        assert!(
            t.chain(Some((12, "hash mismatch".into())), &s).is_some(),
            "broken again after a repair"
        );
    }

    #[test]
    fn dollars_read_as_dollars() {
        assert_eq!(usd(1234.5), "$1,234.50");
        assert_eq!(usd(0.004), "$0.00");
        assert_eq!(usd(-12.0), "-$12.00");
        assert_eq!(usd(1_000_000.0), "$1,000,000.00");
    }
}
