//! The `Provider` service over AWS: Handshake, Scan (regions concurrently,
//! each streamed as soon as it is listed) and PreflightCheck; quarantine
//! and reversibility are answered by `crate::quarantine` and
//! `crate::reversibility`.

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use svc_plugin_sdk::{ScanStream, UnlistedPart, response_channel, scan_end_unlisted};
use svc_proto::provider::v1::provider_server::Provider;
use svc_proto::provider::v1::{
    Edge, HandshakeRequest, HandshakeResponse, Node, PreflightRequest, PreflightResponse, QuarantineRequest,
    QuarantineResponse, ReversibilityProof, ReversibilityRequest, ScanRequest, ScanResponse,
};
use tokio::sync::mpsc::Sender;
use tonic::{Request, Response, Status};

use crate::calls::Calls;
use crate::config::Settings;
use crate::emit::Out;
use crate::{account, compute, discover, dynamodb, eks, elasticache, elb, lambda, logs, metrics, network, rds, s3};

/// The plugin's major version; a daemon with another major is refused.
const PLUGIN_MAJOR: &str = "0";
/// ScanResponses buffered ahead of the daemon.
const SCAN_CHANNEL: usize = 4;
/// Nodes (or edges) per ScanResponse.
const CHUNK: usize = 1000;

#[derive(Clone, Copy, Debug, Default)]
pub struct AwsProvider;

fn handshake(daemon_version: &str) -> HandshakeResponse {
    let (compatible, message) = svc_plugin_sdk::compatibility(daemon_version, PLUGIN_MAJOR);
    HandshakeResponse {
        compatible,
        plugin_version: env!("CARGO_PKG_VERSION").to_owned(),
        message,
    }
}

/// One region's nodes and edges, nodes first so every edge's ends are
/// known when it arrives.
fn region_responses(
    region: &str,
    who: &account::Identity,
    data: &discover::RegionData,
    buckets: &[s3::Bucket],
) -> Vec<ScanResponse> {
    let mut out = Out::new(region, &who.account, &who.partition).with_usage(&data.usage);
    compute::nodes(&mut out, data);
    network::nodes(&mut out, data);
    elb::nodes(&mut out, &data.elb);
    rds::nodes(&mut out, &data.rds);
    lambda::nodes(&mut out, &data.lambda, &data.tags);
    logs::nodes(&mut out, &data.logs, &data.tags);
    s3::nodes(&mut out, buckets, &data.tags);
    dynamodb::nodes(&mut out, &data.dynamodb, &data.tags);
    elasticache::nodes(&mut out, &data.elasticache, &data.tags);
    eks::nodes(&mut out, &data.eks);
    compute::edges(&mut out, data);
    network::edges(&mut out, data);
    elb::edges(&mut out, &data.elb);
    rds::edges(&mut out, &data.rds);
    lambda::edges(&mut out, &data.lambda);
    elasticache::edges(&mut out, &data.elasticache);
    eks::edges(&mut out, &data.eks, &data.instances);
    let mut responses = Vec::new();
    let mut nodes: Vec<Node> = out.nodes;
    let mut edges: Vec<Edge> = out.edges;
    while !nodes.is_empty() {
        let rest = nodes.split_off(nodes.len().min(CHUNK));
        responses.push(ScanResponse {
            nodes: std::mem::replace(&mut nodes, rest),
            edges: Vec::new(),
        });
    }
    while !edges.is_empty() {
        let rest = edges.split_off(edges.len().min(CHUNK));
        responses.push(ScanResponse {
            nodes: Vec::new(),
            edges: std::mem::replace(&mut edges, rest),
        });
    }
    responses
}

/// Lists every region of every account concurrently and streams each as
/// it completes. A region that fails sends nothing; when others were
/// listed the stream ends OK with a trailer naming it
/// ([`scan_end_unlisted`]), with the accounts that could not be reached,
/// so the daemon keeps what it knew there and takes nothing there for
/// deleted, while the regions listed count. When no region was listed the
/// scan fails (`UNAVAILABLE`), and the daemon keeps everything.
///
/// S3 is global: each account's buckets are listed once, first, and each
/// is sent with the region it lives in (buckets of regions not scanned are
/// left out). When that listing fails, the account's regions are sent
/// without buckets and the trailer names the account's `s3` service.
async fn produce(accounts: account::Accounts, tx: Sender<Result<ScanResponse, Status>>) {
    let account::Accounts { reached, mut unreached } = accounts;
    let mut unlisted = std::mem::take(&mut unreached);
    let buckets = futures::future::join_all(reached.iter().map(|a| async move {
        let home = a.calls.home_region();
        s3::list(&a.calls, &home).await
    }))
    .await;
    let mut buckets_of = Vec::with_capacity(reached.len());
    for (a, listed) in reached.iter().zip(buckets) {
        buckets_of.push(listed.unwrap_or_else(|e| {
            tracing::warn!(account = %a.who.account, error = %e, "S3 listing failed; no bucket is reported");
            unlisted.push(UnlistedPart {
                account: Some(a.who.account.clone()),
                service: Some("s3".into()),
                error: e.to_string(),
                ..UnlistedPart::default()
            });
            Vec::new()
        }));
    }
    let mut pending: FuturesUnordered<_> = reached
        .iter()
        .enumerate()
        .flat_map(|(k, a)| a.regions.iter().map(move |r| (k, a, r)))
        .map(|(k, a, r)| async move {
            // Then the usage figures of what was listed, which the region
            // is reported without when CloudWatch fails.
            let mut listed = discover::region(&a.calls, r).await;
            if let Ok(l) = &mut listed {
                l.data.usage = metrics::usage(&a.calls, r, &l.data).await;
            }
            (k, r.as_str(), listed)
        })
        .collect();
    let regions: usize = reached.iter().map(|a| a.regions.len()).sum();
    let (mut nodes, mut edges, mut failed) = (0usize, 0usize, Vec::new());
    while let Some((k, region, listed)) = pending.next().await {
        let who = &reached[k].who;
        let listed = match listed {
            Ok(l) => l,
            Err(e) => {
                tracing::warn!(account = %who.account, region, error = %e,
                    "region failed; none of its resources are reported");
                failed.push(format!("{} {region}: {e}", who.account));
                unlisted.push(UnlistedPart {
                    account: Some(who.account.clone()),
                    region: Some(region.to_owned()),
                    error: e.to_string(),
                    ..UnlistedPart::default()
                });
                continue;
            }
        };
        for (service, e) in &listed.failed {
            tracing::warn!(account = %who.account, region, service, error = %e,
                "service failed in the region; none of its resources there are reported");
            unlisted.push(UnlistedPart {
                account: Some(who.account.clone()),
                region: Some(region.to_owned()),
                service: Some((*service).to_owned()),
                error: e.to_string(),
                ..UnlistedPart::default()
            });
        }
        let buckets: &[s3::Bucket] = if listed.failed("s3") { &[] } else { &buckets_of[k] };
        let responses = region_responses(region, who, &listed.data, buckets);
        let (n, e) = responses
            .iter()
            .fold((0, 0), |(n, e), r| (n + r.nodes.len(), e + r.edges.len()));
        tracing::info!(account = %who.account, region, nodes = n, edges = e, "region listed");
        (nodes, edges) = (nodes + n, edges + e);
        for r in responses {
            if tx.send(Ok(r)).await.is_err() {
                tracing::info!("scan cancelled by the daemon");
                return;
            }
        }
    }
    let made = reached.first().map_or(0, |a| a.calls.made());
    if unlisted.is_empty() {
        tracing::info!(
            accounts = reached.len(),
            regions,
            nodes,
            edges,
            calls = made,
            "scan finished"
        );
        return;
    }
    tracing::warn!(
        failed = failed.len(),
        regions,
        unlisted = unlisted.len(),
        calls = made,
        "scan incomplete"
    );
    let end = if failed.len() == regions {
        Status::unavailable(format!(
            "every region failed ({} of {regions}): {}",
            failed.len(),
            failed.join("; ")
        ))
    } else {
        scan_end_unlisted(&unlisted).unwrap_or_else(|| {
            Status::unavailable(format!(
                "{} parts of the estate were not listed, too many to name: the scan counts as failed",
                unlisted.len()
            ))
        })
    };
    let _ = tx.send(Err(end)).await;
}

#[tonic::async_trait]
impl Provider for AwsProvider {
    async fn handshake(&self, request: Request<HandshakeRequest>) -> Result<Response<HandshakeResponse>, Status> {
        Ok(Response::new(handshake(&request.get_ref().daemon_version)))
    }

    type ScanStream = ScanStream;

    async fn scan(&self, request: Request<ScanRequest>) -> Result<Response<ScanStream>, Status> {
        let settings = Settings::from_config(&request.get_ref().config).map_err(Status::invalid_argument)?;
        let calls = Calls::load(settings).await;
        let accounts = account::accounts(&calls).await?;
        for a in &accounts.reached {
            tracing::info!(account = %a.who.account, identity = %a.who.arn, regions = ?a.regions, "scan started");
        }
        let (tx, stream) = response_channel(SCAN_CHANNEL);
        tokio::spawn(produce(accounts, tx));
        Ok(Response::new(stream))
    }

    async fn apply_quarantine(
        &self,
        request: Request<QuarantineRequest>,
    ) -> Result<Response<QuarantineResponse>, Status> {
        Ok(Response::new(crate::quarantine::apply(request.get_ref()).await))
    }

    async fn check_reversibility(
        &self,
        request: Request<ReversibilityRequest>,
    ) -> Result<Response<ReversibilityProof>, Status> {
        Ok(Response::new(crate::reversibility::check(request.get_ref()).await))
    }

    async fn preflight_check(&self, request: Request<PreflightRequest>) -> Result<Response<PreflightResponse>, Status> {
        let settings = match Settings::from_config(&request.get_ref().config) {
            Ok(s) => s,
            Err(e) => {
                return Ok(Response::new(PreflightResponse {
                    ok: false,
                    message: e,
                    missing: vec!["valid [plugins.config.aws]".into()],
                }));
            }
        };
        Ok(Response::new(account::preflight(&Calls::load(settings).await).await))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handshake_compatibility() {
        assert!(handshake("0.1.0").compatible);
        let r = handshake("1.0.0");
        assert!(!r.compatible && r.message.contains("major 1"), "{}", r.message);
        assert_eq!(r.plugin_version, env!("CARGO_PKG_VERSION"));
    }
}
