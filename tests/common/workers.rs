//! Scan workers for the end-to-end tests: the certificates of mutual TLS
//! (made with `rcgen`) and real `svc worker` processes running the real
//! `svc-plugin-mock`.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
    KeyUsagePurpose,
};

use serde_json::{Value, json};

use super::{Daemon, Log, POLL_PAUSE, START_DEADLINE, SVC};

/// PEM files of one certificate and its key.
pub struct Pair {
    pub cert: PathBuf,
    pub key: PathBuf,
}

/// The test's certificates, written to a directory.
pub struct Pki {
    pub ca: PathBuf,
    pub worker: Pair,
    pub daemon: Pair,
    /// A client certificate from a CA the workers do not trust.
    pub stranger: Pair,
}

fn ca(name: &str) -> CertifiedIssuer<'static, KeyPair> {
    let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, name);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    CertifiedIssuer::self_signed(params, KeyPair::generate().expect("key")).expect("CA")
}

fn leaf(dir: &Path, name: &str, issuer: &CertifiedIssuer<'static, KeyPair>, usage: ExtendedKeyUsagePurpose) -> Pair {
    let mut params = CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()]).expect("params");
    params.distinguished_name.push(DnType::CommonName, name);
    params.extended_key_usages = vec![usage];
    let key = KeyPair::generate().expect("key");
    let cert = params.signed_by(&key, issuer).expect("sign");
    let pair = Pair {
        cert: dir.join(format!("{name}.pem")),
        key: dir.join(format!("{name}.key")),
    };
    std::fs::write(&pair.cert, cert.pem()).expect("write cert");
    std::fs::write(&pair.key, key.serialize_pem()).expect("write key");
    pair
}

pub fn pki(dir: &Path) -> Pki {
    let ours = ca("svc test CA");
    let other = ca("another CA");
    let ca_path = dir.join("ca.pem");
    std::fs::write(&ca_path, ours.pem()).expect("write CA");
    Pki {
        ca: ca_path,
        worker: leaf(dir, "worker", &ours, ExtendedKeyUsagePurpose::ServerAuth),
        daemon: leaf(dir, "daemon", &ours, ExtendedKeyUsagePurpose::ClientAuth),
        stranger: leaf(dir, "stranger", &other, ExtendedKeyUsagePurpose::ClientAuth),
    }
}

/// A running `svc worker`; dropping it kills it.
pub struct Worker {
    pub id: String,
    pub addr: SocketAddr,
    pub log: Log,
    child: Child,
}

impl Worker {
    /// Starts worker `id` on an ephemeral port (its plugins get `env`) and
    /// waits for the line that says where it listens.
    pub async fn start(id: &str, pki: &Pki, home: &Path, env: &[(&str, &str)]) -> Worker {
        Worker::start_with(id, pki, home, env, &[]).await
    }

    /// [`Worker::start`] with more flags (`--join`).
    pub async fn start_with(id: &str, pki: &Pki, home: &Path, env: &[(&str, &str)], flags: &[&str]) -> Worker {
        let plugins = super::install_mock_plugin(home);
        let mut child = Command::new(SVC)
            .args(["worker", "--id", id, "--listen", "127.0.0.1:0"])
            .args(flags)
            .arg("--tls-cert")
            .arg(&pki.worker.cert)
            .arg("--tls-key")
            .arg(&pki.worker.key)
            .arg("--tls-ca")
            .arg(&pki.ca)
            .arg("--plugin-dir")
            .arg(&plugins)
            .envs(env.iter().copied())
            .env("NO_COLOR", "1")
            .env_remove("SVC_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn svc worker");
        let log = Log::default();
        let (tx, rx) = mpsc::channel::<SocketAddr>();
        let needle = format!("svc worker {id} listening on ");
        for (stream, out) in [
            (
                "out| ",
                Box::new(child.stdout.take().expect("stdout")) as Box<dyn std::io::Read + Send>,
            ),
            ("err| ", Box::new(child.stderr.take().expect("stderr"))),
        ] {
            let (log, tx, needle) = (log.clone(), tx.clone(), needle.clone());
            std::thread::spawn(move || {
                for line in BufReader::new(out).lines() {
                    let Ok(line) = line else { break };
                    log.push(stream, &line);
                    if let Some(at) = line.find(&needle) {
                        let rest = &line[at + needle.len()..];
                        let end = rest.find(|c: char| c.is_whitespace()).unwrap_or(rest.len());
                        if let Ok(addr) = rest[..end].parse() {
                            let _ = tx.send(addr);
                        }
                    }
                }
            });
        }
        let addr = tokio::task::spawn_blocking(move || rx.recv_timeout(START_DEADLINE))
            .await
            .expect("join");
        let addr = addr.unwrap_or_else(|_| panic!("worker {id} printed no listening line\n{}", log.text()));
        Worker {
            id: id.to_owned(),
            addr,
            log,
            child,
        }
    }

    pub fn kill_9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.kill_9();
    }
}

/// Each source's outcome in a scan report: name to (ok, nodes staged, error).
pub fn outcomes(report: &Value) -> Vec<(String, bool, u64, String)> {
    report["sources"]
        .as_array()
        .expect("sources")
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap_or_default().to_owned(),
                s["ok"].as_bool().unwrap_or(false),
                s["nodes"].as_u64().unwrap_or(0),
                s["error"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

/// Scans until every source lands (the daemon's view of the live workers
/// may lag etcd's by a watch event); the last report.
pub async fn complete_scan(daemon: &Daemon, sources: usize, within: Duration) -> Value {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        // A node that leads in etcd may not have heard so yet (503): again.
        let reply = daemon
            .api()
            .trigger("/api/v1/engine/scan", &json!({ "wait": true }))
            .await;
        let report = reply.json;
        let got = if reply.status.as_u16() == 200 {
            outcomes(&report)
        } else {
            Vec::new()
        };
        if got.len() == sources && got.iter().all(|(_, ok, nodes, _)| *ok && *nodes > 0) {
            return report;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no complete scan within {within:?}: {got:?}\n{}",
            daemon.log.text()
        );
        tokio::time::sleep(POLL_PAUSE).await;
    }
}

/// What a clustered daemon's `config.toml` says when its sources run on
/// workers that join through etcd.
pub struct ClusterConfig<'a> {
    pub etcd: &'a str,
    /// The etcd key prefix of the cluster.
    pub prefix: &'a str,
    pub node_id: &'a str,
    pub lease_ttl_s: u64,
    /// The shared store's directory.
    pub shared: &'a Path,
    /// The `[workers]` sources (mock plugin, seed 1, 2, ...), each `scale` resources.
    pub sources: &'a [&'a str],
    pub scale: usize,
}

impl ClusterConfig<'_> {
    /// The file's text, with the daemon's client certificate of `pki`.
    pub fn text(&self, pki: &Pki) -> String {
        let Self {
            etcd,
            prefix,
            node_id,
            lease_ttl_s,
            ..
        } = self;
        let mut text = format!(
            "[daemon]\nscan_interval = \"1h\"\n\n[cluster]\nendpoints = [\"{etcd}\"]\nnode_id = \"{node_id}\"\n\
             advertise_url = \"http://{node_id}.example:8080\"\nlease_ttl = \"{lease_ttl_s}s\"\nprefix = \"{prefix}\"\n\
             shared_store = \"file://{}\"\n\n\
             [workers]\ntls_cert = {:?}\ntls_key = {:?}\ntls_ca = {:?}\n",
            self.shared.display(),
            pki.daemon.cert,
            pki.daemon.key,
            pki.ca
        );
        for (i, name) in self.sources.iter().enumerate() {
            text.push_str(&format!(
                "\n[workers.sources.{name}]\nplugin = \"mock\"\nconfig = {{ seed = \"{}\", scale = \"{}\" }}\n",
                i + 1,
                self.scale
            ));
        }
        text
    }
}
