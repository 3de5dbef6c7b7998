//! Lambda functions of one region (`ListFunctions`), as the mock estate's
//! `lambda:function` nodes and their edges.

use aws_sdk_lambda::types::FunctionConfiguration;

use crate::calls::{CallError, Calls, Op, pages};
use crate::emit::{Out, SECURED_BY, WRITES, parse_lambda_time};
use crate::tagging::Tags;

/// Page size of `ListFunctions` (the API's maximum).
const PAGE: i32 = 50;

/// What Lambda holds in one region.
#[derive(Default)]
pub struct Data {
    pub functions: Vec<FunctionConfiguration>,
}

/// Lists the region's functions (their `$LATEST` configuration).
pub async fn list(calls: &Calls, region: &str) -> Result<Data, CallError> {
    let c = calls.lambda(region);
    let op = Op {
        service: "lambda",
        operation: "ListFunctions",
        region,
    };
    let stream = c.list_functions().max_items(PAGE).into_paginator().send();
    let pages = pages!(calls, op, stream, |o| o.functions().len())?;
    let functions = pages
        .into_iter()
        .flat_map(|o| o.functions.unwrap_or_default())
        .collect();
    Ok(Data { functions })
}

/// The log group a function writes to: its logging configuration's, by
/// default `/aws/lambda/<name>`.
fn log_group(f: &FunctionConfiguration) -> Option<String> {
    let configured = f.logging_config().and_then(|l| l.log_group());
    configured
        .map(str::to_owned)
        .or_else(|| Some(format!("/aws/lambda/{}", f.function_name()?)))
}

/// Writes the region's functions with their tags. `ListFunctions`
/// reports no creation time; the last change is `last_modified`.
pub fn nodes(out: &mut Out<'_>, d: &Data, tags: &Tags) {
    for f in &d.functions {
        let Some(name) = f.function_name() else { continue };
        // ListFunctions leaves the state out; a listed function is active.
        let state = f.state().map_or("Active", |s| s.as_str());
        let mut doc = out.doc(state, None);
        doc.opt_str("runtime", f.runtime().map(|r| r.as_str()))
            .int("memory_mb", f.memory_size().map(i64::from))
            .int("timeout_s", f.timeout().map(i64::from))
            .int("code_size", Some(f.code_size()))
            .opt_str("package_type", f.package_type().map(|p| p.as_str()))
            .list("architectures", f.architectures().iter().map(|a| a.as_str().to_owned()))
            .opt_str(
                "last_modified",
                f.last_modified().and_then(parse_lambda_time).as_deref(),
            )
            .opt_str(
                "vpc_id",
                f.vpc_config().and_then(|v| v.vpc_id()).filter(|v| !v.is_empty()),
            )
            .opt_str("log_group", log_group(f).as_deref())
            .str("arn", f.function_arn());
        out.tagged("function", name, doc, tags.of(f.function_arn()));
    }
}

/// Writes the edges: function `SECURED_BY` its VPC security groups and
/// `WRITES` its log group.
pub fn edges(out: &mut Out<'_>, d: &Data) {
    for f in &d.functions {
        let Some(name) = f.function_name() else { continue };
        for g in f.vpc_config().map(|v| v.security_group_ids()).unwrap_or_default() {
            out.edge(("function", name), ("security-group", g), SECURED_BY);
        }
        if let Some(group) = log_group(f) {
            out.edge(("function", name), ("log-group", &group), WRITES);
        }
    }
}
