//! Removals that are one call: releasing an Elastic IP, deleting a
//! snapshot, a NAT gateway, a load balancer (ELBv2) or a log group. Each
//! describes the resource first: a resource already gone is `deleted`
//! (a retry after a crash, or someone was faster), one that is protected
//! or in use is refused with the reason, and what is known of it goes in
//! the snapshot map. None of them can be undone by this plugin: `restore`
//! succeeds only when the resource is still there, and otherwise says how
//! it could be recreated by hand.

use aws_sdk_cloudwatchlogs::types::LogGroup;
use aws_sdk_ec2::types::{Address, NatGateway, Snapshot};
use aws_sdk_elasticloadbalancingv2::types::LoadBalancer;

use super::target::{DELETED, Done, RESTORED, Target, dry_ran, is_gone, tags_json, why};

/// The answer for a resource that was not there to remove.
fn gone() -> Done {
    Done::new(DELETED).with("previous_state", Some("not found"))
}

/// Runs a removal request; a resource that went meanwhile is no error.
fn removed<T>(result: Result<T, crate::calls::CallError>) -> Result<(), String> {
    match result {
        Ok(_) => Ok(()),
        Err(e) if is_gone(&e) => Ok(()),
        Err(e) => Err(why(&e)),
    }
}

/// A describe answer as "found or not".
fn found<T, U>(
    result: Result<T, crate::calls::CallError>,
    pick: impl FnOnce(T) -> Option<U>,
) -> Result<Option<U>, String> {
    match result {
        Ok(out) => Ok(pick(out)),
        Err(e) if is_gone(&e) => Ok(None),
        Err(e) => Err(why(&e)),
    }
}

fn nonempty(s: Option<&str>) -> Option<&str> {
    s.filter(|s| !s.is_empty())
}

// ---------------------------------------------------------------- Elastic IP

/// The Elastic IP `t` names (its allocation id).
pub async fn address(t: &Target) -> Result<Option<Address>, String> {
    let call = t.ec2().describe_addresses().allocation_ids(&t.id).send();
    found(t.call("ec2", "DescribeAddresses", call).await, |out| {
        out.addresses()
            .iter()
            .find(|a| a.allocation_id() == Some(t.id.as_str()))
            .cloned()
    })
}

/// `ReleaseAddress`, refused while the address is associated.
pub async fn release(t: &Target, dry_run: bool) -> Result<Done, String> {
    let Some(a) = address(t).await? else {
        return Ok(gone());
    };
    let ip = a.public_ip().unwrap_or("?");
    if let Some(holder) = nonempty(a.instance_id())
        .or(nonempty(a.network_interface_id()))
        .or(nonempty(a.association_id()))
    {
        return Err(format!(
            "address {} ({ip}) is associated with {holder}: disassociate it first",
            t.id
        ));
    }
    let done = Done::new(DELETED)
        .with("allocation_id", Some(&t.id))
        .with("public_ip", a.public_ip())
        .with("domain", a.domain().map(|d| d.as_str()))
        .with(
            "tags",
            Some(&tags_json(
                a.tags()
                    .iter()
                    .filter_map(|t| Some((t.key()?, t.value().unwrap_or("")))),
            )),
        )
        .with("previous_state", Some("available"));
    let call = t.ec2().release_address().allocation_id(&t.id);
    if dry_run {
        dry_ran(t.call("ec2", "ReleaseAddress", call.dry_run(true).send()).await)?;
    } else {
        removed(t.call("ec2", "ReleaseAddress", call.send()).await)?;
    }
    Ok(done)
}

// ------------------------------------------------------------------ snapshot

/// The EBS snapshot `t` names.
pub async fn snapshot_of(t: &Target) -> Result<Option<Snapshot>, String> {
    let call = t.ec2().describe_snapshots().snapshot_ids(&t.id).send();
    found(t.call("ec2", "DescribeSnapshots", call).await, |out| {
        out.snapshots()
            .iter()
            .find(|s| s.snapshot_id() == Some(t.id.as_str()))
            .cloned()
    })
}

/// `DeleteSnapshot`, refused while one of the account's images uses it.
pub async fn snapshot(t: &Target, dry_run: bool) -> Result<Done, String> {
    let Some(s) = snapshot_of(t).await? else {
        return Ok(gone());
    };
    let images = t.ec2().describe_images().owners("self").send();
    let images = t.call("ec2", "DescribeImages", images).await.map_err(|e| why(&e))?;
    let user = images.images().iter().find(|i| {
        i.block_device_mappings()
            .iter()
            .any(|m| m.ebs().and_then(|e| e.snapshot_id()) == Some(t.id.as_str()))
    });
    if let Some(image) = user {
        return Err(format!(
            "snapshot {} backs image {}: deregister the image first",
            t.id,
            image.image_id().unwrap_or("?")
        ));
    }
    let done = Done::new(DELETED)
        .with("volume_id", s.volume_id())
        .with("size_gib", s.volume_size().map(|g| g.to_string()).as_deref())
        .with("description", s.description())
        .with("encrypted", s.encrypted().map(|e| e.to_string()).as_deref())
        .with(
            "tags",
            Some(&tags_json(
                s.tags()
                    .iter()
                    .filter_map(|t| Some((t.key()?, t.value().unwrap_or("")))),
            )),
        )
        .with("previous_state", s.state().map(|s| s.as_str()));
    let call = t.ec2().delete_snapshot().snapshot_id(&t.id);
    if dry_run {
        dry_ran(t.call("ec2", "DeleteSnapshot", call.dry_run(true).send()).await)?;
    } else {
        removed(t.call("ec2", "DeleteSnapshot", call.send()).await)?;
    }
    Ok(done)
}

// --------------------------------------------------------------- NAT gateway

/// The NAT gateway `t` names, unless it is deleted (or being deleted).
pub async fn nat_gateway_of(t: &Target) -> Result<Option<NatGateway>, String> {
    let call = t.ec2().describe_nat_gateways().nat_gateway_ids(&t.id).send();
    let gateway = found(t.call("ec2", "DescribeNatGateways", call).await, |out| {
        out.nat_gateways()
            .iter()
            .find(|n| n.nat_gateway_id() == Some(t.id.as_str()))
            .cloned()
    })?;
    Ok(gateway.filter(|n| !matches!(n.state().map(|s| s.as_str()), Some("deleted" | "deleting" | "failed"))))
}

/// `DeleteNatGateway`. Its Elastic IPs stay allocated (release them
/// through their own findings). A dry run describes the gateway and sends
/// no `DeleteNatGateway`: an endpoint that ignored `DryRun` there would
/// delete it.
pub async fn nat_gateway(t: &Target, dry_run: bool) -> Result<Done, String> {
    let Some(n) = nat_gateway_of(t).await? else {
        return Ok(gone());
    };
    let allocations: Vec<&str> = n
        .nat_gateway_addresses()
        .iter()
        .filter_map(|a| a.allocation_id())
        .collect();
    let done = Done::new(DELETED)
        .with("subnet_id", n.subnet_id())
        .with("vpc_id", n.vpc_id())
        .with("connectivity_type", n.connectivity_type().map(|c| c.as_str()))
        .with("allocation_ids", Some(&allocations.join(",")))
        .with(
            "tags",
            Some(&tags_json(
                n.tags()
                    .iter()
                    .filter_map(|t| Some((t.key()?, t.value().unwrap_or("")))),
            )),
        )
        .with("previous_state", n.state().map(|s| s.as_str()));
    if !dry_run {
        let call = t.ec2().delete_nat_gateway().nat_gateway_id(&t.id).send();
        removed(t.call("ec2", "DeleteNatGateway", call).await)?;
    }
    Ok(done)
}

// ------------------------------------------------------------- load balancer

/// The ELBv2 load balancer `t` names (`app/<name>/<hash>`), with whether
/// its deletion protection is on. One with the same name and another hash
/// is another load balancer: `None`.
pub async fn load_balancer_of(t: &Target) -> Result<Option<(LoadBalancer, bool)>, String> {
    let name = t.id.split('/').nth(1).unwrap_or_default();
    if name.is_empty() {
        return Err(format!(
            "{:?} is not a load balancer id (expected app/<name>/<hash>)",
            t.id
        ));
    }
    let elb = t.calls.elb(&t.region);
    let call = elb.describe_load_balancers().names(name).send();
    let suffix = format!(":loadbalancer/{}", t.id);
    let lb = found(
        t.call("elasticloadbalancing", "DescribeLoadBalancers", call).await,
        |out| {
            out.load_balancers()
                .iter()
                .find(|l| l.load_balancer_arn().is_some_and(|a| a.ends_with(&suffix)))
                .cloned()
        },
    )?;
    let Some(lb) = lb else { return Ok(None) };
    let arn = lb.load_balancer_arn().unwrap_or_default();
    let call = elb.describe_load_balancer_attributes().load_balancer_arn(arn).send();
    let attrs = t
        .call("elasticloadbalancing", "DescribeLoadBalancerAttributes", call)
        .await
        .map_err(|e| why(&e))?;
    let protected = attrs
        .attributes()
        .iter()
        .any(|a| a.key() == Some("deletion_protection.enabled") && a.value() == Some("true"));
    Ok(Some((lb, protected)))
}

/// `DeleteLoadBalancer`, refused when deletion protection is on. ELBv2
/// has no `DryRun`: a dry run describes the load balancer and its
/// protection. Its target groups stay.
pub async fn load_balancer(t: &Target, dry_run: bool) -> Result<Done, String> {
    let Some((lb, protected)) = load_balancer_of(t).await? else {
        return Ok(gone());
    };
    if protected {
        return Err(format!(
            "load balancer {} has deletion protection enabled (deletion_protection.enabled)",
            t.id
        ));
    }
    let arn = lb.load_balancer_arn().unwrap_or_default().to_owned();
    let subnets: Vec<&str> = lb.availability_zones().iter().filter_map(|z| z.subnet_id()).collect();
    let done = Done::new(DELETED)
        .with("arn", Some(&arn))
        .with("name", lb.load_balancer_name())
        .with("lb_type", lb.r#type().map(|k| k.as_str()))
        .with("scheme", lb.scheme().map(|s| s.as_str()))
        .with("dns_name", lb.dns_name())
        .with("vpc_id", lb.vpc_id())
        .with("subnet_ids", Some(&subnets.join(",")))
        .with("security_groups", Some(&lb.security_groups().join(",")))
        .with("previous_state", lb.state().and_then(|s| s.code()).map(|c| c.as_str()));
    if !dry_run {
        let call = t
            .calls
            .elb(&t.region)
            .delete_load_balancer()
            .load_balancer_arn(&arn)
            .send();
        removed(t.call("elasticloadbalancing", "DeleteLoadBalancer", call).await)?;
    }
    Ok(done)
}

// ----------------------------------------------------------------- log group

/// The log group `t` names.
pub async fn log_group_of(t: &Target) -> Result<Option<LogGroup>, String> {
    // Groups are listed in name order: the exact name comes first among
    // those it prefixes.
    let call = t
        .calls
        .logs(&t.region)
        .describe_log_groups()
        .log_group_name_prefix(&t.id)
        .send();
    found(t.call("logs", "DescribeLogGroups", call).await, |out| {
        out.log_groups()
            .iter()
            .find(|g| g.log_group_name() == Some(t.id.as_str()))
            .cloned()
    })
}

/// `DeleteLogGroup`: its events are gone for good (export them first if
/// they must be kept). CloudWatch Logs has no `DryRun`: a dry run
/// describes the group.
pub async fn log_group(t: &Target, dry_run: bool) -> Result<Done, String> {
    let Some(g) = log_group_of(t).await? else {
        return Ok(gone());
    };
    let done = Done::new(DELETED)
        .with("log_group_name", Some(&t.id))
        .with(
            "retention_days",
            g.retention_in_days().map(|d| d.to_string()).as_deref(),
        )
        .with("stored_bytes", g.stored_bytes().map(|b| b.to_string()).as_deref())
        .with("log_group_class", g.log_group_class().map(|c| c.as_str()))
        .with("kms_key_id", g.kms_key_id())
        .with("previous_state", Some("active"));
    if !dry_run {
        let call = t.calls.logs(&t.region).delete_log_group().log_group_name(&t.id).send();
        removed(t.call("logs", "DeleteLogGroup", call).await)?;
    }
    Ok(done)
}

// ------------------------------------------------------------------- restore

/// Whether the resource `t` names is there (of the kinds in this file).
pub async fn exists(t: &Target) -> Result<bool, String> {
    Ok(match t.kind.as_str() {
        "eip" => address(t).await?.is_some(),
        "snapshot" => snapshot_of(t).await?.is_some(),
        "nat-gateway" => nat_gateway_of(t).await?.is_some(),
        "load-balancer" => load_balancer_of(t).await?.is_some(),
        "log-group" => log_group_of(t).await?.is_some(),
        other => return Err(format!("the aws plugin does not look up a {other}")),
    })
}

/// The inverse of the removals above: nothing to do while the resource is
/// there; otherwise an error saying why it cannot come back.
pub async fn restore(t: &Target, _dry_run: bool) -> Result<Done, String> {
    if exists(t).await? {
        return Ok(Done::new(RESTORED).with("note", Some("the resource was not removed; nothing to restore")));
    }
    Err(match t.kind.as_str() {
        "eip" => format!(
            "Elastic IP {} was released and its address cannot be had back: a new allocation gets another address",
            t.id
        ),
        "snapshot" => format!(
            "snapshot {} was deleted and cannot be restored (unless a Recycle Bin retention rule kept it)",
            t.id
        ),
        "nat-gateway" => format!(
            "NAT gateway {} was deleted: create a new one in the same subnet with the same Elastic IP \
             (see the step's snapshot) and point the route tables at it",
            t.id
        ),
        "load-balancer" => format!(
            "load balancer {} was deleted: recreate it with its listeners (its DNS name will differ); \
             its target groups were kept",
            t.id
        ),
        _ => format!(
            "log group {} was deleted and its events are gone unless they were exported",
            t.id
        ),
    })
}
