//! `Provider.Scan` served from responses the plugin encodes itself.
//!
//! A plugin that streams many nodes can skip building owned prost messages
//! (a `String` and a `Vec` per node, three `String`s per edge, copied again
//! by prost): [`ScanResponseWriter`] appends each node and edge straight to
//! one message buffer, byte for byte what prost would encode for the same
//! `ScanResponse`, and [`EncodedProviderServer`] serves `Scan` through a
//! pass-through codec that writes those bytes into the stream as they are.
//! Every other `Provider` method is the generated server's.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::{BufMut, Bytes};
use prost::Message;
use svc_proto::provider::v1::provider_server::{Provider, ProviderServer, SERVICE_NAME};
use svc_proto::provider::v1::{ScanRequest, ScanResponse};
use tokio_stream::Stream;
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::codegen::{Body, BoxFuture, Service, StdError, http};
use tonic::server::{NamedService, ServerStreamingService};
use tonic::{Request, Response, Status};

const SCAN_PATH: &str = "/svc.provider.v1.Provider/Scan";

/// Wire types of the protobuf encoding used here.
const LEN: u8 = 2;
const FIXED64: u8 = 1;

/// The wire bytes of one `svc.provider.v1.ScanResponse`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EncodedScanResponse(Bytes);

impl EncodedScanResponse {
    /// The bytes of an already encoded response (no check is made: the
    /// daemon refuses bytes that are not a `ScanResponse`).
    pub fn from_bytes(bytes: Bytes) -> EncodedScanResponse {
        EncodedScanResponse(bytes)
    }

    /// Encodes a prost message.
    pub fn from_message(message: &ScanResponse) -> EncodedScanResponse {
        EncodedScanResponse(Bytes::from(message.encode_to_vec()))
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    pub fn into_bytes(self) -> Bytes {
        self.0
    }

    /// The response as a prost message.
    pub fn decode(&self) -> Result<ScanResponse, prost::DecodeError> {
        ScanResponse::decode(self.0.as_ref())
    }
}

/// The response stream of [`EncodedScan::scan_encoded`].
pub type EncodedScanStream = Pin<Box<dyn Stream<Item = Result<EncodedScanResponse, Status>> + Send + 'static>>;

/// A provider whose `Scan` responses are encoded by the plugin (see the
/// module documentation); served by [`crate::serve_encoded_provider`].
#[tonic::async_trait]
pub trait EncodedScan: Send + Sync + 'static {
    async fn scan_encoded(&self, request: Request<ScanRequest>) -> Result<Response<EncodedScanStream>, Status>;
}

fn varint_len(v: u64) -> usize {
    // One byte per started group of 7 bits; 0 still takes a byte.
    (64 - (v | 1).leading_zeros() as usize).div_ceil(7)
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn put_key(out: &mut Vec<u8>, field: u32, wire: u8) {
    put_varint(out, u64::from((field << 3) | u32::from(wire)));
}

/// Length of a length-delimited field with a one-byte key, or 0 when the
/// value is empty (proto3 leaves empty strings and bytes out).
fn len_field(len: usize) -> usize {
    if len == 0 { 0 } else { 1 + varint_len(len as u64) + len }
}

fn put_len_field(out: &mut Vec<u8>, field: u32, value: &[u8]) {
    if !value.is_empty() {
        put_key(out, field, LEN);
        put_varint(out, value.len() as u64);
        out.extend_from_slice(value);
    }
}

/// Builds one `ScanResponse` in place: each [`node`](Self::node) and
/// [`edge`](Self::edge) is appended to the message bytes as it comes.
#[derive(Debug, Default)]
pub struct ScanResponseWriter {
    buf: Vec<u8>,
    nodes: usize,
    edges: usize,
}

impl ScanResponseWriter {
    /// A writer whose buffer starts with room for `bytes`.
    pub fn with_capacity(bytes: usize) -> ScanResponseWriter {
        ScanResponseWriter {
            buf: Vec::with_capacity(bytes),
            nodes: 0,
            edges: 0,
        }
    }

    /// Appends a `Node` (field 1).
    pub fn node(&mut self, crn: &str, properties: &[u8], cost: f64) {
        let cost_len = if cost != 0.0 { 9 } else { 0 };
        let len = len_field(crn.len()) + len_field(properties.len()) + cost_len;
        self.buf.reserve(1 + varint_len(len as u64) + len);
        put_key(&mut self.buf, 1, LEN);
        put_varint(&mut self.buf, len as u64);
        put_len_field(&mut self.buf, 1, crn.as_bytes());
        put_len_field(&mut self.buf, 2, properties);
        if cost_len != 0 {
            put_key(&mut self.buf, 3, FIXED64);
            self.buf.extend_from_slice(&cost.to_bits().to_le_bytes());
        }
        self.nodes += 1;
    }

    /// Appends an `Edge` (field 2).
    pub fn edge(&mut self, source_crn: &str, target_crn: &str, relation: &str) {
        let len = len_field(source_crn.len()) + len_field(target_crn.len()) + len_field(relation.len());
        self.buf.reserve(1 + varint_len(len as u64) + len);
        put_key(&mut self.buf, 2, LEN);
        put_varint(&mut self.buf, len as u64);
        put_len_field(&mut self.buf, 1, source_crn.as_bytes());
        put_len_field(&mut self.buf, 2, target_crn.as_bytes());
        put_len_field(&mut self.buf, 3, relation.as_bytes());
        self.edges += 1;
    }

    /// Nodes written since the last [`finish`](Self::finish).
    pub fn nodes(&self) -> usize {
        self.nodes
    }

    /// Edges written since the last [`finish`](Self::finish).
    pub fn edges(&self) -> usize {
        self.edges
    }

    /// Bytes written since the last [`finish`](Self::finish).
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// Makes room for at least `bytes` more without growing the buffer again.
    pub fn reserve(&mut self, bytes: usize) {
        self.buf.reserve(bytes);
    }

    /// The response written so far; the writer starts a new, empty one
    /// (its buffer allocated by the next write or [`reserve`](Self::reserve)).
    pub fn finish(&mut self) -> EncodedScanResponse {
        let buf = std::mem::take(&mut self.buf);
        (self.nodes, self.edges) = (0, 0);
        EncodedScanResponse(Bytes::from(buf))
    }
}

/// Decodes the `ScanRequest` with prost; writes each response's bytes as
/// they are.
#[derive(Clone, Copy, Debug, Default)]
struct EncodedCodec;

#[derive(Clone, Copy, Debug, Default)]
struct PassThrough;

#[derive(Clone, Copy, Debug, Default)]
struct RequestDecoder;

impl Codec for EncodedCodec {
    type Encode = EncodedScanResponse;
    type Decode = ScanRequest;
    type Encoder = PassThrough;
    type Decoder = RequestDecoder;

    fn encoder(&mut self) -> PassThrough {
        PassThrough
    }

    fn decoder(&mut self) -> RequestDecoder {
        RequestDecoder
    }
}

impl Encoder for PassThrough {
    type Item = EncodedScanResponse;
    type Error = Status;

    fn encode(&mut self, item: EncodedScanResponse, buf: &mut EncodeBuf<'_>) -> Result<(), Status> {
        buf.put_slice(&item.0);
        Ok(())
    }
}

impl Decoder for RequestDecoder {
    type Item = ScanRequest;
    type Error = Status;

    fn decode(&mut self, buf: &mut DecodeBuf<'_>) -> Result<Option<ScanRequest>, Status> {
        ScanRequest::decode(buf)
            .map(Some)
            .map_err(|e| Status::internal(e.to_string()))
    }
}

struct ScanSvc<P>(Arc<P>);

impl<P: EncodedScan> ServerStreamingService<ScanRequest> for ScanSvc<P> {
    type Response = EncodedScanResponse;
    type ResponseStream = EncodedScanStream;
    type Future = BoxFuture<Response<EncodedScanStream>, Status>;

    fn call(&mut self, request: Request<ScanRequest>) -> Self::Future {
        let inner = self.0.clone();
        Box::pin(async move { inner.scan_encoded(request).await })
    }
}

/// The `svc.provider.v1.Provider` service with `Scan` answered by
/// [`EncodedScan::scan_encoded`] and every other method by the generated
/// server over the same provider.
pub struct EncodedProviderServer<P> {
    inner: Arc<P>,
    generated: ProviderServer<P>,
}

impl<P> EncodedProviderServer<P> {
    pub fn new(provider: P) -> EncodedProviderServer<P> {
        let inner = Arc::new(provider);
        EncodedProviderServer {
            generated: ProviderServer::from_arc(inner.clone()),
            inner,
        }
    }
}

impl<P> Clone for EncodedProviderServer<P> {
    fn clone(&self) -> Self {
        EncodedProviderServer {
            inner: self.inner.clone(),
            generated: self.generated.clone(),
        }
    }
}

impl<P> NamedService for EncodedProviderServer<P> {
    const NAME: &'static str = SERVICE_NAME;
}

impl<P, B> Service<http::Request<B>> for EncodedProviderServer<P>
where
    P: Provider + EncodedScan,
    B: Body + Send + 'static,
    B::Error: Into<StdError> + Send + 'static,
{
    type Response = http::Response<tonic::body::Body>;
    type Error = Infallible;
    type Future = BoxFuture<Self::Response, Infallible>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<B>) -> Self::Future {
        if req.uri().path() != SCAN_PATH {
            return self.generated.call(req);
        }
        let method = ScanSvc(self.inner.clone());
        Box::pin(async move {
            let mut grpc = tonic::server::Grpc::new(EncodedCodec);
            Ok(grpc.server_streaming(method, req).await)
        })
    }
}

#[cfg(test)]
mod tests {
    use svc_proto::provider::v1::{Edge, Node};

    use super::*;

    #[test]
    fn varint_lengths() {
        for v in [0u64, 1, 127, 128, 16_383, 16_384, u64::from(u32::MAX), u64::MAX] {
            let mut out = Vec::new();
            put_varint(&mut out, v);
            assert_eq!(out.len(), varint_len(v), "{v}");
            assert_eq!(prost::encoding::decode_varint(&mut out.as_slice()).ok(), Some(v));
        }
    }

    #[test]
    fn written_responses_are_what_prost_encodes() {
        let long = "x".repeat(300);
        let nodes = vec![
            Node {
                crn: "crn:svc:aws:us-east-1:ec2:volume:1:vol-1".into(),
                properties: br#"{"state":"in-use"}"#.to_vec(),
                cost: 12.5,
            },
            Node {
                crn: String::new(),
                properties: Vec::new(),
                cost: 0.0,
            },
            Node {
                crn: long.clone(),
                properties: long.clone().into_bytes(),
                cost: -0.0,
            },
            Node {
                crn: "a".into(),
                properties: Vec::new(),
                cost: f64::NAN,
            },
        ];
        let edges = vec![
            Edge {
                source_crn: "crn:a".into(),
                target_crn: long.clone(),
                relation: "ATTACHED_TO".into(),
            },
            Edge::default(),
        ];
        let mut w = ScanResponseWriter::with_capacity(16);
        for n in &nodes {
            w.node(&n.crn, &n.properties, n.cost);
        }
        for e in &edges {
            w.edge(&e.source_crn, &e.target_crn, &e.relation);
        }
        assert_eq!((w.nodes(), w.edges()), (4, 2));
        let encoded = w.finish();
        assert!(w.is_empty() && w.nodes() == 0);
        let want = ScanResponse { nodes, edges };
        assert_eq!(encoded.as_bytes(), want.encode_to_vec().as_slice());
        let back = encoded.decode().expect("decodes");
        assert_eq!(back.edges, want.edges);
        assert_eq!(back.nodes.len(), 4);
        assert!(back.nodes[3].cost.is_nan());
    }
}
