//! The plugin's way to AWS: the SDK configuration (standard credential
//! chain, adaptive retry), a client per region, the bound on requests in
//! flight, and the debug line every call leaves in the log.
//!
//! Every AWS request the plugin makes goes through [`Calls::page`] or
//! [`Calls::one`], which hold a permit of the shared semaphore while the
//! request runs and then log `aws call` at debug with `service`,
//! `operation`, `region`, `page`, `items`, `ms` (or at warn, with
//! `error`, when it failed). Retries inside the SDK are its own (adaptive
//! retry, `max_attempts`).

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use aws_config::retry::RetryConfig;
use aws_config::sts::AssumeRoleProvider;
use aws_config::timeout::TimeoutConfig;
use aws_config::{BehaviorVersion, Region, SdkConfig};
use aws_sdk_ec2::error::ProvideErrorMetadata;
use aws_sdk_sts::config::SharedCredentialsProvider;
use tokio::sync::Semaphore;

use crate::config::{Role, Settings};

/// The client of SDK crate `$sdk` for `$region`, on the shared
/// configuration; the `endpoint_url.<region>` override is EC2's alone
/// (`AWS_ENDPOINT_URL` reaches every service).
macro_rules! regional {
    ($calls:expr, $sdk:ident, $region:expr) => {{
        let conf = $sdk::config::Builder::from(&$calls.sdk).region(Region::new($region.to_owned()));
        $sdk::Client::from_conf(conf.build())
    }};
}

/// Connecting to an endpoint that does not answer fails after this.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// One attempt of one request fails after this.
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(60);
/// The region calls go to before any region is known (STS, `DescribeRegions`),
/// when neither the environment nor a profile names one.
pub const HOME_REGION: &str = "us-east-1";

/// The SDK configuration and the shared bound on requests in flight.
#[derive(Clone)]
pub struct Calls {
    sdk: SdkConfig,
    settings: Arc<Settings>,
    permits: Arc<Semaphore>,
    made: Arc<AtomicU64>,
}

/// One AWS operation in one region, as the log names it.
#[derive(Clone, Copy, Debug)]
pub struct Op<'a> {
    pub service: &'static str,
    pub operation: &'static str,
    pub region: &'a str,
}

impl Calls {
    /// Loads the SDK configuration from the standard credential chain.
    pub async fn load(settings: Settings) -> Calls {
        let sdk = aws_config::defaults(BehaviorVersion::latest())
            .retry_config(RetryConfig::adaptive().with_max_attempts(settings.max_attempts))
            .timeout_config(
                TimeoutConfig::builder()
                    .connect_timeout(CONNECT_TIMEOUT)
                    .operation_attempt_timeout(ATTEMPT_TIMEOUT)
                    .build(),
            )
            .load()
            .await;
        let permits = Arc::new(Semaphore::new(settings.max_in_flight));
        Calls {
            sdk,
            settings: Arc::new(settings),
            permits,
            made: Arc::new(AtomicU64::new(0)),
        }
    }

    /// The same calls (the shared bound, the count) as `role`, through
    /// `AssumeRole` with these credentials; the role is assumed when the
    /// first request needs it, and a failure shows as that request's.
    pub async fn assume(&self, role: &Role) -> Calls {
        let mut provider = AssumeRoleProvider::builder(role.arn.clone())
            .session_name(self.settings.session_name.clone())
            .configure(&self.sdk);
        if let Some(id) = &self.settings.external_id {
            provider = provider.external_id(id.clone());
        }
        let credentials = SharedCredentialsProvider::new(provider.build().await);
        Calls {
            sdk: self.sdk.to_builder().credentials_provider(credentials).build(),
            ..self.clone()
        }
    }

    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The region of the environment or profile, else [`HOME_REGION`].
    pub fn home_region(&self) -> String {
        self.sdk
            .region()
            .map_or_else(|| HOME_REGION.to_owned(), |r| r.as_ref().to_owned())
    }

    /// Requests made so far.
    pub fn made(&self) -> u64 {
        self.made.load(Ordering::Relaxed)
    }

    /// The EC2 client of `region` (with its endpoint override, if any).
    pub fn ec2(&self, region: &str) -> aws_sdk_ec2::Client {
        let mut conf = aws_sdk_ec2::config::Builder::from(&self.sdk).region(Region::new(region.to_owned()));
        if let Some(url) = self.settings.endpoints.get(region) {
            conf = conf.endpoint_url(url);
        }
        aws_sdk_ec2::Client::from_conf(conf.build())
    }

    /// The ELBv2 client of `region`.
    pub fn elb(&self, region: &str) -> aws_sdk_elasticloadbalancingv2::Client {
        regional!(self, aws_sdk_elasticloadbalancingv2, region)
    }

    /// The RDS client of `region`.
    pub fn rds(&self, region: &str) -> aws_sdk_rds::Client {
        regional!(self, aws_sdk_rds, region)
    }

    /// The Lambda client of `region`.
    pub fn lambda(&self, region: &str) -> aws_sdk_lambda::Client {
        regional!(self, aws_sdk_lambda, region)
    }

    /// The CloudWatch client of `region` (usage metrics).
    pub fn cloudwatch(&self, region: &str) -> aws_sdk_cloudwatch::Client {
        regional!(self, aws_sdk_cloudwatch, region)
    }

    /// The CloudWatch Logs client of `region`.
    pub fn logs(&self, region: &str) -> aws_sdk_cloudwatchlogs::Client {
        regional!(self, aws_sdk_cloudwatchlogs, region)
    }

    /// The S3 client of `region` (buckets are listed once, from the home
    /// region; a bucket's region is asked of it).
    pub fn s3(&self, region: &str) -> aws_sdk_s3::Client {
        regional!(self, aws_sdk_s3, region)
    }

    /// The DynamoDB client of `region`.
    pub fn dynamodb(&self, region: &str) -> aws_sdk_dynamodb::Client {
        regional!(self, aws_sdk_dynamodb, region)
    }

    /// The ElastiCache client of `region`.
    pub fn elasticache(&self, region: &str) -> aws_sdk_elasticache::Client {
        regional!(self, aws_sdk_elasticache, region)
    }

    /// The EKS client of `region`.
    pub fn eks(&self, region: &str) -> aws_sdk_eks::Client {
        regional!(self, aws_sdk_eks, region)
    }

    /// The Resource Groups Tagging API client of `region`.
    pub fn tagging(&self, region: &str) -> aws_sdk_resourcegroupstagging::Client {
        regional!(self, aws_sdk_resourcegroupstagging, region)
    }

    /// The STS client of the home region.
    pub fn sts(&self) -> aws_sdk_sts::Client {
        let conf = aws_sdk_sts::config::Builder::from(&self.sdk).region(Region::new(self.home_region()));
        aws_sdk_sts::Client::from_conf(conf.build())
    }

    /// Runs one request (`fut`) under a permit and logs it; `items` counts
    /// what its answer holds, `None` when no request was made (a
    /// paginator's end). The error is rendered with its causes.
    pub async fn one<T, E, F>(
        &self,
        op: Op<'_>,
        page: u32,
        fut: F,
        items: impl FnOnce(&T) -> Option<usize>,
    ) -> Result<T, CallError>
    where
        F: Future<Output = Result<T, E>>,
        E: std::error::Error + ProvideErrorMetadata + 'static,
    {
        // The semaphore is never closed, so a permit always comes.
        let _permit = self.permits.acquire().await.ok();
        let started = Instant::now();
        let result = fut.await;
        let ms = started.elapsed().as_millis() as u64;
        match result {
            Ok(out) => {
                let Some(items) = items(&out) else {
                    return Ok(out);
                };
                self.made.fetch_add(1, Ordering::Relaxed);
                tracing::debug!(
                    service = op.service,
                    operation = op.operation,
                    region = op.region,
                    page,
                    items,
                    ms,
                    "aws call"
                );
                Ok(out)
            }
            Err(e) if e.code() == Some(DRY_RUN_PASSED) => {
                // A DryRun request that would have succeeded: AWS answers
                // it as an error, the log tells it as what it is.
                self.made.fetch_add(1, Ordering::Relaxed);
                tracing::debug!(
                    service = op.service,
                    operation = op.operation,
                    region = op.region,
                    dry_run = true,
                    ms,
                    "aws call"
                );
                Err(CallError {
                    call: format!("{} {} in {}", op.service, op.operation, op.region),
                    code: Some(DRY_RUN_PASSED.to_owned()),
                    message: "the request would have succeeded (DryRun)".into(),
                })
            }
            Err(e) => {
                self.made.fetch_add(1, Ordering::Relaxed);
                let error = describe(&e);
                tracing::warn!(
                    service = op.service,
                    operation = op.operation,
                    region = op.region,
                    page,
                    ms,
                    error = %error,
                    "aws call failed"
                );
                Err(CallError {
                    call: format!("{} {} in {}", op.service, op.operation, op.region),
                    code: e.code().map(str::to_owned),
                    message: error,
                })
            }
        }
    }
}

/// The error code of a DryRun request AWS would have carried out.
pub const DRY_RUN_PASSED: &str = "DryRunOperation";

/// A failed AWS request: which, the AWS error code when AWS answered,
/// and the error with its causes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallError {
    pub call: String,
    pub code: Option<String>,
    pub message: String,
}

impl CallError {
    /// Whether AWS answered that the resource does not exist: deleted
    /// between the list call that named it and the call that describes it.
    pub fn not_found(&self) -> bool {
        self.code.as_deref() == Some("ResourceNotFoundException")
    }
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.call, self.message)
    }
}

/// An SDK error with its causes, which the SDK's own `Display` leaves out
/// (it says only "service error" or "dispatch failure").
pub fn describe(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = s.source();
    }
    out
}

/// Every page of a paginated operation: `$stream` is the SDK paginator's
/// stream (`client.describe_x().into_paginator().send()`); each page is
/// one request made through [`Calls::one`], `$items` counting what a page
/// holds. Evaluates to `Result<Vec<Output>, CallError>`, the first error
/// ending it.
macro_rules! pages {
    ($calls:expr, $op:expr, $stream:expr, $items:expr) => {{
        let mut stream = $stream;
        let mut out = Vec::new();
        let mut outcome = Ok(());
        loop {
            let page = out.len() as u32 + 1;
            let next = $calls.one($op, page, async { stream.next().await.transpose() }, |o| {
                o.as_ref().map($items)
            });
            match next.await {
                Ok(Some(o)) => out.push(o),
                Ok(None) => break,
                Err(e) => {
                    outcome = Err(e);
                    break;
                }
            }
        }
        outcome.map(|()| out)
    }};
}
pub(crate) use pages;
