//! Which graph node a Terraform resource is: per resource type, the
//! graph's provider and type, the attribute holding the physical id, how
//! the region and account are read, and the attributes both Terraform and
//! a plugin report, by their two names.
//!
//! Kubernetes resources are not mapped: a Kubernetes provider's state
//! does not say which cluster a resource is in, and the CRN needs it.

use serde_json::{Map, Value};

/// A Terraform resource type as svc reads it.
#[derive(Debug)]
pub struct Kind {
    /// `aws_ebs_volume`.
    pub tf: &'static str,
    /// The graph's provider: `aws`, `gcp`, `azure`.
    pub provider: &'static str,
    /// The graph's service and kind: `ec2`, `volume`.
    pub service: &'static str,
    pub kind: &'static str,
    /// How the physical id is read from the attributes.
    pub id: Id,
    /// `(Terraform attribute, graph property)` pairs compared for drift. A
    /// Terraform attribute may be a path into nested blocks
    /// (`settings.0.tier`).
    pub attributes: &'static [(&'static str, &'static str)],
    /// The attribute holding the resource's tags (`tags_all` is preferred
    /// to `tags` where the provider writes it), or labels.
    pub tags: Option<&'static str>,
}

impl Kind {
    /// The graph type, `ec2:volume`.
    pub fn graph_type(&self) -> String {
        format!("{}:{}", self.service, self.kind)
    }
}

/// Where a resource's physical id is.
#[derive(Copy, Clone, Debug)]
pub enum Id {
    /// An attribute, as it is.
    Attr(&'static str),
    /// A Route 53 record: `ZONE/NAME./TYPE` from `zone_id`, `fqdn`, `type`.
    Route53Record,
}

/// No attribute compared.
const NONE: &[(&str, &str)] = &[];

/// Every mapped type.
pub const KINDS: &[Kind] = &[
    aws(
        "aws_instance",
        "ec2",
        "instance",
        Id::Attr("id"),
        &[
            ("instance_type", "instance_type"),
            ("ami", "image_id"),
            ("availability_zone", "availability_zone"),
            ("private_ip", "private_ip"),
        ],
    ),
    aws(
        "aws_ebs_volume",
        "ec2",
        "volume",
        Id::Attr("id"),
        &[
            ("size", "size_gib"),
            ("type", "volume_type"),
            ("iops", "iops"),
            ("encrypted", "encrypted"),
            ("availability_zone", "availability_zone"),
        ],
    ),
    aws(
        "aws_ebs_snapshot",
        "ec2",
        "snapshot",
        Id::Attr("id"),
        &[
            ("volume_id", "source_volume_id"),
            ("volume_size", "size_gib"),
            ("encrypted", "encrypted"),
        ],
    ),
    aws(
        "aws_ami",
        "ec2",
        "image",
        Id::Attr("id"),
        &[("name", "name"), ("architecture", "architecture")],
    ),
    aws(
        "aws_eip",
        "ec2",
        "eip",
        Id::Attr("allocation_id"),
        &[("domain", "domain"), ("public_ip", "public_ip")],
    ),
    aws("aws_nat_gateway", "ec2", "nat-gateway", Id::Attr("id"), NONE),
    aws("aws_vpc", "ec2", "vpc", Id::Attr("id"), &[("cidr_block", "cidr_block")]),
    aws(
        "aws_subnet",
        "ec2",
        "subnet",
        Id::Attr("id"),
        &[
            ("cidr_block", "cidr_block"),
            ("vpc_id", "vpc_id"),
            ("availability_zone", "availability_zone"),
        ],
    ),
    aws(
        "aws_security_group",
        "ec2",
        "security-group",
        Id::Attr("id"),
        &[("name", "group_name"), ("vpc_id", "vpc_id")],
    ),
    aws(
        "aws_lb",
        "elb",
        "load-balancer",
        Id::Attr("arn"),
        &[("load_balancer_type", "lb_type"), ("dns_name", "dns_name")],
    ),
    aws(
        "aws_alb",
        "elb",
        "load-balancer",
        Id::Attr("arn"),
        &[("load_balancer_type", "lb_type"), ("dns_name", "dns_name")],
    ),
    aws(
        "aws_db_instance",
        "rds",
        "db",
        Id::Attr("arn"),
        &[
            ("instance_class", "db_class"),
            ("engine", "engine"),
            ("engine_version", "engine_version"),
            ("allocated_storage", "allocated_gib"),
            ("multi_az", "multi_az"),
        ],
    ),
    aws(
        "aws_dynamodb_table",
        "dynamodb",
        "table",
        Id::Attr("arn"),
        &[
            ("billing_mode", "billing_mode"),
            ("read_capacity", "read_capacity"),
            ("write_capacity", "write_capacity"),
        ],
    ),
    aws(
        "aws_lambda_function",
        "lambda",
        "function",
        Id::Attr("arn"),
        &[("runtime", "runtime"), ("memory_size", "memory_mb")],
    ),
    aws(
        "aws_cloudwatch_log_group",
        "logs",
        "log-group",
        Id::Attr("arn"),
        &[("retention_in_days", "retention_days")],
    ),
    aws("aws_s3_bucket", "s3", "bucket", Id::Attr("bucket"), NONE),
    aws("aws_iam_role", "iam", "role", Id::Attr("arn"), &[("name", "role_name")]),
    aws(
        "aws_elasticache_cluster",
        "elasticache",
        "cache",
        Id::Attr("cluster_id"),
        &[
            ("node_type", "node_type"),
            ("engine", "engine"),
            ("engine_version", "engine_version"),
            ("num_cache_nodes", "cache_nodes"),
        ],
    ),
    aws(
        "aws_eks_cluster",
        "eks",
        "cluster",
        Id::Attr("arn"),
        &[("version", "kubernetes_version"), ("endpoint", "endpoint")],
    ),
    aws(
        "aws_eks_node_group",
        "eks",
        "nodegroup",
        Id::Attr("arn"),
        &[
            ("capacity_type", "capacity_type"),
            ("scaling_config.0.desired_size", "desired_size"),
        ],
    ),
    Kind {
        tags: None,
        ..aws("aws_route53_record", "route53", "record", Id::Route53Record, &[])
    },
    gcp(
        "google_compute_instance",
        "compute",
        "instance",
        Id::Attr("instance_id"),
        &[("machine_type", "machine_type"), ("name", "name"), ("zone", "zone")],
    ),
    gcp(
        "google_compute_disk",
        "compute",
        "disk",
        Id::Attr("name"),
        &[("size", "size_gib"), ("type", "disk_type"), ("zone", "zone")],
    ),
    gcp(
        "google_compute_address",
        "compute",
        "address",
        Id::Attr("name"),
        &[("address", "address"), ("address_type", "address_type")],
    ),
    gcp(
        "google_compute_snapshot",
        "compute",
        "snapshot",
        Id::Attr("name"),
        &[("disk_size_gb", "size_gib")],
    ),
    gcp(
        "google_storage_bucket",
        "storage",
        "bucket",
        Id::Attr("name"),
        &[("storage_class", "storage_class")],
    ),
    Kind {
        tags: Some("settings.0.user_labels"),
        ..gcp(
            "google_sql_database_instance",
            "sql",
            "sql-instance",
            Id::Attr("connection_name"),
            &[("database_version", "database_version"), ("settings.0.tier", "tier")],
        )
    },
    azure(
        "azurerm_linux_virtual_machine",
        "compute",
        "vm",
        &[("size", "vm_size"), ("zone", "zone")],
    ),
    azure(
        "azurerm_windows_virtual_machine",
        "compute",
        "vm",
        &[("size", "vm_size"), ("zone", "zone")],
    ),
    azure(
        "azurerm_managed_disk",
        "compute",
        "disk",
        &[("disk_size_gb", "size_gib"), ("storage_account_type", "sku")],
    ),
    azure(
        "azurerm_public_ip",
        "network",
        "public-ip",
        &[("sku", "sku"), ("ip_address", "address")],
    ),
    azure("azurerm_lb", "network", "load-balancer", &[("sku", "sku")]),
    azure(
        "azurerm_storage_account",
        "storage",
        "storage-account",
        &[("access_tier", "access_tier")],
    ),
];

const fn aws(
    tf: &'static str,
    service: &'static str,
    kind: &'static str,
    id: Id,
    attributes: &'static [(&'static str, &'static str)],
) -> Kind {
    Kind {
        tf,
        provider: "aws",
        service,
        kind,
        id,
        attributes,
        tags: Some("tags"),
    }
}

const fn gcp(
    tf: &'static str,
    service: &'static str,
    kind: &'static str,
    id: Id,
    attributes: &'static [(&'static str, &'static str)],
) -> Kind {
    Kind {
        tf,
        provider: "gcp",
        service,
        kind,
        id,
        attributes,
        tags: Some("labels"),
    }
}

/// Azure resources are named by their resource id everywhere.
const fn azure(
    tf: &'static str,
    service: &'static str,
    kind: &'static str,
    attributes: &'static [(&'static str, &'static str)],
) -> Kind {
    Kind {
        tf,
        provider: "azure",
        service,
        kind,
        id: Id::Attr("id"),
        attributes,
        tags: Some("tags"),
    }
}

/// The mapping of a Terraform resource type.
pub fn kind_of(tf: &str) -> Option<&'static Kind> {
    KINDS.iter().find(|k| k.tf == tf)
}

/// Whether Terraform can declare nodes of this provider and graph type.
pub fn is_mapped(provider: &str, service: &str, kind: &str) -> bool {
    KINDS
        .iter()
        .any(|k| k.provider == provider && k.service == service && k.kind == kind)
}

/// The value at a dotted path (`settings.0.tier`) of the attributes.
pub fn attribute<'a>(attrs: &'a Map<String, Value>, path: &str) -> Option<&'a Value> {
    let mut parts = path.split('.');
    let mut v = attrs.get(parts.next()?)?;
    for part in parts {
        v = match v {
            Value::Object(m) => m.get(part)?,
            Value::Array(a) => a.get(part.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(v)
}

fn text<'a>(attrs: &'a Map<String, Value>, path: &str) -> Option<&'a str> {
    attribute(attrs, path)?.as_str().filter(|s| !s.is_empty())
}

/// The physical id a resource has in the graph.
pub fn physical_id(kind: &Kind, attrs: &Map<String, Value>) -> Option<String> {
    match kind.id {
        Id::Attr(name) => text(attrs, name).map(str::to_owned),
        Id::Route53Record => {
            let zone = text(attrs, "zone_id")?;
            let name = text(attrs, "fqdn").or_else(|| text(attrs, "name"))?;
            let ty = text(attrs, "type")?;
            let dot = if name.ends_with('.') { "" } else { "." };
            Some(format!("{zone}/{name}{dot}/{ty}"))
        }
    }
}

/// The region and account of a resource, as far as its attributes say.
pub fn placement(kind: &Kind, attrs: &Map<String, Value>) -> (Option<String>, Option<String>) {
    match kind.provider {
        "aws" => aws_placement(kind, attrs),
        "gcp" => {
            let region = text(attrs, "region")
                .map(str::to_owned)
                .or_else(|| text(attrs, "zone").map(zone_region))
                .or_else(|| text(attrs, "location").map(str::to_ascii_lowercase));
            (region, text(attrs, "project").map(str::to_owned))
        }
        "azure" => {
            let account = text(attrs, "id").and_then(|id| {
                let mut parts = id.split('/').filter(|p| !p.is_empty());
                while let Some(p) = parts.next() {
                    if p.eq_ignore_ascii_case("subscriptions") {
                        return parts.next().map(str::to_owned);
                    }
                }
                None
            });
            (text(attrs, "location").map(str::to_owned), account)
        }
        _ => (None, None),
    }
}

/// The region and account of an AWS resource: from its ARN, else the
/// `region` every resource carries since provider 6 (or its availability
/// zone) and its owner.
fn aws_placement(kind: &Kind, attrs: &Map<String, Value>) -> (Option<String>, Option<String>) {
    let mut region = None;
    let mut account = None;
    if let Some(arn) = text(attrs, "arn") {
        let parts: Vec<&str> = arn.splitn(6, ':').collect();
        if parts.len() == 6 && parts[0] == "arn" {
            region = Some(parts[3]).filter(|r| !r.is_empty()).map(str::to_owned);
            account = Some(parts[4]).filter(|a| !a.is_empty()).map(str::to_owned);
        }
    }
    if matches!(kind.service, "iam" | "route53") {
        region = Some("global".to_owned());
    }
    let region = region
        .or_else(|| text(attrs, "region").map(str::to_owned))
        .or_else(|| text(attrs, "availability_zone").map(zone_region));
    let account = account.or_else(|| text(attrs, "owner_id").map(str::to_owned));
    (region, account)
}

/// `eu-west-1a` is in `eu-west-1`; `us-central1-c` in `us-central1`.
fn zone_region(zone: &str) -> String {
    match zone.rsplit_once('-') {
        // GCP: region-zoneletter.
        Some((region, letter)) if letter.len() == 1 && region.contains('-') && region.ends_with(char::is_numeric) => {
            region.to_owned()
        }
        // AWS: region plus a letter.
        _ if zone.ends_with(|c: char| c.is_ascii_lowercase()) && zone.len() > 1 => zone[..zone.len() - 1].to_owned(),
        _ => zone.to_owned(),
    }
}

/// The graph-form CRN a resource would have, when its attributes say
/// enough; a resource they do not place is looked up by type and id.
pub fn crn(kind: &Kind, attrs: &Map<String, Value>) -> Option<String> {
    let id = physical_id(kind, attrs)?;
    let (region, account) = placement(kind, attrs);
    let mut out = String::new();
    svc_graph::crn::write_crn(
        &mut out,
        [kind.provider, &region?, kind.service, kind.kind, &account?, &id],
    );
    Some(out)
}

/// The tags Terraform applies: `tags_all` (tags plus the provider's
/// default tags) where the provider records it, else the declared tags.
pub fn declared_tags<'a>(kind: &Kind, attrs: &'a Map<String, Value>) -> Option<&'a Map<String, Value>> {
    let field = kind.tags?;
    if field == "tags"
        && let Some(Value::Object(all)) = attrs.get("tags_all")
    {
        return Some(all);
    }
    match attribute(attrs, field)? {
        Value::Object(m) => Some(m),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn attrs(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => unreachable!("an object"),
        }
    }

    #[test]
    fn every_mapped_type_is_one_the_graph_knows() {
        for k in KINDS {
            assert_eq!(
                svc_graph::crn::service_for(k.provider, k.kind),
                k.service,
                "{}: the graph files {} under another service",
                k.tf,
                k.kind
            );
        }
        let mut names: Vec<&str> = KINDS.iter().map(|k| k.tf).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), KINDS.len(), "a Terraform type is mapped twice");
    }

    #[test]
    fn an_ebs_volume_is_placed_by_its_arn() {
        let a = attrs(json!({
            "id": "vol-0abc", "arn": "arn:aws:ec2:eu-west-1:111122223333:volume/vol-0abc",
            "availability_zone": "eu-west-1a", "size": 100
        }));
        let k = kind_of("aws_ebs_volume").unwrap();
        assert_eq!(
            crn(k, &a).as_deref(),
            Some("crn:svc:aws:eu-west-1:ec2:volume:111122223333:vol-0abc")
        );
    }

    #[test]
    fn resources_without_an_arn_are_placed_by_region_zone_or_owner() {
        let nat = kind_of("aws_nat_gateway").unwrap();
        let a = attrs(json!({"id": "nat-1", "region": "us-east-2"}));
        assert_eq!(placement(nat, &a), (Some("us-east-2".into()), None));
        assert_eq!(crn(nat, &a), None, "no account: looked up by id instead");
        let sg = kind_of("aws_security_group").unwrap();
        let a = attrs(json!({"id": "sg-1", "owner_id": "1", "availability_zone": "ap-south-1b"}));
        assert_eq!(
            crn(sg, &a).as_deref(),
            Some("crn:svc:aws:ap-south-1:ec2:security-group:1:sg-1")
        );
        let role = kind_of("aws_iam_role").unwrap();
        let a = attrs(json!({"arn": "arn:aws:iam::42:role/app"}));
        assert_eq!(
            crn(role, &a).as_deref(),
            Some("crn:svc:aws:global:iam:role:42:arn:aws:iam::42:role/app")
        );
    }

    #[test]
    fn gcp_and_azure_resources_are_placed_by_project_zone_and_subscription() {
        let vm = kind_of("google_compute_instance").unwrap();
        let a = attrs(json!({"instance_id": "321", "project": "p-1", "zone": "us-central1-c"}));
        assert_eq!(
            crn(vm, &a).as_deref(),
            Some("crn:svc:gcp:us-central1:compute:instance:p-1:321")
        );
        let sql = kind_of("google_sql_database_instance").unwrap();
        let a = attrs(json!({"connection_name": "p-1:europe-west4:db", "project": "p-1", "region": "europe-west4"}));
        assert_eq!(
            crn(sql, &a).as_deref(),
            Some("crn:svc:gcp:europe-west4:sql:sql-instance:p-1:p-1:europe-west4:db")
        );
        let disk = kind_of("azurerm_managed_disk").unwrap();
        let id = "/subscriptions/s-1/resourceGroups/rg/providers/Microsoft.Compute/disks/d";
        let a = attrs(json!({"id": id, "location": "westeurope"}));
        assert_eq!(
            crn(disk, &a),
            Some(format!("crn:svc:azure:westeurope:compute:disk:s-1:{id}"))
        );
    }

    #[test]
    fn a_route53_record_is_named_by_zone_name_and_type() {
        let k = kind_of("aws_route53_record").unwrap();
        let a = attrs(json!({"zone_id": "Z1", "fqdn": "api.acme.io", "type": "A", "name": "api"}));
        assert_eq!(physical_id(k, &a).as_deref(), Some("Z1/api.acme.io./A"));
    }

    #[test]
    fn nested_attributes_and_tags_are_read() {
        let a = attrs(json!({"settings": [{"tier": "db-f1-micro", "user_labels": {"team": "a"}}]}));
        assert_eq!(attribute(&a, "settings.0.tier"), Some(&json!("db-f1-micro")));
        assert_eq!(attribute(&a, "settings.1.tier"), None);
        assert_eq!(attribute(&a, "settings.x"), None);
        let sql = kind_of("google_sql_database_instance").unwrap();
        assert_eq!(declared_tags(sql, &a).map(|m| m.len()), Some(1));
        let vol = kind_of("aws_ebs_volume").unwrap();
        let a = attrs(json!({"tags": {"a": "1"}, "tags_all": {"a": "1", "owner": "x"}}));
        assert_eq!(declared_tags(vol, &a).map(|m| m.len()), Some(2));
    }

    #[test]
    fn zones_name_their_regions() {
        assert_eq!(zone_region("eu-west-1a"), "eu-west-1");
        assert_eq!(zone_region("us-central1-c"), "us-central1");
        assert_eq!(zone_region("europe-west4-b"), "europe-west4");
    }
}
