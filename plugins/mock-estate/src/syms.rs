//! Every string the estate interns, interned once and in a fixed order, so
//! symbols do not depend on thread scheduling and parallel generation never
//! touches the interner.

use svc_engine::{Interner, Sym};

use super::names::guid;
use super::rng::{Rng, hash3};

/// An interned string with its text.
#[derive(Copy, Clone, Debug)]
pub(crate) struct S<'a> {
    pub sym: Sym,
    pub name: &'a str,
}

fn s(i: &Interner, name: &'static str) -> S<'static> {
    S {
        sym: i.intern(name),
        name,
    }
}

/// A node type: service, kind and `<service>:<kind>`.
#[derive(Copy, Clone, Debug)]
pub(crate) struct Ty<'a> {
    pub service: S<'a>,
    pub kind: S<'a>,
    pub ty: Sym,
}

macro_rules! strings {
    ($(#[$m:meta])* $name:ident { $($field:ident = $text:literal),* $(,)? }) => {
        $(#[$m])*
        pub(crate) struct $name { $(pub $field: S<'static>,)* }
        impl $name {
            fn new(i: &Interner) -> $name {
                $name { $($field: s(i, $text),)* }
            }
        }
    };
}

macro_rules! keys {
    ($(#[$m:meta])* $name:ident { $($field:ident),* $(,)? }) => {
        $(#[$m])*
        pub(crate) struct $name { $(pub $field: Sym,)* }
        impl $name {
            fn new(i: &Interner) -> $name {
                $name { $($field: i.intern(stringify!($field)),)* }
            }
        }
    };
}

macro_rules! types {
    ($(#[$m:meta])* $name:ident { $($field:ident = ($svc:literal, $kind:literal)),* $(,)? }) => {
        $(#[$m])*
        pub(crate) struct $name { $(pub $field: Ty<'static>,)* }
        impl $name {
            fn new(i: &Interner) -> $name {
                $name { $($field: Ty {
                    service: s(i, $svc),
                    kind: s(i, $kind),
                    ty: i.intern(concat!($svc, ":", $kind)),
                },)* }
            }
        }
    };
}

types! {
    /// Node types by provider.
    Types {
        ec2_instance = ("ec2", "instance"), ec2_volume = ("ec2", "volume"), ec2_snapshot = ("ec2", "snapshot"),
        ec2_eip = ("ec2", "eip"), ec2_nat_gateway = ("ec2", "nat-gateway"),
        ec2_security_group = ("ec2", "security-group"), ec2_vpc = ("ec2", "vpc"), ec2_subnet = ("ec2", "subnet"),
        ec2_image = ("ec2", "image"), elb_load_balancer = ("elb", "load-balancer"), rds_db = ("rds", "db"),
        lambda_function = ("lambda", "function"), s3_bucket = ("s3", "bucket"), dynamodb_table = ("dynamodb", "table"),
        elasticache_cache = ("elasticache", "cache"), logs_log_group = ("logs", "log-group"),
        iam_role = ("iam", "role"), eks_cluster = ("eks", "cluster"), eks_nodegroup = ("eks", "nodegroup"),
        route53_record = ("route53", "record"),
        gcp_instance = ("compute", "instance"), gcp_disk = ("compute", "disk"), gcp_address = ("compute", "address"),
        gcp_snapshot = ("compute", "snapshot"), gcp_sql = ("sql", "sql-instance"), gcs_bucket = ("storage", "bucket"),
        gke_cluster = ("container", "cluster"),
        azure_vm = ("compute", "vm"), azure_disk = ("compute", "disk"), azure_public_ip = ("network", "public-ip"),
        azure_lb = ("network", "load-balancer"), azure_sql = ("sql", "sql-database"),
        azure_storage = ("storage", "storage-account"),
        k8s_pod = ("core", "pod"), k8s_node = ("core", "node"), k8s_service = ("core", "service"),
        k8s_pvc = ("core", "pvc"), k8s_namespace = ("core", "namespace"), k8s_deployment = ("apps", "deployment"),
    }
}

strings! {
    /// Lifecycle states as each provider reports them.
    States {
        running = "running", stopped = "stopped", available = "available", in_use = "in-use",
        completed = "completed", active = "active", active_upper = "ACTIVE", active_title = "Active",
        backing_up = "backing-up", modifying = "modifying", insync = "INSYNC", updating = "UPDATING",
        running_upper = "RUNNING", terminated = "TERMINATED", ready_upper = "READY", reserved = "RESERVED",
        in_use_upper = "IN_USE", runnable = "RUNNABLE", maintenance = "MAINTENANCE",
        attached = "Attached", unattached = "Unattached", succeeded = "Succeeded", online = "Online",
        ready = "Ready", running_title = "Running", pending = "Pending", bound = "Bound",
        available_title = "Available", progressing = "Progressing",
    }
}

strings! {
    /// Tag keys.
    TagKeys { env = "env", team = "team", owner = "owner", cost_center = "cost-center", ignore = "svc:ignore" }
}

keys! {
    /// Property keys (the field name is the key).
    Keys {
        state, created_at, relation, name,
        instance_type, machine_type, vm_size, vcpus, memory_gib, availability_zone, zone, private_ip, internal_ip,
        public_ip, lifecycle, cpu_avg_7d, network_bytes_7d, image_id, stopped_at, power_state, architecture,
        size_gib, volume_type, disk_type, sku, iops, encrypted, attached_to, attachment_state, device, users,
        last_attached_at, last_detached_at, source_volume_id, source_disk, domain, association_id, address,
        address_type, cidr_block, is_default, vpc_id, available_ips, group_name, ingress_rules,
        bytes_processed_7d, connections_7d, requests_7d, requests_30d, request_count_7d, transactions_30d,
        role_name, assumed_by, last_used_at, attached_policies,
        db_class, tier, engine, engine_version, database_version, allocated_gib, multi_az, endpoint, dtu_avg_7d,
        node_type, cache_nodes, hit_rate, billing_mode, read_capacity, write_capacity, consumed_read_7d,
        consumed_write_7d, object_count, storage_class, versioning, last_accessed_at, access_tier,
        runtime, memory_mb, invocations_90d, last_invoked_at, provisioned_concurrency, duration_avg_s,
        stored_gib, ingested_bytes_30d, retention_days,
        lb_type, scheme, dns_name, healthy_targets, backend_pool_size, lb_rules,
        record_name, record_type, alias, record_value, hosted_zone_id,
        kubernetes_version, node_count, desired_size, capacity_type, provider_id, kubelet_version,
        cpu_requests_pct, phase, service_type, endpoints, external_ip, cluster_ip, replicas, available_replicas,
        container_image, namespace, node_name, cpu_request_m, memory_request_mib, restarts, volume_name,
        access_mode, mounted_by, unschedulable,
    }
}

/// Values of the `env` tag, by index.
pub(crate) const ENVS: [&str; 4] = ["prod", "staging", "dev", "sandbox"];
const TEAMS: &[&str] = &[
    "payments", "checkout", "search", "platform", "data", "ml", "identity", "growth", "mobile", "sre",
];
const OWNERS: &[&str] = &[
    "alice@acme.io",
    "bob@acme.io",
    "carol@acme.io",
    "dan@acme.io",
    "erin@acme.io",
    "frank@acme.io",
    "grace@acme.io",
    "heidi@acme.io",
    "ivan@acme.io",
    "judy@acme.io",
    "mallory@acme.io",
    "niaj@acme.io",
    "olivia@acme.io",
    "peggy@acme.io",
    "rupert@acme.io",
    "sybil@acme.io",
    "trent@acme.io",
    "victor@acme.io",
    "walter@acme.io",
    "yolanda@acme.io",
];
const COST_CENTERS: &[&str] = &[
    "cc-1001", "cc-1002", "cc-1003", "cc-1004", "cc-2001", "cc-2002", "cc-3001",
];

/// Regions and their zones.
pub(crate) const AWS_REGIONS: &[(&str, &[&str])] = &[
    ("us-east-1", &["us-east-1a", "us-east-1b", "us-east-1c"]),
    ("us-west-2", &["us-west-2a", "us-west-2b", "us-west-2c"]),
    ("eu-west-1", &["eu-west-1a", "eu-west-1b", "eu-west-1c"]),
    ("eu-central-1", &["eu-central-1a", "eu-central-1b"]),
    ("ap-southeast-2", &["ap-southeast-2a", "ap-southeast-2b"]),
];
pub(crate) const GCP_REGIONS: &[(&str, &[&str])] = &[
    ("us-central1", &["us-central1-a", "us-central1-b", "us-central1-c"]),
    ("europe-west1", &["europe-west1-b", "europe-west1-c", "europe-west1-d"]),
    ("asia-northeast1", &["asia-northeast1-a", "asia-northeast1-b"]),
];
pub(crate) const AZURE_REGIONS: &[(&str, &[&str])] = &[
    ("eastus", &["1", "2", "3"]),
    ("westeurope", &["1", "2", "3"]),
    ("southeastasia", &["1", "2"]),
];

/// The `env` of each account, project and subscription, by index.
const AWS_ENVS: [usize; 5] = [0, 0, 1, 2, 3];
const GCP_PROJECTS: [(&str, usize); 4] = [("acme-prod", 0), ("acme-data", 0), ("acme-staging", 1), ("acme-dev", 2)];
const AZURE_ENVS: [usize; 3] = [0, 1, 2];

/// Accounts (projects, subscriptions) on `host`.
pub(crate) fn accounts(host: Host) -> usize {
    match host {
        Host::Aws => AWS_ENVS.len(),
        Host::Gcp => GCP_PROJECTS.len(),
        Host::Azure => AZURE_ENVS.len(),
    }
}

/// The `env` index of account `i` on `host`.
pub(crate) fn env_of(host: Host, i: usize) -> usize {
    match host {
        Host::Aws => AWS_ENVS[i % AWS_ENVS.len()],
        Host::Gcp => GCP_PROJECTS[i % GCP_PROJECTS.len()].1,
        Host::Azure => AZURE_ENVS[i % AZURE_ENVS.len()],
    }
}

pub(crate) struct Region {
    pub s: S<'static>,
    pub zones: &'static [&'static str],
}

/// An AWS account, GCP project or Azure subscription.
pub(crate) struct Account {
    pub sym: Sym,
    pub name: String,
    pub env: usize,
}

impl Account {
    pub(crate) fn s(&self) -> S<'_> {
        S {
            sym: self.sym,
            name: &self.name,
        }
    }
}

pub(crate) struct Syms {
    pub k: Keys,
    pub st: States,
    pub t: Types,
    pub tag: TagKeys,
    pub aws: S<'static>,
    pub gcp: S<'static>,
    pub azure: S<'static>,
    pub kubernetes: S<'static>,
    pub global: S<'static>,
    pub yes: S<'static>,
    pub envs: Vec<S<'static>>,
    pub teams: Vec<S<'static>>,
    pub owners: Vec<S<'static>>,
    pub cost_centers: Vec<S<'static>>,
    pub aws_regions: Vec<Region>,
    pub gcp_regions: Vec<Region>,
    pub azure_regions: Vec<Region>,
    pub aws_accounts: Vec<Account>,
    pub gcp_projects: Vec<Account>,
    pub azure_subscriptions: Vec<Account>,
}

impl Syms {
    /// Interns everything; account ids derive from `seed`.
    pub(crate) fn new(i: &Interner, seed: u64) -> Syms {
        let list = |names: &[&'static str]| names.iter().map(|n| s(i, n)).collect::<Vec<_>>();
        let regions = |rs: &[(&'static str, &'static [&'static str])]| {
            rs.iter()
                .map(|(name, zones)| Region { s: s(i, name), zones })
                .collect::<Vec<_>>()
        };
        let account = |name: String, env: usize| Account {
            sym: i.intern(&name),
            name,
            env,
        };
        let mut r = Rng::new(hash3(seed, 0xACC7, 0));
        let aws_accounts = AWS_ENVS
            .iter()
            .map(|&env| account(format!("{}", r.range(100_000_000_000, 1_000_000_000_000)), env))
            .collect();
        let gcp_projects = GCP_PROJECTS
            .iter()
            .map(|&(p, env)| account(format!("{p}-{}", r.range(100_000, 1_000_000)), env))
            .collect();
        let azure_subscriptions = AZURE_ENVS
            .iter()
            .map(|&env| {
                let (a, b) = (r.next_u64(), r.next_u64());
                account(guid(a, b), env)
            })
            .collect();
        Syms {
            k: Keys::new(i),
            st: States::new(i),
            t: Types::new(i),
            tag: TagKeys::new(i),
            aws: s(i, "aws"),
            gcp: s(i, "gcp"),
            azure: s(i, "azure"),
            kubernetes: s(i, "kubernetes"),
            global: s(i, "global"),
            yes: s(i, "true"),
            envs: list(&ENVS),
            teams: list(TEAMS),
            owners: list(OWNERS),
            cost_centers: list(COST_CENTERS),
            aws_regions: regions(AWS_REGIONS),
            gcp_regions: regions(GCP_REGIONS),
            azure_regions: regions(AZURE_REGIONS),
            aws_accounts,
            gcp_projects,
            azure_subscriptions,
        }
    }
}

/// The cloud a cluster runs on.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Host {
    Aws,
    Gcp,
    Azure,
}

impl Host {
    pub(crate) fn regions(self) -> &'static [(&'static str, &'static [&'static str])] {
        match self {
            Host::Aws => AWS_REGIONS,
            Host::Gcp => GCP_REGIONS,
            Host::Azure => AZURE_REGIONS,
        }
    }
    pub(crate) fn short(self) -> &'static str {
        match self {
            Host::Aws => "eks",
            Host::Gcp => "gke",
            Host::Azure => "aks",
        }
    }
}
