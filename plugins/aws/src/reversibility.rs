//! `CheckReversibility` on AWS: whether what the daemon intends (the
//! `intent` property: `stop`, `delete`, `snapshot_delete`, `release`, ...)
//! can be undone, answered from the resource as it is now. Protection
//! flags and losses that no rollback brings back (an Elastic IP's address,
//! a log group's events, a deleted snapshot, a terminated instance) make
//! it unsafe, with the reason.

use std::collections::HashMap;

use aws_sdk_ec2::types::InstanceAttributeName;
use svc_proto::provider::v1::{ReversibilityProof, ReversibilityRequest};

use crate::remediate::{
    Target, address, describe_instance, describe_volume, find_instance, load_balancer_of, log_group_of, nat_gateway_of,
    snapshot_of, snapshots_of, state_of, why,
};

/// An answer: safe or not, and why.
type Proof = (bool, String);

/// One `CheckReversibility` call.
pub async fn check(req: &ReversibilityRequest) -> ReversibilityProof {
    let answer = match Target::of(&req.crn).await {
        Ok(t) => proof(&t, &req.properties).await,
        Err(e) => Err(e),
    };
    let (safe, reason) = answer.unwrap_or_else(|e| (false, format!("cannot tell: {e}")));
    tracing::info!(crn = %req.crn, safe, reason = %reason, "reversibility checked");
    ReversibilityProof { safe, reason }
}

async fn proof(t: &Target, props: &HashMap<String, String>) -> Result<Proof, String> {
    let intent = props.get("intent").map_or("delete", String::as_str);
    let missing = || Ok((false, format!("{} {} not found in {}", t.kind, t.id, t.region)));
    match t.kind.as_str() {
        "instance" => instance(t, intent).await,
        "volume" => volume(t).await,
        "eip" => match address(t).await? {
            None => missing(),
            Some(a) => Ok((
                false,
                format!(
                    "a released Elastic IP's address ({}) cannot be had back: a new allocation gets another address",
                    a.public_ip().unwrap_or("?")
                ),
            )),
        },
        "snapshot" => match snapshot_of(t).await? {
            None => missing(),
            Some(_) => Ok((
                false,
                "a deleted snapshot cannot be restored (unless a Recycle Bin retention rule keeps it)".into(),
            )),
        },
        "nat-gateway" => match nat_gateway_of(t).await? {
            None => missing(),
            Some(n) => Ok((
                true,
                format!(
                    "a NAT gateway holds no data and its Elastic IP stays allocated: a new one in {} gets the same \
                     address (the route tables must then name the new gateway)",
                    n.subnet_id().unwrap_or("its subnet")
                ),
            )),
        },
        "load-balancer" => match load_balancer_of(t).await? {
            None => missing(),
            Some((_, true)) => Ok((
                false,
                "deletion protection is enabled (deletion_protection.enabled)".into(),
            )),
            Some(_) => Ok((
                true,
                "deletion protection is off; a load balancer holds no data and its target groups are kept \
                 (a recreated one has another DNS name)"
                    .into(),
            )),
        },
        "log-group" => match log_group_of(t).await? {
            None => missing(),
            Some(g) => Ok((
                false,
                format!(
                    "deleting a log group is irreversible: its events ({} bytes) are gone unless they were \
                     exported first",
                    g.stored_bytes().unwrap_or(0)
                ),
            )),
        },
        "db" => database(t).await,
        other => Ok((
            false,
            format!("the aws plugin does not know how to undo actions on a {other}"),
        )),
    }
}

/// Termination (and stop) protection, and the volumes a termination would
/// take with it.
async fn instance(t: &Target, intent: &str) -> Result<Proof, String> {
    let i = describe_instance(t).await?;
    let ec2 = t.ec2();
    let call = ec2
        .describe_instance_attribute()
        .instance_id(&t.id)
        .attribute(InstanceAttributeName::DisableApiTermination)
        .send();
    let attr = t
        .call("ec2", "DescribeInstanceAttribute", call)
        .await
        .map_err(|e| why(&e))?;
    if attr.disable_api_termination().and_then(|v| v.value()) == Some(true) {
        return Ok((
            false,
            "termination protection is enabled (disableApiTermination)".into(),
        ));
    }
    let stopping = matches!(intent, "stop" | "start" | "pause");
    if stopping {
        let call = ec2
            .describe_instance_attribute()
            .instance_id(&t.id)
            .attribute(InstanceAttributeName::DisableApiStop)
            .send();
        let attr = t
            .call("ec2", "DescribeInstanceAttribute", call)
            .await
            .map_err(|e| why(&e))?;
        if attr.disable_api_stop().and_then(|v| v.value()) == Some(true) {
            return Ok((false, "stop protection is enabled (disableApiStop)".into()));
        }
        return Ok((
            true,
            format!(
                "no protection flag is set; stopping is undone by starting the instance again (it is {})",
                state_of(&i)
            ),
        ));
    }
    let doomed: Vec<&str> = i
        .block_device_mappings()
        .iter()
        .filter_map(|m| m.ebs())
        .filter(|e| e.delete_on_termination() == Some(true))
        .filter_map(|e| e.volume_id())
        .collect();
    let volumes = if doomed.is_empty() {
        "no volume is deleted with it".to_owned()
    } else {
        format!(
            "volumes {} are deleted with it (DeleteOnTermination)",
            doomed.join(", ")
        )
    };
    Ok((
        false,
        format!(
            "terminating an instance cannot be undone: {volumes}; the aws plugin stops instances but does not terminate them"
        ),
    ))
}

/// A volume is snapshotted before it is deleted; unsafe while attached to
/// an instance that is not stopped.
async fn volume(t: &Target) -> Result<Proof, String> {
    let Some(v) = describe_volume(t, &t.id).await? else {
        return Ok((false, format!("volume {} not found in {}", t.id, t.region)));
    };
    let mut notes = Vec::new();
    for a in v.attachments() {
        let Some(instance) = a.instance_id().filter(|i| !i.is_empty()) else {
            continue;
        };
        let state = find_instance(&t.other("instance", instance)).await?;
        let state = state.as_ref().map_or("gone", state_of);
        if state != "stopped" {
            return Ok((
                false,
                format!(
                    "the volume is attached to instance {instance}, which is {state}: it is not detached from a machine that is not stopped"
                ),
            ));
        }
        if a.delete_on_termination() == Some(true) {
            notes.push(format!(
                "it is deleted if {instance} is terminated (DeleteOnTermination)"
            ));
        }
    }
    let snapshots = snapshots_of(t, &t.id).await?;
    notes.push(match snapshots.first() {
        None => "it has no snapshot yet".to_owned(),
        Some(s) => format!(
            "it has {} completed snapshot(s), the newest {}",
            snapshots.len(),
            s.snapshot_id().unwrap_or("?")
        ),
    });
    Ok((
        true,
        format!(
            "a snapshot is taken before the volume is deleted and it is restored from it on rollback; {}",
            notes.join("; ")
        ),
    ))
}

/// RDS deletion protection.
async fn database(t: &Target) -> Result<Proof, String> {
    let call = t
        .calls
        .rds(&t.region)
        .describe_db_instances()
        .db_instance_identifier(&t.id)
        .send();
    let out = match t.call("rds", "DescribeDBInstances", call).await {
        Ok(out) => out,
        Err(e) if crate::remediate::is_gone(&e) => {
            return Ok((false, format!("database {} not found in {}", t.id, t.region)));
        }
        Err(e) => return Err(why(&e)),
    };
    let Some(db) = out.db_instances().first() else {
        return Ok((false, format!("database {} not found in {}", t.id, t.region)));
    };
    if db.deletion_protection() == Some(true) {
        return Ok((false, "deletion protection is enabled (DeletionProtection)".into()));
    }
    Ok((
        false,
        format!(
            "deletion protection is off, but the aws plugin does not snapshot and delete databases (automated backups are kept {} days)",
            db.backup_retention_period().unwrap_or(0)
        ),
    ))
}
