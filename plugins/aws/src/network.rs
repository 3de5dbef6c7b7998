//! The network context as nodes: VPCs, subnets, security groups and
//! network interfaces, which give the compute nodes their relations.

use crate::discover::RegionData;
use crate::emit::{ATTACHED_TO, CONTAINS, MEMBER_OF, Out, SECURED_BY};

/// Writes the region's network nodes.
pub fn nodes(out: &mut Out<'_>, d: &RegionData) {
    for v in &d.vpcs {
        let Some(id) = v.vpc_id() else { continue };
        let mut doc = out.doc(v.state().map_or("unknown", |s| s.as_str()), None);
        doc.opt_str("cidr_block", v.cidr_block())
            .bool("is_default", v.is_default())
            .str("arn", Some(&out.arn("vpc", id)));
        out.node("vpc", id, doc, v.tags());
    }
    for s in &d.subnets {
        let Some(id) = s.subnet_id() else { continue };
        let arn = s.subnet_arn().map_or_else(|| out.arn("subnet", id), str::to_owned);
        let mut doc = out.doc(s.state().map_or("unknown", |s| s.as_str()), None);
        doc.opt_str("cidr_block", s.cidr_block())
            .opt_str("availability_zone", s.availability_zone())
            .opt_str("vpc_id", s.vpc_id())
            .int("available_ips", s.available_ip_address_count().map(i64::from))
            .str("arn", Some(&arn));
        out.node("subnet", id, doc, s.tags());
    }
    for g in &d.security_groups {
        let Some(id) = g.group_id() else { continue };
        let arn = g
            .security_group_arn()
            .map_or_else(|| out.arn("security-group", id), str::to_owned);
        // Security groups have no lifecycle state; the mock estate calls them active.
        let mut doc = out.doc("active", None);
        doc.opt_str("group_name", g.group_name())
            .opt_str("vpc_id", g.vpc_id())
            .int("ingress_rules", Some(g.ip_permissions().len() as i64))
            .int("egress_rules", Some(g.ip_permissions_egress().len() as i64))
            .opt_str("description", g.description())
            .str("arn", Some(&arn));
        out.node("security-group", id, doc, g.tags());
    }
    for n in &d.interfaces {
        let Some(id) = n.network_interface_id() else { continue };
        let attachment = n.attachment();
        let mut doc = out.doc(n.status().map_or("unknown", |s| s.as_str()), None);
        doc.opt_str("interface_type", n.interface_type().map(|t| t.as_str()))
            .opt_str("private_ip", n.private_ip_address())
            .opt_str("public_ip", n.association().and_then(|a| a.public_ip()))
            .opt_str("availability_zone", n.availability_zone())
            .opt_str("vpc_id", n.vpc_id())
            .opt_str("subnet_id", n.subnet_id())
            .str("attached_to", attachment.and_then(|a| a.instance_id()))
            .opt_str(
                "attachment_state",
                attachment.and_then(|a| a.status()).map(|s| s.as_str()),
            )
            .opt_str("description", n.description().filter(|d| !d.is_empty()))
            .bool("requester_managed", n.requester_managed())
            .str("arn", Some(&out.arn("network-interface", id)));
        out.node("network-interface", id, doc, n.tag_set());
    }
}

/// Writes the edges of the region's network nodes.
pub fn edges(out: &mut Out<'_>, d: &RegionData) {
    for s in &d.subnets {
        let id = s.subnet_id().unwrap_or_default();
        out.edge(("vpc", s.vpc_id().unwrap_or_default()), ("subnet", id), CONTAINS);
    }
    for g in &d.security_groups {
        let id = g.group_id().unwrap_or_default();
        out.edge(
            ("vpc", g.vpc_id().unwrap_or_default()),
            ("security-group", id),
            CONTAINS,
        );
    }
    for n in &d.interfaces {
        let me = ("network-interface", n.network_interface_id().unwrap_or_default());
        out.edge(me, ("subnet", n.subnet_id().unwrap_or_default()), MEMBER_OF);
        let instance = n.attachment().and_then(|a| a.instance_id()).unwrap_or_default();
        out.edge(me, ("instance", instance), ATTACHED_TO);
        for g in n.groups() {
            out.edge(me, ("security-group", g.group_id().unwrap_or_default()), SECURED_BY);
        }
    }
}
