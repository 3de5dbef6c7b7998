//! Who the credentials are (`GetCallerIdentity`), which regions to scan
//! (`DescribeRegions` when none are configured), and the preflight check
//! built on both.

use futures::future::join_all;
use svc_plugin_sdk::UnlistedPart;
use svc_proto::provider::v1::PreflightResponse;
use tonic::Status;

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

/// One account to scan: the calls that reach it, who they are there,
/// and its regions.
pub struct Account {
    pub calls: Calls,
    pub who: Identity,
    pub regions: Vec<String>,
}

/// The accounts to scan, and those that cannot be reached, with why.
pub struct Accounts {
    pub reached: Vec<Account>,
    pub unreached: Vec<UnlistedPart>,
}

/// The accounts the settings name: the credentials' own (unless
/// `include_caller_account` is false) and one per role of `accounts`,
/// each with its identity and regions. Fails when the credentials
/// themselves are unusable, or when no account can be reached.
pub async fn accounts(calls: &Calls) -> Result<Accounts, Status> {
    let caller = identity(calls)
        .await
        .map_err(|e| Status::unauthenticated(format!("no usable AWS credentials: {e}")))?;
    let settings = calls.settings();
    let mut out = Accounts {
        reached: Vec::new(),
        unreached: Vec::new(),
    };
    let unreached = |account: &str, error: String| UnlistedPart {
        account: Some(account.to_owned()),
        error,
        ..UnlistedPart::default()
    };
    if settings.include_caller_account {
        match regions(calls).await {
            Ok(regions) => out.reached.push(Account {
                calls: calls.clone(),
                who: caller.clone(),
                regions,
            }),
            Err(e) => out.unreached.push(unreached(
                &caller.account,
                format!("cannot list the account's regions: {e}"),
            )),
        }
    }
    let roles = join_all(settings.roles.iter().map(|role| async move {
        let assumed = calls.assume(role).await;
        let who = identity(&assumed)
            .await
            .map_err(|e| format!("cannot assume {}: {e}", role.arn))?;
        if who.account != role.account {
            return Err(format!("{} answers as account {}", role.arn, who.account));
        }
        let regions = regions(&assumed)
            .await
            .map_err(|e| format!("cannot list the account's regions as {}: {e}", role.arn))?;
        Ok(Account {
            calls: assumed,
            who,
            regions,
        })
    }))
    .await;
    for (role, result) in settings.roles.iter().zip(roles) {
        match result {
            Ok(a) => out.reached.push(a),
            Err(why) => {
                tracing::warn!(role = %role.arn, error = %why, "account not reached; none of its resources are reported");
                out.unreached.push(unreached(&role.account, why));
            }
        }
    }
    if out.reached.is_empty() {
        let why: Vec<String> = out.unreached.iter().map(|u| u.error.clone()).collect();
        return Err(Status::unavailable(format!(
            "no account could be reached: {}",
            why.join("; ")
        )));
    }
    Ok(out)
}

/// The credentials (`GetCallerIdentity`), each account (assuming its role)
/// and its region list, then one read per region, all at once; reports
/// everything that is missing. `ok` as long as something can be scanned:
/// a region or an account that does not answer fails only itself in a
/// scan (and is named in `missing`).
pub async fn preflight(calls: &Calls) -> PreflightResponse {
    let accounts = match accounts(calls).await {
        Ok(a) => a,
        Err(status) => {
            let message = status.message().to_owned();
            let missing = if status.code() == tonic::Code::Unauthenticated {
                if message.contains("AccessDenied") {
                    "permission sts:GetCallerIdentity"
                } else {
                    "credentials"
                }
            } else {
                "an account whose regions can be listed (permission ec2:DescribeRegions)"
            };
            return PreflightResponse {
                ok: false,
                message,
                missing: vec![missing.into()],
            };
        }
    };
    let probes = join_all(accounts.reached.iter().map(|a| async move {
        let results = join_all(a.regions.iter().map(|r| probe(&a.calls, r))).await;
        (a, results)
    }))
    .await;
    let mut missing = Vec::new();
    let mut lines = Vec::new();
    let mut answering = 0;
    for (a, results) in probes {
        let mut problems = Vec::new();
        for (region, result) in a.regions.iter().zip(results) {
            if let Err(e) = result {
                missing.push(missing_for(region, &e));
                problems.push(e.to_string());
            }
        }
        let reachable = a.regions.len() - problems.len();
        answering += reachable;
        let mut line = format!(
            "account {} as {}: {reachable} of {} regions answer",
            a.who.account,
            a.who.arn,
            a.regions.len()
        );
        if !problems.is_empty() {
            line.push_str(": ");
            line.push_str(&problems.join("; "));
        }
        lines.push(line);
    }
    for u in &accounts.unreached {
        let account = u.account.as_deref().unwrap_or_default();
        missing.push(format!("account {account} (not reached)"));
        lines.push(format!("account {account}: {}", u.error));
    }
    PreflightResponse {
        ok: answering > 0,
        message: lines.join("\n"),
        missing,
    }
}
