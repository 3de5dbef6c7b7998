//! Workspaces of the terminal UI: the category of a resource, from its
//! provider and its `service:kind` type.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// What kind of resource a node is, as the terminal UI's workspaces group
/// them.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, ToSchema, PartialEq, Eq, Hash)]
#[serde(rename_all = "lowercase")]
pub enum Category {
    Compute,
    Storage,
    Network,
    Database,
    Serverless,
    Kubernetes,
    Other,
}

impl Category {
    /// Every category, in the order the workspaces are listed.
    pub const ALL: [Category; 7] = [
        Category::Compute,
        Category::Storage,
        Category::Network,
        Category::Database,
        Category::Serverless,
        Category::Kubernetes,
        Category::Other,
    ];

    /// The category of a resource of `provider` and `ty` (`service:kind`):
    /// Kubernetes by provider or service, then by service, then by kind.
    pub fn of(provider: &str, ty: &str) -> Category {
        let (service, kind) = ty.split_once(':').unwrap_or(("", ty));
        if provider.eq_ignore_ascii_case("kubernetes")
            || provider.eq_ignore_ascii_case("k8s")
            || matches!(
                service,
                "eks" | "gke" | "aks" | "container" | "core" | "apps" | "kubernetes"
            )
        {
            return Category::Kubernetes;
        }
        match service {
            "lambda" | "functions" | "cloudfunctions" | "run" | "web" | "logic" => return Category::Serverless,
            "rds" | "sql" | "dynamodb" | "elasticache" | "redshift" | "spanner" | "bigtable" | "cosmosdb"
            | "documentdb" | "firestore" | "memorystore" => return Category::Database,
            "s3" | "storage" | "efs" | "fsx" | "glacier" | "backup" | "filestore" => return Category::Storage,
            "elb" | "elbv2" | "network" | "route53" | "cloudfront" | "apigateway" | "dns" | "vpc" => {
                return Category::Network;
            }
            _ => {}
        }
        match kind {
            "volume" | "disk" | "snapshot" | "image" | "bucket" | "storage-account" | "pvc" => Category::Storage,
            "instance" | "vm" | "nodegroup" | "machine" | "autoscaling-group" => Category::Compute,
            "eip" | "nat-gateway" | "security-group" | "vpc" | "subnet" | "address" | "public-ip" | "load-balancer"
            | "record" | "firewall" => Category::Network,
            "db" | "table" | "cache" | "sql-instance" | "sql-database" | "cluster" => Category::Database,
            "function" => Category::Serverless,
            _ => Category::Other,
        }
    }

    /// Its place in [`Category::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }
}

#[cfg(test)]
mod tests {
    use super::Category::{self, *};

    #[test]
    fn categories_of_the_estates_types() {
        let cases = [
            ("aws", "ec2:instance", Compute),
            ("aws", "ec2:volume", Storage),
            ("aws", "ec2:security-group", Network),
            ("aws", "elb:load-balancer", Network),
            ("aws", "rds:db", Database),
            ("aws", "lambda:function", Serverless),
            ("aws", "s3:bucket", Storage),
            ("aws", "eks:nodegroup", Kubernetes),
            ("gcp", "container:cluster", Kubernetes),
            ("kubernetes", "core:pvc", Kubernetes),
            ("K8S", "x:y", Kubernetes),
            ("gcp", "sql:sql-instance", Database),
            ("azure", "network:public-ip", Network),
            ("azure", "compute:vm", Compute),
            ("aws", "iam:role", Other),
            ("aws", "odd", Other),
        ];
        for (provider, ty, want) in cases {
            assert_eq!(Category::of(provider, ty), want, "{provider} {ty}");
        }
        for (i, c) in Category::ALL.iter().enumerate() {
            assert_eq!(c.index(), i);
        }
    }
}
