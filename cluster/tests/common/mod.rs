//! A real etcd for the tests: `/usr/bin/etcd` (Debian's `etcd-server`) on
//! loopback with free ports and a temporary data directory, killed on drop.

#![allow(dead_code, reason = "each test binary uses a part of the helpers")]

use std::future::Future;
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use svc_cluster::{Etcd, EtcdConfig};

/// The etcd binary: `SVC_ETCD` when set, else Debian's.
fn etcd_binary() -> PathBuf {
    std::env::var_os("SVC_ETCD").map_or_else(|| PathBuf::from("/usr/bin/etcd"), PathBuf::from)
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

pub struct EtcdServer {
    child: Option<Child>,
    dir: tempfile::TempDir,
    client_port: u16,
    peer_port: u16,
    tls: Option<Certs>,
}

/// PEM files for etcd's mutual TLS, made by `openssl` for one test.
#[derive(Clone)]
pub struct Certs {
    pub ca: PathBuf,
    pub server_cert: PathBuf,
    pub server_key: PathBuf,
    pub client_cert: PathBuf,
    pub client_key: PathBuf,
}

fn openssl(dir: &std::path::Path, args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("cannot run openssl: {e} (install Debian's openssl)"));
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A CA, a server certificate for 127.0.0.1 and a client certificate.
pub fn make_certs(dir: &std::path::Path) -> Certs {
    let key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
    openssl(
        dir,
        &[
            &["req", "-x509"],
            &key[..],
            &[
                "-keyout",
                "ca.key",
                "-out",
                "ca.pem",
                "-days",
                "1",
                "-subj",
                "/CN=svc-test-ca",
            ],
        ]
        .concat(),
    );
    for (name, usage) in [("server", "serverAuth,clientAuth"), ("client", "clientAuth")] {
        let ext = format!("{name}.ext");
        std::fs::write(
            dir.join(&ext),
            format!("subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage={usage}\n"),
        )
        .unwrap();
        let (k, csr, pem) = (format!("{name}.key"), format!("{name}.csr"), format!("{name}.pem"));
        openssl(
            dir,
            &[
                &["req"],
                &key[..],
                &["-keyout", &k, "-out", &csr, "-subj", &format!("/CN=svc-test-{name}")],
            ]
            .concat(),
        );
        openssl(
            dir,
            &[
                "x509",
                "-req",
                "-in",
                &csr,
                "-CA",
                "ca.pem",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-out",
                &pem,
                "-days",
                "1",
                "-extfile",
                &ext,
            ],
        );
    }
    Certs {
        ca: dir.join("ca.pem"),
        server_cert: dir.join("server.pem"),
        server_key: dir.join("server.key"),
        client_cert: dir.join("client.pem"),
        client_key: dir.join("client.key"),
    }
}

impl EtcdServer {
    /// Starts a one-member etcd and waits until its health endpoint says so.
    pub async fn start() -> EtcdServer {
        let mut server = EtcdServer {
            child: None,
            dir: tempfile::tempdir().unwrap(),
            client_port: free_port(),
            peer_port: free_port(),
            tls: None,
        };
        server.spawn().await;
        server
    }

    /// Starts an etcd that serves clients over mutual TLS only.
    pub async fn start_tls() -> EtcdServer {
        let dir = tempfile::tempdir().unwrap();
        let certs = make_certs(dir.path());
        let mut server = EtcdServer {
            child: None,
            dir,
            client_port: free_port(),
            peer_port: free_port(),
            tls: Some(certs),
        };
        server.spawn().await;
        server
    }

    pub fn certs(&self) -> Option<&Certs> {
        self.tls.as_ref()
    }

    pub fn url(&self) -> String {
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        format!("{scheme}://127.0.0.1:{}", self.client_port)
    }

    /// The client configuration, with this etcd's client certificate when
    /// it speaks TLS.
    pub fn config(&self) -> EtcdConfig {
        let mut c = config(vec![self.url()]);
        c.tls = self.tls.as_ref().map(|t| svc_cluster::TlsFiles {
            ca: t.ca.clone(),
            cert: Some(t.client_cert.clone()),
            key: Some(t.client_key.clone()),
            server_name: None,
        });
        c
    }

    /// A client with short timeouts.
    pub fn client(&self) -> Etcd {
        Etcd::connect(&self.config()).unwrap()
    }

    async fn spawn(&mut self) {
        let peer = format!("http://127.0.0.1:{}", self.peer_port);
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.path().join("etcd.log"))
            .unwrap();
        let mut command = Command::new(etcd_binary());
        if let Some(t) = &self.tls {
            command
                .arg(format!("--cert-file={}", t.server_cert.display()))
                .arg(format!("--key-file={}", t.server_key.display()))
                .arg(format!("--trusted-ca-file={}", t.ca.display()))
                .arg("--client-cert-auth");
        }
        let child = command
            .arg("--name=svc-test")
            .arg(format!("--data-dir={}", self.dir.path().join("data").display()))
            .arg(format!("--listen-client-urls={}", self.url()))
            .arg(format!("--advertise-client-urls={}", self.url()))
            .arg(format!("--listen-peer-urls={peer}"))
            .arg(format!("--initial-advertise-peer-urls={peer}"))
            .arg(format!("--initial-cluster=svc-test={peer}"))
            .arg("--initial-cluster-state=new")
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot start {}: {e} (install Debian's etcd-server)",
                    etcd_binary().display()
                )
            });
        self.child = Some(child);
        if self.tls.is_some() {
            return self.wait_tls().await;
        }
        let health = format!("{}/health", self.url());
        let http = reqwest::Client::new();
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = self.child.as_mut().unwrap().try_wait().unwrap() {
                panic!("etcd exited with {status}:\n{}", self.log());
            }
            if let Ok(resp) = http.get(&health).timeout(Duration::from_secs(1)).send().await
                && let Ok(body) = resp.text().await
                && body.contains("\"health\":\"true\"")
            {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "etcd not healthy within 30 s:\n{}",
                self.log()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Waits for a TLS etcd through the gRPC status call (its health
    /// endpoint wants a client certificate too).
    async fn wait_tls(&mut self) {
        let client = Etcd::connect(&self.config()).unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = self.child.as_mut().unwrap().try_wait().unwrap() {
                panic!("etcd exited with {status}:\n{}", self.log());
            }
            if client.status().await.is_ok() {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "etcd not healthy within 30 s:\n{}",
                self.log()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("etcd.log")).unwrap_or_default()
    }

    /// Kills etcd (SIGKILL) and waits for it to go.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts etcd again on the same ports and data.
    pub async fn restart(&mut self) {
        self.kill();
        self.spawn().await;
    }
}

impl Drop for EtcdServer {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Short timeouts, so failures show quickly.
pub fn config(endpoints: Vec<String>) -> EtcdConfig {
    let mut config = EtcdConfig::new(endpoints);
    config.request_timeout = Duration::from_secs(2);
    config.connect_timeout = Duration::from_secs(1);
    config
}

/// Polls `check` until it holds or `limit` passes; the time it took.
pub async fn eventually<F, Fut>(limit: Duration, what: &str, mut check: F) -> Duration
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let start = Instant::now();
    loop {
        if check().await {
            return start.elapsed();
        }
        assert!(start.elapsed() < limit, "{what}: not within {limit:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
