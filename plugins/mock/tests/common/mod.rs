//! Starting `svc-plugin-mock` as the daemon does and dialling it.

#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use hyper_util::rt::TokioIo;
use svc_proto::health::v1::HealthCheckRequest;
use svc_proto::health::v1::health_client::HealthClient;
use svc_proto::plugin::grpc_controller_client::GrpcControllerClient;
use svc_proto::provider::v1::provider_client::ProviderClient;
use svc_proto::provider::v1::remediator_client::RemediatorClient;
use svc_proto::provider::v1::{ScanRequest, ScanResponse};
use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::net::UnixStream;
use tokio::process::{Child, ChildStdout, Command};
use tonic::transport::{Channel, Endpoint, Uri};

pub const BIN: &str = env!("CARGO_BIN_EXE_svc-plugin-mock");
/// Generous bound for anything that should happen promptly.
pub const PROMPT: Duration = Duration::from_secs(20);

pub fn command(envs: &[(&str, &str)]) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.env_remove("SVC_PLUGIN")
        .env_remove("SVC_MOCK_FAIL")
        .env_remove("SVC_PLUGIN_TRANSPORT")
        .env("SVC_PLUGIN", "svc")
        .env("PLUGIN_PROTOCOL_VERSIONS", "1")
        .envs(envs.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true);
    cmd
}

pub struct Plugin {
    pub child: Child,
    pub stdout: Lines<BufReader<ChildStdout>>,
}

impl Plugin {
    pub fn start(envs: &[(&str, &str)]) -> Plugin {
        let mut child = command(envs).spawn().expect("plugin starts");
        let stdout = BufReader::new(child.stdout.take().expect("piped stdout")).lines();
        Plugin { child, stdout }
    }

    pub async fn first_line(&mut self) -> String {
        tokio::time::timeout(PROMPT, self.stdout.next_line())
            .await
            .expect("a line within the bound")
            .expect("stdout readable")
            .expect("a line before EOF")
    }

    pub async fn exit_code(&mut self) -> Option<i32> {
        tokio::time::timeout(PROMPT, self.child.wait())
            .await
            .expect("plugin exits within the bound")
            .expect("wait")
            .code()
    }
}

/// The parts of a handshake line.
pub struct Handshake {
    pub network: String,
    pub addr: String,
}

pub fn parse_handshake(line: &str) -> Handshake {
    let parts: Vec<&str> = line.split('|').collect();
    assert_eq!(parts.len(), 6, "{line:?}");
    assert_eq!(&parts[..2], ["1", "1"], "{line:?}");
    assert_eq!(parts[4], "grpc", "{line:?}");
    assert_eq!(parts[5], "", "{line:?}");
    Handshake {
        network: parts[2].to_owned(),
        addr: parts[3].to_owned(),
    }
}

pub async fn connect(h: &Handshake) -> Channel {
    match h.network.as_str() {
        "unix" => {
            let path = PathBuf::from(&h.addr);
            Endpoint::try_from("http://[::]:50051")
                .expect("static uri")
                .connect_with_connector(tower::service_fn(move |_: Uri| {
                    let path = path.clone();
                    async move { Ok::<_, std::io::Error>(TokioIo::new(UnixStream::connect(path).await?)) }
                }))
                .await
                .expect("dial unix socket")
        }
        "tcp" => Endpoint::try_from(format!("http://{}", h.addr))
            .expect("tcp uri")
            .connect()
            .await
            .expect("dial tcp"),
        other => panic!("unknown network {other:?}"),
    }
}

pub struct Clients {
    pub health: HealthClient<Channel>,
    pub provider: ProviderClient<Channel>,
    pub remediator: RemediatorClient<Channel>,
    pub controller: GrpcControllerClient<Channel>,
}

pub fn clients(ch: Channel) -> Clients {
    Clients {
        health: HealthClient::new(ch.clone()),
        provider: ProviderClient::new(ch.clone()),
        remediator: RemediatorClient::new(ch.clone()),
        controller: GrpcControllerClient::new(ch),
    }
}

pub async fn started(envs: &[(&str, &str)]) -> (Plugin, Handshake, Clients) {
    let mut p = Plugin::start(envs);
    let h = parse_handshake(&p.first_line().await);
    let c = clients(connect(&h).await);
    (p, h, c)
}

pub async fn is_serving(health: &mut HealthClient<Channel>, service: &str) -> bool {
    let r = health
        .check(HealthCheckRequest {
            service: service.into(),
        })
        .await
        .expect("health check");
    r.get_ref().status == 1
}

pub fn scan_request(pairs: &[(&str, &str)]) -> ScanRequest {
    ScanRequest {
        config: pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect(),
    }
}

pub async fn scan_all(provider: &mut ProviderClient<Channel>, pairs: &[(&str, &str)]) -> Vec<ScanResponse> {
    let mut stream = provider
        .scan(scan_request(pairs))
        .await
        .expect("scan starts")
        .into_inner();
    let mut out = Vec::new();
    while let Some(r) = tokio::time::timeout(PROMPT, stream.message())
        .await
        .expect("scan makes progress")
        .expect("scan stream ok")
    {
        out.push(r);
    }
    out
}
