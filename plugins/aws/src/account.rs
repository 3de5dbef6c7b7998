//! Who the credentials are (`GetCallerIdentity`), which regions to scan
//! (`DescribeRegions` when none are configured), and the preflight check
//! built on both.

use futures::future::join_all;
use svc_proto::provider::v1::PreflightResponse;

use crate::calls::{CallError, Calls, Op};

/// The account and partition the credentials belong to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identity {
    pub account: String,
    /// `aws`, `aws-cn`, `aws-us-gov`: the second field of the caller's ARN.
    pub partition: String,
    pub arn: String,
}

/// `GetCallerIdentity`, which needs no permission: it fails only when
/// there are no usable credentials (or STS cannot be reached).
pub async fn identity(calls: &Calls) -> Result<Identity, CallError> {
    let home = calls.home_region();
    let op = Op {
        service: "sts",
        operation: "GetCallerIdentity",
        region: &home,
    };
    let out = calls
        .one(op, 1, calls.sts().get_caller_identity().send(), |_| Some(1))
        .await?;
    let arn = out.arn().unwrap_or_default().to_owned();
    let partition = arn
        .split(':')
        .nth(1)
        .filter(|p| !p.is_empty())
        .unwrap_or("aws")
        .to_owned();
    match out.account() {
        Some(account) if !account.is_empty() => Ok(Identity {
            account: account.to_owned(),
            partition,
            arn,
        }),
        _ => Err(CallError {
            call: format!("sts GetCallerIdentity in {home}"),
            code: None,
            message: "the answer names no account".into(),
        }),
    }
}

/// The configured regions, else the account's enabled regions.
pub async fn regions(calls: &Calls) -> Result<Vec<String>, CallError> {
    if let Some(r) = &calls.settings().regions {
        return Ok(r.clone());
    }
    let home = calls.home_region();
    let op = Op {
        service: "ec2",
        operation: "DescribeRegions",
        region: &home,
    };
    let out = calls
        .one(op, 1, calls.ec2(&home).describe_regions().send(), |o| {
            Some(o.regions().len())
        })
        .await?;
    let mut names: Vec<String> = out
        .regions()
        .iter()
        .filter_map(|r| r.region_name())
        .map(str::to_owned)
        .collect();
    names.sort();
    Ok(names)
}

/// One cheap read in `region` (`DescribeAvailabilityZones`).
async fn probe(calls: &Calls, region: &str) -> Result<(), CallError> {
    let op = Op {
        service: "ec2",
        operation: "DescribeAvailabilityZones",
        region,
    };
    let call = calls.ec2(region).describe_availability_zones().send();
    calls
        .one(op, 1, call, |o| Some(o.availability_zones().len()))
        .await
        .map(|_| ())
}

/// What a failed probe of `region` says is missing.
fn missing_for(region: &str, e: &CallError) -> String {
    match e.code.as_deref() {
        Some("UnauthorizedOperation" | "AccessDenied" | "AccessDeniedException") => {
            format!("permission ec2:DescribeAvailabilityZones in {region}")
        }
        Some("OptInRequired" | "AuthFailure" | "InvalidClientTokenId") => format!("region {region} (not enabled)"),
        _ => format!("region {region} (unreachable)"),
    }
}

/// The credentials (`GetCallerIdentity`), the region list, then one read
/// per region, all regions at once; reports everything that is missing.
pub async fn preflight(calls: &Calls) -> PreflightResponse {
    let who = match identity(calls).await {
        Ok(w) => w,
        Err(e) => {
            let missing = if e.code.as_deref() == Some("AccessDenied") {
                "permission sts:GetCallerIdentity"
            } else {
                "credentials"
            };
            return PreflightResponse {
                ok: false,
                message: format!("no usable AWS credentials: {e}"),
                missing: vec![missing.into()],
            };
        }
    };
    let regions = match regions(calls).await {
        Ok(r) => r,
        Err(e) => {
            return PreflightResponse {
                ok: false,
                message: format!("account {}: cannot list its regions: {e}", who.account),
                missing: vec!["permission ec2:DescribeRegions".into()],
            };
        }
    };
    let probes = join_all(regions.iter().map(|r| probe(calls, r))).await;
    let mut missing = Vec::new();
    let mut problems = Vec::new();
    for (region, result) in regions.iter().zip(probes) {
        if let Err(e) = result {
            missing.push(missing_for(region, &e));
            problems.push(e.to_string());
        }
    }
    let reachable = regions.len() - problems.len();
    let mut message = format!(
        "account {} as {}: {reachable} of {} regions answer",
        who.account,
        who.arn,
        regions.len()
    );
    if !problems.is_empty() {
        message.push_str(": ");
        message.push_str(&problems.join("; "));
    }
    PreflightResponse {
        ok: missing.is_empty(),
        message,
        missing,
    }
}
