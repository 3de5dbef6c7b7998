//! The `Remediator` service, and which action runs for which resource type.

use std::collections::HashMap;

use svc_proto::provider::v1::remediator_server::Remediator;
use svc_proto::provider::v1::{RemediateRequest, RemediateResponse};
use tonic::{Request, Response, Status};

use super::instance::{self, describe_instance, power};
use super::target::{Done, FAILED, RESTORED, Target, VALIDATED};
use super::{deletes, isolation, volume};

/// The actions of this plugin, for the error that names an unknown one.
const ACTIONS: &str = "stop and start (instance); delete or snapshot_delete (volume: snapshot, then delete; \
snapshot, nat-gateway, load-balancer, log-group); release (eip); restore";

/// One `Remediate` call on `t`.
pub async fn act(t: &Target, action: &str, props: &HashMap<String, String>, dry_run: bool) -> Result<Done, String> {
    let unsupported = || {
        let article = if t.kind.starts_with(['a', 'e', 'i', 'o', 'u']) {
            "an"
        } else {
            "a"
        };
        Err(format!(
            "the aws plugin does not {action} {article} {} (it does: {ACTIONS})",
            t.kind
        ))
    };
    match (t.kind.as_str(), action) {
        ("instance", "stop" | "start") => power(t, instance::wanted(action, props), dry_run).await,
        ("instance", "restore") => match props.get("quarantine_action").map(String::as_str) {
            Some("ISOLATE") => isolation::revert(t, dry_run).await,
            // A quarantine STOP (or a saga step) puts back the state it
            // recorded; without one there is nothing to put back.
            _ => match instance::recorded(props) {
                Some(want) => power(t, want, dry_run).await,
                None => describe_instance(t).await.map(|_| Done::new(RESTORED)),
            },
        },
        ("volume", "delete" | "snapshot_delete") => volume::delete(t, props, dry_run).await,
        ("volume", "restore") => volume::restore(t, props, dry_run).await,
        ("eip", "release" | "delete") => deletes::release(t, dry_run).await,
        ("snapshot", "delete" | "snapshot_delete") => deletes::snapshot(t, dry_run).await,
        ("nat-gateway", "delete") => deletes::nat_gateway(t, dry_run).await,
        ("load-balancer", "delete") => deletes::load_balancer(t, dry_run).await,
        ("log-group", "delete") => deletes::log_group(t, dry_run).await,
        ("eip" | "snapshot" | "nat-gateway" | "load-balancer" | "log-group", "restore") => {
            deletes::restore(t, dry_run).await
        }
        _ => unsupported(),
    }
}

/// The `Remediator` service.
#[derive(Clone, Copy, Debug, Default)]
pub struct AwsRemediator;

#[tonic::async_trait]
impl Remediator for AwsRemediator {
    async fn remediate(&self, request: Request<RemediateRequest>) -> Result<Response<RemediateResponse>, Status> {
        let req = request.into_inner();
        let done = match Target::of(&req.crn).await {
            Ok(t) => act(&t, &req.action, &req.properties, req.dry_run).await,
            Err(e) => Err(e),
        };
        let resp = match done {
            Ok(d) => {
                tracing::info!(crn = %req.crn, action = %req.action, dry_run = req.dry_run, status = %d.status,
                    "remediation done");
                RemediateResponse {
                    success: true,
                    status: if req.dry_run { VALIDATED.to_owned() } else { d.status },
                    error: String::new(),
                    snapshot: if req.dry_run { HashMap::new() } else { d.snapshot },
                }
            }
            Err(e) => {
                tracing::warn!(crn = %req.crn, action = %req.action, dry_run = req.dry_run, error = %e,
                    "remediation failed");
                RemediateResponse {
                    success: false,
                    status: FAILED.to_owned(),
                    error: format!("{} of {}: {e}", req.action, req.crn),
                    snapshot: HashMap::new(),
                }
            }
        };
        Ok(Response::new(resp))
    }
}
