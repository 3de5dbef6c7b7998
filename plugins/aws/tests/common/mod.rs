//! The harness of the plugin's tests against a real `moto_server` (PyPI
//! `moto[server]`, installed into `.venv` by `scripts/test`): moto on a
//! free port, the plugin binary started as the daemon starts it, what a
//! scan answered, and the estate the tests seed through the AWS SDK.

#![allow(dead_code, reason = "each test file uses its own part of the harness")]
#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aws_sdk_ec2::config::{BehaviorVersion, Credentials, Region};
use aws_sdk_ec2::types::{Filter, InstanceType, ResourceType, Tag, TagSpecification, VolumeType, VpcEndpointType};
use hyper_util::rt::TokioIo;
use serde_json::Value;
use svc_proto::provider::v1::provider_client::ProviderClient;
use svc_proto::provider::v1::{PreflightRequest, PreflightResponse, ScanRequest};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::net::UnixStream;
use tokio::process::{Child, Command};
use tonic::transport::{Channel, Endpoint, Uri};

pub const BIN: &str = env!("CARGO_BIN_EXE_svc-plugin-aws");

/// The plugin binary the tests start: [`BIN`], or `SVC_TEST_AWS_PLUGIN_BIN`
/// (a build's own copy, when several checkouts share one target
/// directory and its `svc-plugin-aws` is whichever was built last).
pub fn plugin_bin() -> String {
    std::env::var("SVC_TEST_AWS_PLUGIN_BIN").unwrap_or_else(|_| BIN.to_owned())
}
/// Bound for anything that should happen promptly.
pub const DEADLINE: Duration = Duration::from_secs(60);
/// Pause between two readiness polls of moto.
pub const POLL_PAUSE: Duration = Duration::from_millis(50);
/// The account moto answers for.
pub const ACCOUNT: &str = "123456789012";
/// A second account, reached by assuming a role in it.
pub const OTHER: &str = "222233334444";
pub const A: &str = "us-east-1";
pub const B: &str = "eu-west-1";
/// The price table rounds monthly costs to the cent.
pub const CENT: f64 = 0.005 + 1e-9;

// ------------------------------------------------------------------ moto

/// A `moto_server` on a free port, killed on drop.
pub struct Moto {
    pub child: std::process::Child,
    pub endpoint: String,
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

impl Moto {
    pub async fn start() -> Moto {
        let port = free_port();
        let child = std::process::Command::new("moto_server")
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .env("MOTO_EC2_LOAD_DEFAULT_AMIS", "false")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!("cannot start moto_server ({e}): run the suite with scripts/test, which installs it into .venv")
            });
        let m = Moto {
            child,
            endpoint: format!("http://127.0.0.1:{port}"),
        };
        let probe = m.ec2(A);
        let end = Instant::now() + DEADLINE;
        while probe.describe_regions().send().await.is_err() {
            assert!(Instant::now() < end, "moto_server did not answer on {}", m.endpoint);
            tokio::time::sleep(POLL_PAUSE).await;
        }
        m
    }

    pub fn ec2(&self, region: &str) -> aws_sdk_ec2::Client {
        let conf = aws_sdk_ec2::Config::builder()
            .behavior_version(BehaviorVersion::latest())
            .region(Region::new(region.to_owned()))
            .endpoint_url(&self.endpoint)
            .credentials_provider(Credentials::new("testing", "testing", None, None, "test"))
            .build();
        aws_sdk_ec2::Client::from_conf(conf)
    }
}

/// A client of SDK crate `$sdk` against moto in `$region`.
macro_rules! client {
    ($sdk:ident, $moto:expr, $region:expr) => {{
        let conf = $sdk::Config::builder()
            .behavior_version(BehaviorVersion::latest())
            .region(Region::new($region.to_owned()))
            .endpoint_url(&$moto.endpoint)
            .credentials_provider(Credentials::new("testing", "testing", None, None, "test"))
            .build();
        $sdk::Client::from_conf(conf)
    }};
}
#[allow(unused_imports, reason = "for the test files that build their own clients")]
pub(crate) use client;

// ---------------------------------------------------------------- seeding

pub fn tags(kind: ResourceType, pairs: &[(&str, &str)]) -> TagSpecification {
    let mut spec = TagSpecification::builder().resource_type(kind);
    for (k, v) in pairs {
        spec = spec.tags(Tag::builder().key(*k).value(*v).build());
    }
    spec.build()
}

/// What the test created in one region, by role.
#[derive(Default)]
pub struct Seeded {
    pub vpc: String,
    pub subnet: String,
    pub sg: String,
    pub image: String,
    pub image_snapshot: String,
    pub running: String,
    pub running_root: String,
    pub stopped: String,
    pub stopped_root: String,
    pub data_volume: String,
    pub loose_volume: String,
    pub snapshot: String,
    pub eip_associated: String,
    pub eip_loose: String,
    pub eip_nat: String,
    pub nat: String,
    pub nat_eni: String,
    pub endpoint: String,
    pub endpoint_eni: String,
}

pub async fn network(ec2: &aws_sdk_ec2::Client, s: &mut Seeded, cidr: &str) {
    let vpc = ec2
        .create_vpc()
        .cidr_block(format!("{cidr}.0.0/16"))
        .tag_specifications(tags(ResourceType::Vpc, &[("Name", "app")]))
        .send()
        .await
        .unwrap();
    s.vpc = vpc.vpc().unwrap().vpc_id().unwrap().to_owned();
    let subnet = ec2
        .create_subnet()
        .vpc_id(&s.vpc)
        .cidr_block(format!("{cidr}.1.0/24"))
        .send()
        .await
        .unwrap();
    s.subnet = subnet.subnet().unwrap().subnet_id().unwrap().to_owned();
    s.sg = security_group(ec2, &s.vpc, "web", "web tier").await;
}

/// A security group in `vpc`; its id.
pub async fn security_group(ec2: &aws_sdk_ec2::Client, vpc: &str, name: &str, description: &str) -> String {
    let sg = ec2
        .create_security_group()
        .group_name(name)
        .description(description)
        .vpc_id(vpc)
        .send()
        .await
        .unwrap();
    sg.group_id().unwrap().to_owned()
}

/// Runs one instance in the seeded subnet; its id and its root volume's.
pub async fn run(ec2: &aws_sdk_ec2::Client, s: &Seeded, image: &str, name: &str) -> (String, String) {
    let r = ec2
        .run_instances()
        .image_id(image)
        .instance_type(InstanceType::T3Small)
        .min_count(1)
        .max_count(1)
        .subnet_id(&s.subnet)
        .security_group_ids(&s.sg)
        .tag_specifications(tags(ResourceType::Instance, &[("Name", name), ("env", "prod")]))
        .send()
        .await
        .unwrap();
    let i = &r.instances()[0];
    let root = i.block_device_mappings()[0].ebs().unwrap().volume_id().unwrap();
    (i.instance_id().unwrap().to_owned(), root.to_owned())
}

pub async fn volume(ec2: &aws_sdk_ec2::Client, zone: &str, gib: i32, class: VolumeType, t: &[(&str, &str)]) -> String {
    let mut call = ec2.create_volume().availability_zone(zone).size(gib).volume_type(class);
    if !t.is_empty() {
        call = call.tag_specifications(tags(ResourceType::Volume, t));
    }
    call.send().await.unwrap().volume_id().unwrap().to_owned()
}

pub async fn allocate(ec2: &aws_sdk_ec2::Client) -> String {
    let a = ec2
        .allocate_address()
        .domain(aws_sdk_ec2::types::DomainType::Vpc)
        .send();
    a.await.unwrap().allocation_id().unwrap().to_owned()
}

/// Region A: the full set: a running and a stopped instance from an own
/// image, an attached data volume and a loose one carrying the exclusion
/// tag, a snapshot of the data volume, an associated and a loose Elastic
/// IP, a NAT gateway with its own address, an interface VPC endpoint.
pub async fn seed_full(ec2: &aws_sdk_ec2::Client) -> Seeded {
    let mut s = Seeded::default();
    network(ec2, &mut s, "10.1").await;
    let image = ec2
        .register_image()
        .name("base")
        .root_device_name("/dev/xvda")
        .send()
        .await
        .unwrap();
    s.image = image.image_id().unwrap().to_owned();
    let described = ec2.describe_images().image_ids(&s.image).send().await.unwrap();
    let mapping = &described.images()[0].block_device_mappings()[0];
    s.image_snapshot = mapping.ebs().unwrap().snapshot_id().unwrap().to_owned();

    (s.running, s.running_root) = run(ec2, &s, &s.image, "web-1").await;
    (s.stopped, s.stopped_root) = run(ec2, &s, &s.image, "web-2").await;
    ec2.stop_instances().instance_ids(&s.stopped).send().await.unwrap();

    let zone = format!("{A}a");
    s.data_volume = volume(ec2, &zone, 10, VolumeType::Gp3, &[("role", "data")]).await;
    ec2.attach_volume()
        .volume_id(&s.data_volume)
        .instance_id(&s.running)
        .device("/dev/sdf")
        .send()
        .await
        .unwrap();
    s.loose_volume = volume(ec2, &zone, 20, VolumeType::Gp2, &[("svc:ignore", "true")]).await;
    let snap = ec2.create_snapshot().volume_id(&s.data_volume).send().await.unwrap();
    s.snapshot = snap.snapshot_id().unwrap().to_owned();

    s.eip_associated = allocate(ec2).await;
    ec2.associate_address()
        .allocation_id(&s.eip_associated)
        .instance_id(&s.running)
        .send()
        .await
        .unwrap();
    s.eip_loose = allocate(ec2).await;
    s.eip_nat = allocate(ec2).await;
    let nat = ec2
        .create_nat_gateway()
        .subnet_id(&s.subnet)
        .allocation_id(&s.eip_nat)
        .send()
        .await
        .unwrap();
    let nat = nat.nat_gateway().unwrap();
    s.nat = nat.nat_gateway_id().unwrap().to_owned();
    s.nat_eni = nat.nat_gateway_addresses()[0]
        .network_interface_id()
        .unwrap()
        .to_owned();

    let ep = ec2
        .create_vpc_endpoint()
        .vpc_id(&s.vpc)
        .service_name(format!("com.amazonaws.{A}.s3"))
        .vpc_endpoint_type(VpcEndpointType::Interface)
        .subnet_ids(&s.subnet)
        .security_group_ids(&s.sg)
        .send()
        .await
        .unwrap();
    let ep = ep.vpc_endpoint().unwrap();
    s.endpoint = ep.vpc_endpoint_id().unwrap().to_owned();
    s.endpoint_eni = ep.network_interface_ids()[0].clone();
    s
}

/// Region B: one running instance (from an image of another account, so
/// no image node) and a loose volume.
pub async fn seed_small(ec2: &aws_sdk_ec2::Client) -> Seeded {
    let mut s = Seeded::default();
    network(ec2, &mut s, "10.2").await;
    (s.running, s.running_root) = run(ec2, &s, "ami-0123456789abcdef0", "batch-1").await;
    s.loose_volume = volume(ec2, &format!("{B}b"), 30, VolumeType::Gp3, &[]).await;
    s
}

/// ELBv2 in region A: load balancer `web` over a second subnet too,
/// forwarding to a group with the running and the stopped instance (one
/// healthy target of two); `old` forwarding to an empty group; a group no
/// load balancer uses.
#[derive(Default)]
pub struct Elb {
    pub subnet2: String,
    pub web: String,
    pub old: String,
    pub web_tg: String,
    pub old_tg: String,
    pub loose_tg: String,
}

/// The id the plugin gives an ELBv2 resource: its ARN after the type.
pub fn elb_id(arn: &str) -> String {
    let rest = arn
        .split_once(":loadbalancer/")
        .or_else(|| arn.split_once(":targetgroup/"));
    rest.unwrap().1.to_owned()
}

pub async fn seed_elb(moto: &Moto, ec2: &aws_sdk_ec2::Client, s: &Seeded) -> Elb {
    use aws_sdk_elasticloadbalancingv2::types::{Action, ActionTypeEnum, ProtocolEnum, TargetDescription};
    let elb = client!(aws_sdk_elasticloadbalancingv2, moto, A);
    let mut e = Elb::default();
    let subnet2 = ec2
        .create_subnet()
        .vpc_id(&s.vpc)
        .cidr_block("10.1.2.0/24")
        .availability_zone(format!("{A}b"))
        .send()
        .await
        .unwrap();
    e.subnet2 = subnet2.subnet().unwrap().subnet_id().unwrap().to_owned();
    let mut lb_arns = Vec::new();
    for (name, tag) in [("web", "prod"), ("old", "legacy")] {
        let lb = elb
            .create_load_balancer()
            .name(name)
            .scheme(aws_sdk_elasticloadbalancingv2::types::LoadBalancerSchemeEnum::InternetFacing)
            .subnets(&s.subnet)
            .subnets(&e.subnet2)
            .security_groups(&s.sg)
            .tags(
                aws_sdk_elasticloadbalancingv2::types::Tag::builder()
                    .key("env")
                    .value(tag)
                    .build(),
            )
            .send()
            .await
            .unwrap();
        lb_arns.push(lb.load_balancers()[0].load_balancer_arn().unwrap().to_owned());
    }
    let mut tg_arns = Vec::new();
    for name in ["web", "old", "loose"] {
        let tg = elb
            .create_target_group()
            .name(name)
            .protocol(ProtocolEnum::Http)
            .port(80)
            .vpc_id(&s.vpc)
            .send()
            .await
            .unwrap();
        tg_arns.push(tg.target_groups()[0].target_group_arn().unwrap().to_owned());
    }
    for (lb, tg) in lb_arns.iter().zip(&tg_arns) {
        let forward = Action::builder()
            .r#type(ActionTypeEnum::Forward)
            .target_group_arn(tg)
            .build();
        elb.create_listener()
            .load_balancer_arn(lb)
            .protocol(ProtocolEnum::Http)
            .port(80)
            .default_actions(forward)
            .send()
            .await
            .unwrap();
    }
    let mut register = elb.register_targets().target_group_arn(&tg_arns[0]);
    for i in [&s.running, &s.stopped] {
        register = register.targets(TargetDescription::builder().id(i).port(80).build());
    }
    // Only running instances can be registered: the stopped one is started
    // for it, then stopped again (a stopped target is unhealthy).
    ec2.start_instances().instance_ids(&s.stopped).send().await.unwrap();
    register.send().await.unwrap();
    ec2.stop_instances().instance_ids(&s.stopped).send().await.unwrap();
    (e.web, e.old) = (elb_id(&lb_arns[0]), elb_id(&lb_arns[1]));
    (e.web_tg, e.old_tg, e.loose_tg) = (elb_id(&tg_arns[0]), elb_id(&tg_arns[1]), elb_id(&tg_arns[2]));
    e
}

/// The data tier of region A: an available and a stopped database in a
/// subnet group of the second subnet; a function in the VPC writing to its log
/// group, one outside it; a log group with retention and events, one
/// without either (never expires).
#[derive(Default)]
pub struct Data {
    pub db: String,
    pub db_stopped: String,
    pub function: String,
    pub function_plain: String,
    pub logs: String,
    pub logs_loose: String,
}

pub async fn seed_data(moto: &Moto, s: &Seeded, e: &Elb) -> Data {
    use aws_sdk_lambda::primitives::Blob;
    use aws_sdk_lambda::types::{FunctionCode, Runtime, VpcConfig};
    let rds = client!(aws_sdk_rds, moto, A);
    let lambda = client!(aws_sdk_lambda, moto, A);
    let logs = client!(aws_sdk_cloudwatchlogs, moto, A);
    let d = Data {
        db: "orders".into(),
        db_stopped: "reports".into(),
        function: "resize".into(),
        function_plain: "cron".into(),
        logs: "/aws/lambda/resize".into(),
        logs_loose: "/app/legacy".into(),
    };
    rds.create_db_subnet_group()
        .db_subnet_group_name("data")
        .db_subnet_group_description("data tier")
        .subnet_ids(&e.subnet2)
        .send()
        .await
        .unwrap();
    for (name, class) in [(&d.db, "db.t3.micro"), (&d.db_stopped, "db.m5.large")] {
        rds.create_db_instance()
            .db_instance_identifier(name)
            .db_instance_class(class)
            .engine("postgres")
            .engine_version("16.3")
            .allocated_storage(50)
            .master_username("admin")
            .master_user_password("password123")
            .db_subnet_group_name("data")
            .vpc_security_group_ids(&s.sg)
            .availability_zone(format!("{A}b"))
            .tags(aws_sdk_rds::types::Tag::builder().key("team").value("data").build())
            .send()
            .await
            .unwrap();
    }
    rds.stop_db_instance()
        .db_instance_identifier(&d.db_stopped)
        .send()
        .await
        .unwrap();

    let role = lambda_role(moto).await;
    for (name, in_vpc) in [(&d.function, true), (&d.function_plain, false)] {
        let mut call = lambda
            .create_function()
            .function_name(name)
            .runtime(Runtime::Python312)
            .role(&role)
            .handler("app.handler")
            .memory_size(256)
            .code(FunctionCode::builder().zip_file(Blob::new(empty_zip())).build());
        if in_vpc {
            call = call.vpc_config(
                VpcConfig::builder()
                    .subnet_ids(&s.subnet)
                    .security_group_ids(&s.sg)
                    .build(),
            );
        }
        call.send().await.unwrap();
    }

    for group in [&d.logs, &d.logs_loose] {
        logs.create_log_group().log_group_name(group).send().await.unwrap();
    }
    logs.put_retention_policy()
        .log_group_name(&d.logs)
        .retention_in_days(14)
        .send()
        .await
        .unwrap();
    logs.create_log_stream()
        .log_group_name(&d.logs)
        .log_stream_name("s")
        .send()
        .await
        .unwrap();
    let event = aws_sdk_cloudwatchlogs::types::InputLogEvent::builder()
        .timestamp(now_ms())
        .message("x".repeat(1000))
        .build()
        .unwrap();
    logs.put_log_events()
        .log_group_name(&d.logs)
        .log_stream_name("s")
        .log_events(event)
        .send()
        .await
        .unwrap();
    d
}

/// Buckets in region A, region B and a region the scan does not cover.
pub const BUCKETS: [(&str, &str); 3] = [("acme-logs", A), ("acme-eu", B), ("acme-west", "us-west-2")];

pub async fn seed_buckets(moto: &Moto) {
    use aws_sdk_s3::types::{BucketLocationConstraint, CreateBucketConfiguration};
    let s3 = client!(aws_sdk_s3, moto, A);
    for (name, region) in BUCKETS {
        let mut call = s3.create_bucket().bucket(name);
        if region != "us-east-1" {
            let at = CreateBucketConfiguration::builder()
                .location_constraint(BucketLocationConstraint::from(region))
                .build();
            call = call.create_bucket_configuration(at);
        }
        call.send().await.unwrap();
    }
}

/// The ARN of a role Lambda may assume (`fn`, created once per moto).
pub async fn lambda_role(moto: &Moto) -> String {
    let iam = client!(aws_sdk_iam, moto, A);
    let trust = r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Service":"lambda.amazonaws.com"},"Action":"sts:AssumeRole"}]}"#;
    let role = iam
        .create_role()
        .role_name("fn")
        .assume_role_policy_document(trust)
        .send()
        .await
        .unwrap();
    role.role().unwrap().arn().to_owned()
}

/// A zip archive with nothing in it (its end-of-directory record).
pub fn empty_zip() -> Vec<u8> {
    let mut zip = b"PK\x05\x06".to_vec();
    zip.resize(22, 0);
    zip
}

/// Milliseconds since the epoch.
pub fn now_ms() -> i64 {
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    since.as_millis() as i64
}

// ----------------------------------------------------------------- plugin

/// The plugin process, its provider client, and its stderr lines.
pub struct Plugin {
    pub _child: Child,
    pub provider: ProviderClient<Channel>,
    /// The connection, for clients of the plugin's other services.
    pub channel: Channel,
    pub log: Arc<Mutex<Vec<String>>>,
}

impl Plugin {
    /// Starts the binary as the daemon does, with `env` on top of a clean
    /// AWS environment (no profile files, no instance metadata).
    pub async fn start(env: &[(&str, &str)]) -> Plugin {
        let mut cmd = Command::new(plugin_bin());
        for (k, _) in std::env::vars() {
            if k.starts_with("AWS_") {
                cmd.env_remove(k);
            }
        }
        let mut child = cmd
            .env("SVC_PLUGIN", "svc")
            .env("PLUGIN_PROTOCOL_VERSIONS", "1")
            .env_remove("SVC_PLUGIN_TRANSPORT")
            .env("SVC_PLUGIN_LOG_LEVEL", "debug")
            .env("AWS_CONFIG_FILE", "/nonexistent/svc-test/config")
            .env("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/svc-test/credentials")
            .env("AWS_EC2_METADATA_DISABLED", "true")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("plugin starts");
        let log = Arc::new(Mutex::new(Vec::new()));
        let mut err = BufReader::new(child.stderr.take().unwrap()).lines();
        let sink = log.clone();
        tokio::spawn(async move {
            while let Ok(Some(line)) = err.next_line().await {
                sink.lock().unwrap().push(line);
            }
        });
        let mut out = BufReader::new(child.stdout.take().unwrap()).lines();
        let line = tokio::time::timeout(DEADLINE, out.next_line())
            .await
            .expect("a handshake line in time")
            .unwrap()
            .expect("a handshake line");
        let parts: Vec<&str> = line.split('|').collect();
        assert_eq!(parts[..3], ["1", "1", "unix"], "{line}");
        assert_eq!(parts[4], "grpc", "{line}");
        let path = PathBuf::from(parts[3]);
        let channel = Endpoint::try_from("http://[::]:50051")
            .unwrap()
            .connect_with_connector(tower::service_fn(move |_: Uri| {
                let path = path.clone();
                async move { Ok::<_, std::io::Error>(TokioIo::new(UnixStream::connect(path).await?)) }
            }))
            .await
            .expect("dial the plugin");
        Plugin {
            _child: child,
            provider: ProviderClient::new(channel.clone()),
            channel,
            log,
        }
    }

    /// With moto's endpoint and dummy credentials.
    pub async fn against(moto: &Moto) -> Plugin {
        Plugin::start(&[
            ("AWS_ENDPOINT_URL", &moto.endpoint),
            ("AWS_ACCESS_KEY_ID", "testing"),
            ("AWS_SECRET_ACCESS_KEY", "testing"),
            ("AWS_REGION", A),
        ])
        .await
    }

    /// Every node (CRN to properties and cost) and edge of a scan, and the
    /// status it ended with.
    pub async fn scan(&mut self, config: &[(&str, &str)]) -> (Scanned, Result<(), tonic::Status>) {
        let config: HashMap<String, String> = config.iter().map(|(k, v)| ((*k).into(), (*v).into())).collect();
        let mut stream = self.provider.scan(ScanRequest { config }).await.unwrap().into_inner();
        let mut scanned = Scanned::default();
        loop {
            let next = tokio::time::timeout(DEADLINE, stream.message())
                .await
                .expect("scan makes progress");
            match next {
                Ok(Some(r)) => {
                    for n in r.nodes {
                        let props: Value = serde_json::from_slice(&n.properties).unwrap();
                        let before = scanned.nodes.insert(n.crn.clone(), (props, n.cost));
                        assert!(before.is_none(), "{} sent twice", n.crn);
                    }
                    for e in r.edges {
                        scanned.edges.insert((e.source_crn, e.relation, e.target_crn));
                    }
                }
                Ok(None) => {
                    let trailers = stream.trailers().await.unwrap().unwrap_or_default();
                    scanned.unlisted = trailers
                        .get_bin(svc_proto::provider::SCAN_UNLISTED_TRAILER)
                        .map(|v| serde_json::from_slice(&v.to_bytes().unwrap()).unwrap());
                    return (scanned, Ok(()));
                }
                Err(status) => return (scanned, Err(status)),
            }
        }
    }

    pub async fn preflight(&mut self, config: &[(&str, &str)]) -> PreflightResponse {
        let config = config.iter().map(|(k, v)| ((*k).into(), (*v).into())).collect();
        let call = self.provider.preflight_check(PreflightRequest { config });
        tokio::time::timeout(DEADLINE, call)
            .await
            .unwrap()
            .unwrap()
            .into_inner()
    }

    pub fn log(&self) -> Vec<Value> {
        let lines = self.log.lock().unwrap().clone();
        lines.iter().filter_map(|l| serde_json::from_str(l).ok()).collect()
    }
}

#[derive(Default)]
pub struct Scanned {
    pub nodes: BTreeMap<String, (Value, f64)>,
    pub edges: BTreeSet<(String, String, String)>,
    /// The parts of the estate the scan's trailer says it did not list.
    pub unlisted: Option<Value>,
}

impl Scanned {
    pub fn node(&self, region: &str, kind: &str, id: &str) -> &Value {
        let crn = crn(region, kind, id);
        &self.nodes.get(&crn).unwrap_or_else(|| panic!("no node {crn}")).0
    }
    pub fn cost(&self, region: &str, kind: &str, id: &str) -> f64 {
        self.nodes[&crn(region, kind, id)].1
    }
}

pub fn crn(region: &str, kind: &str, id: &str) -> String {
    format!("crn:svc:aws:{region}:{ACCOUNT}:{kind}:{id}")
}

pub fn edge(region: &str, from: (&str, &str), relation: &str, to: (&str, &str)) -> (String, String, String) {
    (
        crn(region, from.0, from.1),
        relation.to_owned(),
        crn(region, to.0, to.1),
    )
}

/// The network context of a region as moto lists it (its default VPC,
/// subnets and groups included), as CRNs.
pub async fn network_crns(ec2: &aws_sdk_ec2::Client, region: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for v in ec2.describe_vpcs().send().await.unwrap().vpcs() {
        out.insert(crn(region, "vpc", v.vpc_id().unwrap()));
    }
    for s in ec2.describe_subnets().send().await.unwrap().subnets() {
        out.insert(crn(region, "subnet", s.subnet_id().unwrap()));
    }
    for g in ec2.describe_security_groups().send().await.unwrap().security_groups() {
        out.insert(crn(region, "security-group", g.group_id().unwrap()));
    }
    for n in ec2
        .describe_network_interfaces()
        .send()
        .await
        .unwrap()
        .network_interfaces()
    {
        out.insert(crn(region, "network-interface", n.network_interface_id().unwrap()));
    }
    out
}

/// The primary network interface of an instance.
pub async fn eni_of(ec2: &aws_sdk_ec2::Client, instance: &str) -> String {
    let filter = Filter::builder()
        .name("attachment.instance-id")
        .values(instance)
        .build();
    let r = ec2.describe_network_interfaces().filters(filter).send().await.unwrap();
    r.network_interfaces()[0].network_interface_id().unwrap().to_owned()
}

/// The kinds whose every edge the test names.
pub const COMPUTE: [&str; 12] = [
    "instance",
    "volume",
    "snapshot",
    "image",
    "eip",
    "nat-gateway",
    "vpc-endpoint",
    "load-balancer",
    "target-group",
    "db",
    "function",
    "log-group",
];

pub fn kind_of(crn: &str) -> &str {
    crn.split(':').nth(5).unwrap()
}
