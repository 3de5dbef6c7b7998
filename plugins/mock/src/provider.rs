//! The `Provider` and `Remediator` services over the mock estate.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::Duration;

use prost::Message;
use svc_engine::Crn;
use svc_plugin_sdk::{
    EncodedScan, EncodedScanResponse, EncodedScanStream, ScanStream, UnlistedPart, response_channel, scan_end_unlisted,
};
use svc_proto::provider::v1::provider_server::Provider;
use svc_proto::provider::v1::remediator_server::Remediator;
use svc_proto::provider::v1::{
    HandshakeRequest, HandshakeResponse, Node, PreflightRequest, PreflightResponse, QuarantineRequest,
    QuarantineResponse, RemediateRequest, RemediateResponse, ReversibilityProof, ReversibilityRequest, ScanRequest,
    ScanResponse,
};
use tokio::sync::mpsc::Sender;
use tokio_stream::StreamExt;
use tonic::{Request, Response, Status};

use crate::actions::{Effects, quarantine_status, remediate_status};
use crate::estate::{self, CrnIndex, ScanConfig};
use crate::fail::{CRASH_EXIT_CODE, FailMode};

/// The plugin's major version; a daemon with another major is refused.
const PLUGIN_MAJOR: &str = "0";
/// ScanResponses buffered ahead of the daemon.
const SCAN_CHANNEL: usize = 4;
/// The region the `unlisted_region` failure mode leaves out, and what of
/// a CRN (graph form) names it.
const UNLISTED_REGION: &str = "us-west-2";
const UNLISTED_REGION_CRN: &str = ":aws:us-west-2:";

/// State shared by both services: the last scanned estate and the
/// simulated effects of actions on it.
#[derive(Default)]
pub struct Shared {
    estate: RwLock<Option<Arc<Scanned>>>,
    effects: Mutex<Effects>,
}

/// The estate a scan showed. The fingerprints of the CRNs the action RPCs
/// look resources up in are collected as the scan streams, and sorted into
/// an index at the first lookup, not when the stream ends (a daemon is
/// then still busy with the scan); a lookup before its stream ended
/// generates them.
struct Scanned {
    config: ScanConfig,
    streamed: Mutex<Option<Vec<u64>>>,
    index: OnceLock<CrnIndex>,
}

impl Scanned {
    fn index(&self) -> &CrnIndex {
        self.index.get_or_init(|| {
            let streamed = self.streamed.lock().ok().and_then(|mut s| s.take());
            match streamed {
                Some(fingerprints) => CrnIndex::new(fingerprints),
                None => CrnIndex::generate(&self.config),
            }
        })
    }
}

impl Shared {
    /// `Ok` when `crn` names a resource of the last scanned estate; `Err`
    /// with the reason otherwise.
    fn lookup(&self, crn: &str) -> Result<(), String> {
        let canonical = Crn::parse(crn).map_err(|e| e.to_string())?.to_string();
        let scanned = self
            .estate
            .read()
            .map_err(|_| "estate lock poisoned".to_owned())?
            .clone();
        let scanned = scanned.ok_or_else(|| "unknown resource".to_owned())?;
        if scanned.index().contains(&canonical) {
            Ok(())
        } else {
            Err("unknown resource".to_owned())
        }
    }

    fn effects(&self) -> Result<std::sync::MutexGuard<'_, Effects>, Status> {
        self.effects
            .lock()
            .map_err(|_| Status::internal("effects lock poisoned"))
    }
}

/// Whether `SVC_MOCK_HANG_ACTIONS` (a comma-separated list) names `action`.
fn hangs(action: &str) -> bool {
    std::env::var("SVC_MOCK_HANG_ACTIONS").is_ok_and(|list| list.split(',').any(|a| a.trim() == action))
}

#[derive(Clone)]
pub struct MockProvider {
    pub shared: Arc<Shared>,
    pub fail: FailMode,
}

fn handshake(daemon_version: &str, fail: FailMode) -> HandshakeResponse {
    let plugin_version = env!("CARGO_PKG_VERSION").to_owned();
    let (compatible, message) = if fail == FailMode::Incompatible {
        (false, "mock plugin speaks protocol 0 only".to_owned())
    } else {
        svc_plugin_sdk::compatibility(daemon_version, PLUGIN_MAJOR)
    };
    HandshakeResponse {
        compatible,
        plugin_version,
        message,
    }
}

/// Three nodes a host must reject: a CRN with too few segments, properties
/// that are not JSON, and a NaN cost.
fn malformed(template: &str) -> Vec<Node> {
    vec![
        Node {
            crn: "crn:svc:aws".into(),
            properties: b"{}".to_vec(),
            cost: 1.0,
        },
        Node {
            crn: format!("{template}-badprops"),
            properties: b"{not json".to_vec(),
            cost: 1.0,
        },
        Node {
            crn: format!("{template}-nancost"),
            properties: b"{}".to_vec(),
            cost: f64::NAN,
        },
    ]
}

/// `first` (the first message with nodes) with the [`malformed`] nodes
/// appended: repeated fields concatenate on the wire.
fn with_malformed(first: EncodedScanResponse) -> EncodedScanResponse {
    let template = first
        .decode()
        .ok()
        .and_then(|r| r.nodes.into_iter().next())
        .map_or_else(String::new, |n| n.crn);
    let extra = ScanResponse {
        nodes: malformed(&template),
        edges: Vec::new(),
    };
    let mut bytes = first.as_bytes().to_vec();
    bytes.extend_from_slice(&extra.encode_to_vec());
    EncodedScanResponse::from_bytes(&bytes)
}

/// Streams the estate as it is generated (in parallel, one ScanResponse per
/// generated batch); the bounded channel makes the generators wait for the
/// daemon. Stops when the daemon goes. Earlier actions show: a deleted
/// resource (and its edges) is gone, any other action sets the resource's
/// `state`. Returns the fingerprints of the estate's CRNs when it streamed
/// to the end; the stream has ended by then (`tx` is dropped).
fn produce(
    config: &ScanConfig,
    fail: FailMode,
    effects: &HashMap<String, String>,
    tx: Sender<Result<EncodedScanResponse, Status>>,
) -> Option<Vec<u64>> {
    struct Cancelled;
    let (mut sent, mut nodes, mut edges) = (0usize, 0usize, 0usize);
    let mut inject = fail == FailMode::MalformedNodes;
    let left_out = (fail == FailMode::UnlistedRegion).then_some(UNLISTED_REGION_CRN);
    let streamed = estate::stream(config, effects, left_out, |m| {
        (nodes, edges) = (nodes + m.nodes, edges + m.edges);
        let response = if m.nodes > 0 && std::mem::take(&mut inject) {
            with_malformed(m.response)
        } else {
            m.response
        };
        if tx.blocking_send(Ok(response)).is_err() {
            return Err(Cancelled);
        }
        sent += 1;
        if sent == 1 && fail == FailMode::StallMidScan {
            tracing::warn!("stalling mid-scan as asked by SVC_MOCK_FAIL");
            // Until the daemon gives up on the call (or the process ends).
            while !tx.is_closed() {
                std::thread::sleep(Duration::from_millis(50));
            }
            return Err(Cancelled);
        }
        if sent == 1 && fail == FailMode::CrashMidScan {
            // Let the first response reach the socket, then die.
            std::thread::sleep(Duration::from_millis(300));
            tracing::error!("crashing mid-scan as asked by SVC_MOCK_FAIL");
            svc_plugin_sdk::exit_now(CRASH_EXIT_CODE);
        }
        Ok(())
    });
    // The estate's buffers were freed in the middle of the heaps, under
    // what stays: handed back, or the process keeps a scan's worth of
    // memory (at ten million resources, gigabytes) between scans.
    let released = svc_engine::malloc::release();
    let crns = match streamed {
        Ok(crns) => {
            tracing::info!(nodes, edges, released, "scan finished");
            crns
        }
        Err(Cancelled) => {
            tracing::info!(released, "scan cancelled by the daemon");
            return None;
        }
    };
    let end = match fail {
        FailMode::UnlistedRegion => scan_end_unlisted(&[UnlistedPart {
            provider: Some("aws".into()),
            region: Some(UNLISTED_REGION.into()),
            error: "ec2 DescribeInstances in us-west-2: connection refused (as asked by SVC_MOCK_FAIL)".into(),
            ..UnlistedPart::default()
        }]),
        FailMode::BadTrailer => {
            let mut metadata = tonic::metadata::MetadataMap::new();
            metadata.insert_bin(
                svc_proto::provider::SCAN_UNLISTED_TRAILER,
                tonic::metadata::MetadataValue::from_bytes(b"{\"region\": 7}"),
            );
            Some(Status::with_metadata(tonic::Code::Ok, "", metadata))
        }
        _ => None,
    };
    if let Some(end) = end {
        let _ = tx.blocking_send(Err(end));
    }
    Some(crns)
}

#[tonic::async_trait]
impl EncodedScan for MockProvider {
    async fn scan_encoded(&self, request: Request<ScanRequest>) -> Result<Response<EncodedScanStream>, Status> {
        let config = ScanConfig::from_config(&request.get_ref().config).map_err(Status::invalid_argument)?;
        if self.fail == FailMode::Hang {
            tracing::warn!("scan hangs as asked by SVC_MOCK_FAIL");
            return Ok(Response::new(Box::pin(tokio_stream::pending())));
        }
        tracing::info!(
            seed = config.seed,
            scale = config.scale,
            epoch = config.epoch(),
            "scan started"
        );
        let (tx, stream) = response_channel(SCAN_CHANNEL);
        let shared = self.shared.clone();
        let fail = self.fail;
        tokio::task::spawn_blocking(move || {
            let scanned = Arc::new(Scanned {
                config: config.clone(),
                streamed: Mutex::new(None),
                index: OnceLock::new(),
            });
            match shared.estate.write() {
                Ok(mut e) => *e = Some(scanned.clone()),
                Err(_) => {
                    let _ = tx.blocking_send(Err(Status::internal("estate lock poisoned")));
                    return;
                }
            }
            let effects = shared.effects.lock().map(|fx| fx.states().clone()).unwrap_or_default();
            if let Some(crns) = produce(&config, fail, &effects, tx)
                && let Ok(mut streamed) = scanned.streamed.lock()
            {
                // A lookup made while it streamed may have built the index already.
                if scanned.index.get().is_none() {
                    *streamed = Some(crns);
                }
            }
        });
        Ok(Response::new(stream))
    }
}

#[tonic::async_trait]
impl Provider for MockProvider {
    async fn handshake(&self, request: Request<HandshakeRequest>) -> Result<Response<HandshakeResponse>, Status> {
        Ok(Response::new(handshake(&request.get_ref().daemon_version, self.fail)))
    }

    type ScanStream = ScanStream;

    /// The same responses as [`EncodedScan::scan_encoded`] (which the plugin
    /// serves), as prost messages.
    async fn scan(&self, request: Request<ScanRequest>) -> Result<Response<ScanStream>, Status> {
        let encoded = self.scan_encoded(request).await?.into_inner();
        let decoded = encoded.map(|m| m.and_then(|m| m.decode().map_err(|e| Status::internal(e.to_string()))));
        Ok(Response::new(Box::pin(decoded)))
    }

    async fn apply_quarantine(
        &self,
        request: Request<QuarantineRequest>,
    ) -> Result<Response<QuarantineResponse>, Status> {
        let req = request.into_inner();
        let outcome = quarantine_status(&req.action)
            .and_then(|status| self.shared.lookup(&req.crn).map(|()| status))
            .and_then(|status| {
                let mut fx = self.shared.effects().map_err(|s| s.message().to_owned())?;
                fx.validate(&req.crn, &req.action)?;
                fx.apply(&req.crn, &req.action, status);
                Ok(status)
            });
        let resp = match outcome {
            Ok(status) => {
                tracing::info!(crn = %req.crn, action = %req.action, reason = %req.reason, "quarantine applied");
                QuarantineResponse {
                    success: true,
                    message: format!("resource {status}"),
                }
            }
            Err(e) => QuarantineResponse {
                success: false,
                message: e,
            },
        };
        Ok(Response::new(resp))
    }

    async fn check_reversibility(
        &self,
        request: Request<ReversibilityRequest>,
    ) -> Result<Response<ReversibilityProof>, Status> {
        let req = request.get_ref();
        let flagged = req.properties.get("deletion_protection").is_some_and(|v| v == "true");
        // The mock estate sets no `deletion_protection` of its own; the flag
        // is the daemon's copy of the resource's properties.
        let proof = match self.shared.lookup(&req.crn) {
            Err(reason) => ReversibilityProof { safe: false, reason },
            Ok(()) if flagged => ReversibilityProof {
                safe: false,
                reason: "deletion protection is enabled".into(),
            },
            Ok(()) => ReversibilityProof {
                safe: true,
                reason: "no protection flag is set; a snapshot is taken before any action".into(),
            },
        };
        Ok(Response::new(proof))
    }

    async fn preflight_check(
        &self,
        _request: Request<PreflightRequest>,
    ) -> Result<Response<PreflightResponse>, Status> {
        if self.fail == FailMode::PreflightFails {
            return Ok(Response::new(PreflightResponse {
                ok: false,
                message: "the access key was rejected".into(),
                missing: vec!["MOCK_ACCESS_KEY".into()],
            }));
        }
        Ok(Response::new(PreflightResponse {
            ok: true,
            message: "the mock estate needs no credentials".into(),
            missing: Vec::new(),
        }))
    }
}

#[tonic::async_trait]
impl Remediator for MockProvider {
    async fn remediate(&self, request: Request<RemediateRequest>) -> Result<Response<RemediateResponse>, Status> {
        let req = request.into_inner();
        if !req.dry_run && hangs(&req.action) {
            tracing::warn!(crn = %req.crn, action = %req.action, "SVC_MOCK_HANG_ACTIONS: this action never returns");
            return std::future::pending().await;
        }
        let checked = remediate_status(&req.action).and_then(|status| {
            self.shared.lookup(&req.crn)?;
            self.shared
                .effects()
                .map_err(|s| s.message().to_owned())?
                .validate(&req.crn, &req.action)?;
            Ok(status)
        });
        let resp = match checked {
            Err(error) => RemediateResponse {
                success: false,
                status: "failed".into(),
                error,
                snapshot: Default::default(),
            },
            Ok(_) if req.dry_run => RemediateResponse {
                success: true,
                status: "validated".into(),
                error: String::new(),
                snapshot: Default::default(),
            },
            Ok(status) => {
                let snapshot = self.shared.effects()?.apply(&req.crn, &req.action, status);
                tracing::info!(crn = %req.crn, action = %req.action, "remediation applied");
                RemediateResponse {
                    success: true,
                    status: status.into(),
                    error: String::new(),
                    snapshot,
                }
            }
        };
        Ok(Response::new(resp))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handshake_compatibility() {
        assert!(handshake("0.1.0", FailMode::None).compatible);
        assert!(handshake("v0.9", FailMode::None).compatible);
        let r = handshake("1.0.0", FailMode::None);
        assert!(!r.compatible && r.message.contains("major 1"));
        assert_eq!(r.plugin_version, env!("CARGO_PKG_VERSION"));
        let r = handshake("0.1.0", FailMode::Incompatible);
        assert!(!r.compatible);
        assert_eq!(r.message, "mock plugin speaks protocol 0 only");
    }
}
