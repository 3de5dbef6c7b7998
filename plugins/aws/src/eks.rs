//! EKS clusters and their managed node groups of one region: `ListClusters`,
//! then for each cluster `DescribeCluster` and `ListNodegroups`, and one
//! `DescribeNodegroup` per node group (the lists name them only), all
//! concurrently under the shared bound. Reported as the mock estate's
//! `eks:cluster` and `eks:nodegroup` nodes (a node group's id is
//! `<cluster>/<node group>`: its name is unique only within its cluster),
//! with the tags the describe calls carry.

use std::collections::HashMap;

use aws_sdk_ec2::types::Instance;
use aws_sdk_eks::types::{Cluster, Nodegroup};

use crate::calls::{CallError, Calls, Op, pages};
use crate::emit::{CONTAINS, Out, SECURED_BY, secs};

/// Page size of the list calls (the API's maximum).
const PAGE: i32 = 100;
/// The tags EKS puts on the instances of a managed node group.
const CLUSTER_TAG: &str = "eks:cluster-name";
const NODEGROUP_TAG: &str = "eks:nodegroup-name";

/// One cluster and its node groups.
pub struct Listed {
    pub cluster: Cluster,
    pub nodegroups: Vec<Nodegroup>,
}

/// What EKS holds in one region.
#[derive(Default)]
pub struct Data {
    pub clusters: Vec<Listed>,
}

fn op<'a>(operation: &'static str, region: &'a str) -> Op<'a> {
    Op {
        service: "eks",
        operation,
        region,
    }
}

/// `Ok(None)` for a resource deleted since it was listed.
fn unless_gone<T>(r: Result<T, CallError>) -> Result<Option<T>, CallError> {
    match r {
        Ok(v) => Ok(Some(v)),
        Err(e) if e.not_found() => Ok(None),
        Err(e) => Err(e),
    }
}

/// Lists the region's clusters and node groups. A cluster deleted while
/// it is being described is left out whole (a cluster reported without
/// the node groups it had would look empty).
pub async fn list(calls: &Calls, region: &str) -> Result<Data, CallError> {
    let c = calls.eks(region);
    let stream = c.list_clusters().max_results(PAGE).into_paginator().send();
    let pages = pages!(calls, op("ListClusters", region), stream, |o| o.clusters().len())?;
    let names: Vec<String> = pages.into_iter().flat_map(|o| o.clusters.unwrap_or_default()).collect();
    let clusters = names.iter().map(|name| {
        let c = &c;
        async move {
            let described = async {
                let call = c.describe_cluster().name(name).send();
                let o = calls.one(op("DescribeCluster", region), 1, call, |_| Some(1)).await?;
                Ok::<_, CallError>(o.cluster)
            };
            let groups = async {
                let call = c.list_nodegroups().cluster_name(name).max_results(PAGE);
                let stream = call.into_paginator().send();
                let pages = pages!(calls, op("ListNodegroups", region), stream, |o| o.nodegroups().len())?;
                let groups: Vec<String> = pages
                    .into_iter()
                    .flat_map(|o| o.nodegroups.unwrap_or_default())
                    .collect();
                let described = groups.iter().map(|g| {
                    let call = c.describe_nodegroup().cluster_name(name).nodegroup_name(g).send();
                    async move {
                        let o = calls.one(op("DescribeNodegroup", region), 1, call, |_| Some(1)).await;
                        Ok::<_, CallError>(unless_gone(o)?.and_then(|o| o.nodegroup))
                    }
                });
                futures::future::try_join_all(described).await
            };
            let (cluster, groups) = futures::join!(described, groups);
            let (cluster, groups) = (unless_gone(cluster)?, unless_gone(groups)?);
            Ok::<_, CallError>(match (cluster.flatten(), groups) {
                (Some(cluster), Some(groups)) => Some(Listed {
                    cluster,
                    nodegroups: groups.into_iter().flatten().collect(),
                }),
                _ => None,
            })
        }
    });
    let clusters = futures::future::try_join_all(clusters).await?;
    Ok(Data {
        clusters: clusters.into_iter().flatten().collect(),
    })
}

/// A node group's id: `<cluster>/<node group>`.
fn nodegroup_id(cluster: &str, g: &Nodegroup) -> Option<String> {
    Some(format!("{cluster}/{}", g.nodegroup_name()?))
}

fn pairs(tags: Option<&HashMap<String, String>>) -> impl Iterator<Item = (&str, &str)> {
    let mut sorted: Vec<(&str, &str)> = tags
        .into_iter()
        .flatten()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    sorted.sort_unstable();
    sorted.into_iter()
}

/// The security groups of a cluster: the one EKS made for it and those
/// given at creation.
fn security_groups(c: &Cluster) -> Vec<&str> {
    let Some(vpc) = c.resources_vpc_config() else {
        return Vec::new();
    };
    let mut groups: Vec<&str> = vpc.cluster_security_group_id().into_iter().collect();
    for g in vpc.security_group_ids() {
        if !groups.contains(&g.as_str()) {
            groups.push(g);
        }
    }
    groups
}

/// Writes the region's clusters (priced as a control plane each) and node
/// groups (whose instances are priced as instances).
pub fn nodes(out: &mut Out<'_>, d: &Data) {
    for Listed { cluster: c, nodegroups } in &d.clusters {
        let Some(name) = c.name() else { continue };
        let mut doc = out.doc(c.status().map_or("unknown", |s| s.as_str()), secs(c.created_at()));
        let vpc = c.resources_vpc_config();
        doc.opt_str("kubernetes_version", c.version())
            .opt_str("platform_version", c.platform_version())
            .opt_str("endpoint", c.endpoint())
            .opt_str("vpc_id", vpc.and_then(|v| v.vpc_id()))
            .list(
                "subnet_ids",
                vpc.map(|v| v.subnet_ids()).unwrap_or_default().iter().cloned(),
            )
            .list("security_groups", security_groups(c).into_iter().map(str::to_owned))
            .int("nodegroups", Some(nodegroups.len() as i64))
            .str("arn", c.arn());
        out.tagged("cluster", name, doc, pairs(c.tags()));
        for g in nodegroups {
            let Some(id) = nodegroup_id(name, g) else { continue };
            let mut doc = out.doc(g.status().map_or("unknown", |s| s.as_str()), secs(g.created_at()));
            let scaling = g.scaling_config();
            doc.str("cluster", Some(name))
                .int("desired_size", scaling.and_then(|s| s.desired_size()).map(i64::from))
                .int("min_size", scaling.and_then(|s| s.min_size()).map(i64::from))
                .int("max_size", scaling.and_then(|s| s.max_size()).map(i64::from))
                .list("instance_types", g.instance_types().iter().cloned())
                .opt_str("capacity_type", g.capacity_type().map(|t| t.as_str()))
                .opt_str("ami_type", g.ami_type().map(|t| t.as_str()))
                .opt_str("kubernetes_version", g.version())
                .opt_str("release_version", g.release_version())
                .list("subnet_ids", g.subnets().iter().cloned())
                .str("arn", g.nodegroup_arn());
            out.tagged("nodegroup", &id, doc, pairs(g.tags()));
        }
    }
}

/// Writes the edges: subnet `CONTAINS` cluster, cluster `SECURED_BY` its
/// security groups, cluster `CONTAINS` each node group (as the mock estate
/// and the empty-cluster rule have it), node group `CONTAINS` each
/// instance EKS tagged as one of its nodes.
pub fn edges(out: &mut Out<'_>, d: &Data, instances: &[Instance]) {
    for Listed { cluster: c, nodegroups } in &d.clusters {
        let Some(name) = c.name() else { continue };
        for s in c.resources_vpc_config().map(|v| v.subnet_ids()).unwrap_or_default() {
            out.edge(("subnet", s), ("cluster", name), CONTAINS);
        }
        for g in security_groups(c) {
            out.edge(("cluster", name), ("security-group", g), SECURED_BY);
        }
        for g in nodegroups {
            let Some(id) = nodegroup_id(name, g) else { continue };
            out.edge(("cluster", name), ("nodegroup", &id), CONTAINS);
        }
    }
    for i in instances {
        let tag = |key: &str| i.tags().iter().find(|t| t.key() == Some(key)).and_then(|t| t.value());
        let (Some(cluster), Some(group), Some(instance)) = (tag(CLUSTER_TAG), tag(NODEGROUP_TAG), i.instance_id())
        else {
            continue;
        };
        out.edge(
            ("nodegroup", &format!("{cluster}/{group}")),
            ("instance", instance),
            CONTAINS,
        );
    }
}

#[cfg(test)]
mod tests {
    use aws_sdk_ec2::types::Tag;
    use aws_sdk_eks::types::VpcConfigResponse;

    use super::*;

    #[test]
    fn a_node_group_contains_the_instances_eks_tagged_for_it() {
        let vpc = VpcConfigResponse::builder()
            .cluster_security_group_id("sg-eks")
            .security_group_ids("sg-extra")
            .security_group_ids("sg-eks")
            .subnet_ids("subnet-1")
            .build();
        let cluster = Cluster::builder().name("prod").resources_vpc_config(vpc).build();
        assert_eq!(security_groups(&cluster), ["sg-eks", "sg-extra"]);
        let d = Data {
            clusters: vec![Listed {
                cluster,
                nodegroups: vec![Nodegroup::builder().nodegroup_name("pool-0").build()],
            }],
        };
        let tag = |k: &str, v: &str| Tag::builder().key(k).value(v).build();
        let worker = Instance::builder()
            .instance_id("i-1")
            .tags(tag(CLUSTER_TAG, "prod"))
            .tags(tag(NODEGROUP_TAG, "pool-0"))
            .build();
        let other = Instance::builder()
            .instance_id("i-2")
            .tags(tag(CLUSTER_TAG, "other"))
            .tags(tag(NODEGROUP_TAG, "pool-0"))
            .build();
        let mut out = Out::new("us-east-1", "1", "aws");
        for (kind, id) in [
            ("subnet", "subnet-1"),
            ("security-group", "sg-eks"),
            ("security-group", "sg-extra"),
        ] {
            out.node(kind, id, out.doc("available", None), &[]);
        }
        for i in ["i-1", "i-2"] {
            out.node("instance", i, out.doc("running", None), &[]);
        }
        nodes(&mut out, &d);
        edges(&mut out, &d, &[worker, other]);
        let got: Vec<(&str, &str, &str)> = out
            .edges
            .iter()
            .map(|e| (e.source_crn.as_str(), e.relation.as_str(), e.target_crn.as_str()))
            .collect();
        let crn = |k: &str, id: &str| format!("crn:svc:aws:us-east-1:1:{k}:{id}");
        let want = [
            (crn("subnet", "subnet-1"), "CONTAINS", crn("cluster", "prod")),
            (crn("cluster", "prod"), "SECURED_BY", crn("security-group", "sg-eks")),
            (crn("cluster", "prod"), "SECURED_BY", crn("security-group", "sg-extra")),
            (crn("cluster", "prod"), "CONTAINS", crn("nodegroup", "prod/pool-0")),
            (crn("nodegroup", "prod/pool-0"), "CONTAINS", crn("instance", "i-1")),
        ];
        let want: Vec<(&str, &str, &str)> = want.iter().map(|(a, r, b)| (a.as_str(), *r, b.as_str())).collect();
        assert_eq!(got, want);
        let priced = svc_engine::prices::rate("aws", "eks-cluster", "us-east-1").unwrap();
        let cluster = out.nodes.iter().find(|n| n.crn.ends_with(":cluster:prod")).unwrap();
        assert!((cluster.cost - priced).abs() < 0.006, "{}", cluster.cost);
    }
}
