//! `Provider.Scan` with its responses kept as wire bytes: the generated
//! client would decode every `ScanResponse` into owned prost messages, and
//! tonic's stream copies every received byte into a buffer of its own
//! before it cuts a message out. This call reads the HTTP/2 body itself: a
//! message that lies within one DATA frame is handed on as a slice of that
//! frame (no copy); only one that spans frames is assembled. The decode
//! workers read each message in place ([`crate::decode::wire`]). The request
//! is the generated message, encoded by prost, so the wire format is
//! `svc.provider.v1`'s exactly, and the framing and status rules are gRPC's
//! over HTTP/2 (length-prefixed messages, `grpc-status` in the trailers, or
//! in the headers of a trailers-only response).

use std::future::Future;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use http_body_util::BodyExt;
use prost::Message;
use svc_proto::provider::v1 as pb;
use tonic::body::Body;
use tonic::codegen::http::{self, HeaderMap, HeaderValue, StatusCode, header};
use tonic::metadata::MetadataMap;
use tonic::transport::Channel;
use tonic::{Code, Status};
use tower::{Service, ServiceExt};

const PATH: &str = "/svc.provider.v1.Provider/Scan";
/// The gRPC message prefix: a compression flag and a big-endian length.
const PREFIX: usize = 5;

/// Starts `Provider.Scan` on `channel`, with `metadata` among the request's
/// headers; a response larger than `max_message` bytes fails the stream,
/// as with the generated client.
pub async fn scan(
    mut channel: Channel,
    request: pb::ScanRequest,
    metadata: HeaderMap,
    max_message: usize,
) -> Result<Responses, Status> {
    let mut framed = Vec::with_capacity(PREFIX + request.encoded_len());
    framed.put_u8(0);
    framed.put_u32(u32::try_from(request.encoded_len()).unwrap_or(u32::MAX));
    request
        .encode(&mut framed)
        .map_err(|e| Status::internal(format!("encoding the scan request: {e}")))?;
    let mut req = http::Request::new(Body::new(http_body_util::Full::new(Bytes::from(framed))));
    *req.method_mut() = http::Method::POST;
    *req.uri_mut() = http::Uri::from_static(PATH);
    *req.version_mut() = http::Version::HTTP_2;
    let headers = req.headers_mut();
    headers.extend(metadata);
    headers.insert(header::TE, HeaderValue::from_static("trailers"));
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/grpc"));
    // The caller's span (`plugin.scan`) is the plugin's spans' parent.
    if let Some(value) = super::trace::traceparent(&tracing::Span::current()).and_then(|v| v.parse().ok()) {
        headers.insert(super::trace::TRACEPARENT, value);
    }
    let ready = channel
        .ready()
        .await
        .map_err(|e| Status::unknown(format!("service was not ready: {e}")))?;
    let response = ready.call(req).await.map_err(|e| Status::from_error(e.into()))?;
    Responses::from_response(response, max_message)
}

/// The messages of one `Scan` response, as their protobuf bytes.
pub struct Responses {
    body: Body,
    http_status: StatusCode,
    max_message: usize,
    /// What is left of the DATA frame being read.
    frame: Bytes,
    /// A message spanning frames, prefix included, while it is assembled.
    partial: BytesMut,
    /// The whole status was in the response headers: the body has nothing.
    trailers_only: bool,
    done: bool,
    /// The metadata of an OK final status (custom trailers), once read.
    trailers: Option<MetadataMap>,
}

impl Responses {
    /// The messages of `response`, once its headers are checked: a
    /// trailers-only answer's status, and no compression (none is asked for).
    fn from_response(response: http::Response<Body>, max_message: usize) -> Result<Responses, Status> {
        if let Some(status) = Status::from_header_map(response.headers()) {
            if status.code() != Code::Ok {
                return Err(status);
            }
            let mut responses = Responses::new(response, max_message, true);
            responses.trailers = Some(status.metadata().clone());
            return Ok(responses);
        }
        if let Some(encoding) = response.headers().get("grpc-encoding")
            && encoding.as_bytes() != b"identity"
        {
            return Err(Status::unimplemented(format!(
                "the plugin compressed its responses ({}); svc does not ask for compression",
                String::from_utf8_lossy(encoding.as_bytes())
            )));
        }
        Ok(Responses::new(response, max_message, false))
    }

    fn new(response: http::Response<Body>, max_message: usize, trailers_only: bool) -> Responses {
        let http_status = response.status();
        Responses {
            body: response.into_body(),
            http_status,
            max_message,
            frame: Bytes::new(),
            partial: BytesMut::new(),
            trailers_only,
            done: false,
            trailers: None,
        }
    }

    /// The custom metadata of the final status, once the stream has ended OK.
    pub fn trailers(&self) -> Option<&MetadataMap> {
        self.trailers.as_ref()
    }

    /// The next message; `None` at the end of a stream that finished with
    /// status OK, the stream's status otherwise.
    pub async fn message(&mut self) -> Result<Option<Bytes>, Status> {
        if self.done || self.trailers_only {
            return Ok(None);
        }
        loop {
            if let Some(message) = self.cut()? {
                return Ok(Some(message));
            }
            match self.body.frame().await {
                Some(Ok(frame)) => match frame.into_data() {
                    Ok(data) => self.frame = data,
                    Err(frame) => {
                        if let Some(trailers) = frame.trailers_ref() {
                            return self.end(Some(trailers));
                        }
                    }
                },
                Some(Err(status)) => {
                    self.done = true;
                    return Err(status);
                }
                None => return self.end(None),
            }
        }
    }

    /// The next whole message from the frame read so far, if there is one.
    fn cut(&mut self) -> Result<Option<Bytes>, Status> {
        if self.partial.is_empty() {
            let Some(len) = self.length(self.frame.get(..PREFIX))? else {
                self.partial.extend_from_slice(&self.frame);
                self.frame.clear();
                return Ok(None);
            };
            if self.frame.len() >= PREFIX + len {
                let message = self.frame.slice(PREFIX..PREFIX + len);
                self.frame.advance(PREFIX + len);
                return Ok(Some(message));
            }
            self.partial.reserve(PREFIX + len);
        }
        // A message spanning frames: its prefix first, then its bytes.
        if self.partial.len() < PREFIX {
            let take = (PREFIX - self.partial.len()).min(self.frame.len());
            self.partial.extend_from_slice(&self.frame.split_to(take));
        }
        let Some(len) = self.length(self.partial.get(..PREFIX))? else {
            return Ok(None);
        };
        self.partial.reserve(PREFIX + len - self.partial.len());
        let take = (PREFIX + len - self.partial.len()).min(self.frame.len());
        self.partial.extend_from_slice(&self.frame.split_to(take));
        if self.partial.len() < PREFIX + len {
            return Ok(None);
        }
        let mut message = std::mem::take(&mut self.partial);
        message.advance(PREFIX);
        Ok(Some(message.freeze()))
    }

    /// The length a message prefix announces; `None` for a prefix not yet
    /// all read (empty included).
    fn length(&self, prefix: Option<&[u8]>) -> Result<Option<usize>, Status> {
        let Some(&[flag, a, b, c, d]) = prefix else {
            return Ok(None);
        };
        match flag {
            0 => {}
            1 => {
                return Err(Status::internal(
                    "protocol error: received message with compressed-flag but no grpc-encoding was specified",
                ));
            }
            f => {
                return Err(Status::internal(format!(
                    "protocol error: received message with invalid compression flag: {f} (valid flags are 0 and 1)"
                )));
            }
        }
        let len = u32::from_be_bytes([a, b, c, d]) as usize;
        if len > self.max_message {
            return Err(Status::out_of_range(format!(
                "Error, decoded message length too large: found {len} bytes, the limit is: {} bytes",
                self.max_message
            )));
        }
        Ok(Some(len))
    }

    /// The end of the body: the status from the trailers, or from the HTTP
    /// status when they are missing.
    fn end(&mut self, trailers: Option<&HeaderMap>) -> Result<Option<Bytes>, Status> {
        self.done = true;
        if !self.partial.is_empty() || !self.frame.is_empty() {
            return Err(Status::internal("Unexpected EOF decoding stream."));
        }
        if let Some(status) = trailers.and_then(Status::from_header_map) {
            return if status.code() == Code::Ok {
                self.trailers = Some(status.metadata().clone());
                Ok(None)
            } else {
                Err(status)
            };
        }
        Err(missing_status(self.http_status))
    }
}

/// The messages a `Scan` response body yields and how its stream ends,
/// read as [`Responses::message`] reads a plugin's: DATA `frames` in
/// order, then trailers with `grpc-status` `status` (none when `None`).
/// For the fuzz targets, which cut arbitrary bytes into frames.
#[doc(hidden)]
pub fn read_body(frames: Vec<Bytes>, status: Option<u16>, max_message: usize) -> (Vec<Bytes>, Result<(), Status>) {
    let mut body: Vec<Result<http_body::Frame<Bytes>, Status>> =
        frames.into_iter().map(|f| Ok(http_body::Frame::data(f))).collect();
    if let Some(code) = status {
        let mut trailers = HeaderMap::new();
        trailers.insert("grpc-status", HeaderValue::from(code));
        body.push(Ok(http_body::Frame::trailers(trailers)));
    }
    let body = Body::new(http_body_util::StreamBody::new(tokio_stream::iter(body)));
    let mut responses = Responses::new(http::Response::new(body), max_message, false);
    let mut messages = Vec::new();
    // Every frame is ready: each read completes on its first poll.
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    loop {
        let next = std::pin::pin!(responses.message()).poll(&mut cx);
        match next {
            std::task::Poll::Ready(Ok(Some(m))) => messages.push(m),
            std::task::Poll::Ready(Ok(None)) => return (messages, Ok(())),
            std::task::Poll::Ready(Err(e)) => return (messages, Err(e)),
            std::task::Poll::Pending => return (messages, Err(Status::internal("a ready body was pending"))),
        }
    }
}

/// The status of a response that ended without `grpc-status`, from its
/// HTTP status (gRPC's HTTP-to-status mapping).
fn missing_status(http_status: StatusCode) -> Status {
    let code = match http_status {
        StatusCode::OK => {
            return Status::unknown(
                "protocol error: missing grpc-status trailer, stream was terminated without a final status",
            );
        }
        StatusCode::BAD_REQUEST => Code::Internal,
        StatusCode::UNAUTHORIZED => Code::Unauthenticated,
        StatusCode::FORBIDDEN => Code::PermissionDenied,
        StatusCode::NOT_FOUND => Code::Unimplemented,
        StatusCode::TOO_MANY_REQUESTS
        | StatusCode::BAD_GATEWAY
        | StatusCode::SERVICE_UNAVAILABLE
        | StatusCode::GATEWAY_TIMEOUT => Code::Unavailable,
        _ => Code::Unknown,
    };
    Status::new(
        code,
        format!(
            "grpc-status header missing, mapped from HTTP status code {}",
            http_status.as_u16()
        ),
    )
}

#[cfg(test)]
mod tests {
    use http_body_util::StreamBody;
    use tonic::codegen::http::HeaderName;

    use super::*;

    type Frame = http_body::Frame<Bytes>;

    fn framed(messages: &[&[u8]]) -> Vec<u8> {
        let mut out = Vec::new();
        for m in messages {
            out.push(0);
            out.extend_from_slice(&(m.len() as u32).to_be_bytes());
            out.extend_from_slice(m);
        }
        out
    }

    fn trailers(status: u8, message: &str) -> Frame {
        let mut t = HeaderMap::new();
        t.insert(
            HeaderName::from_static("grpc-status"),
            HeaderValue::from(u16::from(status)),
        );
        if !message.is_empty() {
            t.insert(
                HeaderName::from_static("grpc-message"),
                HeaderValue::from_str(message).expect("header text"),
            );
        }
        Frame::trailers(t)
    }

    /// A response whose body yields `chunks` of `bytes` as DATA frames, then `last`.
    fn response(bytes: &[u8], chunks: &[usize], last: Option<Frame>) -> Responses {
        let mut frames: Vec<Result<Frame, Status>> = Vec::new();
        let mut at = 0;
        for &n in chunks {
            frames.push(Ok(Frame::data(Bytes::copy_from_slice(&bytes[at..at + n]))));
            at += n;
        }
        assert_eq!(at, bytes.len(), "chunks cover the body");
        frames.extend(last.map(Ok));
        let body = Body::new(StreamBody::new(tokio_stream::iter(frames)));
        Responses::new(http::Response::new(body), 1 << 20, false)
    }

    async fn all(r: &mut Responses) -> (Vec<Vec<u8>>, Result<(), Status>) {
        let mut got = Vec::new();
        loop {
            match r.message().await {
                Ok(Some(m)) => got.push(m.to_vec()),
                Ok(None) => return (got, Ok(())),
                Err(e) => return (got, Err(e)),
            }
        }
    }

    fn block_on<F: std::future::Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime")
            .block_on(f)
    }

    #[test]
    fn messages_come_out_whole_however_the_frames_cut_them() {
        let big = vec![7u8; 3000];
        let messages: Vec<&[u8]> = vec![b"first", b"", &big, b"x", b"last one"];
        let bytes = framed(&messages);
        let n = bytes.len();
        // One frame; frames of every small size (prefixes split too); one cut per message boundary shifted by one.
        let mut cuts: Vec<Vec<usize>> = vec![vec![n]];
        for size in [1, 2, 3, 4, 5, 6, 7, 1000] {
            let mut c = vec![size; n / size];
            if !n.is_multiple_of(size) {
                c.push(n % size);
            }
            cuts.push(c);
        }
        cuts.push(vec![4, 8, 1, 2999, n - 3012]);
        for c in cuts {
            let (got, end) = block_on(all(&mut response(&bytes, &c, Some(trailers(0, "")))));
            assert!(end.is_ok(), "{c:?}: {end:?}");
            let want: Vec<Vec<u8>> = messages.iter().map(|m| m.to_vec()).collect();
            assert_eq!(got, want, "frames {:?}", &c[..c.len().min(6)]);
        }
    }

    #[test]
    fn a_message_within_one_frame_is_a_slice_of_it() {
        let bytes = framed(&[b"abc", b"defgh"]);
        let frame = Bytes::from(bytes);
        let body = Body::new(StreamBody::new(tokio_stream::iter(vec![
            Ok::<_, Status>(Frame::data(frame.clone())),
            Ok(trailers(0, "")),
        ])));
        let mut r = Responses::new(http::Response::new(body), 1 << 20, false);
        let first = block_on(r.message()).expect("message").expect("some");
        assert_eq!(&first[..], b"abc");
        let inside = frame.as_ptr_range();
        assert!(inside.contains(&first.as_ptr()), "the message was copied");
    }

    #[test]
    fn the_trailers_status_ends_the_stream() {
        let bytes = framed(&[b"one"]);
        let (got, end) = block_on(all(&mut response(
            &bytes,
            &[bytes.len()],
            Some(trailers(13, "plugin failed")),
        )));
        assert_eq!(got, vec![b"one".to_vec()]);
        let e = end.expect_err("status 13");
        assert_eq!((e.code(), e.message()), (Code::Internal, "plugin failed"));
    }

    #[test]
    fn a_stream_cut_short_or_without_status_is_an_error() {
        let bytes = framed(&[b"whole", b"cut short"]);
        let (got, end) = block_on(all(&mut response(&bytes[..bytes.len() - 2], &[bytes.len() - 2], None)));
        assert_eq!(got, vec![b"whole".to_vec()]);
        assert_eq!(end.expect_err("eof").message(), "Unexpected EOF decoding stream.");

        let (_, end) = block_on(all(&mut response(&bytes, &[bytes.len()], None)));
        let e = end.expect_err("no trailers");
        assert_eq!(e.code(), Code::Unknown);
        assert!(e.message().contains("missing grpc-status"), "{e:?}");
    }

    #[test]
    fn compressed_invalid_and_oversized_messages_fail_the_stream() {
        let mut compressed = framed(&[b"abc"]);
        compressed[0] = 1;
        let (_, end) = block_on(all(&mut response(
            &compressed,
            &[compressed.len()],
            Some(trailers(0, "")),
        )));
        assert!(end.expect_err("flag 1").message().contains("compressed-flag"));

        let mut invalid = framed(&[b"abc"]);
        invalid[0] = 9;
        let (_, end) = block_on(all(&mut response(
            &invalid,
            &[2, invalid.len() - 2],
            Some(trailers(0, "")),
        )));
        assert!(
            end.expect_err("flag 9")
                .message()
                .contains("invalid compression flag: 9")
        );

        let big = framed(&[&vec![0u8; (1 << 20) + 1]]);
        let (got, end) = block_on(all(&mut response(&big, &[big.len()], Some(trailers(0, "")))));
        assert!(got.is_empty());
        assert_eq!(end.expect_err("too large").code(), Code::OutOfRange);
    }

    #[test]
    fn the_headers_of_a_trailers_only_or_compressed_answer_decide_it() {
        let with = |pairs: &[(&'static str, &'static str)]| {
            let mut r = http::Response::new(Body::new(StreamBody::new(tokio_stream::iter(vec![Ok::<_, Status>(
                Frame::data(Bytes::from(framed(&[b"a message"]))),
            )]))));
            for (k, v) in pairs {
                r.headers_mut()
                    .insert(HeaderName::from_static(k), HeaderValue::from_static(v));
            }
            Responses::from_response(r, 1 << 20)
        };
        let refused = with(&[("grpc-status", "3"), ("grpc-message", "bad config")])
            .err()
            .expect("status 3");
        assert_eq!(
            (refused.code(), refused.message()),
            (Code::InvalidArgument, "bad config")
        );
        let mut ok = with(&[("grpc-status", "0")]).expect("an empty stream");
        assert_eq!(
            block_on(all(&mut ok)).0,
            Vec::<Vec<u8>>::new(),
            "a trailers-only OK has no messages"
        );
        let gzip = with(&[("grpc-encoding", "gzip")]).err().expect("compressed");
        assert_eq!(gzip.code(), Code::Unimplemented);
        assert!(gzip.message().contains("(gzip)"), "{gzip:?}");
        let mut plain = with(&[("grpc-encoding", "identity")]).expect("identity is no compression");
        let (got, end) = block_on(all(&mut plain));
        assert_eq!(got, vec![b"a message".to_vec()]);
        assert!(end.is_err(), "no trailers: an error, after the message");
    }
}
