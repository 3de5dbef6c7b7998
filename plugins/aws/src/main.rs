//! `svc-plugin-aws`: a provider plugin that discovers an AWS estate through
//! the AWS SDK (README.md in this crate: what it scans, its settings),
//! started by the daemon over the plugin SDK's go-plugin framing.
//!
//! Files: `provider` (the `Provider` service), `account` (identity,
//! regions, preflight), `discover` (one region's list calls), `compute`
//! and `network` (EC2 resources as nodes and edges), one file per other
//! service (its list calls, nodes and edges: `elb`, `rds`,
//! `lambda`, `logs`, `s3`, `dynamodb`, `elasticache`, `eks`), `tagging`
//! (the tags of those whose list calls carry none), `metrics` (CloudWatch
//! usage figures of a listed region), `emit` (CRNs, properties, usage,
//! prices), `calls` (SDK configuration, the bound on requests in flight,
//! the log line of every call), `config` (settings); `remediate` (the
//! `Remediator` service and its actions), `quarantine`, `reversibility`.

mod account;
mod calls;
mod compute;
mod config;
mod discover;
mod dynamodb;
mod eks;
mod elasticache;
mod elb;
mod emit;
mod lambda;
mod logs;
mod metrics;
mod network;
mod provider;
mod quarantine;
mod rds;
mod remediate;
mod reversibility;
mod s3;
mod tagging;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    svc_plugin_sdk::exit_code(
        svc_plugin_sdk::serve_provider_with_remediator(provider::AwsProvider, remediate::AwsRemediator).await,
    )
}
