//! EC2 compute and storage as nodes: instances, volumes, snapshots,
//! images, Elastic IPs, NAT gateways and VPC endpoints, with the
//! properties the built-in AWS rules read (the mock estate's AWS half is
//! the reference) and their edges.

use aws_sdk_ec2::types::{Instance, InstanceLifecycleType};
use svc_engine::prices;

use crate::discover::RegionData;
use crate::emit::{ATTACHED_TO, CHILD_OF, CONTAINS, DEPENDS_ON, MEMBER_OF, Out, SECURED_BY, parse_time, rfc3339, secs};

/// Writes the region's compute and storage nodes.
pub fn nodes(out: &mut Out<'_>, d: &RegionData) {
    for i in &d.instances {
        instance(out, i);
    }
    for v in &d.volumes {
        let Some(id) = v.volume_id() else { continue };
        let attachment = v.attachments().first();
        let mut doc = out.doc(v.state().map_or("unknown", |s| s.as_str()), secs(v.create_time()));
        doc.int("size_gib", v.size().map(i64::from))
            .opt_str("volume_type", v.volume_type().map(|t| t.as_str()))
            .int("iops", v.iops().map(i64::from))
            .int("throughput", v.throughput().map(i64::from))
            .opt_str("availability_zone", v.availability_zone())
            .bool("encrypted", v.encrypted())
            .str("attached_to", attachment.and_then(|a| a.instance_id()))
            .str(
                "attachment_state",
                Some(attachment.and_then(|a| a.state()).map_or("detached", |s| s.as_str())),
            )
            .opt_str("device", attachment.and_then(|a| a.device()))
            .opt_str("snapshot_id", v.snapshot_id().filter(|s| !s.is_empty()))
            .str("arn", Some(&out.arn("volume", id)));
        out.node("volume", id, doc, v.tags());
    }
    for s in &d.snapshots {
        let Some(id) = s.snapshot_id() else { continue };
        let mut doc = out.doc(s.state().map_or("unknown", |s| s.as_str()), secs(s.start_time()));
        doc.int("size_gib", s.volume_size().map(i64::from))
            .opt_str("source_volume_id", s.volume_id())
            .bool("encrypted", s.encrypted())
            .opt_str("description", s.description().filter(|t| !t.is_empty()))
            .opt_str("storage_tier", s.storage_tier().map(|t| t.as_str()))
            .str("arn", Some(&out.arn("snapshot", id)));
        out.node("snapshot", id, doc, s.tags());
    }
    for img in &d.images {
        let Some(id) = img.image_id() else { continue };
        let ebs = img.block_device_mappings().iter().filter_map(|m| m.ebs());
        let size: i64 = ebs.clone().filter_map(|e| e.volume_size()).map(i64::from).sum();
        let snapshots: Vec<String> = ebs.filter_map(|e| e.snapshot_id()).map(str::to_owned).collect();
        let mut doc = out.doc(
            img.state().map_or("unknown", |s| s.as_str()),
            parse_time(img.creation_date()),
        );
        doc.opt_str("name", img.name())
            .int("size_gib", Some(size))
            .opt_str("architecture", img.architecture().map(|a| a.as_str()))
            .opt_str("root_device_type", img.root_device_type().map(|t| t.as_str()))
            .list("snapshot_ids", snapshots)
            .str("arn", Some(&out.arn("image", id)));
        out.node("image", id, doc, img.tags());
    }
    for a in &d.addresses {
        // An address without an allocation id is EC2-Classic, retired in 2023.
        let Some(id) = a.allocation_id() else { continue };
        // AWS (and moto) may answer an empty string for "none".
        let instance = a.instance_id().filter(|i| !i.is_empty());
        let association = a.association_id().filter(|i| !i.is_empty());
        let associated = association.is_some() || instance.is_some();
        let mut doc = out.doc(if associated { "in-use" } else { "available" }, None);
        doc.opt_str("public_ip", a.public_ip())
            .opt_str("domain", a.domain().map(|d| d.as_str()))
            .str("attached_to", instance)
            .str("association_id", association)
            .opt_str(
                "network_interface_id",
                a.network_interface_id().filter(|i| !i.is_empty()),
            )
            .opt_str("private_ip", a.private_ip_address())
            .str("arn", Some(&out.arn("elastic-ip", id)));
        out.node("eip", id, doc, a.tags());
    }
    for n in &d.nat_gateways {
        let Some(id) = n.nat_gateway_id() else { continue };
        let state = n.state().map_or("unknown", |s| s.as_str());
        // Deleted and failed gateways stay listed for about an hour; they
        // are gone and bill nothing.
        if matches!(state, "deleted" | "failed") {
            continue;
        }
        let addresses = n.nat_gateway_addresses();
        let mut doc = out.doc(state, secs(n.create_time()));
        doc.opt_str("vpc_id", n.vpc_id())
            .opt_str("subnet_id", n.subnet_id())
            .opt_str("connectivity_type", n.connectivity_type().map(|c| c.as_str()))
            .opt_str("public_ip", addresses.iter().find_map(|a| a.public_ip()))
            .list(
                "allocation_ids",
                addresses.iter().filter_map(|a| a.allocation_id()).map(str::to_owned),
            )
            .str("arn", Some(&out.arn("natgateway", id)));
        out.node("nat-gateway", id, doc, n.tags());
    }
    for e in &d.endpoints {
        let Some(id) = e.vpc_endpoint_id() else { continue };
        let state = e.state().map_or("unknown", |s| s.as_str());
        if state.eq_ignore_ascii_case("deleted") {
            continue;
        }
        let mut doc = out.doc(state, secs(e.creation_timestamp()));
        doc.opt_str("vpc_endpoint_type", e.vpc_endpoint_type().map(|t| t.as_str()))
            .opt_str("service_name", e.service_name())
            .opt_str("vpc_id", e.vpc_id())
            .bool("private_dns_enabled", e.private_dns_enabled())
            .list("subnet_ids", e.subnet_ids().iter().cloned())
            .str("arn", Some(&out.arn("vpc-endpoint", id)));
        out.node("vpc-endpoint", id, doc, e.tags());
    }
}

fn instance(out: &mut Out<'_>, i: &Instance) {
    let Some(id) = i.instance_id() else { return };
    let state = i.state().and_then(|s| s.name()).map_or("unknown", |n| n.as_str());
    let ty = i.instance_type().map(|t| t.as_str());
    let machine = ty.and_then(|t| prices::machine("aws", t));
    let spot = i.instance_lifecycle() == Some(&InstanceLifecycleType::Spot);
    let stopped_at = if state == "stopped" {
        stopped_at(i.state_transition_reason())
    } else {
        None
    };
    // AWS reports no creation time for an instance; its launch time is
    // the last start.
    let mut doc = out.doc(state, secs(i.launch_time()));
    doc.opt_str("instance_type", ty)
        .int("vcpus", machine.map(|m| i64::from(m.vcpus)))
        .float("memory_gib", machine.map(|m| m.mem_gib))
        .opt_str("availability_zone", i.placement().and_then(|p| p.availability_zone()))
        .opt_str("private_ip", i.private_ip_address())
        .opt_str("public_ip", i.public_ip_address())
        .str("lifecycle", Some(if spot { "spot" } else { "on-demand" }))
        .opt_str("image_id", i.image_id())
        .opt_str("stopped_at", stopped_at.as_deref())
        .opt_str("vpc_id", i.vpc_id())
        .opt_str("subnet_id", i.subnet_id())
        .opt_str("architecture", i.architecture().map(|a| a.as_str()))
        .str("arn", Some(&out.arn("instance", id)));
    out.node("instance", id, doc, i.tags());
}

/// When a stopped instance stopped, from its state transition reason
/// (`User initiated (2025-01-01 10:20:30 GMT)`), in RFC 3339.
pub fn stopped_at(reason: Option<&str>) -> Option<String> {
    let inner = reason?.split_once('(')?.1.split_once(')')?.0.trim();
    let bare = inner.trim_end_matches("GMT").trim_end_matches("UTC").trim();
    let t = chrono::NaiveDateTime::parse_from_str(bare, "%Y-%m-%d %H:%M:%S").ok()?;
    rfc3339(t.and_utc().timestamp())
}

/// Writes the edges of the region's compute and storage nodes.
pub fn edges(out: &mut Out<'_>, d: &RegionData) {
    for i in &d.instances {
        let id = i.instance_id().unwrap_or_default();
        let me = ("instance", id);
        out.edge(me, ("subnet", i.subnet_id().unwrap_or_default()), MEMBER_OF);
        for g in i.security_groups() {
            out.edge(me, ("security-group", g.group_id().unwrap_or_default()), SECURED_BY);
        }
        out.edge(me, ("image", i.image_id().unwrap_or_default()), DEPENDS_ON);
    }
    for v in &d.volumes {
        let id = v.volume_id().unwrap_or_default();
        for a in v.attachments() {
            out.edge(
                ("volume", id),
                ("instance", a.instance_id().unwrap_or_default()),
                ATTACHED_TO,
            );
        }
    }
    for s in &d.snapshots {
        let id = s.snapshot_id().unwrap_or_default();
        out.edge(
            ("snapshot", id),
            ("volume", s.volume_id().unwrap_or_default()),
            CHILD_OF,
        );
    }
    for img in &d.images {
        let id = img.image_id().unwrap_or_default();
        for snap in img
            .block_device_mappings()
            .iter()
            .filter_map(|m| m.ebs()?.snapshot_id())
        {
            out.edge(("image", id), ("snapshot", snap), DEPENDS_ON);
        }
    }
    for a in &d.addresses {
        let id = a.allocation_id().unwrap_or_default();
        out.edge(
            ("eip", id),
            ("instance", a.instance_id().unwrap_or_default()),
            ATTACHED_TO,
        );
        out.edge(
            ("eip", id),
            ("network-interface", a.network_interface_id().unwrap_or_default()),
            ATTACHED_TO,
        );
    }
    for n in &d.nat_gateways {
        let id = n.nat_gateway_id().unwrap_or_default();
        out.edge(
            ("subnet", n.subnet_id().unwrap_or_default()),
            ("nat-gateway", id),
            CONTAINS,
        );
        for a in n.nat_gateway_addresses() {
            let eni = a.network_interface_id().unwrap_or_default();
            out.edge(("network-interface", eni), ("nat-gateway", id), ATTACHED_TO);
        }
    }
    for e in &d.endpoints {
        let id = e.vpc_endpoint_id().unwrap_or_default();
        if e.subnet_ids().is_empty() {
            out.edge(("vpc", e.vpc_id().unwrap_or_default()), ("vpc-endpoint", id), CONTAINS);
        }
        for s in e.subnet_ids() {
            out.edge(("subnet", s), ("vpc-endpoint", id), CONTAINS);
        }
        for g in e.groups() {
            out.edge(
                ("vpc-endpoint", id),
                ("security-group", g.group_id().unwrap_or_default()),
                SECURED_BY,
            );
        }
        for eni in e.network_interface_ids() {
            out.edge(("network-interface", eni), ("vpc-endpoint", id), ATTACHED_TO);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_stop_time_from_the_transition_reason() {
        assert_eq!(
            stopped_at(Some("User initiated (2025-01-01 10:20:30 GMT)")).as_deref(),
            Some("2025-01-01T10:20:30Z")
        );
        assert_eq!(
            stopped_at(Some("User initiated (2025-01-01 10:20:30 UTC)")).as_deref(),
            Some("2025-01-01T10:20:30Z")
        );
        assert_eq!(stopped_at(Some("")), None);
        assert_eq!(stopped_at(Some("Server.SpotInstanceTermination")), None);
        assert_eq!(stopped_at(None), None);
    }
}
