//! The terminal UI's link to the daemon: REST calls that answer with a
//! [`Msg`], and the `/events` stream, kept up across daemon restarts.

use std::time::Duration;

use futures::{SinkExt, StreamExt};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio::sync::mpsc::UnboundedSender;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;

use super::app::{Decision, Effect, Link, Msg, RowQuery};
use super::wire::{
    Blast, Envelope, ErrorBody, HistoryHead, NodeDetail, NodeEdges, Oracle, Plan, Queue, RowPage, Session,
};

/// Items listed per stage of the queue (the most the daemon lists).
const QUEUE_LIMIT: usize = 1000;
/// Ledger events replayed when the stream first connects.
const BACKLOG: u64 = 200;
/// How long a connection attempt or a request may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// A stream silent this long is pinged; one silent twice as long is dropped
/// (a socket to a daemon that is gone may never report an error).
const IDLE: Duration = Duration::from_secs(5);
/// Longest pause between two reconnection attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(2);
/// Bytes of the characters a CRN path segment percent-encodes.
const CRN_SAFE: &[u8] = b"-._~:";

/// The daemon's address and the caller's token.
#[derive(Clone)]
pub struct Client {
    http: http_client::Client,
    base: String,
    token: Option<String>,
}

impl Client {
    pub fn new(url: &str, token: Option<String>) -> anyhow::Result<Client> {
        let http = http_client::Client::builder()
            .timeout(REQUEST_TIMEOUT)
            .connect_timeout(REQUEST_TIMEOUT)
            .build()?;
        Ok(Client {
            http,
            base: url.trim_end_matches('/').to_owned(),
            token: token.filter(|t| !t.is_empty()),
        })
    }

    /// The `/events` address: the base with a WebSocket scheme.
    pub fn events_url(&self) -> String {
        let rest = self
            .base
            .strip_prefix("https://")
            .map(|r| format!("wss://{r}"))
            .or_else(|| self.base.strip_prefix("http://").map(|r| format!("ws://{r}")))
            .unwrap_or_else(|| format!("ws://{}", self.base));
        format!("{rest}/events")
    }

    async fn send(&self, req: http_client::RequestBuilder) -> Result<http_client::Response, String> {
        let req = match &self.token {
            Some(t) => req.bearer_auth(t),
            None => req,
        };
        let resp = req.send().await.map_err(|e| describe(&e))?;
        if resp.status().is_success() {
            return Ok(resp);
        }
        let status = resp.status();
        let body: ErrorBody = resp.json().await.unwrap_or_default();
        Err(if body.error.message.is_empty() {
            format!("the daemon answered {status}")
        } else {
            format!("{} ({})", body.error.message, status.as_u16())
        })
    }

    async fn get<T: DeserializeOwned>(&self, path: &str, query: &[(&str, String)]) -> Result<T, String> {
        let resp = self
            .send(self.http.get(format!("{}{path}", self.base)).query(query))
            .await?;
        resp.json()
            .await
            .map_err(|e| format!("unreadable answer from {path}: {e}"))
    }

    async fn post(&self, path: &str, body: Value) -> Result<Value, String> {
        let resp = self
            .send(self.http.post(format!("{}{path}", self.base)).json(&body))
            .await?;
        resp.json()
            .await
            .map_err(|e| format!("unreadable answer from {path}: {e}"))
    }

    /// One window of `/api/v1/nodes`: the daemon filters, sorts and cuts.
    async fn rows(&self, q: RowQuery) -> Msg {
        let mut params = vec![
            ("sort", q.sort.name().to_owned()),
            ("order", if q.descending { "desc" } else { "asc" }.to_owned()),
            ("offset", q.offset.to_string()),
            ("limit", q.limit.to_string()),
        ];
        if let Some(c) = q.category.query() {
            params.push(("category", c.to_owned()));
        }
        if !q.filter.is_empty() {
            params.push(("filter", q.filter.clone()));
        }
        match self.get::<RowPage>("/api/v1/nodes", &params).await {
            Ok(page) => Msg::Rows(q, page),
            Err(why) => Msg::RowsFailed(why),
        }
    }

    /// Carries out one effect, sending what it learnt to `tx`.
    pub async fn perform(self, effect: Effect, tx: UnboundedSender<Msg>) {
        let out: Vec<Result<Msg, String>> = match effect {
            Effect::Quit => return,
            Effect::LoadSession => vec![
                self.get::<Session>("/api/v1/session", &[])
                    .await
                    .map(|s| Msg::Role(s.role)),
            ],
            Effect::LoadRows(q) => vec![Ok(self.rows(q).await)],
            Effect::LoadQueue => vec![
                self.get::<Queue>("/api/v1/remediation/queue", &[("limit", QUEUE_LIMIT.to_string())])
                    .await
                    .map(Msg::Queue),
            ],
            Effect::LoadPlan(crn) => vec![
                self.get::<Plan>("/api/v1/plan", &[("crn", crn.clone())])
                    .await
                    .map(|p| Msg::Plan(crn, Box::new(p))),
            ],
            Effect::LoadDetail(crn) => {
                let p = crn_path(&crn);
                let (node_path, edges_path) = (
                    format!("/api/v1/graph/nodes/{p}"),
                    format!("/api/v1/graph/nodes/{p}/edges"),
                );
                let (blast_path, oracle_path) =
                    (format!("/api/v1/graph/blast-radius/{p}"), format!("/api/v1/oracle/{p}"));
                let (edge_limit, blast_limit) = ([("limit", "200".to_owned())], [("limit", "50".to_owned())]);
                let (node, edges, blast, oracle) = tokio::join!(
                    self.get::<NodeDetail>(&node_path, &[]),
                    self.get::<NodeEdges>(&edges_path, &edge_limit),
                    self.get::<Blast>(&blast_path, &blast_limit),
                    self.get::<Oracle>(&oracle_path, &[]),
                );
                vec![
                    node.map(|n| Msg::Node(crn.clone(), Box::new(n))),
                    edges.map(|e| Msg::Edges(crn.clone(), e)),
                    blast.map(|b| Msg::Blast(crn.clone(), b)),
                    oracle.map(|o| Msg::Oracle(crn.clone(), o)),
                ]
            }
            Effect::Decide(d) => vec![Ok(match self.decide(d).await {
                Ok(done) => Msg::Done(done),
                Err(why) => Msg::Refused(why),
            })],
        };
        for m in out {
            let _ = tx.send(m.unwrap_or_else(Msg::Failed));
        }
    }

    async fn decide(&self, d: Decision) -> Result<String, String> {
        let actor = "svc tui";
        // Status lines name the resource by its id: they must fit 80 columns.
        let short = |crn: &str| super::model::short_name(crn).to_owned();
        match d {
            Decision::Approve { crn, plan_hash } => {
                let v = self
                    .post(
                        "/api/v1/remediation/approve",
                        json!({ "crn": crn, "plan_hash": plan_hash, "actor": actor }),
                    )
                    .await?;
                let stage = v["stage"].as_str().unwrap_or("?");
                Ok(match v["failure"].as_str() {
                    Some(f) => format!("approved {}: saga {stage}, failed: {f}", short(&crn)),
                    None => format!("approved {}: saga {stage}", short(&crn)),
                })
            }
            Decision::Reject { crn, plan_hash } => {
                self.post(
                    "/api/v1/remediation/reject",
                    json!({ "crn": crn, "plan_hash": plan_hash, "actor": actor }),
                )
                .await?;
                Ok(format!("rejected {}", short(&crn)))
            }
            Decision::Quarantine { crn } => {
                let v = self
                    .post(
                        "/api/v1/remediation/quarantine",
                        json!({ "crn": crn, "action": "ISOLATE", "reason": "quarantined from svc tui", "actor": actor }),
                    )
                    .await?;
                Ok(format!(
                    "quarantined {}; undo hash {}",
                    short(&crn),
                    v["compensating_payload_hash"].as_str().unwrap_or("?")
                ))
            }
            Decision::Ignore { crn, ttl_seconds } => {
                self.post(
                    "/api/v1/isolation",
                    json!({ "crn": crn, "reason_code": "ignored from svc tui", "ttl_seconds": ttl_seconds, "actor": actor }),
                )
                .await?;
                Ok(match ttl_seconds {
                    0 => format!("ignored {} (permanently)", short(&crn)),
                    s => format!(
                        "ignored {} for {}",
                        short(&crn),
                        humantime::format_duration(std::time::Duration::from_secs(s))
                    ),
                })
            }
            Decision::Bulk { approve, items } => {
                let action = if approve { "approve" } else { "reject" };
                let body: Vec<Value> = items
                    .iter()
                    .map(|(crn, hash)| json!({ "crn": crn, "plan_hash": hash }))
                    .collect();
                let v = self
                    .post(
                        "/api/v1/remediation/bulk",
                        json!({ "action": action, "items": body, "actor": actor }),
                    )
                    .await?;
                let (ok, failed) = (v["succeeded"].as_u64().unwrap_or(0), v["failed"].as_u64().unwrap_or(0));
                let first_error = v["results"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .find_map(|r| Some(format!("{}: {}", short(r["crn"].as_str()?), r["error"].as_str()?)));
                let verb = if approve { "approved" } else { "rejected" };
                Ok(match first_error {
                    Some(e) => format!("{verb} {ok}, {failed} failed ({e})"),
                    None => format!("{verb} {ok}"),
                })
            }
            Decision::Move { crn, plan_hash, to } => {
                self.post(
                    "/api/v1/remediation/move",
                    json!({ "crn": crn, "plan_hash": plan_hash, "to": to, "actor": actor }),
                )
                .await?;
                Ok(format!("moved {} to {to}", short(&crn)))
            }
            Decision::Revert { hash, what } => {
                let v = self
                    .post("/api/v1/remediation/revert", json!({ "hash": hash, "actor": actor }))
                    .await?;
                Ok(format!("reverted {what}: {}", v["action"].as_str().unwrap_or("done")))
            }
        }
    }

    /// The head of the ledger, to start the stream a little before it.
    async fn ledger_head(&self) -> Result<u64, String> {
        let h: HistoryHead = self.get("/api/v1/history", &[("limit", "1".into())]).await?;
        Ok(h.events.first().map_or(0, |e| e.seq))
    }

    /// Keeps the `/events` stream up until `tx` closes: reports the link,
    /// forwards each event once, resumes after the last event seen on every
    /// reconnection, and retries with a short backoff when the daemon is
    /// away.
    pub async fn stream(self, tx: UnboundedSender<Msg>) {
        let mut since: Option<u64> = None;
        let mut attempt = 0u32;
        loop {
            if tx.is_closed() {
                return;
            }
            let reason = match self.connect_once(&tx, &mut since).await {
                Ok(reason) => {
                    attempt = 0;
                    reason
                }
                Err(reason) => reason,
            };
            attempt += 1;
            if tx.send(Msg::Link(Link::Disconnected { reason, attempt })).is_err() {
                return;
            }
            let pause = Duration::from_millis(250u64.saturating_mul(1 << attempt.min(4))).min(MAX_BACKOFF);
            tokio::time::sleep(pause).await;
        }
    }

    /// One connection: `Err` when it could not be made, `Ok` with why it
    /// ended once it was.
    async fn connect_once(&self, tx: &UnboundedSender<Msg>, since: &mut Option<u64>) -> Result<String, String> {
        let mut req = self
            .events_url()
            .into_client_request()
            .map_err(|e| format!("bad address {}: {e}", self.events_url()))?;
        if let Some(t) = &self.token {
            let v = HeaderValue::from_str(&format!("Bearer {t}"))
                .map_err(|_| "the token is not a header value".to_owned())?;
            req.headers_mut().insert("authorization", v);
        }
        let (mut ws, _) = tokio::time::timeout(REQUEST_TIMEOUT, tokio_tungstenite::connect_async(req))
            .await
            .map_err(|_| "connection timed out".to_owned())?
            .map_err(|e| short_ws_error(&e))?;
        let from = match *since {
            Some(s) => s,
            None => self.ledger_head().await?.saturating_sub(BACKLOG),
        };
        ws.send(Message::text(json!({ "since": from }).to_string()))
            .await
            .map_err(|e| short_ws_error(&e))?;
        *since = Some(from);
        if tx.send(Msg::Link(Link::Connected)).is_err() {
            return Ok("closed".into());
        }
        let mut pinged = false;
        loop {
            let frame = match tokio::time::timeout(IDLE, ws.next()).await {
                Ok(Some(Ok(f))) => f,
                Ok(Some(Err(e))) => return Ok(short_ws_error(&e)),
                Ok(None) => return Ok("the daemon closed the stream".into()),
                Err(_) if pinged => return Ok("the daemon stopped answering".into()),
                Err(_) => {
                    pinged = true;
                    ws.send(Message::Ping(Vec::new().into()))
                        .await
                        .map_err(|e| short_ws_error(&e))?;
                    continue;
                }
            };
            pinged = false;
            match frame {
                Message::Text(t) => {
                    if let Ok(ev) = serde_json::from_str::<Envelope>(t.as_str())
                        && ev.seq > 0
                    {
                        *since = Some(since.map_or(ev.seq, |s| s.max(ev.seq)));
                        if tx.send(Msg::Event(Box::new(ev))).is_err() {
                            return Ok("closed".into());
                        }
                    }
                }
                Message::Close(c) => {
                    return Ok(match c {
                        Some(c) if !c.reason.is_empty() => format!("the daemon closed the stream: {}", c.reason),
                        _ => "the daemon closed the stream".into(),
                    });
                }
                _ => {}
            }
        }
    }
}

/// A CRN as one path segment.
pub fn crn_path(crn: &str) -> String {
    let mut out = String::with_capacity(crn.len());
    for b in crn.bytes() {
        if b.is_ascii_alphanumeric() || CRN_SAFE.contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn describe(e: &http_client::Error) -> String {
    if e.is_connect() {
        "cannot connect to the daemon".into()
    } else if e.is_timeout() {
        "the daemon did not answer in time".into()
    } else {
        format!("request failed: {e}")
    }
}

fn short_ws_error(e: &tokio_tungstenite::tungstenite::Error) -> String {
    use tokio_tungstenite::tungstenite::Error as E;
    match e {
        E::Io(io) if io.kind() == std::io::ErrorKind::ConnectionRefused => "connection refused".into(),
        E::Io(io) => format!("connection lost: {}", io.kind()),
        E::Http(resp) => format!("the daemon refused the stream ({})", resp.status()),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crn_paths_and_event_urls() {
        assert_eq!(
            crn_path("crn:svc:aws:r:s3:bucket:1:a/b c"),
            "crn:svc:aws:r:s3:bucket:1:a%2Fb%20c"
        );
        let c = Client::new("http://127.0.0.1:9/", None).unwrap();
        assert_eq!(c.events_url(), "ws://127.0.0.1:9/events");
        let c = Client::new("https://svc.example", Some(String::new())).unwrap();
        assert_eq!(c.events_url(), "wss://svc.example/events");
        assert!(c.token.is_none());
    }
}
