//! Plans: the ordered steps that carry out a rule's suggested action on
//! one resource, each with the action that undoes it, plus the equivalent
//! provider CLI commands and a Terraform-style diff for review.
//!
//! A plan is a pure function of the resource (CRN, type, state) and the
//! deciding rule, so its SHA-256 changes exactly when what the operator
//! would approve changes.

use sha2::{Digest, Sha256};

use svc_graph::crn::Crn;

/// One step: an action through the provider's `Remediate`, and its inverse.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    pub action: &'static str,
    /// The action that compensates this step (run with the snapshot the
    /// step returned).
    pub inverse: &'static str,
    /// The provider's CLI command doing the same.
    pub cli: String,
}

/// What approving a remediation would do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    pub crn: String,
    pub rule: String,
    pub intent: &'static str,
    pub steps: Vec<Step>,
    pub terraform: String,
    /// SHA-256 (hex) over the CRN, type, state, rule and steps.
    pub hash: String,
}

/// The inverse of each action; `restore` brings back what a destructive
/// action took, from the snapshot the step returned.
pub fn inverse_of(action: &str) -> &'static str {
    match action {
        "stop" | "pause" => "start",
        "start" => "stop",
        _ => "restore",
    }
}

fn is_machine(kind: &str) -> bool {
    matches!(
        kind,
        "instance" | "vm" | "virtual-machine" | "virtualmachine" | "node-group" | "nodegroup"
    )
}

/// Normalises a rule's action to one the pipeline executes.
fn intent_of(action: &str) -> &'static str {
    match action {
        "stop" => "stop",
        "start" => "start",
        "snapshot_delete" => "snapshot_delete",
        "throttle" => "throttle",
        "pause" => "pause",
        "resize" => "resize",
        "release" => "release",
        "quarantine" => "quarantine",
        _ => "delete",
    }
}

/// The actions of a plan, in order: a running machine is stopped before it
/// is deleted, so a failure of the delete leaves it stopped, not half gone.
fn actions(kind: &str, intent: &'static str) -> Vec<&'static str> {
    match intent {
        "delete" | "snapshot_delete" if is_machine(kind) => vec!["stop", intent],
        other => vec![other],
    }
}

/// The plan for acting on `crn` (of node type `ty`, in `state`) as `rule`
/// suggests with `action`.
pub fn build(crn: &Crn, ty: &str, state: &str, rule: &str, action: &str) -> Plan {
    let intent = intent_of(action);
    let canonical = crn.to_string();
    let steps: Vec<Step> = actions(&crn.kind, intent)
        .into_iter()
        .map(|a| Step {
            action: a,
            inverse: inverse_of(a),
            cli: cli(crn, a),
        })
        .collect();
    Plan {
        hash: digest(&canonical, &crn.kind, ty, state, rule, intent),
        crn: canonical,
        rule: rule.to_owned(),
        intent,
        steps,
        terraform: terraform(crn, ty, intent),
    }
}

/// The hash [`build`] gives the same plan, without rendering its CLI and
/// Terraform text: the scan's pass rechecks every item's plan with it.
pub fn hash(crn: &Crn, ty: &str, state: &str, rule: &str, action: &str) -> String {
    digest(&crn.to_string(), &crn.kind, ty, state, rule, intent_of(action))
}

/// SHA-256 (hex) over the canonical CRN, type, state, rule, intent and the
/// steps with their inverses.
fn digest(canonical: &str, kind: &str, ty: &str, state: &str, rule: &str, intent: &'static str) -> String {
    let mut h = Sha256::new();
    for part in [canonical, ty, state, rule, intent] {
        h.update(part.as_bytes());
        h.update([0]);
    }
    for a in actions(kind, intent) {
        h.update(a.as_bytes());
        h.update([1]);
        h.update(inverse_of(a).as_bytes());
        h.update([0]);
    }
    hex::encode(h.finalize())
}

/// The provider CLI command for one action.
fn cli(c: &Crn, action: &str) -> String {
    let (region, id, account) = (&c.region, &c.id, &c.account);
    let name = id.rsplit('/').next().unwrap_or(id);
    match c.provider.as_str() {
        "aws" => match (c.kind.as_str(), action) {
            ("instance", "stop") => format!("aws ec2 stop-instances --region {region} --instance-ids {id}"),
            ("instance", "start") => format!("aws ec2 start-instances --region {region} --instance-ids {id}"),
            ("instance", _) => format!("aws ec2 terminate-instances --region {region} --instance-ids {id}"),
            ("volume", _) => format!(
                "aws ec2 create-snapshot --region {region} --volume-id {id} && aws ec2 delete-volume --region {region} --volume-id {id}"
            ),
            ("snapshot", _) => format!("aws ec2 delete-snapshot --region {region} --snapshot-id {id}"),
            ("eip", _) => format!("aws ec2 release-address --region {region} --allocation-id {id}"),
            ("image", _) => format!("aws ec2 deregister-image --region {region} --image-id {id}"),
            ("db", "stop") => format!("aws rds stop-db-instance --region {region} --db-instance-identifier {name}"),
            ("db", _) => format!(
                "aws rds delete-db-instance --region {region} --db-instance-identifier {name} --final-db-snapshot-identifier {name}-final"
            ),
            ("log-group", _) => format!("aws logs delete-log-group --region {region} --log-group-name {id}"),
            ("function", _) => format!("aws lambda delete-function --region {region} --function-name {name}"),
            (kind, a) => format!("aws {} {a}-{kind} --region {region} --id {id}", c.service),
        },
        "gcp" => {
            let collection = match c.kind.as_str() {
                "instance" => "instances",
                "disk" => "disks",
                "address" => "addresses",
                "snapshot" => "snapshots",
                "image" => "images",
                other => other,
            };
            let verb = match action {
                "stop" | "start" => action,
                _ => "delete",
            };
            format!(
                "gcloud {} {collection} {verb} {name} --project {account} --region {region} --quiet",
                c.service
            )
        }
        "azure" => match (c.kind.as_str(), action) {
            ("virtual-machine" | "vm", "stop") => format!("az vm deallocate --ids {id}"),
            ("virtual-machine" | "vm", "start") => format!("az vm start --ids {id}"),
            _ => format!("az resource delete --ids {id}"),
        },
        "kubernetes" => {
            let (ns, obj) = match id.split_once('/') {
                Some((ns, obj)) => (ns, obj),
                None => ("default", id.as_str()),
            };
            match action {
                "stop" | "pause" => format!(
                    "kubectl --context {account} -n {ns} scale {} {obj} --replicas=0",
                    c.kind
                ),
                _ => format!("kubectl --context {account} -n {ns} delete {} {obj}", c.kind),
            }
        }
        p => format!("{p} {} {action} {id}", c.service),
    }
}

/// The Terraform resource type of a node type, as the providers name them.
fn terraform_type(c: &Crn, ty: &str) -> String {
    let known = match (c.provider.as_str(), ty) {
        ("aws", "ec2:volume") => "aws_ebs_volume",
        ("aws", "ec2:instance") => "aws_instance",
        ("aws", "ec2:eip") => "aws_eip",
        ("aws", "ec2:snapshot") => "aws_ebs_snapshot",
        ("aws", "ec2:image") => "aws_ami",
        ("aws", "rds:db") => "aws_db_instance",
        ("aws", "logs:log-group") => "aws_cloudwatch_log_group",
        ("aws", "lambda:function") => "aws_lambda_function",
        ("aws", "elasticloadbalancing:load-balancer") => "aws_lb",
        ("aws", "ec2:nat-gateway") => "aws_nat_gateway",
        ("gcp", "compute:disk") => "google_compute_disk",
        ("gcp", "compute:instance") => "google_compute_instance",
        ("gcp", "compute:address") => "google_compute_address",
        ("gcp", "compute:snapshot") => "google_compute_snapshot",
        ("azure", "compute:disk") => "azurerm_managed_disk",
        ("azure", "compute:virtual-machine") => "azurerm_linux_virtual_machine",
        ("azure", "network:public-ip") => "azurerm_public_ip",
        ("kubernetes", "core:persistentvolumeclaim") => "kubernetes_persistent_volume_claim",
        ("kubernetes", "core:service") => "kubernetes_service",
        _ => "",
    };
    if !known.is_empty() {
        return known.to_owned();
    }
    let raw = format!("{}_{}_{}", c.provider, c.service, c.kind);
    raw.chars()
        .map(|ch| {
            if ch.is_ascii_alphanumeric() {
                ch.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect()
}

/// A Terraform-style diff of the intent, for review.
fn terraform(c: &Crn, ty: &str, intent: &str) -> String {
    let rtype = terraform_type(c, ty);
    let label: String =
        c.id.rsplit('/')
            .next()
            .unwrap_or(&c.id)
            .chars()
            .map(|ch| if ch.is_ascii_alphanumeric() { ch } else { '_' })
            .collect();
    let label = if label.starts_with(|ch: char| ch.is_ascii_digit()) {
        format!("r_{label}")
    } else {
        label
    };
    let id = c.id.replace('"', "\\\"");
    match intent {
        "stop" | "pause" | "throttle" | "resize" => format!(
            "  # {rtype}.{label} will be updated in-place ({intent})\n  ~ resource \"{rtype}\" \"{label}\" {{\n        id    = \"{id}\"\n      ~ state = \"running\" -> \"{}\"\n    }}\n\nPlan: 0 to add, 1 to change, 0 to destroy.\n",
            match intent {
                "stop" => "stopped",
                "pause" => "paused",
                "throttle" => "throttled",
                _ => "resized",
            }
        ),
        _ => format!(
            "  # {rtype}.{label} will be destroyed\n  - resource \"{rtype}\" \"{label}\" {{\n      - id = \"{id}\" -> null\n    }}\n\nPlan: 0 to add, 0 to change, 1 to destroy.\n"
        ),
    }
}

/// SHA-256 (hex) of a compensating payload's canonical bytes.
pub fn payload_hash(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn machines_stop_before_delete_and_hashes_follow_inputs() {
        let c = Crn::parse("crn:svc:aws:us-east-1:ec2:instance:123456789012:i-0abc").unwrap();
        let p = build(&c, "ec2:instance", "stopped", "aws-ec2-stopped", "delete");
        assert_eq!(
            p.steps.iter().map(|s| (s.action, s.inverse)).collect::<Vec<_>>(),
            [("stop", "start"), ("delete", "restore")]
        );
        assert!(
            p.steps[1]
                .cli
                .contains("terminate-instances --region us-east-1 --instance-ids i-0abc")
        );
        assert!(
            p.terraform.contains("- resource \"aws_instance\" \"i_0abc\""),
            "{}",
            p.terraform
        );
        assert_eq!(p.hash.len(), 64);
        assert_eq!(p.hash, hash(&c, "ec2:instance", "stopped", "aws-ec2-stopped", "delete"));
        assert_eq!(p, build(&c, "ec2:instance", "stopped", "aws-ec2-stopped", "delete"));
        assert_ne!(
            p.hash,
            build(&c, "ec2:instance", "running", "aws-ec2-stopped", "delete").hash
        );
        assert_ne!(
            p.hash,
            build(&c, "ec2:instance", "stopped", "aws-ec2-idle", "delete").hash
        );

        let v = Crn::parse("crn:svc:aws:us-east-1:ec2:volume:123456789012:vol-1").unwrap();
        let p = build(&v, "ec2:volume", "available", "aws-ebs-unattached", "delete");
        assert_eq!(p.steps.len(), 1);
        assert_eq!(
            p.hash,
            hash(&v, "ec2:volume", "available", "aws-ebs-unattached", "delete")
        );
        assert!(p.steps[0].cli.contains("create-snapshot"));
        let s = build(&v, "ec2:volume", "in-use", "aws-ebs-on-idle-instance", "stop");
        assert_eq!(s.steps[0].inverse, "start");
        assert!(s.terraform.contains("~ state = \"running\" -> \"stopped\""));
    }

    #[test]
    fn every_provider_gets_a_command() {
        for (crn, ty, want) in [
            (
                "crn:svc:gcp:us-central1:compute:disk:proj-1:disk-9",
                "compute:disk",
                "gcloud compute disks delete disk-9",
            ),
            (
                "crn:svc:azure:eastus:compute:disk:sub-1:/subscriptions/s/disks/d1",
                "compute:disk",
                "az resource delete --ids /subscriptions/s/disks/d1",
            ),
            (
                "crn:svc:kubernetes:eu-west-1:core:persistentvolumeclaim:prod:team-a/data-0",
                "core:persistentvolumeclaim",
                "kubectl --context prod -n team-a delete persistentvolumeclaim data-0",
            ),
        ] {
            let c = Crn::parse(crn).unwrap();
            let p = build(&c, ty, "available", "r", "delete");
            assert!(p.steps[0].cli.starts_with(want), "{}", p.steps[0].cli);
            assert!(p.terraform.contains("will be destroyed"));
        }
    }
}
