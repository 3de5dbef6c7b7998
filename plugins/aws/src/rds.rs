//! RDS DB instances of one region (`DescribeDBInstances`, which carries
//! their tags and subnet groups), as the mock estate's `rds:db` nodes and
//! their edges. No rule reads DB snapshots, so they are not listed.

use aws_sdk_rds::types::DbInstance;

use crate::calls::{CallError, Calls, Op, pages};
use crate::emit::{CONTAINS, Out, SECURED_BY, secs};

/// Page size of `DescribeDBInstances` (the API's maximum).
const PAGE: i32 = 100;

/// What RDS holds in one region.
#[derive(Default)]
pub struct Data {
    pub instances: Vec<DbInstance>,
}

/// Lists the region's DB instances.
pub async fn list(calls: &Calls, region: &str) -> Result<Data, CallError> {
    let c = calls.rds(region);
    let op = Op {
        service: "rds",
        operation: "DescribeDBInstances",
        region,
    };
    let stream = c.describe_db_instances().max_records(PAGE).into_paginator().send();
    let pages = pages!(calls, op, stream, |o| o.db_instances().len())?;
    let instances = pages
        .into_iter()
        .flat_map(|o| o.db_instances.unwrap_or_default())
        .collect();
    Ok(Data { instances })
}

/// The subnets a DB instance runs in: those of its subnet group in its
/// zone (and its standby's); all of the group's when none matches.
fn subnets(db: &DbInstance) -> Vec<&str> {
    let Some(group) = db.db_subnet_group() else {
        return Vec::new();
    };
    let zones = [db.availability_zone(), db.secondary_availability_zone()];
    let all: Vec<(&str, Option<&str>)> = group
        .subnets()
        .iter()
        .filter_map(|s| {
            let zone = s.subnet_availability_zone().and_then(|z| z.name());
            Some((s.subnet_identifier()?, zone))
        })
        .collect();
    let home: Vec<&str> = all
        .iter()
        .filter(|(_, z)| z.is_some() && zones.contains(z))
        .map(|(s, _)| *s)
        .collect();
    if home.is_empty() {
        all.into_iter().map(|(s, _)| s).collect()
    } else {
        home
    }
}

/// Writes the region's DB instances.
pub fn nodes(out: &mut Out<'_>, d: &Data) {
    for db in &d.instances {
        let Some(id) = db.db_instance_identifier() else {
            continue;
        };
        let mut doc = out.doc(
            db.db_instance_status().unwrap_or("unknown"),
            secs(db.instance_create_time()),
        );
        doc.opt_str("db_class", db.db_instance_class())
            .opt_str("engine", db.engine())
            .opt_str("engine_version", db.engine_version())
            .int("allocated_gib", db.allocated_storage().map(i64::from))
            .opt_str("storage_type", db.storage_type())
            .bool("multi_az", db.multi_az())
            .opt_str("endpoint", db.endpoint().and_then(|e| e.address()))
            .opt_str("availability_zone", db.availability_zone())
            .opt_str("vpc_id", db.db_subnet_group().and_then(|g| g.vpc_id()))
            .list("subnet_ids", subnets(db).into_iter().map(str::to_owned))
            .bool("deletion_protection", db.deletion_protection())
            .opt_str("db_cluster_identifier", db.db_cluster_identifier())
            .str("arn", db.db_instance_arn());
        let tags = db
            .tag_list()
            .iter()
            .filter_map(|t| Some((t.key()?, t.value().unwrap_or(""))));
        out.tagged("db", id, doc, tags);
    }
}

/// Writes the edges: subnet `CONTAINS` DB instance, instance `SECURED_BY`
/// each of its VPC security groups.
pub fn edges(out: &mut Out<'_>, d: &Data) {
    for db in &d.instances {
        let Some(id) = db.db_instance_identifier() else {
            continue;
        };
        for s in subnets(db) {
            out.edge(("subnet", s), ("db", id), CONTAINS);
        }
        for g in db.vpc_security_groups() {
            let group = g.vpc_security_group_id().unwrap_or_default();
            out.edge(("db", id), ("security-group", group), SECURED_BY);
        }
    }
}

#[cfg(test)]
mod tests {
    use aws_sdk_rds::types::{AvailabilityZone, DbSubnetGroup, Subnet};

    use super::*;

    fn subnet(id: &str, zone: Option<&str>) -> Subnet {
        let mut s = Subnet::builder().subnet_identifier(id);
        if let Some(z) = zone {
            s = s.subnet_availability_zone(AvailabilityZone::builder().name(z).build());
        }
        s.build()
    }

    #[test]
    fn a_db_is_in_the_subnets_of_its_zones() {
        let group = DbSubnetGroup::builder()
            .subnets(subnet("subnet-a", Some("us-east-1a")))
            .subnets(subnet("subnet-b", Some("us-east-1b")))
            .subnets(subnet("subnet-c", Some("us-east-1c")))
            .build();
        let db = DbInstance::builder()
            .availability_zone("us-east-1b")
            .db_subnet_group(group.clone())
            .build();
        assert_eq!(subnets(&db), ["subnet-b"]);
        let multi = DbInstance::builder()
            .availability_zone("us-east-1b")
            .secondary_availability_zone("us-east-1c")
            .db_subnet_group(group)
            .build();
        assert_eq!(subnets(&multi), ["subnet-b", "subnet-c"]);
        let unknown = DbSubnetGroup::builder()
            .subnets(subnet("subnet-a", None))
            .subnets(subnet("subnet-b", None))
            .build();
        let db = DbInstance::builder()
            .availability_zone("us-east-1b")
            .db_subnet_group(unknown)
            .build();
        assert_eq!(subnets(&db), ["subnet-a", "subnet-b"]);
        assert!(subnets(&DbInstance::builder().build()).is_empty());
    }
}
