//! CloudWatch Logs log groups of one region (`DescribeLogGroups`), as the
//! mock estate's `logs:log-group` nodes: stored bytes and retention.

use aws_sdk_cloudwatchlogs::types::LogGroup;

use crate::calls::{CallError, Calls, Op, pages};
use crate::emit::Out;
use crate::tagging::Tags;

/// Page size of `DescribeLogGroups` (the API's maximum).
const PAGE: i32 = 50;
const GIB: f64 = 1_073_741_824.0;

/// What CloudWatch Logs holds in one region.
#[derive(Default)]
pub struct Data {
    pub groups: Vec<LogGroup>,
}

/// Lists the region's log groups.
pub async fn list(calls: &Calls, region: &str) -> Result<Data, CallError> {
    let c = calls.logs(region);
    let op = Op {
        service: "logs",
        operation: "DescribeLogGroups",
        region,
    };
    let stream = c.describe_log_groups().limit(PAGE).into_paginator().send();
    let pages = pages!(calls, op, stream, |o| o.log_groups().len())?;
    let groups = pages
        .into_iter()
        .flat_map(|o| o.log_groups.unwrap_or_default())
        .collect();
    Ok(Data { groups })
}

/// Writes the region's log groups with their tags; `retention_days` is
/// null for a group that never expires its events.
pub fn nodes(out: &mut Out<'_>, d: &Data, tags: &Tags) {
    for g in &d.groups {
        let Some(name) = g.log_group_name() else { continue };
        // `arn` ends in `:*` (every stream); `logGroupArn` is the group's own.
        let arn = g.log_group_arn().or_else(|| g.arn().map(|a| a.trim_end_matches(":*")));
        // Log groups have no lifecycle state; the mock estate calls them active.
        let mut doc = out.doc("active", g.creation_time().map(|ms| ms / 1000));
        doc.float("stored_gib", g.stored_bytes().map(|b| b as f64 / GIB))
            .int("stored_bytes", g.stored_bytes())
            .int_or_null("retention_days", g.retention_in_days().map(i64::from))
            .opt_str("log_group_class", g.log_group_class().map(|c| c.as_str()))
            .int("metric_filters", g.metric_filter_count().map(i64::from))
            .str("arn", arn);
        out.tagged("log-group", name, doc, tags.of(arn));
    }
}
