//! `ApplyQuarantine` on AWS, and the revert the daemon asks for with
//! `Remediate` `restore` (`quarantine_action` `ISOLATE`).
//!
//! `ISOLATE` isolates an instance (`remediate::isolation`).
//! `STOP` stops an instance. `DELETE` removes the resource as `Remediate`
//! `delete` does (a volume is snapshotted first, so the revert restores
//! it); an instance is not terminated.

use std::collections::HashMap;

use svc_proto::provider::v1::{QuarantineRequest, QuarantineResponse};

use crate::remediate::{Power, Target, act, isolate, power};

/// One `ApplyQuarantine` call.
pub async fn apply(req: &QuarantineRequest) -> QuarantineResponse {
    let outcome = match Target::of(&req.crn).await {
        Ok(t) => run(&t, &req.action, &req.reason).await,
        Err(e) => Err(e),
    };
    match outcome {
        Ok(message) => {
            tracing::info!(crn = %req.crn, action = %req.action, reason = %req.reason, "quarantine applied");
            QuarantineResponse { success: true, message }
        }
        Err(e) => {
            tracing::warn!(crn = %req.crn, action = %req.action, error = %e, "quarantine failed");
            QuarantineResponse {
                success: false,
                message: format!("{} of {}: {e}", req.action, req.crn),
            }
        }
    }
}

async fn run(t: &Target, action: &str, reason: &str) -> Result<String, String> {
    match (action, t.kind.as_str()) {
        ("ISOLATE", "instance") => isolate(t, reason).await,
        ("STOP", "instance") => {
            let d = power(t, Power::Stopped, false).await?;
            Ok(format!("resource {}", d.status))
        }
        ("DELETE", "instance") => Err("the aws plugin does not terminate instances: use STOP or ISOLATE".into()),
        ("DELETE", kind) => {
            let action = if kind == "eip" { "release" } else { "delete" };
            let d = act(t, action, &HashMap::new(), false).await?;
            Ok(format!("resource {}", d.status))
        }
        ("ISOLATE" | "STOP", kind) => Err(format!("{action} applies to EC2 instances, not to a {kind}")),
        (other, _) => Err(format!(
            "unknown quarantine action {other:?}: expected ISOLATE, STOP or DELETE"
        )),
    }
}
