//! `GET /events`: the WebSocket ledger stream (SPEC 4.5, 6.1).
//!
//! The server pushes one text frame per committed ledger event, the
//! envelope of [`crate::routes::history::envelope`], in seq order. A client
//! may send `{"since": <seq>}` to have every stored event after that seq
//! replayed first; live events then follow with no gap and no duplicate.
//!
//! How that holds: the connection subscribes to the fan-out before the
//! handshake completes, so every event committed afterwards is either in
//! the subscription or, when the subscription overflowed, in the ledger.
//! The connection remembers the last seq it sent; a live event at or below
//! it is dropped, and one further ahead than the next seq means something
//! was missed, which is then read back from the ledger. Live events are
//! only ever durable ones: the ledger calls its listeners after commit.
//!
//! Right after connecting, live events are held back for [`SINCE_WINDOW`]
//! so a `since` sent straight away is answered before any of them. A
//! `since` sent later replays from that seq again, as asked; a seq beyond
//! the head resumes at the head as it was on connect. Any other client message is answered with
//! an error frame shaped like the REST error body, and the stream goes on.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::extract::ws::rejection::WebSocketUpgradeRejection;
use axum::extract::ws::{CloseFrame, Message, Utf8Bytes, WebSocket, WebSocketUpgrade, close_code};
use axum::response::Response;
use futures::SinkExt;
use svc_engine::Engine;
use tokio::sync::broadcast::Receiver;
use tokio::sync::broadcast::error::RecvError;
use tracing::debug;

use crate::error::ApiError;
use crate::routes::history::{StreamClientMessage, blocking, envelope_text};
use crate::state::AppState;

/// How long live events wait for a first `{"since": N}` after connecting.
pub const SINCE_WINDOW: Duration = Duration::from_millis(300);
/// Events read from the ledger per replay step.
pub const REPLAY_PAGE: usize = 1000;

type Live = Receiver<(u64, Utf8Bytes)>;

/// Live events written to the socket before one flush: a burst goes out in
/// few writes instead of one system call per event.
const LIVE_BATCH: usize = 256;

/// A browser sends `Origin` on a WebSocket handshake, and the `svc_session`
/// cookie with it whichever page opened the socket: a handshake whose
/// origin names another host and port than the request's `Host` is
/// refused, so another site cannot read the ledger through the cookie.
/// Clients that are not browsers send no `Origin` and are not affected.
fn same_origin(headers: &axum::http::HeaderMap) -> Result<(), ApiError> {
    let Some(origin) = headers.get(axum::http::header::ORIGIN) else {
        return Ok(());
    };
    let host = headers
        .get(axum::http::header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or_default();
    let authority = origin
        .to_str()
        .ok()
        .and_then(|o| o.split_once("://"))
        .map(|(_, rest)| rest.trim_end_matches('/'));
    match authority {
        Some(a) if !host.is_empty() && a.eq_ignore_ascii_case(host) => Ok(()),
        _ => Err(ApiError::forbidden(format!(
            "a WebSocket from origin {:?} is refused: only pages served by this daemon ({host}) may open /events",
            origin.to_str().unwrap_or("(not text)")
        ))),
    }
}

/// Upgrades to the event stream. 503 until the engine is ready.
#[utoipa::path(
    get,
    path = "/events",
    operation_id = "events",
    tag = "events",
    summary = "WebSocket ledger event stream.",
    description = r#"Upgrades to a WebSocket (`ws://<host>:8080/events`). The server pushes one
text frame per committed ledger event, an `Envelope`, in `seq` order.

The client may send one kind of text message, `StreamClientMessage`
`{"since": SEQ}`: every stored event after `SEQ` is replayed first, then
live events follow with no gap and no duplicate. Live events are held
back for 300 ms after connecting so that a `since` sent straight away is
answered before any of them. A `since` beyond the head of the ledger
resumes from the head as it was when the client connected. Any other
client message (binary, malformed, unknown fields) is answered with a
text frame holding an `Error` body (code `bad_request`) and the stream
goes on. The server closes with code 1001 when it shuts down and 1011
when the ledger cannot be read.

The `x-websocket` extension names the schemas of the frames: what the
server sends, what the client may send, the error frame, and the
payload of each event type whose payload has a fixed shape."#,
    responses(
        (status = 101, description = "Switching protocols; the WebSocket stream of `Envelope` frames follows."),
        (status = 400, description = "Not a WebSocket upgrade request (a missing or wrong `Connection`, `Upgrade`, `Sec-WebSocket-Key` or `Sec-WebSocket-Version` header).", body = crate::error::ErrorBody, content_type = "application/json"),
        (status = 401, response = crate::openapi::Unauthorized),
        (status = 403, description = "A browser page of another origin asked (its `Origin` header names a host other than the request's `Host`): the session cookie does not let other sites read the ledger (`forbidden`).", body = crate::error::ErrorBody, content_type = "application/json"),
        (status = 426, description = "The connection cannot be upgraded (for example HTTP/1.0); the body is an `Error` with code `bad_request`.", body = crate::error::ErrorBody, content_type = "application/json"),
        (status = 503, response = crate::openapi::NotReady),
    ),
)]
pub async fn events(
    State(state): State<AppState>,
    headers: axum::http::HeaderMap,
    upgrade: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> Result<Response, ApiError> {
    same_origin(&headers)?;
    let engine = state.engine()?.clone();
    let upgrade = upgrade.map_err(upgrade_rejection)?;
    // Subscribe before answering the handshake, then read the head: every
    // event above it reaches this connection through `live` or the ledger.
    let live = state.inner.events.subscribe();
    let sent = engine.ledger().last_seq();
    Ok(upgrade.on_upgrade(move |socket| async move {
        let stream = Stream {
            engine,
            socket,
            live,
            sent,
            connected_at: sent,
            holding: true,
        };
        match stream.run().await {
            Ok(()) => debug!("event stream closed"),
            Err(e) => debug!(error = %e, "event stream ended"),
        }
    }))
}

fn upgrade_rejection(r: WebSocketUpgradeRejection) -> ApiError {
    let mut e = ApiError::bad_request(format!("/events needs a websocket upgrade: {}", r.body_text()));
    e.status = r.status();
    e
}

/// Why a connection ended other than by a close from either side.
#[derive(Debug, thiserror::Error)]
enum StreamError {
    #[error("socket: {0}")]
    Socket(#[from] axum::Error),
    #[error("ledger read failed: {0}")]
    Ledger(String),
}

struct Stream {
    engine: Arc<Engine>,
    socket: WebSocket,
    live: Live,
    /// Seq of the last event sent, or the head of the ledger at connect.
    sent: u64,
    /// Head of the ledger when the client connected.
    connected_at: u64,
    /// True while live events wait for a first `since`.
    holding: bool,
}

impl Stream {
    async fn run(mut self) -> Result<(), StreamError> {
        let window = tokio::time::sleep(SINCE_WINDOW);
        tokio::pin!(window);
        loop {
            tokio::select! {
                msg = self.socket.recv() => match msg {
                    None => return Ok(()),
                    Some(Err(e)) => return Err(e.into()),
                    Some(Ok(Message::Close(_))) => {
                        // Sends the close reply queued by the socket.
                        let _ = self.socket.flush().await;
                        return Ok(());
                    }
                    Some(Ok(m)) => self.on_client(m).await?,
                },
                () = &mut window, if self.holding => self.holding = false,
                ev = self.live.recv(), if !self.holding => match ev {
                    Ok(ev) => self.on_live(ev).await?,
                    Err(RecvError::Lagged(missed)) => {
                        debug!(missed, after = self.sent, "event stream client fell behind; replaying");
                        self.catch_up().await?;
                    }
                    Err(RecvError::Closed) => {
                        return self.close(close_code::AWAY, "server shutting down").await;
                    }
                },
            }
        }
    }

    async fn on_client(&mut self, msg: Message) -> Result<(), StreamError> {
        let text = match msg {
            Message::Text(t) => t,
            Message::Binary(_) => {
                return self
                    .reject("binary messages are not accepted: send text {\"since\": <seq>}")
                    .await;
            }
            // The socket answers pings itself.
            Message::Ping(_) | Message::Pong(_) | Message::Close(_) => return Ok(()),
        };
        match serde_json::from_str::<StreamClientMessage>(text.as_str()) {
            Ok(StreamClientMessage { since }) => {
                // A seq beyond the head (a client that remembers another
                // ledger) resumes from the head at connect rather than
                // waiting for the ledger to reach it.
                self.sent = if since > self.engine.ledger().last_seq() {
                    self.connected_at
                } else {
                    since
                };
                self.holding = false;
                self.catch_up().await
            }
            Err(e) => {
                self.reject(&format!("invalid message: expected {{\"since\": <seq>}}: {e}"))
                    .await
            }
        }
    }

    /// Sends `first` and whatever else is already queued (up to
    /// [`LIVE_BATCH`]), then flushes once.
    async fn on_live(&mut self, first: (u64, Utf8Bytes)) -> Result<(), StreamError> {
        let mut next = Some(first);
        let mut fed = 0usize;
        while let Some((seq, text)) = next.take() {
            if seq > self.sent + 1 {
                // Something between was missed; the ledger has it, and this one too.
                self.socket.flush().await?;
                self.catch_up().await?;
            }
            if seq == self.sent + 1 {
                self.socket.feed(Message::Text(text)).await?;
                self.sent = seq;
                fed += 1;
            }
            if fed >= LIVE_BATCH {
                break;
            }
            match self.live.try_recv() {
                Ok(ev) => next = Some(ev),
                Err(tokio::sync::broadcast::error::TryRecvError::Lagged(missed)) => {
                    debug!(missed, after = self.sent, "event stream client fell behind; replaying");
                    self.socket.flush().await?;
                    self.catch_up().await?;
                }
                Err(_) => {}
            }
        }
        self.socket.flush().await?;
        Ok(())
    }

    /// Sends every stored event after `self.sent`, page by page, until the
    /// ledger has no more.
    async fn catch_up(&mut self) -> Result<(), StreamError> {
        loop {
            let after = self.sent;
            let page = blocking(&self.engine, move |e| {
                let events = e.ledger().events_after(after, REPLAY_PAGE)?;
                Ok(events.iter().map(|ev| (ev.seq, envelope_text(ev))).collect::<Vec<_>>())
            })
            .await;
            let page = match page {
                Ok(page) => page,
                Err(e) => {
                    let _ = self
                        .close(close_code::ERROR, "cannot read the ledger; reconnect with since")
                        .await;
                    return Err(StreamError::Ledger(e.message));
                }
            };
            let full = page.len() == REPLAY_PAGE;
            if page.is_empty() {
                return Ok(());
            }
            for (seq, text) in page {
                self.socket.feed(Message::Text(text.into())).await?;
                self.sent = seq;
            }
            self.socket.flush().await?;
            if !full {
                return Ok(());
            }
        }
    }

    /// Answers a bad client message with an error frame; the stream goes on.
    async fn reject(&mut self, message: &str) -> Result<(), StreamError> {
        let body = ApiError::bad_request(message).body_text();
        self.socket.send(Message::Text(body.into())).await?;
        Ok(())
    }

    async fn close(&mut self, code: u16, reason: &str) -> Result<(), StreamError> {
        let frame = CloseFrame {
            code,
            reason: reason.into(),
        };
        self.socket.send(Message::Close(Some(frame))).await?;
        Ok(())
    }
}
