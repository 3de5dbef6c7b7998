//! What every action works on and answers with: the target a CRN names
//! (its region, id and the SDK session), the answer and its snapshot map,
//! the statuses, and the helpers every action uses (AWS errors read as
//! "gone" or as a message, dry runs, waits, idempotency tokens).

use std::collections::HashMap;
use std::future::Future;
use std::time::{Duration, Instant};

use svc_engine::Crn;
use tokio::sync::OnceCell;

use crate::account::{self, Identity};
use crate::calls::{CallError, Calls, DRY_RUN_PASSED, Op};
use crate::config::Settings;
/// The answer of a dry run that would succeed.
pub const VALIDATED: &str = "validated";
pub const STOPPED: &str = "stopped";
pub const RUNNING: &str = "running";
/// The status of every removal (`delete`, `snapshot_delete`, `release`).
pub const DELETED: &str = "deleted";
pub const RESTORED: &str = "restored";
pub const FAILED: &str = "failed";

/// Tags the plugin writes start with this; they are never copied from a
/// resource to what replaces it.
pub const TAG_PREFIX: &str = "svc:";

/// How long an action waits for AWS to finish what it asked (an instance
/// to stop, a volume to detach or be created) before answering with the
/// state reached so far.
pub const STATE_WAIT: Duration = Duration::from_secs(300);
/// Pause between two looks at a resource being waited for.
const POLL: Duration = Duration::from_secs(2);

/// The SDK configuration and the caller's identity, loaded on the first
/// action and kept for the life of the process (credentials refresh
/// themselves inside the SDK).
struct Session {
    calls: Calls,
    who: Identity,
}

static SESSION: OnceCell<Session> = OnceCell::const_new();

async fn session() -> Result<&'static Session, String> {
    SESSION
        .get_or_try_init(|| async {
            let settings = Settings::from_config(&HashMap::new())?;
            let calls = Calls::load(settings).await;
            let who = account::identity(&calls)
                .await
                .map_err(|e| format!("no usable AWS credentials: {e}"))?;
            Ok(Session { calls, who })
        })
        .await
}

/// The resource an action is on.
pub struct Target {
    pub calls: Calls,
    pub region: String,
    /// The CRN's resource type (`instance`, `volume`, `eip`, ...).
    pub kind: String,
    /// The physical id (`i-0abc`, `app/web/50dc6c495c0c9188`, a log group's name).
    pub id: String,
}

impl Target {
    /// The target a CRN names; an error for a malformed CRN, another
    /// provider, or an account other than the credentials'.
    pub async fn of(crn: &str) -> Result<Target, String> {
        let c = Crn::parse(crn).map_err(|e| e.to_string())?;
        if c.provider != "aws" {
            return Err(format!("{c} is not an AWS resource (provider {:?})", c.provider));
        }
        let s = session().await?;
        if c.account != s.who.account {
            return Err(format!(
                "{c} is in account {}, the credentials are of account {}",
                c.account, s.who.account
            ));
        }
        Ok(Target {
            calls: s.calls.clone(),
            region: c.region.clone(),
            kind: c.kind.clone(),
            id: c.id.clone(),
        })
    }

    /// Another resource of the same region and account.
    pub fn other(&self, kind: &str, id: &str) -> Target {
        Target {
            calls: self.calls.clone(),
            region: self.region.clone(),
            kind: kind.to_owned(),
            id: id.to_owned(),
        }
    }

    pub fn ec2(&self) -> aws_sdk_ec2::Client {
        self.calls.ec2(&self.region)
    }

    /// One request (`fut`) of `service`'s `operation` in the target's
    /// region, through [`Calls::one`] (logged, bounded).
    pub async fn call<T, E, F>(&self, service: &'static str, operation: &'static str, fut: F) -> Result<T, CallError>
    where
        F: Future<Output = Result<T, E>>,
        E: std::error::Error + aws_sdk_ec2::error::ProvideErrorMetadata + 'static,
    {
        let op = Op {
            service,
            operation,
            region: &self.region,
        };
        self.calls.one(op, 1, fut, |_| Some(1)).await
    }
}

/// What an action did: its status and what undoing it needs.
#[derive(Debug, Default)]
pub struct Done {
    pub status: String,
    pub snapshot: HashMap<String, String>,
}

impl Done {
    pub fn new(status: &str) -> Done {
        Done {
            status: status.to_owned(),
            snapshot: HashMap::new(),
        }
    }

    /// Adds `key` to the snapshot map (nothing for `None` or an empty value).
    pub fn with(mut self, key: &str, value: Option<&str>) -> Done {
        if let Some(v) = value.filter(|v| !v.is_empty()) {
            self.snapshot.insert(key.to_owned(), v.to_owned());
        }
        self
    }
}

/// An AWS error in words, with its code.
pub fn why(e: &CallError) -> String {
    match &e.code {
        Some(code) if !e.message.contains(code.as_str()) => format!("{e} ({code})"),
        _ => e.to_string(),
    }
}

/// Whether AWS answered that the resource does not exist (a malformed id
/// is not that: it is an error).
pub fn is_gone(e: &CallError) -> bool {
    e.code.as_deref().is_some_and(|c| {
        c.ends_with(".NotFound")
            || matches!(
                c,
                "LoadBalancerNotFound" | "ResourceNotFoundException" | "NatGatewayNotFound" | "DBInstanceNotFound"
            )
    })
}

/// The answer of a request sent with `DryRun`: AWS tells a request that
/// would have succeeded by the error `DryRunOperation`. Any other error is
/// the reason it would fail; a success means the endpoint ignored the flag
/// and may have carried the request out, which is reported as an error.
pub fn dry_ran<T>(result: Result<T, CallError>) -> Result<(), String> {
    match result {
        Err(e) if e.code.as_deref() == Some(DRY_RUN_PASSED) => Ok(()),
        Err(e) => Err(why(&e)),
        Ok(_) => Err("the endpoint answered a DryRun request as done: the action may have been carried out".into()),
    }
}

/// Polls `probe` until it gives a value or [`STATE_WAIT`] has passed
/// (`None` then).
pub async fn wait_for<T, F, Fut>(mut probe: F) -> Result<Option<T>, String>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<Option<T>, String>>,
{
    let end = Instant::now() + STATE_WAIT;
    loop {
        if let Some(v) = probe().await? {
            return Ok(Some(v));
        }
        if Instant::now() >= end {
            return Ok(None);
        }
        tokio::time::sleep(POLL).await;
    }
}

/// FNV-1a over `parts`: a short, stable idempotency token.
pub fn token(parts: &[&str]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for b in p.bytes().chain([0xff]) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    format!("{h:016x}")
}

/// A resource's tags as a JSON object (for the snapshot map).
pub fn tags_json<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> String {
    let map: serde_json::Map<String, serde_json::Value> = pairs
        .into_iter()
        .map(|(k, v)| (k.to_owned(), serde_json::Value::String(v.to_owned())))
        .collect();
    serde_json::Value::Object(map).to_string()
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_stable_and_tell_inputs_apart() {
        assert_eq!(token(&["vol-1", "saga-1"]), token(&["vol-1", "saga-1"]));
        assert_ne!(token(&["vol-1", "saga-1"]), token(&["vol-1", "saga-2"]));
        assert_ne!(token(&["ab", "c"]), token(&["a", "bc"]));
        assert_eq!(token(&["x"]).len(), 16);
    }

    #[test]
    fn aws_errors_read_as_gone_only_for_missing_resources() {
        let e = |code: &str| CallError {
            call: "ec2 DescribeVolumes in us-east-1".into(),
            code: Some(code.into()),
            message: "service error".into(),
        };
        assert!(is_gone(&e("InvalidVolume.NotFound")));
        assert!(is_gone(&e("LoadBalancerNotFound")));
        assert!(!is_gone(&e("InvalidVolumeID.Malformed")));
        assert!(!is_gone(&e("UnauthorizedOperation")));
        assert_eq!(
            why(&e("UnauthorizedOperation")),
            "ec2 DescribeVolumes in us-east-1: service error (UnauthorizedOperation)"
        );
        assert!(dry_ran::<()>(Err(e(DRY_RUN_PASSED))).is_ok());
        assert!(dry_ran::<()>(Err(e("UnauthorizedOperation"))).is_err_and(|m| m.contains("UnauthorizedOperation")));
        assert!(dry_ran(Ok(())).is_err());
    }
}
