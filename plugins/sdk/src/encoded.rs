//! `Provider.Scan` served from responses the plugin encodes itself.
//!
//! A plugin that streams many nodes can skip building owned prost messages
//! (a `String` and a `Vec` per node, three `String`s per edge, copied again
//! by prost): [`ScanResponseWriter`] appends each node and edge straight to
//! one message buffer, byte for byte what prost would encode for the same
//! `ScanResponse`, behind room for the gRPC message prefix, and
//! [`EncodedProviderServer`] answers `Scan` by handing each finished buffer
//! to HTTP/2 as it is: no codec copies it into an encode buffer again.
//! Every other `Provider` method is the generated server's.
//!
//! The `Scan` answer is a plain gRPC server stream: `content-type:
//! application/grpc`, each message as its uncompressed length-prefixed
//! frame, then the `grpc-status` trailers (a failed call before the stream
//! starts, or a malformed request, gets a trailers-only answer, as tonic
//! gives). Requests are read uncompressed, as the daemon sends them.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body_util::{BodyExt, Limited, StreamBody};
use prost::Message;
use svc_proto::provider::v1::provider_server::{Provider, ProviderServer, SERVICE_NAME};
use svc_proto::provider::v1::{ScanRequest, ScanResponse};
use tokio_stream::{Stream, StreamExt};
use tonic::codegen::{Body, BoxFuture, Service, StdError, http};
use tonic::server::NamedService;
use tonic::{Code, Request, Response, Status};

const SCAN_PATH: &str = "/svc.provider.v1.Provider/Scan";

/// Wire types of the protobuf encoding used here.
const LEN: u8 = 2;
const FIXED64: u8 = 1;

/// Length of the gRPC message prefix: a compression flag and a big-endian
/// `u32` length.
const PREFIX: usize = 5;
/// Largest `ScanRequest` read, as tonic's default decoding limit.
const MAX_REQUEST_BYTES: usize = 4 * 1024 * 1024;
/// Responses handed to HTTP/2 ahead of the connection's progress: room for
/// a plugin's producer and the daemon's decoders to wait on each other less
/// often. Four rather than two: a one-plugin scan of the mock estate took
/// ~3% less CPU a node and ran ~3% faster (docs/perf-log.md, plugin row's notes,
/// thirteenth round), for a few more megabytes held while it streams.
const RESPONSES_AHEAD: usize = 4;
/// Sent message buffers kept for the next responses, and the largest kept.
const SPARE_BUFFERS: usize = 8;
const SPARE_MAX_BYTES: usize = 16 << 20;

/// Message buffers HTTP/2 is done with. A response of a few thousand nodes
/// takes hundreds of kilobytes, which the allocator would otherwise map
/// fresh (and the kernel zero) for every message.
static SPARE: Mutex<Vec<Vec<u8>>> = Mutex::new(Vec::new());

/// An empty buffer with room for `bytes`: a spare one when there is one.
fn spare_buffer(bytes: usize) -> Vec<u8> {
    let spare = SPARE.lock().ok().and_then(|mut spare| spare.pop());
    match spare {
        Some(mut buf) => {
            buf.reserve(bytes);
            buf
        }
        None => Vec::with_capacity(bytes),
    }
}

/// A message buffer that goes back to the spares once the last `Bytes`
/// of it is dropped.
struct Recycled(Vec<u8>);

impl AsRef<[u8]> for Recycled {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl Drop for Recycled {
    fn drop(&mut self) {
        let mut buf = std::mem::take(&mut self.0);
        if buf.capacity() == 0 || buf.capacity() > SPARE_MAX_BYTES {
            return;
        }
        buf.clear();
        if let Ok(mut spare) = SPARE.lock()
            && spare.len() < SPARE_BUFFERS
        {
            spare.push(buf);
        }
    }
}

/// The wire bytes of one `svc.provider.v1.ScanResponse`, kept behind its
/// gRPC message prefix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EncodedScanResponse(Bytes);

impl Default for EncodedScanResponse {
    fn default() -> EncodedScanResponse {
        EncodedScanResponse::framed(vec![0; PREFIX])
    }
}

impl EncodedScanResponse {
    /// `buf`: the prefix's room, then the message.
    fn framed(mut buf: Vec<u8>) -> EncodedScanResponse {
        let len = buf.len().saturating_sub(PREFIX);
        // Longer messages are refused when sent (see `send`).
        let len = u32::try_from(len).unwrap_or(u32::MAX).to_be_bytes();
        if let Some(prefix) = buf.get_mut(..PREFIX) {
            prefix[0] = 0;
            prefix[1..].copy_from_slice(&len);
        }
        EncodedScanResponse(Bytes::from_owner(Recycled(buf)))
    }

    /// The bytes of an already encoded response (no check is made: the
    /// daemon refuses bytes that are not a `ScanResponse`).
    pub fn from_bytes(bytes: &[u8]) -> EncodedScanResponse {
        let mut buf = Vec::with_capacity(PREFIX + bytes.len());
        buf.extend_from_slice(&[0; PREFIX]);
        buf.extend_from_slice(bytes);
        EncodedScanResponse::framed(buf)
    }

    /// Encodes a prost message.
    pub fn from_message(message: &ScanResponse) -> EncodedScanResponse {
        let mut buf = Vec::with_capacity(PREFIX + message.encoded_len());
        buf.extend_from_slice(&[0; PREFIX]);
        message.encode_raw(&mut buf);
        EncodedScanResponse::framed(buf)
    }

    /// The message bytes.
    pub fn as_bytes(&self) -> &[u8] {
        self.0.get(PREFIX..).unwrap_or(&[])
    }

    /// The response as a prost message.
    pub fn decode(&self) -> Result<ScanResponse, prost::DecodeError> {
        ScanResponse::decode(self.as_bytes())
    }
}

/// The response stream of [`EncodedScan::scan_encoded`].
pub type EncodedScanStream = Pin<Box<dyn Stream<Item = Result<EncodedScanResponse, Status>> + Send + 'static>>;

/// A provider whose `Scan` responses are encoded by the plugin (see the
/// module documentation); served by
/// [`crate::serve_encoded_provider_with_remediator`].
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

// Inlined: a message writes several for each node (its CRN, type and
// properties).
#[inline(always)]
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
    /// The prefix's room, then the message; empty until the first write.
    buf: Vec<u8>,
    nodes: usize,
    edges: usize,
}

impl ScanResponseWriter {
    /// A writer whose buffer starts with room for `bytes`.
    pub fn with_capacity(bytes: usize) -> ScanResponseWriter {
        let mut w = ScanResponseWriter::default();
        w.reserve(bytes);
        w
    }

    /// The buffer, with the prefix's room at its start.
    fn started(&mut self) -> &mut Vec<u8> {
        if self.buf.is_empty() {
            if self.buf.capacity() == 0 {
                self.buf = spare_buffer(PREFIX);
            }
            self.buf.extend_from_slice(&[0; PREFIX]);
        }
        &mut self.buf
    }

    /// Appends a `Node` (field 1).
    pub fn node(&mut self, crn: &str, properties: &[u8], cost: f64) {
        let cost_len = if cost != 0.0 { 9 } else { 0 };
        let len = len_field(crn.len()) + len_field(properties.len()) + cost_len;
        let buf = self.started();
        buf.reserve(1 + varint_len(len as u64) + len);
        put_key(buf, 1, LEN);
        put_varint(buf, len as u64);
        put_len_field(buf, 1, crn.as_bytes());
        put_len_field(buf, 2, properties);
        if cost_len != 0 {
            put_key(buf, 3, FIXED64);
            buf.extend_from_slice(&cost.to_bits().to_le_bytes());
        }
        self.nodes += 1;
    }

    /// Appends an `Edge` (field 2).
    pub fn edge(&mut self, source_crn: &str, target_crn: &str, relation: &str) {
        let len = len_field(source_crn.len()) + len_field(target_crn.len()) + len_field(relation.len());
        let buf = self.started();
        buf.reserve(1 + varint_len(len as u64) + len);
        put_key(buf, 2, LEN);
        put_varint(buf, len as u64);
        put_len_field(buf, 1, source_crn.as_bytes());
        put_len_field(buf, 2, target_crn.as_bytes());
        put_len_field(buf, 3, relation.as_bytes());
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

    /// Message bytes written since the last [`finish`](Self::finish).
    pub fn len(&self) -> usize {
        self.buf.len().saturating_sub(PREFIX)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Makes room for at least `bytes` more without growing the buffer again.
    pub fn reserve(&mut self, bytes: usize) {
        self.started().reserve(bytes);
    }

    /// The response written so far; the writer starts a new, empty one
    /// (its buffer allocated by the next write or [`reserve`](Self::reserve)).
    pub fn finish(&mut self) -> EncodedScanResponse {
        self.started();
        (self.nodes, self.edges) = (0, 0);
        EncodedScanResponse::framed(std::mem::take(&mut self.buf))
    }
}

/// Reads the one `ScanRequest` of a call: an uncompressed length-prefixed
/// message, as tonic's client sends it.
async fn read_request<B>(req: http::Request<B>) -> Result<Request<ScanRequest>, Status>
where
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<StdError> + Send + 'static,
{
    let (parts, body) = req.into_parts();
    let bytes = Limited::new(body, MAX_REQUEST_BYTES + PREFIX)
        .collect()
        .await
        .map_err(|e| Status::resource_exhausted(format!("reading the scan request: {e}")))?
        .to_bytes();
    let message = match bytes.as_ref() {
        [0, a, b, c, d, message @ ..] if message.len() == u32::from_be_bytes([*a, *b, *c, *d]) as usize => message,
        [1, ..] => return Err(Status::unimplemented("compressed scan requests are not supported")),
        _ => return Err(Status::internal("the scan request is not one length-prefixed message")),
    };
    let message = ScanRequest::decode(message).map_err(|e| Status::internal(e.to_string()))?;
    Ok(Request::from_http(http::Request::from_parts(parts, message)))
}

/// The frames of a scan's response body, in order: the responses, then the
/// status as trailers. The body ends only once every queued frame has been
/// read (a channel whose end is signalled apart from its frames can lose the
/// trailers to a reader that finds the queue empty just before they land).
type Frames = tokio::sync::mpsc::Sender<Result<http_body::Frame<Bytes>, Status>>;

/// Hands each response to the body as it is, then the stream's status as
/// trailers; stops when the daemon goes.
async fn send(mut stream: EncodedScanStream, body: Frames) {
    let status = loop {
        match stream.next().await {
            Some(Ok(response)) if response.as_bytes().len() > u32::MAX as usize => {
                break Status::resource_exhausted("a scan response is larger than 4 GiB");
            }
            Some(Ok(response)) => {
                if body.send(Ok(http_body::Frame::data(response.0))).await.is_err() {
                    return;
                }
            }
            Some(Err(status)) => break status,
            None => break Status::new(Code::Ok, ""),
        }
    };
    let mut trailers = http::HeaderMap::new();
    if let Err(e) = status.add_header(&mut trailers) {
        trailers.clear();
        let _ = Status::internal(e.message().to_owned()).add_header(&mut trailers);
    }
    let _ = body.send(Ok(http_body::Frame::trailers(trailers))).await;
}

/// The answer to one `Scan` call.
async fn scan<P, B>(provider: Arc<P>, req: http::Request<B>) -> http::Response<tonic::body::Body>
where
    P: EncodedScan,
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<StdError> + Send + 'static,
{
    let request = match read_request(req).await {
        Ok(r) => r,
        Err(status) => return status.into_http(),
    };
    let (metadata, stream, _) = match provider.scan_encoded(request).await {
        Ok(r) => r.into_parts(),
        Err(status) => return status.into_http(),
    };
    let (tx, rx) = tokio::sync::mpsc::channel(RESPONSES_AHEAD);
    tokio::spawn(send(stream, tx));
    let body = StreamBody::new(tokio_stream::wrappers::ReceiverStream::new(rx));
    let mut response = http::Response::new(tonic::body::Body::new(body));
    *response.headers_mut() = metadata.into_headers();
    response
        .headers_mut()
        .insert(http::header::CONTENT_TYPE, tonic::metadata::GRPC_CONTENT_TYPE);
    response
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
    B::Data: Send,
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
        let provider = self.inner.clone();
        Box::pin(async move { Ok(scan(provider, req).await) })
    }
}

#[cfg(test)]
mod tests {
    use http_body_util::Full;
    use svc_proto::provider::v1::{
        Edge, HandshakeRequest, HandshakeResponse, Node, PreflightRequest, PreflightResponse, QuarantineRequest,
        QuarantineResponse, ReversibilityProof, ReversibilityRequest,
    };

    use super::*;

    /// Streams `responses` and then fails with `DataLoss` when the config
    /// has `fail`; refuses a config with `refuse`.
    struct Fixed(Vec<EncodedScanResponse>);

    #[tonic::async_trait]
    impl EncodedScan for Fixed {
        async fn scan_encoded(&self, request: Request<ScanRequest>) -> Result<Response<EncodedScanStream>, Status> {
            let config = &request.get_ref().config;
            if config.contains_key("refuse") {
                return Err(Status::invalid_argument("refused"));
            }
            let mut items: Vec<Result<EncodedScanResponse, Status>> = self.0.iter().cloned().map(Ok).collect();
            if config.contains_key("fail") {
                items.push(Err(Status::data_loss("gone")));
            }
            Ok(Response::new(Box::pin(tokio_stream::iter(items))))
        }
    }

    #[tonic::async_trait]
    impl Provider for Fixed {
        async fn handshake(&self, _: Request<HandshakeRequest>) -> Result<Response<HandshakeResponse>, Status> {
            Err(Status::unimplemented("handshake"))
        }
        type ScanStream = crate::ScanStream;
        async fn scan(&self, _: Request<ScanRequest>) -> Result<Response<crate::ScanStream>, Status> {
            Err(Status::unimplemented("scan"))
        }
        async fn apply_quarantine(
            &self,
            _: Request<QuarantineRequest>,
        ) -> Result<Response<QuarantineResponse>, Status> {
            Err(Status::unimplemented("quarantine"))
        }
        async fn check_reversibility(
            &self,
            _: Request<ReversibilityRequest>,
        ) -> Result<Response<ReversibilityProof>, Status> {
            Err(Status::unimplemented("reversibility"))
        }
        async fn preflight_check(&self, _: Request<PreflightRequest>) -> Result<Response<PreflightResponse>, Status> {
            Err(Status::unimplemented("preflight"))
        }
    }

    /// Calls `Scan` with `config` and returns the body and the trailers (or
    /// the headers of a trailers-only answer).
    async fn call(
        server: &mut EncodedProviderServer<Fixed>,
        config: &[&str],
        body: Option<Vec<u8>>,
    ) -> (Bytes, http::HeaderMap) {
        let request = ScanRequest {
            config: config.iter().map(|k| ((*k).to_owned(), String::new())).collect(),
        };
        let body = body.unwrap_or_else(|| EncodedScanResponse::from_bytes(&request.encode_to_vec()).0.to_vec());
        let req = http::Request::builder()
            .uri(SCAN_PATH)
            .body(tonic::body::Body::new(Full::new(Bytes::from(body))))
            .expect("request");
        let response = server.call(req).await.unwrap_or_else(|e| match e {});
        assert_eq!(response.headers()[http::header::CONTENT_TYPE], "application/grpc");
        let headers = response.headers().clone();
        let collected = response.into_body().collect().await.expect("body");
        let trailers = collected.trailers().cloned().unwrap_or(headers);
        (collected.to_bytes(), trailers)
    }

    #[tokio::test]
    async fn scan_answers_with_each_response_as_it_is_then_the_status() {
        let responses: Vec<EncodedScanResponse> = (0..3)
            .map(|k| {
                let mut w = ScanResponseWriter::default();
                w.node(&format!("crn:svc:aws:r:ec2:volume:1:vol-{k}"), b"{}", 1.0);
                w.finish()
            })
            .collect();
        let framed: Vec<u8> = responses.iter().flat_map(|r| r.0.to_vec()).collect();
        let mut server = EncodedProviderServer::new(Fixed(responses));

        let (body, trailers) = call(&mut server, &[], None).await;
        assert_eq!(body, framed);
        assert_eq!(trailers["grpc-status"], "0");

        let (body, trailers) = call(&mut server, &["fail"], None).await;
        assert_eq!(body, framed);
        assert_eq!(trailers["grpc-status"], (Code::DataLoss as i32).to_string().as_str());
        assert_eq!(trailers["grpc-message"], "gone");

        let (body, trailers) = call(&mut server, &["refuse"], None).await;
        assert!(body.is_empty());
        assert_eq!(
            trailers["grpc-status"],
            (Code::InvalidArgument as i32).to_string().as_str()
        );

        for bad in [vec![1, 0, 0, 0, 0], vec![0, 0, 0, 0, 9, 1], vec![0, 0]] {
            let (body, trailers) = call(&mut server, &[], Some(bad)).await;
            assert!(body.is_empty());
            assert_ne!(trailers["grpc-status"], "0");
        }
    }

    /// The status comes after the last response however the sending task
    /// and the reader interleave: the sender pushes the trailers and goes
    /// while the reader may be finding the queue empty.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_status_always_follows_the_responses() {
        let mut w = ScanResponseWriter::default();
        w.node("crn:svc:aws:r:ec2:volume:1:vol-1", b"{}", 1.0);
        let mut server = EncodedProviderServer::new(Fixed(vec![w.finish()]));
        let request = EncodedScanResponse::from_bytes(&ScanRequest::default().encode_to_vec()).0;
        for round in 0..5_000 {
            let req = http::Request::builder()
                .uri(SCAN_PATH)
                .body(tonic::body::Body::new(Full::new(request.clone())))
                .expect("request");
            let response = server.call(req).await.unwrap_or_else(|e| match e {});
            let collected = response.into_body().collect().await.expect("body");
            let status = collected.trailers().and_then(|t| t.get("grpc-status")).cloned();
            assert_eq!(status.as_ref().map(|s| s.as_bytes()), Some(&b"0"[..]), "round {round}");
        }
    }

    #[test]
    fn a_buffer_sent_and_reused_holds_only_the_next_response() {
        let node = |k: usize| Node {
            crn: format!("crn:svc:aws:us-east-1:ec2:volume:1:vol-{k}"),
            properties: format!(r#"{{"size_gib":{k}}}"#).into_bytes(),
            cost: k as f64,
        };
        for round in 0..3 * SPARE_BUFFERS {
            let count = if round % 2 == 0 { 500 } else { 3 };
            let mut w = ScanResponseWriter::default();
            for k in 0..count {
                let n = node(round * 1000 + k);
                w.node(&n.crn, &n.properties, n.cost);
            }
            let sent = w.finish();
            let expected = ScanResponse {
                nodes: (0..count).map(|k| node(round * 1000 + k)).collect(),
                edges: Vec::new(),
            };
            assert_eq!(sent.decode().ok(), Some(expected), "round {round}");
            // Dropped here: its buffer becomes a spare for the next round.
        }
        assert!(SPARE.lock().map_or(0, |s| s.len()) <= SPARE_BUFFERS);
    }

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
        let len = u32::try_from(encoded.as_bytes().len()).expect("small").to_be_bytes();
        assert_eq!(encoded.0[..PREFIX], [0, len[0], len[1], len[2], len[3]]);
        assert_eq!(EncodedScanResponse::from_message(&want), encoded);
        assert_eq!(EncodedScanResponse::from_bytes(encoded.as_bytes()), encoded);
        assert_eq!(EncodedScanResponse::default().as_bytes(), b"");
        assert_eq!(ScanResponseWriter::default().finish(), EncodedScanResponse::default());
        let back = encoded.decode().expect("decodes");
        assert_eq!(back.edges, want.edges);
        assert_eq!(back.nodes.len(), 4);
        assert!(back.nodes[3].cost.is_nan());
    }
}
