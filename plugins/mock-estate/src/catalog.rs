//! Machine sizes, storage classes and list prices (USD a month, on-demand,
//! the providers' published rates rounded to the cent; 730 hours a month).

/// A machine size and its monthly price.
pub(crate) struct Machine {
    pub name: &'static str,
    pub vcpus: i64,
    pub mem_gib: f64,
    pub usd_mo: f64,
}

const fn m(name: &'static str, vcpus: i64, mem_gib: f64, usd_mo: f64) -> Machine {
    Machine {
        name,
        vcpus,
        mem_gib,
        usd_mo,
    }
}

/// A storage class priced by provisioned GiB.
pub(crate) struct Storage {
    pub name: &'static str,
    pub usd_gib_mo: f64,
}

const fn st(name: &'static str, usd_gib_mo: f64) -> Storage {
    Storage { name, usd_gib_mo }
}

/// A priced tier without a size (database classes, cache nodes).
pub(crate) struct Tier {
    pub name: &'static str,
    pub usd_mo: f64,
}

const fn t(name: &'static str, usd_mo: f64) -> Tier {
    Tier { name, usd_mo }
}

pub(crate) const EC2: &[Machine] = &[
    m("t3.small", 2, 2.0, 15.18),
    m("t3.medium", 2, 4.0, 30.37),
    m("t3.large", 2, 8.0, 60.74),
    m("m5.large", 2, 8.0, 70.08),
    m("m5.xlarge", 4, 16.0, 140.16),
    m("c5.xlarge", 4, 8.0, 124.10),
    m("r5.large", 2, 16.0, 91.98),
    m("m5.2xlarge", 8, 32.0, 280.32),
];

/// Kubernetes worker sizes on EC2.
pub(crate) const EKS_NODES: &[Machine] = &[
    m("m5.large", 2, 8.0, 70.08),
    m("m5.xlarge", 4, 16.0, 140.16),
    m("c5.2xlarge", 8, 16.0, 248.20),
    m("r5.xlarge", 4, 32.0, 183.96),
];

pub(crate) const GCE: &[Machine] = &[
    m("e2-small", 2, 2.0, 12.23),
    m("e2-medium", 2, 4.0, 24.46),
    m("e2-standard-4", 4, 16.0, 97.83),
    m("n2-standard-2", 2, 8.0, 70.90),
    m("n2-standard-4", 4, 16.0, 141.80),
    m("n2-highmem-2", 2, 16.0, 95.64),
];

pub(crate) const AZURE_VM: &[Machine] = &[
    m("Standard_B2s", 2, 4.0, 30.37),
    m("Standard_D2s_v3", 2, 8.0, 70.08),
    m("Standard_D4s_v3", 4, 16.0, 140.16),
    m("Standard_E2s_v3", 2, 16.0, 91.98),
    m("Standard_F4s_v2", 4, 8.0, 123.37),
];

/// EBS volume types; io1 also pays per provisioned IOPS.
pub(crate) const EBS: &[Storage] = &[
    st("gp2", 0.10),
    st("gp3", 0.08),
    st("gp3", 0.08),
    st("io1", 0.125),
    st("st1", 0.045),
];
pub(crate) const EBS_IOPS_USD_MO: f64 = 0.065;
pub(crate) const EBS_SNAPSHOT_GIB: f64 = 0.05;

pub(crate) const PD: &[Storage] = &[st("pd-standard", 0.04), st("pd-balanced", 0.10), st("pd-ssd", 0.17)];
pub(crate) const GCP_SNAPSHOT_GIB: f64 = 0.026;

pub(crate) const AZURE_DISK: &[Storage] = &[
    st("Premium_LRS", 0.154),
    st("StandardSSD_LRS", 0.075),
    st("Standard_LRS", 0.046),
];

pub(crate) const RDS: &[Tier] = &[
    t("db.t3.micro", 12.41),
    t("db.t3.medium", 49.64),
    t("db.m5.large", 124.10),
    t("db.r5.large", 175.20),
    t("db.r5.xlarge", 350.40),
];
pub(crate) const RDS_STORAGE_GIB: f64 = 0.115;
pub(crate) const RDS_ENGINES: &[(&str, &str)] = &[
    ("postgres", "15.5"),
    ("postgres", "16.1"),
    ("mysql", "8.0.35"),
    ("aurora-postgresql", "15.4"),
];

pub(crate) const CACHE: &[Tier] = &[
    t("cache.t3.micro", 12.41),
    t("cache.t3.medium", 49.64),
    t("cache.m5.large", 113.15),
    t("cache.r5.large", 157.68),
];

pub(crate) const CLOUD_SQL: &[Tier] = &[
    t("db-f1-micro", 7.67),
    t("db-g1-small", 25.55),
    t("db-custom-2-7680", 98.67),
    t("db-custom-4-15360", 197.35),
];

pub(crate) const AZURE_SQL: &[Tier] = &[
    t("Basic", 4.90),
    t("S0", 14.72),
    t("S2", 73.61),
    t("P1", 456.25),
    t("GP_Gen5_2", 370.42),
];

pub(crate) const EIP_USD_MO: f64 = 3.65;
pub(crate) const NAT_USD_MO: f64 = 32.85;
pub(crate) const NAT_USD_GB: f64 = 0.045;
pub(crate) const ALB_USD_MO: f64 = 16.43;
pub(crate) const S3_GIB: f64 = 0.023;
pub(crate) const LOGS_GIB: f64 = 0.03;
/// Provisioned concurrency, per GiB of memory and unit of concurrency.
pub(crate) const LAMBDA_PROVISIONED_GIB: f64 = 10.95;
pub(crate) const DYNAMO_RCU: f64 = 0.0949;
pub(crate) const DYNAMO_WCU: f64 = 0.4745;
pub(crate) const EKS_CLUSTER_USD_MO: f64 = 73.0;
pub(crate) const GKE_CLUSTER_USD_MO: f64 = 73.0;
pub(crate) const GCP_STATIC_IP_USD_MO: f64 = 7.30;
pub(crate) const GCS_GIB: f64 = 0.020;
pub(crate) const AZURE_PUBLIC_IP_USD_MO: f64 = 3.65;
pub(crate) const AZURE_LB_USD_MO: f64 = 18.25;
pub(crate) const AZURE_BLOB_GIB: f64 = 0.0184;
/// A Kubernetes `LoadBalancer` service provisions a cloud load balancer.
pub(crate) const K8S_LB_USD_MO: f64 = 18.25;
pub(crate) const K8S_PVC_GIB: f64 = 0.08;

#[cfg(test)]
mod tests {
    use super::*;
    use svc_engine::prices;

    fn near(a: f64, b: f64) -> bool {
        (a - b).abs() < 0.011
    }

    /// The engine's price table prices everything the mock estate sells,
    /// at the same list prices (its reference regions).
    #[test]
    fn the_engine_price_table_agrees_with_the_catalogue() {
        let machines = [
            ("aws", "us-east-1", EC2),
            ("aws", "us-east-1", EKS_NODES),
            ("gcp", "us-central1", GCE),
            ("azure", "eastus", AZURE_VM),
        ];
        for (provider, region, list) in machines {
            for m in list {
                let priced = prices::machine_monthly(provider, m.name, region).unwrap_or(-1.0);
                assert!(
                    near(priced, m.usd_mo),
                    "{provider} {}: {priced} vs {}",
                    m.name,
                    m.usd_mo
                );
                let spec = prices::machine(provider, m.name).expect("listed");
                assert_eq!(
                    (i64::from(spec.vcpus), spec.mem_gib),
                    (m.vcpus, m.mem_gib),
                    "{}",
                    m.name
                );
            }
        }
        let tiers = [
            ("aws", "us-east-1", RDS),
            ("aws", "us-east-1", CACHE),
            ("gcp", "us-central1", CLOUD_SQL),
            ("azure", "eastus", AZURE_SQL),
        ];
        for (provider, region, list) in tiers {
            for t in list {
                let priced = prices::machine_monthly(provider, t.name, region).unwrap_or(-1.0);
                assert!(
                    near(priced, t.usd_mo),
                    "{provider} {}: {priced} vs {}",
                    t.name,
                    t.usd_mo
                );
            }
        }
        for (provider, list) in [("aws", EBS), ("gcp", PD), ("azure", AZURE_DISK)] {
            for s in list {
                assert_eq!(
                    prices::rate(provider, s.name, "x"),
                    Some(s.usd_gib_mo),
                    "{provider} {}",
                    s.name
                );
            }
        }
        let items = [
            ("aws", "io1-iops", EBS_IOPS_USD_MO),
            ("aws", "ebs-snapshot", EBS_SNAPSHOT_GIB),
            ("aws", "rds-storage", RDS_STORAGE_GIB),
            ("aws", "eip", EIP_USD_MO),
            ("aws", "nat-gateway", NAT_USD_MO),
            ("aws", "nat-gateway-gb", NAT_USD_GB),
            ("aws", "alb", ALB_USD_MO),
            ("aws", "s3-standard", S3_GIB),
            ("aws", "logs-storage", LOGS_GIB),
            ("aws", "lambda-provisioned-gib", LAMBDA_PROVISIONED_GIB),
            ("aws", "dynamodb-rcu", DYNAMO_RCU),
            ("aws", "dynamodb-wcu", DYNAMO_WCU),
            ("aws", "eks-cluster", EKS_CLUSTER_USD_MO),
            ("gcp", "gke-cluster", GKE_CLUSTER_USD_MO),
            ("gcp", "disk-snapshot", GCP_SNAPSHOT_GIB),
            ("gcp", "static-ip", GCP_STATIC_IP_USD_MO),
            ("gcp", "gcs-standard", GCS_GIB),
            ("azure", "public-ip", AZURE_PUBLIC_IP_USD_MO),
            ("azure", "load-balancer", AZURE_LB_USD_MO),
            ("azure", "blob-hot", AZURE_BLOB_GIB),
            ("kubernetes", "load-balancer", K8S_LB_USD_MO),
            ("kubernetes", "pvc", K8S_PVC_GIB),
        ];
        for (provider, product, usd) in items {
            assert_eq!(prices::rate(provider, product, "x"), Some(usd), "{provider} {product}");
        }
    }
}
