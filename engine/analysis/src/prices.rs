//! The embedded price table: on-demand list prices in USD, as the providers
//! publish them for their reference region, with a factor per region where
//! prices differ. Hourly prices become monthly ones at 730 hours a month.
//!
//! A cost a provider reports for a resource always wins; the table prices
//! what a provider did not (see [`estimate`]) and prices what a change would
//! save (gp2 to gp3, fewer cache nodes).

/// The table's version: the date its prices were taken.
pub const VERSION: &str = "2026-11-01";
/// Hours in a billing month.
pub const HOURS_PER_MONTH: f64 = 730.0;

/// A machine size: provider, name, vCPUs, memory and hourly price.
pub struct Machine {
    pub provider: &'static str,
    pub name: &'static str,
    pub vcpus: u32,
    pub mem_gib: f64,
    pub usd_hour: f64,
}

const fn m(provider: &'static str, name: &'static str, vcpus: u32, mem_gib: f64, usd_hour: f64) -> Machine {
    Machine {
        provider,
        name,
        vcpus,
        mem_gib,
        usd_hour,
    }
}

/// Machines, database classes and cache nodes, priced by the hour.
pub const MACHINES: &[Machine] = &[
    m("aws", "t3.small", 2, 2.0, 0.0208),
    m("aws", "t3.medium", 2, 4.0, 0.0416),
    m("aws", "t3.large", 2, 8.0, 0.0832),
    m("aws", "m5.large", 2, 8.0, 0.096),
    m("aws", "m5.xlarge", 4, 16.0, 0.192),
    m("aws", "m5.2xlarge", 8, 32.0, 0.384),
    m("aws", "c5.xlarge", 4, 8.0, 0.17),
    m("aws", "c5.2xlarge", 8, 16.0, 0.34),
    m("aws", "r5.large", 2, 16.0, 0.126),
    m("aws", "r5.xlarge", 4, 32.0, 0.252),
    m("aws", "db.t3.micro", 2, 1.0, 0.017),
    m("aws", "db.t3.medium", 2, 4.0, 0.068),
    m("aws", "db.m5.large", 2, 8.0, 0.17),
    m("aws", "db.r5.large", 2, 16.0, 0.24),
    m("aws", "db.r5.xlarge", 4, 32.0, 0.48),
    m("aws", "cache.t3.micro", 2, 0.5, 0.017),
    m("aws", "cache.t3.medium", 2, 3.09, 0.068),
    m("aws", "cache.m5.large", 2, 6.38, 0.155),
    m("aws", "cache.r5.large", 2, 13.07, 0.216),
    m("gcp", "e2-small", 2, 2.0, 0.016_75),
    m("gcp", "e2-medium", 2, 4.0, 0.033_51),
    m("gcp", "e2-standard-4", 4, 16.0, 0.134_01),
    m("gcp", "n2-standard-2", 2, 8.0, 0.097_12),
    m("gcp", "n2-standard-4", 4, 16.0, 0.194_24),
    m("gcp", "n2-highmem-2", 2, 16.0, 0.131_01),
    m("gcp", "db-f1-micro", 1, 0.6, 0.010_5),
    m("gcp", "db-g1-small", 1, 1.7, 0.035),
    m("gcp", "db-custom-2-7680", 2, 7.5, 0.135_16),
    m("gcp", "db-custom-4-15360", 4, 15.0, 0.270_34),
    m("azure", "Standard_B2s", 2, 4.0, 0.0416),
    m("azure", "Standard_D2s_v3", 2, 8.0, 0.096),
    m("azure", "Standard_D4s_v3", 4, 16.0, 0.192),
    m("azure", "Standard_E2s_v3", 2, 16.0, 0.126),
    m("azure", "Standard_F4s_v2", 4, 8.0, 0.169),
    m("azure", "Basic", 0, 0.0, 0.006_71),
    m("azure", "S0", 0, 0.0, 0.020_16),
    m("azure", "S2", 0, 0.0, 0.100_84),
    m("azure", "P1", 0, 0.0, 0.625),
    m("azure", "GP_Gen5_2", 2, 10.2, 0.507_42),
];

/// A product priced per unit a month: storage per GiB, capacity units,
/// or one fixed monthly amount (unit 1).
pub struct Rate {
    pub provider: &'static str,
    pub product: &'static str,
    pub usd_mo: f64,
}

const fn r(provider: &'static str, product: &'static str, usd_mo: f64) -> Rate {
    Rate {
        provider,
        product,
        usd_mo,
    }
}

/// Monthly rates. Storage classes are per GiB; `*-iops` per provisioned
/// IOPS; `*-rcu`/`*-wcu` per provisioned capacity unit; the rest per resource.
pub const RATES: &[Rate] = &[
    r("aws", "gp2", 0.10),
    r("aws", "gp3", 0.08),
    r("aws", "io1", 0.125),
    r("aws", "io2", 0.125),
    r("aws", "st1", 0.045),
    r("aws", "sc1", 0.015),
    r("aws", "standard", 0.05),
    r("aws", "io1-iops", 0.065),
    r("aws", "ebs-snapshot", 0.05),
    r("aws", "rds-storage", 0.115),
    r("aws", "s3-standard", 0.023),
    r("aws", "s3-standard-ia", 0.0125),
    r("aws", "logs-storage", 0.03),
    r("aws", "eip", 3.65),
    r("aws", "nat-gateway", 32.85),
    r("aws", "nat-gateway-gb", 0.045),
    r("aws", "alb", 16.43),
    r("aws", "vpc-endpoint", 7.30),
    r("aws", "eks-cluster", 73.0),
    r("aws", "dynamodb-rcu", 0.0949),
    r("aws", "dynamodb-wcu", 0.4745),
    r("aws", "dynamodb-storage", 0.25),
    r("aws", "lambda-provisioned-gib", 10.95),
    r("gcp", "pd-standard", 0.04),
    r("gcp", "pd-balanced", 0.10),
    r("gcp", "pd-ssd", 0.17),
    r("gcp", "disk-snapshot", 0.026),
    r("gcp", "static-ip", 7.30),
    r("gcp", "gke-cluster", 73.0),
    r("gcp", "gcs-standard", 0.020),
    r("gcp", "sql-storage", 0.17),
    r("azure", "Premium_LRS", 0.154),
    r("azure", "StandardSSD_LRS", 0.075),
    r("azure", "Standard_LRS", 0.046),
    r("azure", "public-ip", 3.65),
    r("azure", "load-balancer", 18.25),
    r("azure", "blob-hot", 0.0184),
    r("kubernetes", "load-balancer", 18.25),
    r("kubernetes", "pvc", 0.08),
];

/// How much dearer a region is than the provider's reference region.
const REGIONS: &[(&str, &str, f64)] = &[
    ("aws", "us-east-1", 1.0),
    ("aws", "us-east-2", 1.0),
    ("aws", "us-west-2", 1.0),
    ("aws", "eu-west-1", 1.115),
    ("aws", "eu-central-1", 1.2),
    ("aws", "ap-southeast-2", 1.25),
    ("gcp", "us-central1", 1.0),
    ("gcp", "europe-west1", 1.1),
    ("gcp", "asia-northeast1", 1.28),
    ("azure", "eastus", 1.0),
    ("azure", "westeurope", 1.12),
    ("azure", "southeastasia", 1.2),
];

/// The price factor of `region` (1.0 where the table has none, and for
/// `global` resources).
pub fn region_factor(provider: &str, region: &str) -> f64 {
    REGIONS
        .iter()
        .find(|(p, r, _)| *p == provider && *r == region)
        .map_or(1.0, |(_, _, f)| *f)
}

/// A machine size by provider and name.
pub fn machine(provider: &str, name: &str) -> Option<&'static Machine> {
    MACHINES.iter().find(|m| m.provider == provider && m.name == name)
}

/// Monthly on-demand price of a machine size in a region.
pub fn machine_monthly(provider: &str, name: &str, region: &str) -> Option<f64> {
    machine(provider, name).map(|m| m.usd_hour * HOURS_PER_MONTH * region_factor(provider, region))
}

/// Monthly rate of a product in a region.
pub fn rate(provider: &str, product: &str, region: &str) -> Option<f64> {
    RATES
        .iter()
        .find(|r| r.provider == provider && r.product == product)
        .map(|r| r.usd_mo * region_factor(provider, region))
}

/// What the table knows about a resource, for [`estimate`].
pub struct Item<'a> {
    pub provider: &'a str,
    pub region: &'a str,
    /// `<service>:<kind>`.
    pub ty: &'a str,
    pub state: &'a str,
    /// A property as text, or its number.
    pub text: &'a dyn Fn(&str) -> Option<&'a str>,
    pub number: &'a dyn Fn(&str) -> Option<f64>,
}

/// The monthly cost of a resource that reported none, from its type and
/// properties; `None` where the table cannot price it (or it is free).
/// Stopped machines bill no compute.
pub fn estimate(item: &Item<'_>) -> Option<f64> {
    let (p, region) = (item.provider, item.region);
    let text = item.text;
    let num = item.number;
    let size = || num("size_gib");
    let running = !matches!(
        item.state,
        "stopped" | "TERMINATED" | "terminated" | "deallocated" | "stopping"
    );
    let usd = match item.ty {
        "ec2:instance" if running => machine_monthly(p, text("instance_type")?, region)?,
        "compute:instance" if running => machine_monthly(p, text("machine_type")?, region)?,
        "compute:vm" if running => machine_monthly(p, text("vm_size")?, region)?,
        "ec2:volume" => {
            let class = text("volume_type").unwrap_or("gp2");
            let iops = if class == "io1" || class == "io2" {
                num("iops").unwrap_or(0.0) * rate(p, "io1-iops", region)?
            } else {
                0.0
            };
            size()? * rate(p, class, region)? + iops
        }
        "compute:disk" => size()? * rate(p, text("disk_type").or_else(|| text("sku"))?, region)?,
        "ec2:snapshot" => size()? * rate(p, "ebs-snapshot", region)?,
        "compute:snapshot" => size()? * rate(p, "disk-snapshot", region)?,
        "ec2:image" => size()? * rate(p, "ebs-snapshot", region)?,
        "ec2:eip" => rate(p, "eip", region)?,
        "ec2:nat-gateway" => {
            let gb_mo = num("bytes_processed_7d").unwrap_or(0.0) / 1_073_741_824.0 * 30.0 / 7.0;
            rate(p, "nat-gateway", region)? + gb_mo * rate(p, "nat-gateway-gb", region)?
        }
        "elb:load-balancer" => rate(p, "alb", region)?,
        "ec2:vpc-endpoint" => rate(p, "vpc-endpoint", region)?,
        "eks:cluster" => rate(p, "eks-cluster", region)?,
        "container:cluster" => rate(p, "gke-cluster", region)?,
        "rds:db" => {
            let copies = if text("multi_az") == Some("true") { 2.0 } else { 1.0 };
            let storage = num("allocated_gib").unwrap_or(0.0) * rate(p, "rds-storage", region)?;
            let compute = if running {
                machine_monthly(p, text("db_class")?, region)?
            } else {
                0.0
            };
            copies * (compute + storage)
        }
        "elasticache:cache" => {
            machine_monthly(p, text("node_type")?, region)? * num("cache_nodes").unwrap_or(1.0).max(1.0)
        }
        "sql:sql-instance" => {
            machine_monthly(p, text("tier")?, region)?
                + num("allocated_gib").unwrap_or(0.0) * rate(p, "sql-storage", region)?
        }
        "sql:sql-database" => machine_monthly(p, text("tier")?, region)?,
        "dynamodb:table" => {
            num("read_capacity").unwrap_or(0.0) * rate(p, "dynamodb-rcu", region)?
                + num("write_capacity").unwrap_or(0.0) * rate(p, "dynamodb-wcu", region)?
                + size().unwrap_or(0.0) * rate(p, "dynamodb-storage", region)?
        }
        "s3:bucket" => {
            let class = if text("storage_class") == Some("STANDARD_IA") {
                "s3-standard-ia"
            } else {
                "s3-standard"
            };
            size()? * rate(p, class, region)?
        }
        "storage:bucket" => size()? * rate(p, "gcs-standard", region)?,
        "storage:storage-account" => size()? * rate(p, "blob-hot", region)?,
        "logs:log-group" => num("stored_gib")? * rate(p, "logs-storage", region)?,
        "lambda:function" => {
            num("provisioned_concurrency")? * num("memory_mb")? / 1024.0 * rate(p, "lambda-provisioned-gib", region)?
        }
        "compute:address" => rate(p, "static-ip", region)?,
        "network:public-ip" => rate(p, "public-ip", region)?,
        "network:load-balancer" => rate(p, "load-balancer", region)?,
        "core:service" if text("service_type") == Some("LoadBalancer") => rate(p, "load-balancer", region)?,
        "core:pvc" => size()? * rate(p, "pvc", region)?,
        _ => return None,
    };
    (usd.is_finite() && usd > 0.0).then_some((usd * 100.0).round() / 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item<'a>(
        ty: &'a str,
        region: &'a str,
        state: &'a str,
        text: &'a dyn Fn(&str) -> Option<&'a str>,
        number: &'a dyn Fn(&str) -> Option<f64>,
    ) -> Item<'a> {
        let provider = match ty {
            "core:pvc" | "core:service" => "kubernetes",
            "compute:vm" => "azure",
            _ => "aws",
        };
        Item {
            provider,
            region,
            ty,
            state,
            text,
            number,
        }
    }

    #[test]
    fn machines_are_hourly_times_730_with_the_region_factor() {
        assert_eq!(machine_monthly("aws", "m5.large", "us-east-1"), Some(0.096 * 730.0));
        let eu = machine_monthly("aws", "m5.large", "eu-central-1").expect("priced");
        assert!((eu - 0.096 * 730.0 * 1.2).abs() < 1e-9);
        assert_eq!(machine_monthly("aws", "m5.large", "nowhere-1"), Some(0.096 * 730.0));
        assert_eq!(machine_monthly("aws", "x9.huge", "us-east-1"), None);
    }

    #[test]
    fn estimates_from_type_and_properties() {
        let text = |k: &str| match k {
            "volume_type" => Some("gp2"),
            "instance_type" => Some("t3.small"),
            "vm_size" => Some("Standard_B2s"),
            _ => None,
        };
        let num = |k: &str| (k == "size_gib").then_some(500.0);
        assert_eq!(
            estimate(&item("ec2:volume", "us-east-1", "available", &text, &num)),
            Some(50.0)
        );
        assert_eq!(
            estimate(&item("ec2:instance", "us-east-1", "running", &text, &num)),
            Some(15.18)
        );
        assert_eq!(
            estimate(&item("ec2:instance", "us-east-1", "stopped", &text, &num)),
            None
        );
        assert_eq!(
            estimate(&item("compute:vm", "eastus", "running", &text, &num)),
            Some(30.37)
        );
        assert_eq!(
            estimate(&item("core:pvc", "eu-west-1", "Bound", &text, &num)),
            Some(40.0)
        );
        assert_eq!(estimate(&item("ec2:vpc", "us-east-1", "available", &text, &num)), None);
    }
}
