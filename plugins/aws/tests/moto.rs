//! `svc-plugin-aws` as the daemon runs it, against a real `moto_server`
//! (PyPI `moto[server]`, installed into `.venv` by `scripts/test`): the
//! test seeds two regions through the AWS SDK, starts the plugin binary
//! over the go-plugin handshake with `AWS_ENDPOINT_URL` pointing at moto
//! and dummy credentials, and checks what Scan and PreflightCheck answer.

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
use svc_engine::prices;
use svc_proto::provider::v1::provider_client::ProviderClient;
use svc_proto::provider::v1::{PreflightRequest, PreflightResponse, ScanRequest};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::net::UnixStream;
use tokio::process::{Child, Command};
use tonic::transport::{Channel, Endpoint, Uri};

const BIN: &str = env!("CARGO_BIN_EXE_svc-plugin-aws");
/// Bound for anything that should happen promptly.
const DEADLINE: Duration = Duration::from_secs(60);
/// Pause between two readiness polls of moto.
const POLL_PAUSE: Duration = Duration::from_millis(50);
/// The account moto answers for.
const ACCOUNT: &str = "123456789012";
const A: &str = "us-east-1";
const B: &str = "eu-west-1";
/// The price table rounds monthly costs to the cent.
const CENT: f64 = 0.005 + 1e-9;

// ------------------------------------------------------------------ moto

/// A `moto_server` on a free port, killed on drop.
struct Moto {
    child: std::process::Child,
    endpoint: String,
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

impl Moto {
    async fn start() -> Moto {
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

    fn ec2(&self, region: &str) -> aws_sdk_ec2::Client {
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

// ---------------------------------------------------------------- seeding

fn tags(kind: ResourceType, pairs: &[(&str, &str)]) -> TagSpecification {
    let mut spec = TagSpecification::builder().resource_type(kind);
    for (k, v) in pairs {
        spec = spec.tags(Tag::builder().key(*k).value(*v).build());
    }
    spec.build()
}

/// What the test created in one region, by role.
#[derive(Default)]
struct Seeded {
    vpc: String,
    subnet: String,
    sg: String,
    image: String,
    image_snapshot: String,
    running: String,
    running_root: String,
    stopped: String,
    stopped_root: String,
    data_volume: String,
    loose_volume: String,
    snapshot: String,
    eip_associated: String,
    eip_loose: String,
    eip_nat: String,
    nat: String,
    nat_eni: String,
    endpoint: String,
    endpoint_eni: String,
}

async fn network(ec2: &aws_sdk_ec2::Client, s: &mut Seeded, cidr: &str) {
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
    let sg = ec2
        .create_security_group()
        .group_name("web")
        .description("web tier")
        .vpc_id(&s.vpc)
        .send()
        .await
        .unwrap();
    s.sg = sg.group_id().unwrap().to_owned();
}

/// Runs one instance in the seeded subnet; its id and its root volume's.
async fn run(ec2: &aws_sdk_ec2::Client, s: &Seeded, image: &str, name: &str) -> (String, String) {
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

async fn volume(ec2: &aws_sdk_ec2::Client, zone: &str, gib: i32, class: VolumeType, t: &[(&str, &str)]) -> String {
    let mut call = ec2.create_volume().availability_zone(zone).size(gib).volume_type(class);
    if !t.is_empty() {
        call = call.tag_specifications(tags(ResourceType::Volume, t));
    }
    call.send().await.unwrap().volume_id().unwrap().to_owned()
}

async fn allocate(ec2: &aws_sdk_ec2::Client) -> String {
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
async fn seed_full(ec2: &aws_sdk_ec2::Client) -> Seeded {
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
async fn seed_small(ec2: &aws_sdk_ec2::Client) -> Seeded {
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
struct Elb {
    subnet2: String,
    web: String,
    old: String,
    web_tg: String,
    old_tg: String,
    loose_tg: String,
}

/// The id the plugin gives an ELBv2 resource: its ARN after the type.
fn elb_id(arn: &str) -> String {
    let rest = arn
        .split_once(":loadbalancer/")
        .or_else(|| arn.split_once(":targetgroup/"));
    rest.unwrap().1.to_owned()
}

async fn seed_elb(moto: &Moto, ec2: &aws_sdk_ec2::Client, s: &Seeded) -> Elb {
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
struct Data {
    db: String,
    db_stopped: String,
    function: String,
    function_plain: String,
    logs: String,
    logs_loose: String,
}

async fn seed_data(moto: &Moto, s: &Seeded, e: &Elb) -> Data {
    use aws_sdk_lambda::primitives::Blob;
    use aws_sdk_lambda::types::{FunctionCode, Runtime, VpcConfig};
    let rds = client!(aws_sdk_rds, moto, A);
    let lambda = client!(aws_sdk_lambda, moto, A);
    let logs = client!(aws_sdk_cloudwatchlogs, moto, A);
    let iam = client!(aws_sdk_iam, moto, A);
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

    let trust = r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Service":"lambda.amazonaws.com"},"Action":"sts:AssumeRole"}]}"#;
    let role = iam
        .create_role()
        .role_name("fn")
        .assume_role_policy_document(trust)
        .send()
        .await
        .unwrap();
    let role = role.role().unwrap().arn().to_owned();
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
const BUCKETS: [(&str, &str); 3] = [("acme-logs", A), ("acme-eu", B), ("acme-west", "us-west-2")];

async fn seed_buckets(moto: &Moto) {
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

/// A zip archive with nothing in it (its end-of-directory record).
fn empty_zip() -> Vec<u8> {
    let mut zip = b"PK\x05\x06".to_vec();
    zip.resize(22, 0);
    zip
}

/// Milliseconds since the epoch.
fn now_ms() -> i64 {
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    since.as_millis() as i64
}

// ----------------------------------------------------------------- plugin

/// The plugin process, its provider client, and its stderr lines.
struct Plugin {
    _child: Child,
    provider: ProviderClient<Channel>,
    log: Arc<Mutex<Vec<String>>>,
}

impl Plugin {
    /// Starts the binary as the daemon does, with `env` on top of a clean
    /// AWS environment (no profile files, no instance metadata).
    async fn start(env: &[(&str, &str)]) -> Plugin {
        let mut cmd = Command::new(BIN);
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
            provider: ProviderClient::new(channel),
            log,
        }
    }

    /// With moto's endpoint and dummy credentials.
    async fn against(moto: &Moto) -> Plugin {
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
    async fn scan(&mut self, config: &[(&str, &str)]) -> (Scanned, Result<(), tonic::Status>) {
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
                Ok(None) => return (scanned, Ok(())),
                Err(status) => return (scanned, Err(status)),
            }
        }
    }

    async fn preflight(&mut self, config: &[(&str, &str)]) -> PreflightResponse {
        let config = config.iter().map(|(k, v)| ((*k).into(), (*v).into())).collect();
        let call = self.provider.preflight_check(PreflightRequest { config });
        tokio::time::timeout(DEADLINE, call)
            .await
            .unwrap()
            .unwrap()
            .into_inner()
    }

    fn log(&self) -> Vec<Value> {
        let lines = self.log.lock().unwrap().clone();
        lines.iter().filter_map(|l| serde_json::from_str(l).ok()).collect()
    }
}

#[derive(Default)]
struct Scanned {
    nodes: BTreeMap<String, (Value, f64)>,
    edges: BTreeSet<(String, String, String)>,
}

impl Scanned {
    fn node(&self, region: &str, kind: &str, id: &str) -> &Value {
        let crn = crn(region, kind, id);
        &self.nodes.get(&crn).unwrap_or_else(|| panic!("no node {crn}")).0
    }
    fn cost(&self, region: &str, kind: &str, id: &str) -> f64 {
        self.nodes[&crn(region, kind, id)].1
    }
}

fn crn(region: &str, kind: &str, id: &str) -> String {
    format!("crn:svc:aws:{region}:{ACCOUNT}:{kind}:{id}")
}

fn edge(region: &str, from: (&str, &str), relation: &str, to: (&str, &str)) -> (String, String, String) {
    (
        crn(region, from.0, from.1),
        relation.to_owned(),
        crn(region, to.0, to.1),
    )
}

/// The network context of a region as moto lists it (its default VPC,
/// subnets and groups included), as CRNs.
async fn network_crns(ec2: &aws_sdk_ec2::Client, region: &str) -> BTreeSet<String> {
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
async fn eni_of(ec2: &aws_sdk_ec2::Client, instance: &str) -> String {
    let filter = Filter::builder()
        .name("attachment.instance-id")
        .values(instance)
        .build();
    let r = ec2.describe_network_interfaces().filters(filter).send().await.unwrap();
    r.network_interfaces()[0].network_interface_id().unwrap().to_owned()
}

/// The kinds whose every edge the test names.
const COMPUTE: [&str; 12] = [
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

fn kind_of(crn: &str) -> &str {
    crn.split(':').nth(5).unwrap()
}

// ------------------------------------------------------------------ tests

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scan_reports_two_regions_exactly() {
    let moto = Moto::start().await;
    let (ea, eb) = (moto.ec2(A), moto.ec2(B));
    let a = seed_full(&ea).await;
    let b = seed_small(&eb).await;
    let lb = seed_elb(&moto, &ea, &a).await;
    let tier = seed_data(&moto, &a, &lb).await;
    seed_buckets(&moto).await;
    let mut plugin = Plugin::against(&moto).await;
    let regions = format!(r#"["{A}", "{B}"]"#);
    let (scan, status) = plugin.scan(&[("regions", &regions)]).await;
    status.expect("the scan succeeds");

    // The exact node set: what the test made, and the network moto lists.
    let mut expected = BTreeSet::new();
    for (kind, id) in [
        ("instance", &a.running),
        ("instance", &a.stopped),
        ("volume", &a.running_root),
        ("volume", &a.stopped_root),
        ("volume", &a.data_volume),
        ("volume", &a.loose_volume),
        ("snapshot", &a.snapshot),
        ("snapshot", &a.image_snapshot),
        ("image", &a.image),
        ("eip", &a.eip_associated),
        ("eip", &a.eip_loose),
        ("eip", &a.eip_nat),
        ("nat-gateway", &a.nat),
        ("vpc-endpoint", &a.endpoint),
        ("load-balancer", &lb.web),
        ("load-balancer", &lb.old),
        ("target-group", &lb.web_tg),
        ("target-group", &lb.old_tg),
        ("target-group", &lb.loose_tg),
        ("db", &tier.db),
        ("db", &tier.db_stopped),
        ("function", &tier.function),
        ("function", &tier.function_plain),
        ("log-group", &tier.logs),
        ("log-group", &tier.logs_loose),
    ] {
        expected.insert(crn(A, kind, id));
    }
    expected.insert(crn(A, "bucket", BUCKETS[0].0));
    expected.insert(crn(B, "bucket", BUCKETS[1].0));
    for (kind, id) in [
        ("instance", &b.running),
        ("volume", &b.running_root),
        ("volume", &b.loose_volume),
    ] {
        expected.insert(crn(B, kind, id));
    }
    expected.extend(network_crns(&ea, A).await);
    expected.extend(network_crns(&eb, B).await);
    let got: BTreeSet<String> = scan.nodes.keys().cloned().collect();
    assert_eq!(got, expected);

    // Key properties, as the built-in rules read them.
    let run = scan.node(A, "instance", &a.running);
    assert_eq!(run["state"], "running");
    assert_eq!(run["instance_type"], "t3.small");
    assert_eq!(run["lifecycle"], "on-demand");
    assert_eq!(run["subnet_id"], a.subnet.as_str());
    assert_eq!(run["image_id"], a.image.as_str());
    assert_eq!(run["vcpus"], 2);
    assert_eq!(run["tags"]["env"], "prod");
    assert_eq!(run["arn"], format!("arn:aws:ec2:{A}:{ACCOUNT}:instance/{}", a.running));
    assert!(run["creation_timestamp"].as_i64().unwrap() > 1_700_000_000, "{run}");
    assert!(run["created_at"].as_str().unwrap().ends_with('Z'), "{run}");
    let priced = prices::machine_monthly("aws", "t3.small", A).unwrap();
    let cost = scan.cost(A, "instance", &a.running);
    assert!((cost - priced).abs() < CENT, "{cost} != {priced}");
    let stopped = scan.node(A, "instance", &a.stopped);
    assert_eq!(stopped["state"], "stopped");
    assert!(
        stopped["stopped_at"].as_str().is_some_and(|t| t.ends_with('Z')),
        "{stopped}"
    );
    assert_eq!(scan.cost(A, "instance", &a.stopped), 0.0);

    let data = scan.node(A, "volume", &a.data_volume);
    assert_eq!(data["state"], "in-use");
    assert_eq!(data["attached_to"], a.running.as_str());
    assert_eq!(data["attachment_state"], "attached");
    assert_eq!(data["device"], "/dev/sdf");
    assert_eq!(
        (data["size_gib"].clone(), data["volume_type"].clone()),
        (10.into(), "gp3".into())
    );
    let priced = 10.0 * prices::rate("aws", "gp3", A).unwrap();
    assert!(
        (scan.cost(A, "volume", &a.data_volume) - priced).abs() < CENT,
        "{priced}"
    );
    let loose = scan.node(A, "volume", &a.loose_volume);
    assert_eq!(loose["state"], "available");
    assert_eq!(loose["attached_to"], Value::Null);
    assert_eq!(loose["attachment_state"], "detached");
    assert_eq!(loose["tags"]["svc:ignore"], "true");
    assert_eq!(loose["volume_type"], "gp2");

    let snap = scan.node(A, "snapshot", &a.snapshot);
    assert_eq!(snap["source_volume_id"], a.data_volume.as_str());
    assert_eq!(snap["size_gib"], 10);
    assert_eq!(snap["arn"], format!("arn:aws:ec2:{A}::snapshot/{}", a.snapshot));
    let image = scan.node(A, "image", &a.image);
    assert_eq!(image["name"], "base");
    assert_eq!(image["state"], "available");
    assert_eq!(image["snapshot_ids"], serde_json::json!([a.image_snapshot]));

    let eip = scan.node(A, "eip", &a.eip_associated);
    assert_eq!(eip["state"], "in-use");
    assert_eq!(eip["attached_to"], a.running.as_str());
    assert!(eip["association_id"].is_string(), "{eip}");
    assert!(eip["public_ip"].is_string(), "{eip}");
    let eip = scan.node(A, "eip", &a.eip_loose);
    assert_eq!(eip["state"], "available");
    assert_eq!(
        (eip["attached_to"].clone(), eip["association_id"].clone()),
        (Value::Null, Value::Null)
    );
    let priced = prices::rate("aws", "eip", A).unwrap();
    assert!((scan.cost(A, "eip", &a.eip_loose) - priced).abs() < CENT, "{priced}");

    let nat = scan.node(A, "nat-gateway", &a.nat);
    assert_eq!(nat["state"], "available");
    assert_eq!(nat["subnet_id"], a.subnet.as_str());
    assert!(scan.cost(A, "nat-gateway", &a.nat) > 30.0);
    let vpce = scan.node(A, "vpc-endpoint", &a.endpoint);
    assert_eq!(vpce["vpc_endpoint_type"], "Interface");
    assert_eq!(vpce["service_name"], format!("com.amazonaws.{A}.s3"));
    let subnet = scan.node(A, "subnet", &a.subnet);
    assert_eq!(
        (subnet["vpc_id"].clone(), subnet["cidr_block"].clone()),
        (a.vpc.as_str().into(), "10.1.1.0/24".into())
    );
    assert_eq!(scan.node(A, "vpc", &a.vpc)["tags"]["Name"], "app");
    assert_eq!(scan.node(A, "security-group", &a.sg)["group_name"], "web");
    assert_eq!(scan.node(B, "instance", &b.running)["state"], "running");

    // Load balancers: the one in front of a running and a stopped
    // instance has one healthy target of two; the idle one none.
    let web = scan.node(A, "load-balancer", &lb.web);
    assert_eq!(web["state"], "active");
    assert_eq!(web["name"], "web");
    assert_eq!(web["lb_type"], "application");
    assert_eq!(web["scheme"], "internet-facing");
    assert!(web["dns_name"].as_str().is_some_and(|d| d.starts_with("web-")), "{web}");
    assert_eq!(web["vpc_id"], a.vpc.as_str());
    assert_eq!(web["security_groups"], serde_json::json!([a.sg]));
    assert_eq!(
        (
            web["target_groups"].clone(),
            web["registered_targets"].clone(),
            web["healthy_targets"].clone()
        ),
        (1.into(), 2.into(), 1.into())
    );
    assert_eq!(web["tags"]["env"], "prod");
    assert_eq!(
        web["arn"],
        format!("arn:aws:elasticloadbalancing:{A}:{ACCOUNT}:loadbalancer/{}", lb.web)
    );
    assert!(web["creation_timestamp"].as_i64().unwrap() > 1_700_000_000, "{web}");
    let priced = prices::rate("aws", "alb", A).unwrap();
    assert!(
        (scan.cost(A, "load-balancer", &lb.web) - priced).abs() < CENT,
        "{priced}"
    );
    let old = scan.node(A, "load-balancer", &lb.old);
    assert_eq!(
        (old["registered_targets"].clone(), old["healthy_targets"].clone()),
        (0.into(), 0.into())
    );
    assert_eq!(old["tags"]["env"], "legacy");
    let tg = scan.node(A, "target-group", &lb.web_tg);
    assert_eq!(tg["state"], "active");
    assert_eq!((tg["protocol"].clone(), tg["port"].clone()), ("HTTP".into(), 80.into()));
    assert_eq!(tg["target_type"], "instance");
    assert_eq!(
        (tg["registered_targets"].clone(), tg["healthy_targets"].clone()),
        (2.into(), 1.into())
    );
    assert_eq!(scan.node(A, "target-group", &lb.loose_tg)["state"], "unused");
    assert_eq!(scan.cost(A, "target-group", &lb.web_tg), 0.0);

    // Databases, functions and log groups.
    let db = scan.node(A, "db", &tier.db);
    assert_eq!(db["state"], "available");
    assert_eq!(db["db_class"], "db.t3.micro");
    assert_eq!(
        (db["engine"].clone(), db["engine_version"].clone()),
        ("postgres".into(), "16.3".into())
    );
    assert_eq!(db["allocated_gib"], 50);
    assert_eq!(db["multi_az"], false);
    assert!(
        db["endpoint"].as_str().is_some_and(|e| e.starts_with("orders.")),
        "{db}"
    );
    assert_eq!(db["vpc_id"], a.vpc.as_str());
    // The subnet group has one subnet (moto does not always report the
    // zones of a group's subnets; the zone match is a unit test of rds.rs).
    assert_eq!(db["subnet_ids"], serde_json::json!([lb.subnet2]), "{db}");
    assert_eq!(db["tags"]["team"], "data");
    assert_eq!(db["arn"], format!("arn:aws:rds:{A}:{ACCOUNT}:db:orders"));
    assert!(db["creation_timestamp"].as_i64().unwrap() > 1_700_000_000, "{db}");
    assert!(scan.cost(A, "db", &tier.db) > 0.0);
    let stopped = scan.node(A, "db", &tier.db_stopped);
    assert_eq!(stopped["state"], "stopped");
    assert!(
        scan.cost(A, "db", &tier.db_stopped) < scan.cost(A, "db", &tier.db),
        "a stopped database bills its storage only"
    );
    let f = scan.node(A, "function", &tier.function);
    assert_eq!(f["state"], "Active");
    assert_eq!(
        (f["runtime"].clone(), f["memory_mb"].clone()),
        ("python3.12".into(), 256.into())
    );
    // moto answers a fixed VPC id for any function in a VPC.
    assert!(f["vpc_id"].is_string(), "{f}");
    assert_eq!(f["log_group"], tier.logs.as_str());
    assert!(f["last_modified"].as_str().is_some_and(|t| t.ends_with('Z')), "{f}");
    assert_eq!(f["arn"], format!("arn:aws:lambda:{A}:{ACCOUNT}:function:resize"));
    let plain = scan.node(A, "function", &tier.function_plain);
    assert_eq!(plain.get("vpc_id"), None, "{plain}");
    let logs = scan.node(A, "log-group", &tier.logs);
    assert_eq!(logs["retention_days"], 14);
    assert_eq!(logs["stored_bytes"], 1000);
    assert_eq!(
        logs["arn"],
        format!("arn:aws:logs:{A}:{ACCOUNT}:log-group:{}", tier.logs)
    );
    let loose = scan.node(A, "log-group", &tier.logs_loose);
    assert_eq!(loose["retention_days"], Value::Null);
    assert_eq!(loose["stored_gib"], 0.0);
    // Buckets, each in its own region.
    let bucket = scan.node(A, "bucket", "acme-logs");
    assert_eq!(bucket["state"], "active");
    assert_eq!(bucket["arn"], "arn:aws:s3:::acme-logs");
    assert!(
        bucket["creation_timestamp"].as_i64().unwrap() > 1_700_000_000,
        "{bucket}"
    );
    assert_eq!(scan.node(B, "bucket", "acme-eu")["arn"], "arn:aws:s3:::acme-eu");

    // The relations: every edge touching a compute or storage resource,
    // exactly, and the network's own.
    let (run_eni, stop_eni, b_eni) = (
        eni_of(&ea, &a.running).await,
        eni_of(&ea, &a.stopped).await,
        eni_of(&eb, &b.running).await,
    );
    let mut want = BTreeSet::new();
    for i in [&a.running, &a.stopped] {
        want.insert(edge(A, ("instance", i), "MEMBER_OF", ("subnet", &a.subnet)));
        want.insert(edge(A, ("instance", i), "SECURED_BY", ("security-group", &a.sg)));
        want.insert(edge(A, ("instance", i), "DEPENDS_ON", ("image", &a.image)));
    }
    for (v, i) in [
        (&a.running_root, &a.running),
        (&a.data_volume, &a.running),
        (&a.stopped_root, &a.stopped),
    ] {
        want.insert(edge(A, ("volume", v), "ATTACHED_TO", ("instance", i)));
    }
    want.insert(edge(
        A,
        ("network-interface", &run_eni),
        "ATTACHED_TO",
        ("instance", &a.running),
    ));
    want.insert(edge(
        A,
        ("network-interface", &stop_eni),
        "ATTACHED_TO",
        ("instance", &a.stopped),
    ));
    want.insert(edge(
        A,
        ("snapshot", &a.snapshot),
        "CHILD_OF",
        ("volume", &a.data_volume),
    ));
    want.insert(edge(
        A,
        ("image", &a.image),
        "DEPENDS_ON",
        ("snapshot", &a.image_snapshot),
    ));
    want.insert(edge(
        A,
        ("eip", &a.eip_associated),
        "ATTACHED_TO",
        ("instance", &a.running),
    ));
    want.insert(edge(
        A,
        ("eip", &a.eip_associated),
        "ATTACHED_TO",
        ("network-interface", &run_eni),
    ));
    want.insert(edge(
        A,
        ("eip", &a.eip_nat),
        "ATTACHED_TO",
        ("network-interface", &a.nat_eni),
    ));
    want.insert(edge(A, ("subnet", &a.subnet), "CONTAINS", ("nat-gateway", &a.nat)));
    want.insert(edge(
        A,
        ("network-interface", &a.nat_eni),
        "ATTACHED_TO",
        ("nat-gateway", &a.nat),
    ));
    want.insert(edge(
        A,
        ("subnet", &a.subnet),
        "CONTAINS",
        ("vpc-endpoint", &a.endpoint),
    ));
    want.insert(edge(
        A,
        ("vpc-endpoint", &a.endpoint),
        "SECURED_BY",
        ("security-group", &a.sg),
    ));
    want.insert(edge(
        A,
        ("network-interface", &a.endpoint_eni),
        "ATTACHED_TO",
        ("vpc-endpoint", &a.endpoint),
    ));
    for l in [&lb.web, &lb.old] {
        want.insert(edge(A, ("subnet", &a.subnet), "CONTAINS", ("load-balancer", l)));
        want.insert(edge(A, ("subnet", &lb.subnet2), "CONTAINS", ("load-balancer", l)));
        want.insert(edge(A, ("load-balancer", l), "SECURED_BY", ("security-group", &a.sg)));
    }
    want.insert(edge(
        A,
        ("target-group", &lb.web_tg),
        "ATTACHED_TO",
        ("load-balancer", &lb.web),
    ));
    want.insert(edge(
        A,
        ("target-group", &lb.old_tg),
        "ATTACHED_TO",
        ("load-balancer", &lb.old),
    ));
    for i in [&a.running, &a.stopped] {
        want.insert(edge(A, ("target-group", &lb.web_tg), "ROUTES_TO", ("instance", i)));
        want.insert(edge(A, ("load-balancer", &lb.web), "ROUTES_TO", ("instance", i)));
    }
    for db in [&tier.db, &tier.db_stopped] {
        want.insert(edge(A, ("subnet", &lb.subnet2), "CONTAINS", ("db", db)));
        want.insert(edge(A, ("db", db), "SECURED_BY", ("security-group", &a.sg)));
    }
    want.insert(edge(
        A,
        ("function", &tier.function),
        "SECURED_BY",
        ("security-group", &a.sg),
    ));
    want.insert(edge(
        A,
        ("function", &tier.function),
        "WRITES",
        ("log-group", &tier.logs),
    ));
    want.insert(edge(B, ("instance", &b.running), "MEMBER_OF", ("subnet", &b.subnet)));
    want.insert(edge(
        B,
        ("instance", &b.running),
        "SECURED_BY",
        ("security-group", &b.sg),
    ));
    want.insert(edge(
        B,
        ("volume", &b.running_root),
        "ATTACHED_TO",
        ("instance", &b.running),
    ));
    want.insert(edge(
        B,
        ("network-interface", &b_eni),
        "ATTACHED_TO",
        ("instance", &b.running),
    ));
    let touching: BTreeSet<_> = scan
        .edges
        .iter()
        .filter(|(s, _, t)| COMPUTE.contains(&kind_of(s)) || COMPUTE.contains(&kind_of(t)))
        .cloned()
        .collect();
    assert_eq!(touching, want);
    for e in [
        edge(A, ("vpc", &a.vpc), "CONTAINS", ("subnet", &a.subnet)),
        edge(A, ("vpc", &a.vpc), "CONTAINS", ("security-group", &a.sg)),
        edge(A, ("network-interface", &run_eni), "MEMBER_OF", ("subnet", &a.subnet)),
        edge(
            A,
            ("network-interface", &run_eni),
            "SECURED_BY",
            ("security-group", &a.sg),
        ),
        edge(B, ("vpc", &b.vpc), "CONTAINS", ("subnet", &b.subnet)),
    ] {
        assert!(scan.edges.contains(&e), "missing {e:?}");
    }
    // Every edge joins two reported nodes.
    for (s, _, t) in &scan.edges {
        assert!(
            scan.nodes.contains_key(s) && scan.nodes.contains_key(t),
            "dangling {s} -> {t}"
        );
    }

    // Every AWS call is in the log with its service, operation and region.
    let calls: Vec<(String, String, String)> = plugin
        .log()
        .iter()
        .filter(|l| l["@message"] == "aws call")
        .map(|l| {
            let f = |k: &str| l[k].as_str().unwrap_or_else(|| panic!("{k} missing in {l}")).to_owned();
            (f("service"), f("operation"), f("region"))
        })
        .collect();
    assert!(
        calls.contains(&("sts".into(), "GetCallerIdentity".into(), A.into())),
        "{calls:?}"
    );
    for region in [A, B] {
        for op in [
            "DescribeInstances",
            "DescribeVolumes",
            "DescribeSnapshots",
            "DescribeImages",
            "DescribeAddresses",
            "DescribeNatGateways",
            "DescribeVpcEndpoints",
            "DescribeVpcs",
            "DescribeSubnets",
            "DescribeSecurityGroups",
            "DescribeNetworkInterfaces",
        ] {
            let n = calls
                .iter()
                .filter(|c| c.0 == "ec2" && c.1 == op && c.2 == region)
                .count();
            // One page each: every list fits in a page of 1000.
            assert_eq!(n, 1, "{op} in {region}: {calls:?}");
        }
    }
    // ELBv2: the two lists in each region, the health of each of A's three
    // groups, and one DescribeTags for A's five resources (B has none).
    let count = |service: &str, op: &str, region: &str| {
        calls
            .iter()
            .filter(|c| c.0 == service && c.1 == op && c.2 == region)
            .count()
    };
    let elb = "elasticloadbalancing";
    for region in [A, B] {
        assert_eq!(count(elb, "DescribeLoadBalancers", region), 1, "{calls:?}");
        assert_eq!(count(elb, "DescribeTargetGroups", region), 1, "{calls:?}");
    }
    assert_eq!(count(elb, "DescribeTargetHealth", A), 3, "{calls:?}");
    assert_eq!(count(elb, "DescribeTags", A), 1, "{calls:?}");
    assert_eq!(count(elb, "DescribeTags", B) + count(elb, "DescribeTargetHealth", B), 0);
    // One list call per region for each of RDS, Lambda and Logs.
    for region in [A, B] {
        for (service, op) in [
            ("rds", "DescribeDBInstances"),
            ("lambda", "ListFunctions"),
            ("logs", "DescribeLogGroups"),
        ] {
            assert_eq!(count(service, op, region), 1, "{op} in {region}: {calls:?}");
        }
    }
    // S3 once, from the home region: the list and each bucket's location
    // (moto leaves `BucketRegion` out of the listing).
    assert_eq!(count("s3", "ListBuckets", A), 1, "{calls:?}");
    assert_eq!(count("s3", "GetBucketLocation", A), BUCKETS.len(), "{calls:?}");
    assert_eq!(
        calls.len(),
        1 + 2 * 11 + (2 * 2 + 3 + 1) + 2 * 3 + 1 + BUCKETS.len(),
        "{calls:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_region_that_refuses_fails_only_itself_and_the_scan() {
    let moto = Moto::start().await;
    let b = seed_small(&moto.ec2(B)).await;
    let mut plugin = Plugin::against(&moto).await;
    let refused = format!("http://127.0.0.1:{}", free_port());
    let (scan, status) = plugin
        .scan(&[
            ("regions", "us-west-2, eu-west-1"),
            ("endpoint_url.us-west-2", &refused),
            ("max_attempts", "2"),
        ])
        .await;
    let status = status.expect_err("an incomplete scan ends with an error");
    assert_eq!(status.code(), tonic::Code::Unavailable, "{status:?}");
    let m = status.message();
    assert!(m.starts_with("1 of 2 regions failed"), "{m}");
    assert!(m.contains("us-west-2: ec2 Describe"), "{m}");
    // The region that answered was sent whole; nothing of the other.
    assert!(scan.nodes.contains_key(&crn(B, "instance", &b.running)));
    assert!(scan.nodes.contains_key(&crn(B, "volume", &b.loose_volume)));
    assert!(!scan.nodes.keys().any(|c| c.contains(":us-west-2:")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn preflight_checks_credentials_and_each_region() {
    let moto = Moto::start().await;
    let mut plugin = Plugin::against(&moto).await;
    let good = plugin.preflight(&[("regions", r#"["us-east-1", "eu-west-1"]"#)]).await;
    assert!(good.ok, "{good:?}");
    assert!(good.missing.is_empty(), "{good:?}");
    assert!(
        good.message.starts_with(&format!("account {ACCOUNT} as arn:aws:")),
        "{}",
        good.message
    );
    assert!(good.message.ends_with("2 of 2 regions answer"), "{}", good.message);

    let refused = format!("http://127.0.0.1:{}", free_port());
    let bad = plugin
        .preflight(&[
            ("regions", "us-east-1, us-west-2"),
            ("endpoint_url.us-west-2", &refused),
            ("max_attempts", "1"),
        ])
        .await;
    assert!(!bad.ok, "{bad:?}");
    assert_eq!(bad.missing, ["region us-west-2 (unreachable)"]);
    assert!(bad.message.contains("1 of 2 regions answer"), "{}", bad.message);
    assert!(
        bad.message.contains("ec2 DescribeAvailabilityZones in us-west-2"),
        "{}",
        bad.message
    );

    // Without regions configured, the account's enabled regions.
    let all = plugin.preflight(&[]).await;
    assert!(all.ok, "{all:?}");
    let n: usize = all
        .message
        .rsplit(" of ")
        .next()
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(n > 10, "{}", all.message);

    let bad_config = plugin.preflight(&[("regions", "[]")]).await;
    assert!(!bad_config.ok && bad_config.message.contains("empty"), "{bad_config:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_credentials_preflight_and_scan_say_so() {
    let moto = Moto::start().await;
    let mut plugin = Plugin::start(&[("AWS_ENDPOINT_URL", &moto.endpoint), ("AWS_REGION", A)]).await;
    let r = plugin.preflight(&[("regions", A)]).await;
    assert!(!r.ok, "{r:?}");
    assert_eq!(r.missing, ["credentials"]);
    assert!(
        r.message
            .starts_with("no usable AWS credentials: sts GetCallerIdentity"),
        "{}",
        r.message
    );
    let e = plugin
        .provider
        .scan(ScanRequest {
            config: [("regions".to_owned(), A.to_owned())].into(),
        })
        .await
        .expect_err("no scan without credentials");
    assert_eq!(e.code(), tonic::Code::Unauthenticated, "{e:?}");
}
