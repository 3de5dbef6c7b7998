//! The WebSocket ledger stream `/events` through a real server on an
//! ephemeral port: auth, live order, `since` replay without gap or
//! duplicate, bursts larger than the fan-out buffer, bad client messages.

#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use svc_api::AppState;
use svc_engine::Engine;
use svc_engine::clock::SystemClock;
use svc_engine::store::ledger::NewEvent;
use tokio::net::{TcpListener, TcpStream};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::{Error as WsError, Message};
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

type Ws = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// Upper bound for one frame to arrive; only a failing test waits this long.
const PATIENCE: Duration = Duration::from_secs(30);
const VOL: &str = "crn:svc:aws:us-east-1:ec2:volume:123456789012:vol-0abc";

struct Server {
    _dir: tempfile::TempDir,
    engine: Arc<Engine>,
    addr: SocketAddr,
    state: AppState,
}

async fn server() -> Server {
    let dir = tempfile::tempdir().unwrap();
    let engine = Arc::new(Engine::open(dir.path(), "s1", Arc::new(SystemClock::default())).unwrap());
    let state = AppState::new("tok".into());
    state.set_engine(engine.clone());
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = svc_api::router(state.clone());
    tokio::spawn(async move { axum::serve(listener, app).await });
    Server {
        _dir: dir,
        engine,
        addr,
        state,
    }
}

async fn connect(addr: SocketAddr, token: Option<&str>) -> Result<Ws, WsError> {
    let mut req = format!("ws://{addr}/events").into_client_request()?;
    if let Some(t) = token {
        req.headers_mut()
            .insert("authorization", format!("Bearer {t}").parse().unwrap());
    }
    tokio_tungstenite::connect_async(req).await.map(|(ws, _)| ws)
}

fn event(i: usize) -> NewEvent {
    let (event_type, crn) = match i % 3 {
        0 => ("SCAN_COMPLETED", None),
        1 => ("QUARANTINE", Some(VOL.to_owned())),
        _ => ("EXECUTION_COMMIT", Some(VOL.to_owned())),
    };
    NewEvent {
        event_type: event_type.to_owned(),
        crn,
        actor: "tester".to_owned(),
        message: format!("event {i}"),
        payload: json!({"i": i, "savings_usd": 1.5}),
    }
}

/// Appends events `from..to` on the blocking pool, in batches of `batch`.
async fn append(engine: &Arc<Engine>, from: usize, to: usize, batch: usize) {
    let engine = engine.clone();
    tokio::task::spawn_blocking(move || {
        let mut i = from;
        while i < to {
            let end = (i + batch).min(to);
            engine.ledger().append((i..end).map(event).collect()).unwrap();
            i = end;
        }
    })
    .await
    .unwrap();
}

/// The next text frame as JSON; control frames are skipped.
async fn next_json(ws: &mut Ws) -> Value {
    loop {
        let msg = tokio::time::timeout(PATIENCE, ws.next())
            .await
            .expect("no frame in time");
        match msg.expect("stream ended").expect("socket error") {
            Message::Text(t) => return serde_json::from_str(t.as_str()).unwrap(),
            Message::Ping(_) | Message::Pong(_) => continue,
            other => panic!("unexpected frame {other:?}"),
        }
    }
}

/// Reads `n` envelopes and returns their seqs, checking the chain links.
async fn read_seqs(ws: &mut Ws, n: usize) -> Vec<u64> {
    let mut seqs = Vec::with_capacity(n);
    let mut prev_hash: Option<String> = None;
    for _ in 0..n {
        let v = next_json(ws).await;
        let seq = v["seq"].as_u64().unwrap_or_else(|| panic!("not an envelope: {v}"));
        if let (Some(prev), Some(&last)) = (&prev_hash, seqs.last())
            && seq == last + 1
        {
            assert_eq!(v["prev_hash"].as_str(), Some(prev.as_str()), "chain link at {seq}");
        }
        prev_hash = v["hash"].as_str().map(str::to_owned);
        seqs.push(seq);
    }
    seqs
}

async fn send_text(ws: &mut Ws, text: &str) {
    ws.send(Message::Text(text.into())).await.unwrap();
}

/// A browser page of another origin cannot open the stream with the
/// session cookie; a page of this daemon and a client without `Origin` can.
/// The token itself in a cookie (the old `svc_token`) is no credential.
#[tokio::test]
async fn a_page_of_another_origin_cannot_open_the_stream() {
    let s = server().await;
    let (session, _) = s
        .state
        .inner
        .auth
        .sessions
        .open("admin", svc_api::auth::Role::Admin)
        .unwrap();
    let mut old = format!("ws://{}/events", s.addr).into_client_request().unwrap();
    old.headers_mut().insert("cookie", "svc_token=tok".parse().unwrap());
    match tokio_tungstenite::connect_async(old).await {
        Err(WsError::Http(resp)) => assert_eq!(resp.status(), 401),
        Err(e) => panic!("expected HTTP 401 for the svc_token cookie, got {e}"),
        Ok(_) => panic!("the svc_token cookie opened the stream"),
    }
    let open = |origin: Option<String>| {
        let mut req = format!("ws://{}/events", s.addr).into_client_request().unwrap();
        req.headers_mut()
            .insert("cookie", format!("svc_session={session}").parse().unwrap());
        if let Some(o) = origin {
            req.headers_mut().insert("origin", o.parse().unwrap());
        }
        tokio_tungstenite::connect_async(req)
    };
    for origin in [
        "http://evil.example",
        "null",
        &format!("http://{}.evil.example", s.addr),
    ] {
        match open(Some(origin.to_owned())).await {
            Err(WsError::Http(resp)) => {
                assert_eq!(resp.status(), 403, "{origin}");
                let body = String::from_utf8(resp.body().clone().unwrap_or_default()).unwrap();
                assert!(body.contains("forbidden"), "{body}");
            }
            Err(e) => panic!("expected HTTP 403 for {origin}, got {e}"),
            Ok(_) => panic!("{origin} opened the stream"),
        }
    }
    for origin in [Some(format!("http://{}", s.addr)), None] {
        let (mut ws, _) = open(origin.clone()).await.unwrap_or_else(|e| panic!("{origin:?}: {e}"));
        ws.close(None).await.unwrap();
    }
}

#[tokio::test]
async fn handshake_needs_a_token() {
    let s = server().await;
    for token in [None, Some("wrong")] {
        match connect(s.addr, token).await {
            Err(WsError::Http(resp)) => {
                assert_eq!(resp.status(), 401);
                let body = String::from_utf8(resp.body().clone().unwrap_or_default()).unwrap();
                assert!(body.contains("unauthorized"), "{body}");
            }
            Err(e) => panic!("expected HTTP 401, got {e}"),
            Ok(_) => panic!("connected without a valid token"),
        }
    }
}

#[tokio::test]
async fn a_plain_request_is_an_api_error() {
    use axum::body::Body;
    use axum::http::{Request, StatusCode};
    use http_body_util::BodyExt;
    use tower::ServiceExt;

    let dir = tempfile::tempdir().unwrap();
    let state = AppState::new("tok".into());
    let app = svc_api::router(state.clone());
    let plain = || {
        Request::builder()
            .uri("/events")
            .header("authorization", "Bearer tok")
            .body(Body::empty())
            .unwrap()
    };
    let resp = app.clone().oneshot(plain()).await.unwrap();
    assert_eq!(
        resp.status(),
        StatusCode::SERVICE_UNAVAILABLE,
        "not ready before the engine"
    );

    state.set_engine(Arc::new(
        Engine::open(dir.path(), "s1", Arc::new(SystemClock::default())).unwrap(),
    ));
    let resp = app.oneshot(plain()).await.unwrap();
    assert!(resp.status().is_client_error(), "{}", resp.status());
    let body: Value = serde_json::from_slice(&resp.into_body().collect().await.unwrap().to_bytes()).unwrap();
    assert_eq!(body["error"]["code"], "bad_request", "{body}");
    assert!(
        body["error"]["message"].as_str().unwrap().contains("websocket"),
        "{body}"
    );
}

#[tokio::test]
async fn live_events_arrive_in_order_as_envelopes() {
    let s = server().await;
    append(&s.engine, 0, 2, 2).await;
    let mut ws = connect(s.addr, Some("tok")).await.unwrap();
    // Without `since`, only events committed after connecting are pushed.
    append(&s.engine, 2, 7, 5).await;
    append(&s.engine, 7, 10, 1).await;
    let first = next_json(&mut ws).await;
    assert_eq!(first["seq"], 3);
    assert_eq!(first["id"], "3");
    assert_eq!(first["event_type"], "EXECUTION_COMMIT");
    assert_eq!(first["crn"], VOL);
    assert_eq!(first["actor"], "tester");
    assert_eq!(first["message"], "event 2");
    assert_eq!(first["session_id"], "s1");
    assert_eq!(first["payload"], json!({"i": 2, "savings_usd": 1.5}));
    let ts = first["timestamp"].as_u64().unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    assert!(ts <= now && now - ts < 600, "timestamp {ts} is Unix seconds");
    assert_eq!(first["hash"].as_str().unwrap().len(), 64);
    let stored = s.engine.ledger().get(3).unwrap().unwrap();
    assert_eq!(first["hash"], stored.hash_hex());
    assert_eq!(
        first["prev_hash"],
        s.engine.ledger().get(2).unwrap().unwrap().hash_hex()
    );

    assert_eq!(read_seqs(&mut ws, 7).await, (4..=10).collect::<Vec<u64>>());
}

#[tokio::test]
async fn since_replays_then_continues_live_without_gap_or_duplicate() {
    let s = server().await;
    append(&s.engine, 0, 1500, 500).await;
    let mut ws = connect(s.addr, Some("tok")).await.unwrap();
    send_text(&mut ws, r#"{"since": 0}"#).await;
    // Appends race the replay: some are read back from the ledger, some
    // arrive live, some both ways; each must be seen exactly once.
    let writer = {
        let engine = s.engine.clone();
        tokio::spawn(async move { append(&engine, 1500, 2500, 20).await })
    };
    let seqs = read_seqs(&mut ws, 2500).await;
    writer.await.unwrap();
    assert_eq!(seqs, (1..=2500).collect::<Vec<u64>>());

    append(&s.engine, 2500, 2501, 1).await;
    assert_eq!(read_seqs(&mut ws, 1).await, [2501]);
}

#[tokio::test]
async fn since_mid_ledger_and_beyond_the_head() {
    let s = server().await;
    append(&s.engine, 0, 10, 10).await;
    let mut ws = connect(s.addr, Some("tok")).await.unwrap();
    send_text(&mut ws, r#"{"since": 7}"#).await;
    assert_eq!(read_seqs(&mut ws, 3).await, [8, 9, 10]);
    append(&s.engine, 10, 11, 1).await;
    assert_eq!(read_seqs(&mut ws, 1).await, [11]);

    // A seq the ledger never reached resumes at its head.
    let mut ahead = connect(s.addr, Some("tok")).await.unwrap();
    send_text(&mut ahead, r#"{"since": 999}"#).await;
    append(&s.engine, 11, 12, 1).await;
    assert_eq!(read_seqs(&mut ahead, 1).await, [12]);
    assert_eq!(read_seqs(&mut ws, 1).await, [12]);
}

#[tokio::test]
async fn a_subscriber_that_falls_behind_replays_from_the_ledger() {
    let s = server().await;
    let mut ws = connect(s.addr, Some("tok")).await.unwrap();
    // One commit of large events, while the client reads nothing: the
    // server blocks on the full socket long before the fan-out buffer is
    // drained, so its subscription overflows and the rest is read back
    // from the ledger.
    let n = svc_api::state::EVENT_FANOUT + 2000;
    let pad = "x".repeat(4 * 1024);
    let engine = s.engine.clone();
    tokio::task::spawn_blocking(move || {
        let events = (0..n)
            .map(|i| {
                let mut e = event(i);
                e.payload = json!({"i": i, "pad": pad});
                e
            })
            .collect();
        engine.ledger().append(events).unwrap();
    })
    .await
    .unwrap();
    let seqs = read_seqs(&mut ws, n).await;
    assert_eq!(seqs, (1..=n as u64).collect::<Vec<u64>>());
    append(&s.engine, n, n + 1, 1).await;
    assert_eq!(read_seqs(&mut ws, 1).await, [n as u64 + 1]);
}

#[tokio::test]
async fn bad_messages_get_an_error_frame_and_the_stream_goes_on() {
    let s = server().await;
    let mut ws = connect(s.addr, Some("tok")).await.unwrap();
    for bad in [
        "not json",
        r#"{"since": "x"}"#,
        r#"{"since": -1}"#,
        r#"{"from": 1}"#,
        "[]",
        "{}",
    ] {
        send_text(&mut ws, bad).await;
        let v = next_json(&mut ws).await;
        assert_eq!(v["error"]["code"], "bad_request", "{bad}: {v}");
        assert!(v["error"]["message"].as_str().unwrap().contains("since"), "{bad}: {v}");
    }
    ws.send(Message::Binary(vec![1u8, 2, 3].into())).await.unwrap();
    let v = next_json(&mut ws).await;
    assert_eq!(v["error"]["code"], "bad_request", "{v}");

    ws.send(Message::Ping(b"hi".to_vec().into())).await.unwrap();
    let pong = tokio::time::timeout(PATIENCE, ws.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(pong, Message::Pong(b"hi".to_vec().into()));

    append(&s.engine, 0, 3, 3).await;
    send_text(&mut ws, r#"{"since": 0}"#).await;
    assert_eq!(read_seqs(&mut ws, 3).await, [1, 2, 3]);

    ws.close(None).await.unwrap();
    loop {
        match tokio::time::timeout(PATIENCE, ws.next()).await.unwrap() {
            Some(Ok(Message::Close(_))) | None => break,
            Some(Ok(_)) => continue,
            Some(Err(e)) => panic!("unclean close: {e}"),
        }
    }
}
