//! ElastiCache cache clusters of one region (`DescribeCacheClusters` with
//! their nodes) and the subnet groups they run in
//! (`DescribeCacheSubnetGroups`), as the mock estate's `elasticache:cache`
//! nodes and their edges. A node of a Redis replication group is a cache
//! cluster of its own (`<group>-001`), as AWS lists it. Tags come from the
//! tagging API.

use std::collections::HashMap;

use aws_sdk_elasticache::types::{CacheCluster, CacheSubnetGroup};

use crate::calls::{CallError, Calls, Op, pages};
use crate::emit::{CONTAINS, Out, SECURED_BY, secs};
use crate::tagging::Tags;

/// Page size of the describe calls (the API's maximum).
const PAGE: i32 = 100;

/// What ElastiCache holds in one region.
#[derive(Default)]
pub struct Data {
    pub clusters: Vec<CacheCluster>,
    /// Subnet group name to the group.
    pub subnet_groups: HashMap<String, CacheSubnetGroup>,
}

fn op<'a>(operation: &'static str, region: &'a str) -> Op<'a> {
    Op {
        service: "elasticache",
        operation,
        region,
    }
}

/// Lists the region's cache clusters (with their nodes) and subnet groups.
pub async fn list(calls: &Calls, region: &str) -> Result<Data, CallError> {
    let c = calls.elasticache(region);
    let clusters = async {
        let call = c.describe_cache_clusters().show_cache_node_info(true).max_records(PAGE);
        let stream = call.into_paginator().send();
        let pages = pages!(calls, op("DescribeCacheClusters", region), stream, |o| o
            .cache_clusters()
            .len())?;
        Ok::<_, CallError>(
            pages
                .into_iter()
                .flat_map(|o| o.cache_clusters.unwrap_or_default())
                .collect::<Vec<_>>(),
        )
    };
    let groups = async {
        let stream = c
            .describe_cache_subnet_groups()
            .max_records(PAGE)
            .into_paginator()
            .send();
        let pages = pages!(calls, op("DescribeCacheSubnetGroups", region), stream, |o| o
            .cache_subnet_groups()
            .len())?;
        Ok::<_, CallError>(
            pages
                .into_iter()
                .flat_map(|o| o.cache_subnet_groups.unwrap_or_default())
                .filter_map(|g| Some((g.cache_subnet_group_name()?.to_owned(), g)))
                .collect::<HashMap<_, _>>(),
        )
    };
    let (clusters, subnet_groups) = futures::try_join!(clusters, groups)?;
    Ok(Data {
        clusters,
        subnet_groups,
    })
}

/// The subnets a cache cluster runs in: those of its subnet group in the
/// zones of its nodes; all of the group's when none matches.
fn subnets<'a>(c: &CacheCluster, d: &'a Data) -> Vec<&'a str> {
    let Some(group) = c.cache_subnet_group_name().and_then(|g| d.subnet_groups.get(g)) else {
        return Vec::new();
    };
    let zones: Vec<&str> = c
        .cache_nodes()
        .iter()
        .filter_map(|n| n.customer_availability_zone())
        .chain(c.preferred_availability_zone())
        .collect();
    let all: Vec<(&str, Option<&str>)> = group
        .subnets()
        .iter()
        .filter_map(|s| {
            Some((
                s.subnet_identifier()?,
                s.subnet_availability_zone().and_then(|z| z.name()),
            ))
        })
        .collect();
    let home: Vec<&str> = all
        .iter()
        .filter(|(_, z)| z.is_some_and(|z| zones.contains(&z)))
        .map(|(s, _)| *s)
        .collect();
    if home.is_empty() {
        all.into_iter().map(|(s, _)| s).collect()
    } else {
        home
    }
}

/// Writes the region's cache clusters; the price is the node type's times
/// `cache_nodes`.
pub fn nodes(out: &mut Out<'_>, d: &Data, tags: &Tags) {
    for c in &d.clusters {
        let Some(id) = c.cache_cluster_id() else { continue };
        let mut doc = out.doc(
            c.cache_cluster_status().unwrap_or("unknown"),
            secs(c.cache_cluster_create_time()),
        );
        let group = c.cache_subnet_group_name().and_then(|g| d.subnet_groups.get(g));
        doc.opt_str("node_type", c.cache_node_type())
            .opt_str("engine", c.engine())
            .opt_str("engine_version", c.engine_version())
            .int("cache_nodes", c.num_cache_nodes().map(i64::from))
            .opt_str(
                "availability_zone",
                c.preferred_availability_zone().filter(|z| *z != "Multiple"),
            )
            .opt_str("replication_group_id", c.replication_group_id())
            .opt_str("subnet_group", c.cache_subnet_group_name())
            .opt_str("vpc_id", group.and_then(|g| g.vpc_id()))
            .list("subnet_ids", subnets(c, d).into_iter().map(str::to_owned))
            .list(
                "security_groups",
                c.security_groups()
                    .iter()
                    .filter_map(|g| g.security_group_id().map(str::to_owned)),
            )
            .str("arn", c.arn());
        out.tagged("cache", id, doc, tags.of(c.arn()));
    }
}

/// Writes the edges: subnet `CONTAINS` cache cluster, cluster
/// `SECURED_BY` each of its security groups.
pub fn edges(out: &mut Out<'_>, d: &Data) {
    for c in &d.clusters {
        let Some(id) = c.cache_cluster_id() else { continue };
        for s in subnets(c, d) {
            out.edge(("subnet", s), ("cache", id), CONTAINS);
        }
        for g in c.security_groups() {
            let group = g.security_group_id().unwrap_or_default();
            out.edge(("cache", id), ("security-group", group), SECURED_BY);
        }
    }
}

#[cfg(test)]
mod tests {
    use aws_sdk_elasticache::types::{AvailabilityZone, CacheNode, Subnet};

    use super::*;

    fn subnet(id: &str, zone: &str) -> Subnet {
        let z = AvailabilityZone::builder().name(zone).build();
        Subnet::builder()
            .subnet_identifier(id)
            .subnet_availability_zone(z)
            .build()
    }

    #[test]
    fn a_cluster_is_in_the_subnets_of_its_nodes_zones() {
        let group = CacheSubnetGroup::builder()
            .cache_subnet_group_name("g")
            .subnets(subnet("subnet-a", "us-east-1a"))
            .subnets(subnet("subnet-b", "us-east-1b"))
            .build();
        let d = Data {
            clusters: Vec::new(),
            subnet_groups: [("g".to_owned(), group)].into(),
        };
        let node = |z: &str| CacheNode::builder().customer_availability_zone(z).build();
        let c = CacheCluster::builder()
            .cache_subnet_group_name("g")
            .cache_nodes(node("us-east-1b"))
            .build();
        assert_eq!(subnets(&c, &d), ["subnet-b"]);
        let elsewhere = CacheCluster::builder()
            .cache_subnet_group_name("g")
            .preferred_availability_zone("us-east-1c")
            .build();
        assert_eq!(subnets(&elsewhere, &d), ["subnet-a", "subnet-b"]);
        let unknown = CacheCluster::builder().cache_subnet_group_name("none").build();
        assert!(subnets(&unknown, &d).is_empty());
    }

    #[test]
    fn a_cluster_is_secured_by_its_groups_and_priced_per_node() {
        let sg = aws_sdk_elasticache::types::SecurityGroupMembership::builder()
            .security_group_id("sg-1")
            .status("active")
            .build();
        let c = CacheCluster::builder()
            .cache_cluster_id("c")
            .cache_node_type("cache.t3.medium")
            .num_cache_nodes(2)
            .security_groups(sg)
            .build();
        let d = Data {
            clusters: vec![c],
            subnet_groups: HashMap::new(),
        };
        let mut out = Out::new("us-east-1", "1", "aws");
        out.node("security-group", "sg-1", out.doc("active", None), &[]);
        nodes(&mut out, &d, &Tags::default());
        edges(&mut out, &d);
        assert_eq!(out.edges.len(), 1);
        let e = &out.edges[0];
        assert_eq!(
            (e.source_crn.as_str(), e.relation.as_str(), e.target_crn.as_str()),
            (
                "crn:svc:aws:us-east-1:1:cache:c",
                SECURED_BY,
                "crn:svc:aws:us-east-1:1:security-group:sg-1"
            )
        );
        let priced = 2.0 * svc_engine::prices::machine_monthly("aws", "cache.t3.medium", "us-east-1").unwrap();
        assert!((out.nodes[1].cost - priced).abs() < 0.006, "{}", out.nodes[1].cost);
    }
}
