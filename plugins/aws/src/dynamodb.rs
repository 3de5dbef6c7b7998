//! DynamoDB tables of one region: `ListTables`, then one `DescribeTable`
//! per table (the list names them only), as the mock estate's
//! `dynamodb:table` nodes. Their tags come from the tagging API.

use aws_sdk_dynamodb::types::{BillingMode, TableDescription};

use crate::calls::{CallError, Calls, Op, pages};
use crate::emit::{Out, secs};
use crate::tagging::Tags;

/// Page size of `ListTables` (the API's maximum).
const PAGE: i32 = 100;
const GIB: f64 = 1_073_741_824.0;

/// What DynamoDB holds in one region.
#[derive(Default)]
pub struct Data {
    pub tables: Vec<TableDescription>,
}

fn op<'a>(operation: &'static str, region: &'a str) -> Op<'a> {
    Op {
        service: "dynamodb",
        operation,
        region,
    }
}

/// Lists the region's tables and describes each, concurrently under the
/// shared bound. A table deleted between the two calls is left out.
pub async fn list(calls: &Calls, region: &str) -> Result<Data, CallError> {
    let c = calls.dynamodb(region);
    let stream = c.list_tables().limit(PAGE).into_paginator().send();
    let pages = pages!(calls, op("ListTables", region), stream, |o| o.table_names().len())?;
    let names: Vec<String> = pages
        .into_iter()
        .flat_map(|o| o.table_names.unwrap_or_default())
        .collect();
    let described = names.iter().map(|name| {
        let call = c.describe_table().table_name(name).send();
        async move {
            match calls.one(op("DescribeTable", region), 1, call, |_| Some(1)).await {
                Ok(o) => Ok(o.table),
                Err(e) if e.not_found() => Ok(None),
                Err(e) => Err(e),
            }
        }
    });
    let tables = futures::future::try_join_all(described).await?;
    Ok(Data {
        tables: tables.into_iter().flatten().collect(),
    })
}

/// The table's billing mode: a table AWS reports no billing summary for
/// has always been provisioned.
fn billing_mode(t: &TableDescription) -> &str {
    t.billing_mode_summary()
        .and_then(|b| b.billing_mode())
        .map_or("PROVISIONED", BillingMode::as_str)
}

/// Writes the region's tables. `read_capacity` and `write_capacity` are
/// the table's provisioned units (0 on demand), as the rules compare them
/// with its consumed units; its indexes' own are `gsi_read_capacity` and
/// `gsi_write_capacity`.
pub fn nodes(out: &mut Out<'_>, d: &Data, tags: &Tags) {
    for t in &d.tables {
        let Some(name) = t.table_name() else { continue };
        let state = t.table_status().map_or("unknown", |s| s.as_str());
        let mut doc = out.doc(state, secs(t.creation_date_time()));
        let units = t.provisioned_throughput();
        let provisioned = billing_mode(t) == "PROVISIONED";
        let capacity = |v: Option<i64>| Some(if provisioned { v.unwrap_or(0) } else { 0 });
        let gsi = |f: fn(&aws_sdk_dynamodb::types::ProvisionedThroughputDescription) -> Option<i64>| {
            let sum = t
                .global_secondary_indexes()
                .iter()
                .filter_map(|i| i.provisioned_throughput().and_then(f))
                .sum();
            Some(if provisioned { sum } else { 0 })
        };
        doc.str("billing_mode", Some(billing_mode(t)))
            .int("read_capacity", capacity(units.and_then(|u| u.read_capacity_units())))
            .int("write_capacity", capacity(units.and_then(|u| u.write_capacity_units())))
            .int("gsi_read_capacity", gsi(|u| u.read_capacity_units()))
            .int("gsi_write_capacity", gsi(|u| u.write_capacity_units()))
            .int("item_count", t.item_count())
            .int("size_bytes", t.table_size_bytes())
            .float("size_gib", t.table_size_bytes().map(|b| b as f64 / GIB))
            .opt_str(
                "table_class",
                t.table_class_summary()
                    .and_then(|c| c.table_class())
                    .map(|c| c.as_str()),
            )
            .bool("deletion_protection", t.deletion_protection_enabled())
            .str("arn", t.table_arn());
        out.tagged("table", name, doc, tags.of(t.table_arn()));
    }
}

#[cfg(test)]
mod tests {
    use aws_sdk_dynamodb::types::{BillingModeSummary, ProvisionedThroughputDescription};
    use serde_json::Value;

    use super::*;

    fn props(out: &Out<'_>, i: usize) -> Value {
        serde_json::from_slice(&out.nodes[i].properties).unwrap()
    }

    #[test]
    fn capacity_is_zero_on_demand_and_the_mode_defaults_to_provisioned() {
        let units = ProvisionedThroughputDescription::builder()
            .read_capacity_units(5)
            .write_capacity_units(2)
            .build();
        let old = TableDescription::builder()
            .table_name("old")
            .provisioned_throughput(units.clone())
            .build();
        let on_demand = TableDescription::builder()
            .table_name("new")
            .billing_mode_summary(
                BillingModeSummary::builder()
                    .billing_mode(BillingMode::PayPerRequest)
                    .build(),
            )
            .provisioned_throughput(units)
            .build();
        let d = Data {
            tables: vec![old, on_demand],
        };
        let mut out = Out::new("us-east-1", "1", "aws");
        nodes(&mut out, &d, &Tags::default());
        let (a, b) = (props(&out, 0), props(&out, 1));
        assert_eq!(
            (
                a["billing_mode"].clone(),
                a["read_capacity"].clone(),
                a["write_capacity"].clone()
            ),
            ("PROVISIONED".into(), 5.into(), 2.into())
        );
        assert_eq!(
            (
                b["billing_mode"].clone(),
                b["read_capacity"].clone(),
                b["write_capacity"].clone()
            ),
            ("PAY_PER_REQUEST".into(), 0.into(), 0.into())
        );
        assert_eq!(a["state"], "unknown");
        assert!(out.nodes[0].cost > 0.0 && out.nodes[1].cost == 0.0);
    }
}
