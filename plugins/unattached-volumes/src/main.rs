//! `svc-plugin-unattached-volumes`: an example heuristic plugin (SPEC 2.6,
//! 4.7). It asks for block volumes and disks only (`ec2:volume` and the
//! kind `disk`), with the few properties it reads, and reports the ones
//! attached to nothing as waste: an AWS volume whose `attachment_state` is
//! `detached`, a GCP disk with no `users`, an Azure disk that is
//! `Unattached`. The suggested action is to snapshot, then delete; the
//! saving is the volume's monthly cost.
//!
//! Install it with `svc plugins install-local --role heuristic PATH` and
//! list `unattached-volumes` in `plugins.active`.
//!
//! Each finding is annotated with the properties the plugin received for
//! the resource and the size of the batch it came in, so what the engine
//! sends can be checked from the outside. For the daemon's tests these
//! variables change its behaviour when it starts: `SVC_HEURISTIC_BATCH`
//! (preferred batch size, default 250), `SVC_HEURISTIC_RISK` (risk score of
//! every finding, default 25), `SVC_HEURISTIC_EXTRA_CRN` (also report this
//! CRN, which the engine never sent), `SVC_HEURISTIC_FAIL` (`crash`: exit
//! after the first batch; `hang`: read everything, answer nothing; `flood`:
//! answer the first batch's first node again and again, without end).

use std::collections::HashMap;
use std::process::ExitCode;

use svc_plugin_sdk::ResponseStream;
use svc_proto::heuristic::v1::heuristic_plugin_server::HeuristicPlugin;
use svc_proto::heuristic::v1::{GraphNode, HeuristicFinding, MetadataRequest, MetadataResponse, NodeBatch};
use tonic::{Request, Response, Status, Streaming};

const RULE: &str = "unattached-volume";
const PROPERTIES: [&str; 8] = [
    "attachment_state",
    "users",
    "size_gib",
    "volume_type",
    "disk_type",
    "sku",
    "last_attached_at",
    "last_detached_at",
];

#[derive(Clone, Debug, PartialEq)]
enum Fail {
    None,
    Crash,
    Hang,
    Flood,
}

#[derive(Clone, Debug)]
struct Settings {
    batch: i32,
    risk: i32,
    extra_crn: Option<String>,
    fail: Fail,
}

impl Settings {
    fn from_env() -> Result<Settings, String> {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
        let int = |k: &str, default: i32| match var(k) {
            None => Ok(default),
            Some(v) => v
                .trim()
                .parse::<i32>()
                .map_err(|_| format!("invalid {k} {v:?}: expected an integer")),
        };
        let fail = match var("SVC_HEURISTIC_FAIL").as_deref().map(str::trim) {
            None => Fail::None,
            Some("crash") => Fail::Crash,
            Some("hang") => Fail::Hang,
            Some("flood") => Fail::Flood,
            Some(other) => {
                return Err(format!(
                    "invalid SVC_HEURISTIC_FAIL {other:?}: expected crash, hang or flood"
                ));
            }
        };
        Ok(Settings {
            batch: int("SVC_HEURISTIC_BATCH", 250)?,
            risk: int("SVC_HEURISTIC_RISK", 25)?,
            extra_crn: var("SVC_HEURISTIC_EXTRA_CRN"),
            fail,
        })
    }
}

struct Unattached {
    settings: Settings,
}

/// Why a volume is attached to nothing, or `None` when it is in use.
fn unattached(node: &GraphNode) -> Option<&'static str> {
    let p = |k: &str| node.properties.get(k).map(String::as_str);
    match (p("attachment_state"), p("users")) {
        (Some("detached"), _) => Some("volume attached to no instance"),
        (Some("Unattached"), _) => Some("disk attached to no virtual machine"),
        (_, Some("[]")) => Some("disk used by no instance"),
        _ => None,
    }
}

fn finding(node: &GraphNode, why: &str, batch_len: usize, settings: &Settings) -> HeuristicFinding {
    let p = |k: &str| node.properties.get(k).map(String::as_str);
    let mut reason = why.to_owned();
    if let Some(since) = p("last_attached_at").or(p("last_detached_at")) {
        reason.push_str(&format!(" since {since}"));
    }
    let class = p("volume_type").or(p("disk_type")).or(p("sku"));
    match (p("size_gib"), class) {
        (Some(size), Some(class)) => reason.push_str(&format!(", {size} GiB {class}")),
        (Some(size), None) => reason.push_str(&format!(", {size} GiB")),
        _ => {}
    }
    reason.push_str(&format!(", ${:.2}/mo", node.cost_usd));
    let mut keys: Vec<&str> = node.properties.keys().map(String::as_str).collect();
    keys.sort_unstable();
    let annotations: HashMap<String, String> = [
        ("properties".to_owned(), keys.join(",")),
        ("batch_nodes".to_owned(), batch_len.to_string()),
        ("resource_type".to_owned(), node.resource_type.clone()),
    ]
    .into();
    HeuristicFinding {
        crn: node.crn.clone(),
        is_waste: true,
        risk_score: settings.risk,
        reason,
        suggested_action: "snapshot_delete".to_owned(),
        projected_savings_usd: node.cost_usd,
        annotations,
    }
}

#[tonic::async_trait]
impl HeuristicPlugin for Unattached {
    async fn metadata(&self, _: Request<MetadataRequest>) -> Result<Response<MetadataResponse>, Status> {
        Ok(Response::new(MetadataResponse {
            name: RULE.to_owned(),
            description: "Block volumes and disks attached to nothing: snapshot them, then delete".to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            resource_type_filter: vec!["ec2:volume".to_owned(), "disk".to_owned()],
            required_properties: PROPERTIES.iter().map(|s| (*s).to_owned()).collect(),
            preferred_batch_size: self.settings.batch,
        }))
    }

    type AnalyzeStream = ResponseStream<HeuristicFinding>;

    async fn analyze(&self, request: Request<Streaming<NodeBatch>>) -> Result<Response<Self::AnalyzeStream>, Status> {
        let mut batches = request.into_inner();
        let settings = self.settings.clone();
        let (tx, stream) = svc_plugin_sdk::response_channel(64);
        tokio::spawn(async move {
            let (mut nodes, mut flagged) = (0usize, 0usize);
            loop {
                let batch = match batches.message().await {
                    Ok(Some(b)) => b,
                    Ok(None) => break,
                    Err(status) => {
                        tracing::warn!(error = %status, "analyze stream broke");
                        return;
                    }
                };
                if settings.fail == Fail::Crash {
                    tracing::error!("crashing on purpose (SVC_HEURISTIC_FAIL=crash)");
                    svc_plugin_sdk::exit_now(3);
                }
                nodes += batch.nodes.len();
                if let (Fail::Flood, Some(node)) = (&settings.fail, batch.nodes.first()) {
                    tracing::warn!("answering without end (SVC_HEURISTIC_FAIL=flood)");
                    let same = finding(node, "flooding", batch.nodes.len(), &settings);
                    while tx.send(Ok(same.clone())).await.is_ok() {}
                    return;
                }
                if settings.fail != Fail::Hang {
                    for node in &batch.nodes {
                        if let Some(why) = unattached(node) {
                            flagged += 1;
                            if tx
                                .send(Ok(finding(node, why, batch.nodes.len(), &settings)))
                                .await
                                .is_err()
                            {
                                return;
                            }
                        }
                    }
                }
                if batch.is_last {
                    break;
                }
            }
            if settings.fail == Fail::Hang {
                std::future::pending::<()>().await;
            }
            if let Some(crn) = &settings.extra_crn {
                let extra = HeuristicFinding {
                    crn: crn.clone(),
                    is_waste: true,
                    risk_score: settings.risk,
                    reason: "reported without being sent".to_owned(),
                    ..HeuristicFinding::default()
                };
                let _ = tx.send(Ok(extra)).await;
            }
            tracing::info!(nodes, flagged, "analysis finished");
        });
        Ok(Response::new(stream))
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    let settings = match Settings::from_env() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    svc_plugin_sdk::exit_code(svc_plugin_sdk::serve_heuristic(Unattached { settings }).await)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(props: &[(&str, &str)]) -> GraphNode {
        GraphNode {
            crn: "crn:svc:aws:us-east-1:ec2:volume:123456789012:vol-1".into(),
            resource_type: "ec2:volume".into(),
            cost_usd: 40.0,
            properties: props.iter().map(|(k, v)| ((*k).into(), (*v).into())).collect(),
        }
    }

    #[test]
    fn flags_only_volumes_attached_to_nothing() {
        assert!(unattached(&node(&[("attachment_state", "detached")])).is_some());
        assert!(unattached(&node(&[("attachment_state", "Unattached")])).is_some());
        assert!(unattached(&node(&[("users", "[]")])).is_some());
        assert!(unattached(&node(&[("attachment_state", "attached")])).is_none());
        assert!(unattached(&node(&[("users", "[\"vm-1\"]")])).is_none());
        assert!(unattached(&node(&[])).is_none());
    }

    #[test]
    fn reason_names_size_class_and_cost() {
        let settings = Settings {
            batch: 1,
            risk: 25,
            extra_crn: None,
            fail: Fail::None,
        };
        let n = node(&[
            ("attachment_state", "detached"),
            ("size_gib", "500"),
            ("volume_type", "gp2"),
            ("last_attached_at", "2025-03-01T00:00:00Z"),
        ]);
        let f = finding(&n, "volume attached to no instance", 3, &settings);
        assert_eq!(
            f.reason,
            "volume attached to no instance since 2025-03-01T00:00:00Z, 500 GiB gp2, $40.00/mo"
        );
        assert_eq!(f.projected_savings_usd, 40.0);
        assert_eq!(
            f.annotations["properties"],
            "attachment_state,last_attached_at,size_gib,volume_type"
        );
        assert_eq!(f.annotations["batch_nodes"], "3");
    }
}
