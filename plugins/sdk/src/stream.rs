//! Server-streaming response bodies, and the bounded channel a plugin feeds
//! one with.

use std::pin::Pin;

use svc_proto::provider::v1::ScanResponse;
use tokio::sync::mpsc;
use tokio_stream::Stream;
use tokio_stream::wrappers::ReceiverStream;
use tonic::Status;

/// A server-streaming response body.
pub type ResponseStream<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send + 'static>>;

/// The response stream of `Provider::Scan`.
pub type ScanStream = ResponseStream<ScanResponse>;

/// A bounded channel feeding a response stream: the producer waits when the
/// daemon reads slower than it produces.
pub fn response_channel<T: Send + 'static>(capacity: usize) -> (mpsc::Sender<Result<T, Status>>, ResponseStream<T>) {
    let (tx, rx) = mpsc::channel(capacity.max(1));
    (tx, Box::pin(ReceiverStream::new(rx)))
}
