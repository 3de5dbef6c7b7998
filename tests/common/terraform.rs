//! Terraform state written for resources a daemon scanned, holding what
//! Terraform records of them, and git repositories of Terraform code made
//! with the `git` CLI.

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

/// The AWS provider as a state names it.
pub const AWS_PROVIDER: &str = "provider[\"registry.terraform.io/hashicorp/aws\"]";

/// Graph types of the AWS resources Terraform declares, as svc maps them.
pub const AWS_MAPPED: &[&str] = &[
    "ec2:instance",
    "ec2:volume",
    "ec2:snapshot",
    "ec2:image",
    "ec2:eip",
    "ec2:nat-gateway",
    "ec2:vpc",
    "ec2:subnet",
    "ec2:security-group",
    "elb:load-balancer",
    "rds:db",
    "dynamodb:table",
    "lambda:function",
    "logs:log-group",
    "s3:bucket",
    "iam:role",
    "elasticache:cache",
    "eks:cluster",
    "eks:nodegroup",
    "route53:record",
];

/// `(Terraform attribute, node property)` of each AWS type, and the ARN's
/// resource word.
fn aws_type(tf: &str) -> (&'static [(&'static str, &'static str)], &'static str) {
    match tf {
        "aws_ebs_volume" => (
            &[
                ("size", "size_gib"),
                ("type", "volume_type"),
                ("iops", "iops"),
                ("encrypted", "encrypted"),
                ("availability_zone", "availability_zone"),
            ],
            "volume",
        ),
        "aws_instance" => (
            &[
                ("instance_type", "instance_type"),
                ("ami", "image_id"),
                ("availability_zone", "availability_zone"),
                ("private_ip", "private_ip"),
            ],
            "instance",
        ),
        "aws_eip" => (&[("domain", "domain"), ("public_ip", "public_ip")], "elastic-ip"),
        "aws_ebs_snapshot" => (
            &[
                ("volume_id", "source_volume_id"),
                ("volume_size", "size_gib"),
                ("encrypted", "encrypted"),
            ],
            "snapshot",
        ),
        "aws_ami" => (&[("name", "name"), ("architecture", "architecture")], "image"),
        "aws_vpc" => (&[("cidr_block", "cidr_block")], "vpc"),
        "aws_subnet" => (
            &[
                ("cidr_block", "cidr_block"),
                ("vpc_id", "vpc_id"),
                ("availability_zone", "availability_zone"),
            ],
            "subnet",
        ),
        "aws_security_group" => (&[("name", "group_name"), ("vpc_id", "vpc_id")], "security-group"),
        other => panic!("no attributes written for {other}"),
    }
}

fn text<'a>(n: &'a Value, k: &str) -> &'a str {
    n[k].as_str().unwrap_or_else(|| panic!("{k} in {n}"))
}

/// The attributes Terraform records of the EC2 node `n` (a node object of
/// the API) as `tf`, as of the scan that reported it.
pub fn attributes(tf: &str, n: &Value) -> Value {
    let (pairs, arn_word) = aws_type(tf);
    let id = text(n, "physical_id");
    let mut a = json!({
        "id": id,
        "arn": format!("arn:aws:ec2:{}:{}:{arn_word}/{id}", text(n, "region"), text(n, "account")),
        "tags": n["tags"],
        "tags_all": n["tags"],
    });
    for (attribute, property) in pairs {
        a[*attribute] = n["properties"][*property].clone();
    }
    if tf == "aws_eip" {
        a["allocation_id"] = json!(id);
    }
    a
}

/// A state file's bytes (format version 4).
pub fn state(serial: u64, resources: Value) -> Vec<u8> {
    serde_json::to_vec_pretty(&json!({
        "version": 4, "terraform_version": "1.9.5", "serial": serial,
        "lineage": "5a1d0c1e-7c1f-4d2a-9f3e-2f6a1b9c0d11", "outputs": {},
        "resources": resources, "check_results": null
    }))
    .expect("a state serializes")
}

/// Runs git in `dir` as `who` (name, email) at `date`, with no
/// configuration but the test's; its trimmed output.
pub fn git(dir: &Path, who: (&str, &str), date: &str, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "init.defaultBranch=main", "-c", "commit.gpgsign=false"])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .env("GIT_AUTHOR_NAME", who.0)
        .env("GIT_AUTHOR_EMAIL", who.1)
        .env("GIT_AUTHOR_DATE", date)
        .env("GIT_COMMITTER_NAME", who.0)
        .env("GIT_COMMITTER_EMAIL", who.1)
        .env("GIT_COMMITTER_DATE", date)
        .output()
        .unwrap_or_else(|e| panic!("run git ({e}): Debian's git package"));
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}
