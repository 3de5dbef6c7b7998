//! `Provider.Scan` with its responses kept as wire bytes: the generated
//! client would decode every `ScanResponse` into owned prost messages on
//! the reader's task; this call hands each message's bytes (a slice of the
//! receive buffer, not a copy) to the decode workers, which read them in
//! place ([`crate::decode::wire`]). The request is the generated message,
//! encoded by prost, so the wire format is `svc.provider.v1`'s exactly.

use bytes::{Buf, Bytes};
use prost::Message;
use svc_proto::provider::v1 as pb;
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder, Streaming};
use tonic::codegen::http::uri::PathAndQuery;
use tonic::transport::Channel;
use tonic::{GrpcMethod, Request, Status};

const SERVICE: &str = "svc.provider.v1.Provider";
const PATH: &str = "/svc.provider.v1.Provider/Scan";

/// Encodes the `ScanRequest`; passes each response through as bytes.
#[derive(Clone, Copy, Debug, Default)]
struct ScanCodec;

#[derive(Clone, Copy, Debug, Default)]
struct RequestEncoder;

#[derive(Clone, Copy, Debug, Default)]
struct ResponseBytes;

impl Codec for ScanCodec {
    type Encode = pb::ScanRequest;
    type Decode = Bytes;
    type Encoder = RequestEncoder;
    type Decoder = ResponseBytes;

    fn encoder(&mut self) -> RequestEncoder {
        RequestEncoder
    }

    fn decoder(&mut self) -> ResponseBytes {
        ResponseBytes
    }
}

impl Encoder for RequestEncoder {
    type Item = pb::ScanRequest;
    type Error = Status;

    fn encode(&mut self, item: pb::ScanRequest, buf: &mut EncodeBuf<'_>) -> Result<(), Status> {
        item.encode(buf)
            .map_err(|e| Status::internal(format!("encoding the scan request: {e}")))
    }
}

impl Decoder for ResponseBytes {
    type Item = Bytes;
    type Error = Status;

    fn decode(&mut self, buf: &mut DecodeBuf<'_>) -> Result<Option<Bytes>, Status> {
        Ok(Some(buf.copy_to_bytes(buf.remaining())))
    }
}

/// Starts `Provider.Scan` on `channel`; responses larger than `max_message`
/// bytes fail the stream, as with the generated client.
pub async fn scan(channel: Channel, request: pb::ScanRequest, max_message: usize) -> Result<Streaming<Bytes>, Status> {
    let mut grpc = tonic::client::Grpc::new(channel).max_decoding_message_size(max_message);
    grpc.ready()
        .await
        .map_err(|e| Status::unknown(format!("service was not ready: {e}")))?;
    let mut req = Request::new(request);
    req.extensions_mut().insert(GrpcMethod::new(SERVICE, "Scan"));
    let response = grpc
        .server_streaming(req, PathAndQuery::from_static(PATH), ScanCodec)
        .await?;
    Ok(response.into_inner())
}
