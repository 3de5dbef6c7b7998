//! The plugin against moto behind a proxy that answers some requests
//! itself, as AWS does on a bad day: a 5xx answered a few times (retried
//! by the SDK, the scan succeeds), expired credentials (named by
//! preflight and scan), a service that keeps failing (only its part of
//! the region is left out, and named), the plugin killed mid-scan (the
//! stream ends in an error, so the daemon retires nothing).

#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

mod common;

use std::sync::{Arc, Mutex};

use axum::body::{Body, to_bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use common::*;
use svc_proto::provider::v1::ScanRequest;

/// What a request asks for: the query protocol's `Action`, the JSON
/// protocols' `X-Amz-Target`, else the path.
fn action_of(headers: &HeaderMap, path: &str, body: &[u8]) -> String {
    let form = String::from_utf8_lossy(body);
    if let Some(a) = form.split('&').find_map(|kv| kv.strip_prefix("Action=")) {
        return a.to_owned();
    }
    if let Some(t) = headers.get("x-amz-target").and_then(|v| v.to_str().ok()) {
        return t.to_owned();
    }
    path.to_owned()
}

/// Answers a request instead of moto: `(status, body)`, or `None` to pass it on.
type Rule = Box<dyn Fn(&str) -> Option<(u16, String)> + Send + Sync>;

struct Proxied {
    moto: String,
    rule: Rule,
    /// Requests of this action wait here until told to go on.
    hold: Option<(&'static str, Arc<tokio::sync::Notify>)>,
    http: reqwest::Client,
    /// Every request's action, in order.
    seen: Mutex<Vec<String>>,
}

async fn forward(State(p): State<Arc<Proxied>>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let body = to_bytes(body, usize::MAX).await.unwrap();
    let action = action_of(&parts.headers, parts.uri.path(), &body);
    p.seen.lock().unwrap().push(action.clone());
    if let Some((held, go)) = &p.hold
        && *held == action
    {
        go.notified().await;
    }
    if let Some((status, text)) = (p.rule)(&action) {
        return (
            StatusCode::from_u16(status).unwrap(),
            [("content-type", "text/xml")],
            text,
        )
            .into_response();
    }
    let url = format!("{}{}", p.moto, parts.uri.path_and_query().map_or("/", |q| q.as_str()));
    let mut headers = parts.headers.clone();
    headers.remove("host");
    let answer = p
        .http
        .request(parts.method, url)
        .headers(headers)
        .body(body)
        .send()
        .await
        .unwrap();
    let mut out = Response::builder().status(answer.status());
    for (k, v) in answer.headers() {
        if k != "content-length" && k != "transfer-encoding" {
            out = out.header(k, v);
        }
    }
    out.body(Body::from(answer.bytes().await.unwrap())).unwrap()
}

/// A proxy in front of `moto` applying `rule`.
struct Proxy {
    endpoint: String,
    state: Arc<Proxied>,
}

impl Proxy {
    async fn start(moto: &Moto, rule: Rule) -> Proxy {
        Proxy::holding(moto, rule, None).await
    }

    /// A proxy whose requests of `hold`'s action wait for its notification.
    async fn holding(moto: &Moto, rule: Rule, hold: Option<(&'static str, Arc<tokio::sync::Notify>)>) -> Proxy {
        let state = Arc::new(Proxied {
            moto: moto.endpoint.clone(),
            rule,
            hold,
            http: reqwest::Client::new(),
            seen: Mutex::new(Vec::new()),
        });
        let app = axum::Router::new().fallback(forward).with_state(state.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let endpoint = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        Proxy { endpoint, state }
    }

    fn count(&self, action: &str) -> usize {
        self.state.seen.lock().unwrap().iter().filter(|a| *a == action).count()
    }

    /// The plugin with the proxy as its endpoint and dummy credentials.
    async fn plugin(&self) -> Plugin {
        Plugin::start(&[
            ("AWS_ENDPOINT_URL", &self.endpoint),
            ("AWS_ACCESS_KEY_ID", "testing"),
            ("AWS_SECRET_ACCESS_KEY", "testing"),
            ("AWS_REGION", A),
        ])
        .await
    }
}

/// An EC2-style (query protocol) error answer.
fn ec2_error(code: &str, message: &str) -> String {
    format!(
        "<Response><Errors><Error><Code>{code}</Code><Message>{message}</Message></Error></Errors>\
         <RequestID>svc-test</RequestID></Response>"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_5xx_answered_twice_is_retried_and_the_scan_succeeds() {
    let moto = Moto::start().await;
    let s = seed_small(&moto.ec2(B)).await;
    let failed = Arc::new(Mutex::new(0));
    let left = failed.clone();
    let rule: Rule = Box::new(move |action| {
        let mut n = left.lock().unwrap();
        (action == "DescribeVolumes" && *n < 2).then(|| {
            *n += 1;
            (503, ec2_error("Unavailable", "the service is unavailable"))
        })
    });
    let proxy = Proxy::start(&moto, rule).await;
    let mut plugin = proxy.plugin().await;
    let (scan, status) = plugin.scan(&[("regions", B)]).await;
    status.expect("the third attempt succeeds");
    assert!(scan.unlisted.is_none(), "{:?}", scan.unlisted);
    assert_eq!(*failed.lock().unwrap(), 2);
    assert_eq!(
        proxy.count("DescribeVolumes"),
        3,
        "two answered 503, the third reached moto"
    );
    assert!(scan.nodes.contains_key(&crn(B, "volume", &s.loose_volume)));
    assert!(scan.nodes.contains_key(&crn(B, "volume", &s.running_root)));
    // The retries are the SDK's: one logged request, which succeeded.
    let logged = plugin
        .log()
        .iter()
        .filter(|l| l["@message"] == "aws call" && l["operation"] == "DescribeVolumes")
        .count();
    assert_eq!(logged, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expired_credentials_are_named_and_nothing_is_scanned() {
    let moto = Moto::start().await;
    seed_small(&moto.ec2(B)).await;
    let rule: Rule = Box::new(|action| {
        (action == "GetCallerIdentity").then(|| {
            let body = "<ErrorResponse><Error><Type>Sender</Type><Code>ExpiredToken</Code>\
                 <Message>The security token included in the request is expired</Message></Error>\
                 <RequestId>svc-test</RequestId></ErrorResponse>";
            (403, body.to_owned())
        })
    });
    let proxy = Proxy::start(&moto, rule).await;
    let mut plugin = proxy.plugin().await;
    let r = plugin.preflight(&[("regions", B)]).await;
    assert!(!r.ok, "{r:?}");
    assert_eq!(r.missing, ["credentials"]);
    assert!(
        r.message.contains("ExpiredToken") || r.message.contains("expired"),
        "{}",
        r.message
    );
    let e = plugin
        .provider
        .scan(ScanRequest {
            config: [("regions".to_owned(), B.to_owned())].into(),
        })
        .await
        .expect_err("no scan with expired credentials");
    assert_eq!(e.code(), tonic::Code::Unauthenticated, "{e:?}");
    assert!(e.message().contains("expired"), "{}", e.message());
    // Nothing past the identity check was asked of AWS.
    assert_eq!(proxy.count("DescribeVolumes") + proxy.count("DescribeInstances"), 0);
}

/// An RDS-style (query protocol) 5xx answer.
fn server_error() -> (u16, String) {
    let body = "<ErrorResponse><Error><Type>Receiver</Type><Code>InternalFailure</Code>\
         <Message>internal failure</Message></Error><RequestId>svc-test</RequestId></ErrorResponse>";
    (500, body.to_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_that_keeps_failing_fails_only_itself_in_its_region() {
    let moto = Moto::start().await;
    let s = seed_small(&moto.ec2(B)).await;
    let rule: Rule = Box::new(|action| (action == "DescribeDBInstances").then(server_error));
    let proxy = Proxy::start(&moto, rule).await;
    let mut plugin = proxy.plugin().await;
    let (scan, status) = plugin.scan(&[("regions", B), ("max_attempts", "2")]).await;
    status.expect("the other services were listed");
    assert_eq!(proxy.count("DescribeDBInstances"), 2, "retried once, then given up");
    let unlisted = scan.unlisted.expect("RDS is named");
    let parts = unlisted.as_array().unwrap();
    assert_eq!(parts.len(), 1, "{unlisted}");
    assert_eq!(
        (
            parts[0]["region"].as_str(),
            parts[0]["service"].as_str(),
            parts[0]["account"].as_str()
        ),
        (Some(B), Some("rds"), Some(ACCOUNT)),
        "{unlisted}"
    );
    assert!(
        parts[0]["error"]
            .as_str()
            .unwrap()
            .contains("rds DescribeDBInstances in eu-west-1"),
        "{unlisted}"
    );
    assert!(scan.nodes.contains_key(&crn(B, "instance", &s.running)));
    assert!(scan.nodes.contains_key(&crn(B, "volume", &s.loose_volume)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn when_every_service_of_every_region_fails_the_scan_fails() {
    let moto = Moto::start().await;
    seed_small(&moto.ec2(B)).await;
    // Who the plugin is, and the regions, answer; nothing else does.
    let rule: Rule = Box::new(|action| (!matches!(action, "GetCallerIdentity" | "DescribeRegions")).then(server_error));
    let proxy = Proxy::start(&moto, rule).await;
    let mut plugin = proxy.plugin().await;
    let (scan, status) = plugin.scan(&[("regions", B), ("max_attempts", "1")]).await;
    let status = status.expect_err("nothing was listed");
    assert_eq!(status.code(), tonic::Code::Unavailable, "{status:?}");
    assert!(
        status.message().starts_with("every region failed (1 of 1)"),
        "{}",
        status.message()
    );
    assert!(scan.nodes.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_killed_mid_scan_ends_its_stream_with_an_error_not_an_ok_end() {
    let moto = Moto::start().await;
    seed_small(&moto.ec2(B)).await;
    let go = Arc::new(tokio::sync::Notify::new());
    let proxy = Proxy::holding(&moto, Box::new(|_| None), Some(("DescribeVolumes", go.clone()))).await;
    let mut plugin = proxy.plugin().await;
    let mut provider = plugin.provider.clone();
    let scan = tokio::spawn(async move {
        let config = [("regions".to_owned(), B.to_owned())].into();
        let mut stream = provider.scan(ScanRequest { config }).await?.into_inner();
        let mut nodes = 0;
        while let Some(r) = stream.message().await? {
            nodes += r.nodes.len();
        }
        Ok::<_, tonic::Status>(nodes)
    });
    // The scan is under way (its volumes asked for) when the plugin dies.
    let end = std::time::Instant::now() + DEADLINE;
    while proxy.count("DescribeVolumes") == 0 {
        assert!(std::time::Instant::now() < end, "the scan never asked for volumes");
        tokio::time::sleep(POLL_PAUSE).await;
    }
    plugin._child.kill().await.unwrap();
    go.notify_waiters();
    let ended = tokio::time::timeout(DEADLINE, scan).await.unwrap().unwrap();
    // The daemon takes an error end for a failed scan and keeps what it
    // knew; only an OK end (with its trailer) lets it retire anything.
    let e = ended.expect_err("a killed plugin's scan does not end OK");
    assert_ne!(e.code(), tonic::Code::Ok, "{e:?}");
}
