//! What one region holds: the EC2 list calls and those of the other
//! services, run concurrently (each request under the shared bound of
//! [`Calls`]) and paginated to the end. A service is all or nothing in a
//! region: when any of its calls fails, none of its resources there are
//! reported, and the failure is named; the other services' are. Without
//! the tagging API's answer, the services whose tags come from it are not
//! reported either (an `svc:ignore` tag would be lost).

use aws_sdk_ec2::types::{
    Address, Filter, Image, Instance, NatGateway, NetworkInterface, SecurityGroup, Snapshot, Subnet, Volume, Vpc,
    VpcEndpoint,
};

use crate::calls::{CallError, Calls, Op, pages};
use crate::emit::Usage;
use crate::{dynamodb, eks, elasticache, elb, lambda, logs, rds, tagging};

/// Page size asked of every paginated call (the APIs' maximum).
const PAGE: i32 = 1000;

/// The resources of one region: EC2's here, each other service's in its
/// own part.
#[derive(Default)]
pub struct RegionData {
    pub elb: elb::Data,
    pub rds: rds::Data,
    pub lambda: lambda::Data,
    pub logs: logs::Data,
    pub dynamodb: dynamodb::Data,
    pub elasticache: elasticache::Data,
    pub eks: eks::Data,
    /// Tags of the resources whose list calls carry none.
    pub tags: tagging::Tags,
    pub instances: Vec<Instance>,
    pub volumes: Vec<Volume>,
    pub snapshots: Vec<Snapshot>,
    pub images: Vec<Image>,
    pub addresses: Vec<Address>,
    pub nat_gateways: Vec<NatGateway>,
    pub endpoints: Vec<VpcEndpoint>,
    pub vpcs: Vec<Vpc>,
    pub subnets: Vec<Subnet>,
    pub security_groups: Vec<SecurityGroup>,
    pub interfaces: Vec<NetworkInterface>,
    /// CloudWatch figures by node kind and id.
    pub usage: Usage,
}

fn op<'a>(operation: &'static str, region: &'a str) -> Op<'a> {
    Op {
        service: "ec2",
        operation,
        region,
    }
}

/// Every item of a paginated list call: `$call` builds the request
/// (page size set here), `$list` names the output's list field.
macro_rules! list_all {
    ($calls:expr, $region:expr, $name:literal, $call:expr, $list:ident) => {
        async {
            let stream = $call.max_results(PAGE).into_paginator().send();
            let pages = pages!($calls, op($name, $region), stream, |o| o.$list().len())?;
            Ok::<_, CallError>(
                pages
                    .into_iter()
                    .flat_map(|o| o.$list.unwrap_or_default())
                    .collect::<Vec<_>>(),
            )
        }
    };
}

/// The services (CRN service segments) whose resources take their tags
/// from the tagging API.
pub const TAGGED_BY_API: [&str; 5] = ["lambda", "logs", "s3", "dynamodb", "elasticache"];

/// What a region's listing gave: the resources of the services listed,
/// and each service that failed (CRN service segment) with the call that
/// failed it.
pub struct Listed {
    pub data: RegionData,
    pub failed: Vec<(&'static str, CallError)>,
}

impl Listed {
    /// Whether `service` failed in this region.
    pub fn failed(&self, service: &str) -> bool {
        self.failed.iter().any(|(s, _)| *s == service)
    }
}

/// Lists everything in `region`, every service at once; a service that
/// fails is left out and named. The error, when every service failed,
/// names the first call that failed.
pub async fn region(calls: &Calls, region: &str) -> Result<Listed, CallError> {
    let (ec2, elb, rds, lambda, logs, dynamodb, elasticache, eks, tags) = futures::join!(
        ec2(calls, region),
        elb::list(calls, region),
        rds::list(calls, region),
        lambda::list(calls, region),
        logs::list(calls, region),
        dynamodb::list(calls, region),
        elasticache::list(calls, region),
        eks::list(calls, region),
        tagging::list(calls, region),
    );
    let mut failed = Vec::new();
    let mut data = ec2.unwrap_or_else(|e| {
        failed.push(("ec2", e));
        RegionData::default()
    });
    macro_rules! take {
        ($result:expr, $service:literal, $field:ident) => {
            match $result {
                Ok(d) => data.$field = d,
                Err(e) => failed.push(($service, e)),
            }
        };
    }
    take!(elb, "elb", elb);
    take!(rds, "rds", rds);
    take!(lambda, "lambda", lambda);
    take!(logs, "logs", logs);
    take!(dynamodb, "dynamodb", dynamodb);
    take!(elasticache, "elasticache", elasticache);
    take!(eks, "eks", eks);
    if failed.len() == SERVICES {
        return Err(failed.swap_remove(0).1);
    }
    match tags {
        Ok(t) => data.tags = t,
        Err(e) => {
            for service in TAGGED_BY_API {
                if !failed.iter().any(|(s, _)| *s == service) {
                    failed.push((service, e.clone()));
                }
            }
            (data.lambda, data.logs) = Default::default();
            (data.dynamodb, data.elasticache) = Default::default();
        }
    }
    Ok(Listed { data, failed })
}

/// The services listed per region apart from S3 (listed once, globally).
const SERVICES: usize = 8;

/// The EC2 part of `region`.
async fn ec2(calls: &Calls, region: &str) -> Result<RegionData, CallError> {
    let c = calls.ec2(region);
    // Terminated instances are gone; shutting-down ones are on their way.
    let live = Filter::builder()
        .name("instance-state-name")
        .values("pending")
        .values("running")
        .values("stopping")
        .values("stopped")
        .build();
    let reservations = list_all!(
        calls,
        region,
        "DescribeInstances",
        c.describe_instances().filters(live),
        reservations
    );
    let volumes = list_all!(calls, region, "DescribeVolumes", c.describe_volumes(), volumes);
    let snapshots = list_all!(
        calls,
        region,
        "DescribeSnapshots",
        c.describe_snapshots().owner_ids("self"),
        snapshots
    );
    let images = list_all!(
        calls,
        region,
        "DescribeImages",
        c.describe_images().owners("self"),
        images
    );
    let nat_gateways = list_all!(
        calls,
        region,
        "DescribeNatGateways",
        c.describe_nat_gateways(),
        nat_gateways
    );
    let endpoints = list_all!(
        calls,
        region,
        "DescribeVpcEndpoints",
        c.describe_vpc_endpoints(),
        vpc_endpoints
    );
    let vpcs = list_all!(calls, region, "DescribeVpcs", c.describe_vpcs(), vpcs);
    let subnets = list_all!(calls, region, "DescribeSubnets", c.describe_subnets(), subnets);
    let security_groups = list_all!(
        calls,
        region,
        "DescribeSecurityGroups",
        c.describe_security_groups(),
        security_groups
    );
    let interfaces = list_all!(
        calls,
        region,
        "DescribeNetworkInterfaces",
        c.describe_network_interfaces(),
        network_interfaces
    );
    // DescribeAddresses has no pages: one answer holds every address.
    let addresses = async {
        let o = calls
            .one(op("DescribeAddresses", region), 1, c.describe_addresses().send(), |o| {
                Some(o.addresses().len())
            })
            .await?;
        Ok::<_, CallError>(o.addresses.unwrap_or_default())
    };
    let (reservations, volumes, snapshots, images, addresses, nat_gateways, endpoints, vpcs, subnets, sgs, enis) = futures::try_join!(
        reservations,
        volumes,
        snapshots,
        images,
        addresses,
        nat_gateways,
        endpoints,
        vpcs,
        subnets,
        security_groups,
        interfaces
    )?;
    let (security_groups, interfaces) = (sgs, enis);
    let instances = reservations
        .into_iter()
        .flat_map(|r| r.instances.unwrap_or_default())
        .collect();
    Ok(RegionData {
        instances,
        volumes,
        snapshots,
        images,
        addresses,
        nat_gateways,
        endpoints,
        vpcs,
        subnets,
        security_groups,
        interfaces,
        ..RegionData::default()
    })
}
