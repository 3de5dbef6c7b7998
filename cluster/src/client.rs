//! [`Etcd`]: a client of etcd's v3 gRPC API over tonic.
//!
//! Every endpoint gets a lazily connected channel; a call goes to the
//! endpoint that answered last and, when that one is unreachable (gRPC
//! `Unavailable`) or does not answer in time, to the next, each attempt
//! bounded by the request timeout. Any other etcd error is returned at once.
//! TLS, when configured, is rustls with a CA and optionally a client
//! certificate and key (etcd's mutual TLS).

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint, Identity};

use crate::error::{Error, Result};
use crate::pb::etcdserverpb::{
    DeleteRangeRequest, LeaseGrantRequest, LeaseRevokeRequest, LeaseTimeToLiveRequest, PutRequest, RangeRequest,
    RangeResponse, StatusRequest, StatusResponse, TxnRequest, TxnResponse, kv_client::KvClient,
    lease_client::LeaseClient, maintenance_client::MaintenanceClient,
};
use crate::pb::mvccpb::KeyValue;

/// Keys read per page when listing a prefix.
const PAGE: i64 = 1000;

/// Where etcd is and how to talk to it.
#[derive(Debug, Clone)]
pub struct EtcdConfig {
    /// Client URLs (`http://host:2379`, `https://host:2379`, or `host:2379`,
    /// which takes `https` when TLS is configured and `http` otherwise).
    pub endpoints: Vec<String>,
    /// The limit on each attempt of a call.
    pub request_timeout: Duration,
    /// The limit on opening a connection to an endpoint.
    pub connect_timeout: Duration,
    /// TLS files; `None` speaks plain HTTP/2.
    pub tls: Option<TlsFiles>,
}

impl EtcdConfig {
    /// A configuration for `endpoints` with the default timeouts (5 s a
    /// request, 3 s a connection) and no TLS.
    pub fn new<S: Into<String>>(endpoints: impl IntoIterator<Item = S>) -> EtcdConfig {
        EtcdConfig {
            endpoints: endpoints.into_iter().map(Into::into).collect(),
            request_timeout: Duration::from_secs(5),
            connect_timeout: Duration::from_secs(3),
            tls: None,
        }
    }
}

/// The PEM files of etcd's TLS: the CA that signed the server certificates
/// and, for mutual TLS, this client's certificate and key.
#[derive(Debug, Clone)]
pub struct TlsFiles {
    /// CA certificate(s), PEM.
    pub ca: PathBuf,
    /// Client certificate, PEM (with `key`).
    pub cert: Option<PathBuf>,
    /// Client private key, PEM (with `cert`).
    pub key: Option<PathBuf>,
    /// The name to check the server certificate against, when it is not
    /// the endpoint's host.
    pub server_name: Option<String>,
}

struct Target {
    url: String,
    channel: Channel,
}

struct Inner {
    targets: Vec<Target>,
    current: AtomicUsize,
    timeout: Duration,
}

/// A handle on an etcd cluster; cheap to clone.
#[derive(Clone)]
pub struct Etcd {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Etcd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Etcd").field("endpoints", &self.endpoints()).finish()
    }
}

fn read_file(what: &'static str, path: &PathBuf) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|source| Error::TlsFile {
        what,
        path: path.display().to_string(),
        source,
    })
}

fn tls_config(files: &TlsFiles) -> Result<ClientTlsConfig> {
    let mut tls = ClientTlsConfig::new().ca_certificate(Certificate::from_pem(read_file("ca", &files.ca)?));
    match (&files.cert, &files.key) {
        (Some(cert), Some(key)) => {
            tls = tls.identity(Identity::from_pem(
                read_file("certificate", cert)?,
                read_file("key", key)?,
            ));
        }
        (None, None) => {}
        _ => {
            return Err(Error::Config(
                "a client certificate needs its key and a key its certificate".into(),
            ));
        }
    }
    if let Some(name) = &files.server_name {
        tls = tls.domain_name(name.clone());
    }
    Ok(tls)
}

impl Etcd {
    /// Prepares channels to every endpoint. Nothing is dialled until the
    /// first call, so this succeeds while etcd is down; must run inside a
    /// tokio runtime.
    pub fn connect(config: &EtcdConfig) -> Result<Etcd> {
        if config.endpoints.is_empty() {
            return Err(Error::Config("no endpoints".into()));
        }
        let tls = config.tls.as_ref().map(tls_config).transpose()?;
        let mut targets = Vec::with_capacity(config.endpoints.len());
        for raw in &config.endpoints {
            let url = if raw.contains("://") {
                raw.clone()
            } else if tls.is_some() {
                format!("https://{raw}")
            } else {
                format!("http://{raw}")
            };
            let bad = |reason: String| Error::Config(format!("endpoint {raw:?}: {reason}"));
            let mut endpoint = Endpoint::from_shared(url.clone())
                .map_err(|e| bad(e.to_string()))?
                .connect_timeout(config.connect_timeout)
                .tcp_nodelay(true)
                // etcd refuses pings more often than every 5 s.
                .http2_keep_alive_interval(Duration::from_secs(10))
                .keep_alive_timeout(Duration::from_secs(5))
                .keep_alive_while_idle(true);
            if let Some(tls) = &tls {
                endpoint = endpoint.tls_config(tls.clone()).map_err(|e| bad(e.to_string()))?;
            }
            targets.push(Target {
                url,
                channel: endpoint.connect_lazy(),
            });
        }
        Ok(Etcd {
            inner: Arc::new(Inner {
                targets,
                current: AtomicUsize::new(0),
                timeout: config.request_timeout,
            }),
        })
    }

    /// The endpoints' URLs, in the configured order.
    pub fn endpoints(&self) -> Vec<String> {
        self.inner.targets.iter().map(|t| t.url.clone()).collect()
    }

    /// The limit on each attempt of a call.
    pub fn timeout(&self) -> Duration {
        self.inner.timeout
    }

    /// Runs `f` on the current endpoint's channel and, when that endpoint is
    /// unreachable or slow, on the next ones in turn.
    pub(crate) async fn call<T, F, Fut>(&self, op: &'static str, f: F) -> Result<T>
    where
        F: Fn(Channel, Duration) -> Fut,
        Fut: Future<Output = Result<T, tonic::Status>>,
    {
        let targets = &self.inner.targets;
        let start = self.inner.current.load(Ordering::Relaxed);
        let timeout = self.inner.timeout;
        let mut last: Option<Error> = None;
        for i in 0..targets.len() {
            let idx = (start + i) % targets.len();
            let target = &targets[idx];
            match tokio::time::timeout(timeout, f(target.channel.clone(), timeout)).await {
                Ok(Ok(out)) => {
                    self.inner.current.store(idx, Ordering::Relaxed);
                    return Ok(out);
                }
                Ok(Err(status)) if retry_elsewhere(&status) => {
                    last = Some(Error::Unavailable {
                        op,
                        endpoints: self.endpoints().join(", "),
                        message: format!("{}: {}", target.url, status.message()),
                    });
                }
                Ok(Err(status)) => {
                    return Err(Error::Rpc {
                        op,
                        endpoint: target.url.clone(),
                        code: status.code(),
                        message: status.message().to_owned(),
                    });
                }
                Err(_) => {
                    last = Some(Error::Timeout {
                        op,
                        endpoint: target.url.clone(),
                        timeout,
                    })
                }
            }
        }
        Err(last.unwrap_or_else(|| Error::Config("no endpoints".into())))
    }

    /// The answering member's status (version, raft state): a health check.
    pub async fn status(&self) -> Result<StatusResponse> {
        self.call("Status", |ch, t| async move {
            Ok(MaintenanceClient::new(ch)
                .status(request(StatusRequest {}, t))
                .await?
                .into_inner())
        })
        .await
    }

    /// A raw range read.
    pub async fn range(&self, req: RangeRequest) -> Result<RangeResponse> {
        self.call("Range", |ch, t| {
            let req = req.clone();
            async move { Ok(KvClient::new(ch).range(request(req, t)).await?.into_inner()) }
        })
        .await
    }

    /// One key, or `None`.
    pub async fn get(&self, key: impl Into<Vec<u8>>) -> Result<Option<KeyValue>> {
        let resp = self
            .range(RangeRequest {
                key: key.into(),
                ..Default::default()
            })
            .await?;
        Ok(resp.kvs.into_iter().next())
    }

    /// Every key under `prefix`, in key order, read at one revision (in
    /// pages), and that revision.
    pub async fn get_prefix(&self, prefix: &[u8]) -> Result<(Vec<KeyValue>, i64)> {
        let end = prefix_end(prefix);
        let mut out = Vec::new();
        let mut key = prefix.to_vec();
        let mut revision = 0;
        loop {
            let resp = self
                .range(RangeRequest {
                    key,
                    range_end: end.clone(),
                    limit: PAGE,
                    revision,
                    ..Default::default()
                })
                .await?;
            if revision == 0 {
                revision = resp.header.as_ref().map_or(0, |h| h.revision);
            }
            let more = resp.more;
            let next = resp.kvs.last().map(|kv| {
                let mut k = kv.key.clone();
                k.push(0);
                k
            });
            out.extend(resp.kvs);
            match next {
                Some(next) if more => key = next,
                _ => break,
            }
        }
        Ok((out, revision))
    }

    /// Puts `value` under `key` (tied to `lease` unless it is 0); the
    /// revision of the write.
    pub async fn put(&self, key: impl Into<Vec<u8>>, value: impl Into<Vec<u8>>, lease: i64) -> Result<i64> {
        let req = PutRequest {
            key: key.into(),
            value: value.into(),
            lease,
            ..Default::default()
        };
        self.call("Put", |ch, t| {
            let req = req.clone();
            async move {
                let resp = KvClient::new(ch).put(request(req, t)).await?.into_inner();
                Ok(resp.header.map_or(0, |h| h.revision))
            }
        })
        .await
    }

    /// Deletes the keys in `[key, range_end)` (only `key` when `range_end`
    /// is empty); how many were deleted.
    pub async fn delete_range(&self, key: impl Into<Vec<u8>>, range_end: Vec<u8>) -> Result<i64> {
        let req = DeleteRangeRequest {
            key: key.into(),
            range_end,
            ..Default::default()
        };
        self.call("DeleteRange", |ch, t| {
            let req = req.clone();
            async move {
                Ok(KvClient::new(ch)
                    .delete_range(request(req, t))
                    .await?
                    .into_inner()
                    .deleted)
            }
        })
        .await
    }

    /// Deletes one key; whether it existed.
    pub async fn delete(&self, key: impl Into<Vec<u8>>) -> Result<bool> {
        Ok(self.delete_range(key, Vec::new()).await? > 0)
    }

    /// Deletes every key under `prefix`; how many.
    pub async fn delete_prefix(&self, prefix: &[u8]) -> Result<i64> {
        self.delete_range(prefix.to_vec(), prefix_end(prefix)).await
    }

    /// A transaction: `compare`, then `success` or `failure`.
    pub async fn txn(&self, req: TxnRequest) -> Result<TxnResponse> {
        self.call("Txn", |ch, t| {
            let req = req.clone();
            async move { Ok(KvClient::new(ch).txn(request(req, t)).await?.into_inner()) }
        })
        .await
    }

    /// Grants a lease of `ttl` (whole seconds, at least 1); its id and the
    /// TTL etcd chose.
    pub async fn lease_grant(&self, ttl: Duration) -> Result<(i64, Duration)> {
        let secs = i64::try_from(ttl.as_secs().max(1)).unwrap_or(i64::MAX);
        let resp = self
            .call("LeaseGrant", |ch, t| async move {
                let req = LeaseGrantRequest { ttl: secs, id: 0 };
                Ok(LeaseClient::new(ch).lease_grant(request(req, t)).await?.into_inner())
            })
            .await?;
        if !resp.error.is_empty() {
            return Err(Error::LeaseRefused(resp.error));
        }
        Ok((resp.id, Duration::from_secs(u64::try_from(resp.ttl).unwrap_or(0))))
    }

    /// Revokes a lease: every key tied to it is deleted.
    pub async fn lease_revoke(&self, id: i64) -> Result<()> {
        self.call("LeaseRevoke", |ch, t| async move {
            LeaseClient::new(ch)
                .lease_revoke(request(LeaseRevokeRequest { id }, t))
                .await?;
            Ok(())
        })
        .await
    }

    /// A lease's remaining time to live, or `None` when it has expired or
    /// was revoked.
    pub async fn lease_time_to_live(&self, id: i64) -> Result<Option<Duration>> {
        let resp = self
            .call("LeaseTimeToLive", |ch, t| async move {
                let req = LeaseTimeToLiveRequest { id, keys: false };
                Ok(LeaseClient::new(ch)
                    .lease_time_to_live(request(req, t))
                    .await?
                    .into_inner())
            })
            .await?;
        Ok(u64::try_from(resp.ttl).ok().map(Duration::from_secs))
    }

    /// The channel of the endpoint that answered last, for streams.
    pub(crate) fn channels(&self) -> impl Iterator<Item = (&str, Channel)> {
        let targets = &self.inner.targets;
        let start = self.inner.current.load(Ordering::Relaxed);
        (0..targets.len()).map(move |i| {
            let t = &targets[(start + i) % targets.len()];
            (t.url.as_str(), t.channel.clone())
        })
    }

    /// Marks the endpoint at `url` as the one to try first.
    pub(crate) fn prefer(&self, url: &str) {
        if let Some(idx) = self.inner.targets.iter().position(|t| t.url == url) {
            self.inner.current.store(idx, Ordering::Relaxed);
        }
    }
}

/// Whether a failed call should be tried on another endpoint: the endpoint
/// is unreachable or its connection broke (tonic reports a broken
/// connection as `Unknown` with a transport error as the source), or the
/// member has lost its raft leader (`Unavailable` from etcd).
pub(crate) fn retry_elsewhere(status: &tonic::Status) -> bool {
    use std::error::Error as _;
    match status.code() {
        tonic::Code::Unavailable => true,
        tonic::Code::Unknown => {
            status
                .source()
                .is_some_and(|s| s.downcast_ref::<tonic::transport::Error>().is_some())
                || status.message() == "transport error"
        }
        _ => false,
    }
}

/// A request carrying `grpc-timeout`, so etcd gives up when the caller does.
pub(crate) fn request<T>(msg: T, timeout: Duration) -> tonic::Request<T> {
    let mut req = tonic::Request::new(msg);
    req.set_timeout(timeout);
    req
}

/// The end of the range of keys starting with `prefix`: the prefix with its
/// last byte below 0xff incremented (and what follows dropped); `[0]`, all
/// keys, for a prefix of only 0xff bytes or none.
pub fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    vec![0]
}

#[cfg(test)]
mod tests {
    use super::prefix_end;

    #[test]
    fn prefix_end_increments_the_last_byte_below_ff() {
        assert_eq!(prefix_end(b"a/"), b"a0");
        assert_eq!(prefix_end(b"a\xff"), b"b");
        assert_eq!(prefix_end(b"\xff\xff"), vec![0]);
        assert_eq!(prefix_end(b""), vec![0]);
    }
}
