//! The `Provider` service over AWS: Handshake, Scan (regions concurrently,
//! each streamed as soon as it is listed) and PreflightCheck. Quarantine
//! and reversibility are not served yet and say so.

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use svc_plugin_sdk::{ScanStream, response_channel};
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
use crate::{account, compute, discover, elb, lambda, logs, network, rds, s3};

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
    lambda::nodes(&mut out, &data.lambda);
    logs::nodes(&mut out, &data.logs);
    s3::nodes(&mut out, buckets);
    compute::edges(&mut out, data);
    network::edges(&mut out, data);
    elb::edges(&mut out, &data.elb);
    rds::edges(&mut out, &data.rds);
    lambda::edges(&mut out, &data.lambda);
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

/// Lists every region concurrently and streams each as it completes. A
/// region that fails sends nothing; the stream then ends with an error
/// naming it, so the daemon keeps what it knew of this provider rather
/// than take the failed region's resources for deleted.
///
/// S3 is global: its buckets are listed once, first, and each is sent with
/// the region it lives in (buckets of regions not scanned are left out).
/// When that listing fails, the regions are sent without buckets and the
/// scan ends with the same error, naming S3.
async fn produce(calls: Calls, who: account::Identity, regions: Vec<String>, tx: Sender<Result<ScanResponse, Status>>) {
    let home = calls.home_region();
    let (buckets, s3_failed) = match s3::list(&calls, &home).await {
        Ok(b) => (b, None),
        Err(e) => {
            tracing::warn!(error = %e, "S3 listing failed; no bucket is reported");
            (Vec::new(), Some(format!("s3 (every region's buckets): {e}")))
        }
    };
    let mut pending: FuturesUnordered<_> = regions
        .iter()
        .map(|r| {
            let calls = &calls;
            async move { (r.as_str(), discover::region(calls, r).await) }
        })
        .collect();
    let (mut nodes, mut edges, mut failed) = (0usize, 0usize, Vec::new());
    while let Some((region, listed)) = pending.next().await {
        let data = match listed {
            Ok(d) => d,
            Err(e) => {
                tracing::warn!(region, error = %e, "region failed; none of its resources are reported");
                failed.push(format!("{region}: {e}"));
                continue;
            }
        };
        let responses = region_responses(region, &who, &data, &buckets);
        let (n, e) = responses
            .iter()
            .fold((0, 0), |(n, e), r| (n + r.nodes.len(), e + r.edges.len()));
        tracing::info!(region, nodes = n, edges = e, "region listed");
        (nodes, edges) = (nodes + n, edges + e);
        for r in responses {
            if tx.send(Ok(r)).await.is_err() {
                tracing::info!("scan cancelled by the daemon");
                return;
            }
        }
    }
    let made = calls.made();
    let regions_failed = failed.len();
    failed.extend(s3_failed);
    if failed.is_empty() {
        tracing::info!(regions = regions.len(), nodes, edges, calls = made, "scan finished");
        return;
    }
    tracing::warn!(
        failed = regions_failed,
        regions = regions.len(),
        calls = made,
        "scan incomplete"
    );
    let message = format!(
        "{} of {} regions failed (the others were listed; this scan is incomplete): {}",
        regions_failed,
        regions.len(),
        failed.join("; ")
    );
    let _ = tx.send(Err(Status::unavailable(message))).await;
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
        let who = account::identity(&calls)
            .await
            .map_err(|e| Status::unauthenticated(format!("no usable AWS credentials: {e}")))?;
        let regions = account::regions(&calls)
            .await
            .map_err(|e| Status::unavailable(format!("cannot list the account's regions: {e}")))?;
        tracing::info!(account = %who.account, regions = ?regions, "scan started");
        let (tx, stream) = response_channel(SCAN_CHANNEL);
        tokio::spawn(produce(calls, who, regions, tx));
        Ok(Response::new(stream))
    }

    async fn apply_quarantine(
        &self,
        request: Request<QuarantineRequest>,
    ) -> Result<Response<QuarantineResponse>, Status> {
        let req = request.get_ref();
        Ok(Response::new(QuarantineResponse {
            success: false,
            message: format!(
                "the aws plugin does not apply quarantines yet ({} on {} not done)",
                req.action, req.crn
            ),
        }))
    }

    async fn check_reversibility(
        &self,
        _request: Request<ReversibilityRequest>,
    ) -> Result<Response<ReversibilityProof>, Status> {
        Ok(Response::new(ReversibilityProof {
            safe: false,
            reason: "the aws plugin does not check reversibility yet".into(),
        }))
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
