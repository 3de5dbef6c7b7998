//! ELBv2 load balancers and target groups of one region, with the health
//! of every registered target (`DescribeTargetHealth`, one call per target
//! group) and their tags (`DescribeTags`, 20 resources a call), as the
//! mock estate's `elb:load-balancer` nodes and their edges.

use std::collections::{BTreeSet, HashMap};

use aws_sdk_elasticloadbalancingv2::types::{
    LoadBalancer, TargetGroup, TargetHealthDescription, TargetHealthStateEnum, TargetTypeEnum,
};

use crate::calls::{CallError, Calls, Op, pages};
use crate::emit::{ATTACHED_TO, CONTAINS, Out, ROUTES_TO, SECURED_BY, secs};

/// Page size of the describe calls (the API's maximum is 400).
const PAGE: i32 = 400;
/// Resources per `DescribeTags` request (the API's maximum).
const TAGS_PER_CALL: usize = 20;

/// What ELBv2 holds in one region.
#[derive(Default)]
pub struct Data {
    pub load_balancers: Vec<LoadBalancer>,
    pub target_groups: Vec<TargetGroup>,
    /// Target group ARN to the health of its registered targets.
    pub health: HashMap<String, Vec<TargetHealthDescription>>,
    /// Resource ARN to its tags.
    pub tags: HashMap<String, Vec<(String, String)>>,
}

fn op<'a>(operation: &'static str, region: &'a str) -> Op<'a> {
    Op {
        service: "elasticloadbalancing",
        operation,
        region,
    }
}

/// Lists the region's load balancers and target groups, then the health
/// of each group's targets and the tags of all of them.
pub async fn list(calls: &Calls, region: &str) -> Result<Data, CallError> {
    let c = calls.elb(region);
    let lbs = async {
        let stream = c.describe_load_balancers().page_size(PAGE).into_paginator().send();
        let pages = pages!(calls, op("DescribeLoadBalancers", region), stream, |o| o
            .load_balancers()
            .len())?;
        Ok::<_, CallError>(
            pages
                .into_iter()
                .flat_map(|o| o.load_balancers.unwrap_or_default())
                .collect::<Vec<_>>(),
        )
    };
    let tgs = async {
        let stream = c.describe_target_groups().page_size(PAGE).into_paginator().send();
        let pages = pages!(calls, op("DescribeTargetGroups", region), stream, |o| o
            .target_groups()
            .len())?;
        Ok::<_, CallError>(
            pages
                .into_iter()
                .flat_map(|o| o.target_groups.unwrap_or_default())
                .collect::<Vec<_>>(),
        )
    };
    let (load_balancers, target_groups) = futures::try_join!(lbs, tgs)?;

    let health = target_groups.iter().filter_map(|g| g.target_group_arn()).map(|arn| {
        let call = c.describe_target_health().target_group_arn(arn).send();
        async move {
            let o = calls
                .one(op("DescribeTargetHealth", region), 1, call, |o| {
                    Some(o.target_health_descriptions().len())
                })
                .await?;
            Ok::<_, CallError>((arn.to_owned(), o.target_health_descriptions.unwrap_or_default()))
        }
    });
    let arns: Vec<&str> = load_balancers
        .iter()
        .filter_map(|l| l.load_balancer_arn())
        .chain(target_groups.iter().filter_map(|g| g.target_group_arn()))
        .collect();
    let tags = arns.chunks(TAGS_PER_CALL).enumerate().map(|(i, chunk)| {
        let mut call = c.describe_tags();
        for arn in chunk {
            call = call.resource_arns(*arn);
        }
        async move {
            let o = calls
                .one(op("DescribeTags", region), i as u32 + 1, call.send(), |o| {
                    Some(o.tag_descriptions().len())
                })
                .await?;
            let described = o.tag_descriptions.unwrap_or_default().into_iter().filter_map(|d| {
                let pairs = d
                    .tags()
                    .iter()
                    .filter_map(|t| Some((t.key()?.to_owned(), t.value().unwrap_or("").to_owned())))
                    .collect();
                Some((d.resource_arn?, pairs))
            });
            Ok::<_, CallError>(described.collect::<Vec<_>>())
        }
    });
    let (health, tags) = futures::try_join!(
        futures::future::try_join_all(health),
        futures::future::try_join_all(tags)
    )?;
    Ok(Data {
        load_balancers,
        target_groups,
        health: health.into_iter().collect(),
        tags: tags.into_iter().flatten().collect(),
    })
}

/// The physical id of a load balancer or target group: its ARN's resource
/// after the type (`app/web/50dc6c495c0c9188`, `web/73e2d6bc24d8a067`),
/// which is also how CloudWatch names it.
pub fn id_of<'a>(arn: &'a str, kind: &str) -> Option<&'a str> {
    let marker = if kind == "load-balancer" {
        ":loadbalancer/"
    } else {
        ":targetgroup/"
    };
    let rest = arn.split_once(marker)?.1;
    (!rest.is_empty()).then_some(rest)
}

/// The targets of one group, as (id, healthy).
fn targets<'d>(d: &'d Data, group_arn: &str) -> impl Iterator<Item = (&'d str, bool)> {
    d.health.get(group_arn).into_iter().flatten().filter_map(|h| {
        let id = h.target()?.id()?;
        let state = h.target_health().and_then(|t| t.state());
        Some((id, state == Some(&TargetHealthStateEnum::Healthy)))
    })
}

/// The groups forwarding from load balancer `arn`.
fn groups_of<'d>(d: &'d Data, arn: &'d str) -> impl Iterator<Item = &'d TargetGroup> {
    d.target_groups
        .iter()
        .filter(move |g| g.load_balancer_arns().iter().any(|a| a == arn))
}

fn tags<'d>(d: &'d Data, arn: &str) -> impl Iterator<Item = (&'d str, &'d str)> {
    d.tags
        .get(arn)
        .into_iter()
        .flatten()
        .map(|(k, v)| (k.as_str(), v.as_str()))
}

/// Writes the region's load balancers (`healthy_targets` and
/// `registered_targets` count distinct targets over their groups) and
/// target groups.
pub fn nodes(out: &mut Out<'_>, d: &Data) {
    for lb in &d.load_balancers {
        let Some(arn) = lb.load_balancer_arn() else { continue };
        let Some(id) = id_of(arn, "load-balancer") else {
            continue;
        };
        let (mut registered, mut healthy) = (BTreeSet::new(), BTreeSet::new());
        let mut groups = 0;
        for g in groups_of(d, arn) {
            groups += 1;
            for (t, ok) in targets(d, g.target_group_arn().unwrap_or_default()) {
                registered.insert(t);
                if ok {
                    healthy.insert(t);
                }
            }
        }
        let state = lb.state().and_then(|s| s.code()).map_or("unknown", |c| c.as_str());
        let mut doc = out.doc(state, secs(lb.created_time()));
        doc.opt_str("name", lb.load_balancer_name())
            .opt_str("lb_type", lb.r#type().map(|t| t.as_str()))
            .opt_str("scheme", lb.scheme().map(|s| s.as_str()))
            .opt_str("dns_name", lb.dns_name())
            .opt_str("vpc_id", lb.vpc_id())
            .list(
                "subnet_ids",
                lb.availability_zones()
                    .iter()
                    .filter_map(|z| z.subnet_id())
                    .map(str::to_owned),
            )
            .list("security_groups", lb.security_groups().iter().cloned())
            .int("target_groups", Some(groups))
            .int("registered_targets", Some(registered.len() as i64))
            .int("healthy_targets", Some(healthy.len() as i64))
            .str("arn", Some(arn));
        out.tagged("load-balancer", id, doc, tags(d, arn));
    }
    for g in &d.target_groups {
        let Some(arn) = g.target_group_arn() else { continue };
        let Some(id) = id_of(arn, "target-group") else { continue };
        let all: Vec<(&str, bool)> = targets(d, arn).collect();
        // A target group has no lifecycle of its own; it is in use when a
        // load balancer forwards to it.
        let state = if g.load_balancer_arns().is_empty() {
            "unused"
        } else {
            "active"
        };
        let mut doc = out.doc(state, None);
        doc.opt_str("name", g.target_group_name())
            .opt_str("protocol", g.protocol().map(|p| p.as_str()))
            .int("port", g.port().map(i64::from))
            .opt_str("target_type", g.target_type().map(|t| t.as_str()))
            .opt_str("vpc_id", g.vpc_id())
            .list("target_ids", all.iter().map(|(t, _)| (*t).to_owned()))
            .int("registered_targets", Some(all.len() as i64))
            .int("healthy_targets", Some(all.iter().filter(|(_, ok)| *ok).count() as i64))
            .str("arn", Some(arn));
        out.tagged("target-group", id, doc, tags(d, arn));
    }
}

/// Writes the edges: subnet `CONTAINS` load balancer (vpc `CONTAINS` it
/// when it names no subnet), load balancer `SECURED_BY` group, target
/// group `ATTACHED_TO` load balancer, and `ROUTES_TO` from the group and
/// its load balancers to each instance target.
pub fn edges(out: &mut Out<'_>, d: &Data) {
    for lb in &d.load_balancers {
        let Some(id) = lb.load_balancer_arn().and_then(|a| id_of(a, "load-balancer")) else {
            continue;
        };
        let zones = lb.availability_zones();
        if zones.iter().all(|z| z.subnet_id().is_none()) {
            out.edge(
                ("vpc", lb.vpc_id().unwrap_or_default()),
                ("load-balancer", id),
                CONTAINS,
            );
        }
        for z in zones {
            out.edge(
                ("subnet", z.subnet_id().unwrap_or_default()),
                ("load-balancer", id),
                CONTAINS,
            );
        }
        for g in lb.security_groups() {
            out.edge(("load-balancer", id), ("security-group", g), SECURED_BY);
        }
    }
    for g in &d.target_groups {
        let Some(arn) = g.target_group_arn() else { continue };
        let Some(id) = id_of(arn, "target-group") else { continue };
        let lbs: Vec<&str> = g
            .load_balancer_arns()
            .iter()
            .filter_map(|a| id_of(a, "load-balancer"))
            .collect();
        for lb in &lbs {
            out.edge(("target-group", id), ("load-balancer", lb), ATTACHED_TO);
        }
        if g.target_type() != Some(&TargetTypeEnum::Instance) {
            continue;
        }
        for (instance, _) in targets(d, arn) {
            out.edge(("target-group", id), ("instance", instance), ROUTES_TO);
            for lb in &lbs {
                out.edge(("load-balancer", lb), ("instance", instance), ROUTES_TO);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_the_resource_part_of_the_arn() {
        let lb = "arn:aws:elasticloadbalancing:us-east-1:1:loadbalancer/app/web/50dc6c495c0c9188";
        let tg = "arn:aws:elasticloadbalancing:us-east-1:1:targetgroup/web/73e2d6bc24d8a067";
        assert_eq!(id_of(lb, "load-balancer"), Some("app/web/50dc6c495c0c9188"));
        assert_eq!(id_of(tg, "target-group"), Some("web/73e2d6bc24d8a067"));
        assert_eq!(id_of(tg, "load-balancer"), None);
        assert_eq!(id_of(lb, "target-group"), None);
        assert_eq!(
            id_of(
                "arn:aws:elasticloadbalancing:us-east-1:1:loadbalancer/",
                "load-balancer"
            ),
            None
        );
    }
}
