//! `GET /api/v1/topology` (SPEC 4.2): the whole visible graph, streamed.
//!
//! The body is
//! `{"topology_version":"v<generation>","meta":{..},"nodes":[..],"edges":[..],"checksum_sha256":".."}`,
//! compact, in that order: `checksum_sha256` comes last because it is
//! computed while the body is written. Nodes are sorted by CRN (byte order),
//! edges by `(source_crn, target_crn, type)`.
//!
//! The checksum is SHA-256 over a canonical serialization: the text of the
//! `nodes` array's elements exactly as in the body (compact objects in CRN
//! order, separated by commas), one `\n`, then the text of the `edges`
//! array's elements the same way. `topology_version` and `meta` are not
//! part of it, so two graphs with the same nodes and edges have the same
//! checksum whatever their history. A client checks a body by hashing the
//! bytes inside the two arrays' brackets with a newline between them.
//!
//! How it stays within budget at a million nodes (`cargo bench --bench api
//! -- topology`; the figure is in PERF.md):
//! 1. Snapshot (blocking pool, one read-lock hold; [`snapshot`]): copy the
//!    few columns the body needs. The lock is held only for this copy (well
//!    under 0.3 s at 1M nodes), never while sorting, formatting or sending,
//!    so the body describes one consistent graph (the one
//!    `topology_version` names).
//! 2. Sort (no lock): key segments are ranked once per distinct
//!    `(provider, region, service, kind, account)` tuple, so a node's sort key
//!    is that rank plus the first bytes of its physical id; each tuple's CRN
//!    prefix is rendered once. Edges are counting-sorted by source. The
//!    sorted snapshot holds about 60 bytes a node and 8 an edge (about twice
//!    that while sorting).
//! 3. Write (no lock, two blocking threads): one formats chunks of ~256 KiB,
//!    the other hashes them and hands them to the response body. Both
//!    channels hold a few chunks, so a slow client slows the writer down
//!    instead of growing a buffer: memory is the snapshot plus a few chunks,
//!    whatever the body size. A client that goes away stops both threads.
//!
//! At most two snapshots are built at a time; a third request waits up to
//! ten seconds, then gets 429.
//!
//! With `Accept: application/x-flatbuffers` the same snapshot is answered
//! in the binary graph form instead, built whole before it is sent
//! ([`binary`]).

mod binary;
mod json;
mod snapshot;

use std::convert::Infallible;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, header};
use axum::response::Response;
use json::{push_json_str, push_json_str_body, push_number};
use sha2::{Digest, Sha256};
use snapshot::{CrnRef, Snapshot};
use tokio::sync::{Semaphore, mpsc};

use super::binary::{respond, vary, wants_binary};
use super::body::TopologyMeta;
use super::round2;
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;
use crate::wire;

/// Snapshots built or streamed at the same time.
static SLOTS: Semaphore = Semaphore::const_new(2);
const SLOT_WAIT: Duration = Duration::from_secs(10);
/// A chunk is handed on once it holds this many bytes.
const CHUNK_BYTES: usize = 256 * 1024;
/// Chunks buffered in each channel (formatter to hasher, hasher to body).
const CHANNEL_CHUNKS: usize = 4;
/// Edges formatted per block; a block's target nodes are fetched first, so
/// their cache misses overlap.
const EDGE_BLOCK: usize = 64;
const PROVENANCE_UNKNOWN: &[u8] = br#"{"commit":"","author":"","file":"","line":0}"#;
const EDGES_OPEN: &[u8] = br#"],"edges":["#;
const NO_NODE: CrnRef = CrnRef {
    id_off: 0,
    id_len: 0,
    tuple: u32::MAX,
};

impl Snapshot {
    /// Writes a node's CRN as a JSON string.
    fn push_crn(&self, buf: &mut Vec<u8>, r: CrnRef) {
        buf.push(b'"');
        if let Some(prefix) = self.prefixes.get(r.tuple as usize) {
            buf.extend_from_slice(prefix);
            push_json_str_body(buf, self.id(r));
        }
        buf.push(b'"');
    }

    fn push_node(&self, buf: &mut Vec<u8>, pos: usize) {
        let (Some(r), Some(n)) = (self.crns.get(pos), self.rest.get(pos)) else {
            return;
        };
        buf.extend_from_slice(b"{\"crn\":");
        let crn_at = buf.len();
        self.push_crn(buf, *r);
        let crn_end = buf.len();
        buf.extend_from_slice(b",\"type\":");
        push_json_str(buf, self.sym(n.ty));
        buf.extend_from_slice(b",\"state\":");
        push_json_str(buf, self.sym(n.state));
        buf.extend_from_slice(b",\"cost_usd_mo\":");
        push_number(buf, n.cost);
        buf.extend_from_slice(b",\"heuristics_flagged\":[");
        if let Some(verdict) = n.flag {
            buf.extend_from_slice(b"{\"rule_name\":");
            push_json_str(buf, verdict.map_or(wire::WASTE_RULE, |v| self.sym(v)));
            buf.extend_from_slice(b",\"severity\":");
            buf.push(b'0' + n.severity.min(9));
            buf.push(b'}');
        }
        buf.extend_from_slice(b"],\"provenance\":");
        let declared = self.provenance.as_ref().and_then(|p| {
            let crn = buf.get(crn_at + 1..crn_end.checked_sub(1)?)?;
            p.get(std::str::from_utf8(crn).ok()?)
        });
        match declared {
            Some(p) => buf.extend_from_slice(p),
            None => buf.extend_from_slice(PROVENANCE_UNKNOWN),
        }
        buf.push(b'}');
    }

    /// Formats the body into pieces for [`hash_and_send`]; stops early when
    /// the client is gone.
    fn format(&self, tx: &SyncSender<Piece>) {
        let meta = TopologyMeta {
            total_edges: self.edges.len() as u64,
            total_nodes: self.crns.len() as u64,
            waste_identified_usd_mo: round2(self.waste_usd_mo),
        };
        let meta = serde_json::to_string(&meta).unwrap_or_default();
        let head = format!(
            "{{\"topology_version\":\"v{}\",\"meta\":{meta},\"nodes\":[",
            self.generation
        );
        if tx.send(Piece::Head(head.into_bytes())).is_err() {
            return;
        }
        let mut buf = Vec::with_capacity(CHUNK_BYTES + 4096);
        for pos in 0..self.crns.len() {
            if pos > 0 {
                buf.push(b',');
            }
            self.push_node(&mut buf, pos);
            if buf.len() >= CHUNK_BYTES && tx.send(Piece::Body(take_chunk(&mut buf))).is_err() {
                return;
            }
        }
        if !buf.is_empty() && tx.send(Piece::Body(take_chunk(&mut buf))).is_err() {
            return;
        }
        if tx.send(Piece::Middle).is_err() || !self.format_edges(&mut buf, tx) {
            return;
        }
        if !buf.is_empty() && tx.send(Piece::Body(buf)).is_err() {
            return;
        }
        // Nothing follows: a send error here means the client is gone anyway.
        let _ = tx.send(Piece::End);
    }

    /// Formats every edge; `false` when the client is gone.
    fn format_edges(&self, buf: &mut Vec<u8>, tx: &SyncSender<Piece>) -> bool {
        let mut source = 0usize;
        let mut targets = [NO_NODE; EDGE_BLOCK];
        for (b, block) in self.edges.chunks(EDGE_BLOCK).enumerate() {
            for (t, e) in targets.iter_mut().zip(block) {
                *t = self.crns.get((e >> 8) as usize).copied().unwrap_or(NO_NODE);
            }
            let touched = targets[..block.len()].iter().fold(0u8, |acc, t| {
                acc ^ self.ids.get(t.id_off as usize).copied().unwrap_or(0)
            });
            std::hint::black_box(touched);
            for (k, (e, target)) in block.iter().zip(targets).enumerate() {
                let i = b * EDGE_BLOCK + k;
                while self.edge_off.get(source + 1).is_some_and(|&end| end as usize <= i) {
                    source += 1;
                }
                if i > 0 {
                    buf.push(b',');
                }
                let rel = self.relations.get(usize::from(*e as u8)).map_or("", |r| r.name());
                buf.extend_from_slice(b"{\"source_crn\":");
                self.push_crn(buf, self.crns.get(source).copied().unwrap_or(NO_NODE));
                buf.extend_from_slice(b",\"target_crn\":");
                self.push_crn(buf, target);
                buf.extend_from_slice(b",\"type\":");
                push_json_str(buf, rel);
                buf.push(b'}');
            }
            if buf.len() >= CHUNK_BYTES && tx.send(Piece::Body(take_chunk(buf))).is_err() {
                return false;
            }
        }
        true
    }
}

/// A piece of the body, from the formatter to the hasher.
enum Piece {
    /// Not hashed: everything before the `nodes` array's elements.
    Head(Vec<u8>),
    /// Array elements: hashed and sent.
    Body(Vec<u8>),
    /// Between the arrays: `],"edges":[` is sent, a newline is hashed.
    Middle,
    /// Everything was formatted.
    End,
}

fn take_chunk(buf: &mut Vec<u8>) -> Vec<u8> {
    std::mem::replace(buf, Vec::with_capacity(CHUNK_BYTES + 4096))
}

/// Hashes the array elements as they pass, hands every piece to the body
/// and closes it with the checksum. A formatter that stopped early leaves
/// the body unterminated, so a client never takes a cut body for a whole one.
fn hash_and_send(rx: &Receiver<Piece>, tx: &mpsc::Sender<Bytes>) {
    let mut hash = Sha256::new();
    for piece in rx.iter() {
        let bytes = match piece {
            Piece::Head(b) => b,
            Piece::Body(b) => {
                hash.update(&b);
                b
            }
            Piece::Middle => {
                hash.update(b"\n");
                EDGES_OPEN.to_vec()
            }
            Piece::End => {
                let hex = hex::encode(hash.finalize());
                let _ = tx.blocking_send(Bytes::from(format!("],\"checksum_sha256\":\"{hex}\"}}")));
                return;
            }
        };
        if tx.blocking_send(Bytes::from(bytes)).is_err() {
            return;
        }
    }
}

/// `GET /api/v1/topology` (SPEC 4.2), streamed; see the module documentation.
#[utoipa::path(
    get,
    path = "/topology",
    operation_id = "getTopology",
    tag = "graph",
    summary = "Snapshot of the whole visible graph, with a checksum.",
    description = r#"Streams every visible node and edge. Nodes are sorted by CRN (byte
order), edges by `(source_crn, target_crn, type)`. `checksum_sha256`
is the SHA-256 of the bytes inside the `nodes` array's brackets, one
newline, then the bytes inside the `edges` array's brackets; it does
not cover `topology_version` or `meta`. At most two snapshots are
built at a time; a third request waits up to ten seconds, then gets 429.

**Binary form.** With `Accept: application/x-flatbuffers` the answer is
the same snapshot as a FlatBuffers `Graph` (SPEC 2.4, schema
`schemas/graph.fbs`, file identifier `SVCG`), content type
`application/x-flatbuffers`: every visible node in CRN order and every
visible edge in the order above (`relationship` as SPEC 2.3 numbers
it), `version` the graph generation (`topology_version` without its
`v`), `last_updated` the Unix seconds of the last commit. A node with a
finding carries it in `properties` as `rule_name` and `severity` (`1`
to `5`); `valid_to` is 0. There is no checksum: the buffer is built
whole before it is sent (about 185 bytes a node of the mock estate,
edges included), and when it would exceed 1 GiB the JSON form is
answered instead (check `Content-Type`)."#,
    responses(
        (status = 200, description = "The topology snapshot; with `Accept: application/x-flatbuffers`, its binary form.", content(
            (crate::routes::graph::Topology = "application/json"),
            (crate::openapi::FlatBuffersGraph = "application/x-flatbuffers"),
        )),
        (status = 401, response = crate::openapi::Unauthorized),
        (status = 429, response = crate::openapi::RateLimited),
        (status = 500, response = crate::openapi::Internal),
        (status = 503, response = crate::openapi::NotReady),
    ),
)]
pub async fn topology(State(state): State<AppState>, headers: HeaderMap) -> ApiResult<Response> {
    let engine = state.engine()?.clone();
    let permit = tokio::time::timeout(SLOT_WAIT, SLOTS.acquire())
        .await
        .map_err(|_| ApiError::rate_limited("too many topology snapshots in progress; retry shortly", 1))?
        .map_err(ApiError::internal)?;
    let last_updated = engine.last_commit_us() / 1_000_000;
    let current = crate::routes::iac::current(&state, &engine).await;
    let snapshot = tokio::task::spawn_blocking(move || {
        let provenance = current
            .configured()
            .then(|| crate::iac::provenance_json(&state.inner.derived, &engine, &current));
        let mut snapshot = Snapshot::take(&engine);
        snapshot.provenance = provenance;
        snapshot
    })
    .await
    .map_err(ApiError::internal)?;
    let snapshot = if wants_binary(&headers) {
        let built = tokio::task::spawn_blocking(move || {
            if snapshot.binary_size() > binary::CAP_BYTES {
                Err(Box::new(snapshot))
            } else {
                Ok(snapshot.encode(last_updated))
            }
        })
        .await
        .map_err(ApiError::internal)?;
        match built {
            Ok(graph) => {
                drop(permit);
                return respond(graph);
            }
            Err(snapshot) => *snapshot,
        }
    } else {
        snapshot
    };
    let (pieces, pieces_rx) = sync_channel::<Piece>(CHANNEL_CHUNKS);
    let (body, body_rx) = mpsc::channel::<Bytes>(CHANNEL_CHUNKS);
    tokio::task::spawn_blocking(move || snapshot.format(&pieces));
    tokio::task::spawn_blocking(move || {
        let _permit = permit;
        hash_and_send(&pieces_rx, &body);
    });
    let stream = futures::stream::unfold(body_rx, |mut rx| async move {
        rx.recv().await.map(|b| (Ok::<_, Infallible>(b), rx))
    });
    Response::builder()
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from_stream(stream))
        .map(vary)
        .map_err(ApiError::internal)
}
