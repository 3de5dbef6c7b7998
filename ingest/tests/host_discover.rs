//! Plugin discovery, manifests and the launch integrity check.

#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use svc_ingest::host::{Category, HostError, Manifest, Role, discover, verify, write_manifest_for};

fn write_file(path: &Path, text: &str, mode: u32) {
    std::fs::write(path, text).expect("write");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

fn plugin(dir: &Path, name: &str, mode: u32) -> PathBuf {
    let path = dir.join(format!("svc-plugin-{name}"));
    write_file(&path, "#!/bin/sh\necho hello\n", mode);
    path
}

#[test]
fn host_discovery_finds_plugins_and_skips_manifests_and_other_files() {
    let dir = tempfile::tempdir().expect("tempdir");
    let aws = plugin(dir.path(), "aws", 0o755);
    write_manifest_for(&aws, "svc-plugin-aws", Role::Provider, Category::Cloud).expect("manifest");
    plugin(dir.path(), "gcp", 0o755);
    write_file(&dir.path().join("README"), "x", 0o644);
    write_file(&dir.path().join("svc-plugin-"), "x", 0o755);
    std::fs::create_dir(dir.path().join("svc-plugin-dir")).expect("mkdir");

    let found = discover(dir.path());
    let names: Vec<&str> = found.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(names, ["aws", "gcp"]);
    assert_eq!(found[0].path, aws);
    let manifest = found[0].manifest.as_ref().expect("aws manifest");
    assert_eq!(manifest.role, Role::Provider);
    assert_eq!(manifest.category, Category::Cloud);
    let missing = found[1].manifest.as_ref().expect_err("gcp has no manifest");
    assert!(missing.contains("svc-plugin-gcp.yaml"), "{missing}");
    verify(&found[0].path, &found[0].manifest).expect("aws verifies");
    let e = verify(&found[1].path, &found[1].manifest).expect_err("no manifest");
    assert!(e.to_string().contains("has no usable manifest"), "{e}");

    assert!(discover(&dir.path().join("absent")).is_empty());
}

#[test]
fn host_verify_refuses_a_binary_without_execute_permission() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = plugin(dir.path(), "aws", 0o644);
    write_manifest_for(&path, "svc-plugin-aws", Role::Provider, Category::Cloud).expect("manifest");
    let found = discover(dir.path());
    let e = verify(&found[0].path, &found[0].manifest).expect_err("not executable");
    assert!(matches!(e, HostError::NotExecutable { .. }), "{e:?}");
    assert_eq!(
        e.to_string(),
        format!("plugin {} is not executable (permission denied)", path.display())
    );
}

#[test]
fn host_verify_refuses_a_binary_whose_hash_differs_from_its_manifest() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = plugin(dir.path(), "aws", 0o755);
    let manifest = write_manifest_for(&path, "svc-plugin-aws", Role::Provider, Category::Cloud).expect("manifest");
    write_file(&path, "#!/bin/sh\necho tampered\n", 0o755);
    let found = discover(dir.path());
    let e = verify(&found[0].path, &found[0].manifest).expect_err("hash mismatch");
    let HostError::Verification { actual, expected, .. } = &e else {
        panic!("expected a verification error, got {e:?}");
    };
    assert_eq!(expected, &manifest.sha256);
    assert_ne!(actual, expected);
    assert_eq!(
        e.to_string(),
        format!(
            "plugin {} failed verification: sha256 {actual} does not match manifest {expected}",
            path.display()
        )
    );
}

#[test]
fn host_manifest_reads_registry_fields_with_defaults() {
    let text = r##"
name: svc-plugin-aws
type: plugin
version: v1.2.0
description: AWS provider
author: svc
category: cloud
pricing:
  model: paid
  price_usd: 9.5
binaries:
  - os: linux
    arch: x86_64
    url: https://example.invalid/svc-plugin-aws
    sha256: abc
sha256: abc
display_name: AWS
color: "#ff9900"
"##;
    let m = Manifest::from_yaml(text).expect("parses");
    assert_eq!(m.role, Role::Provider);
    assert_eq!(m.pricing.price_usd, 9.5);
    assert_eq!(m.binaries.len(), 1);
    assert_eq!(m.display_name.as_deref(), Some("AWS"));
    let again = Manifest::from_yaml(&m.to_yaml().expect("writes")).expect("round trip");
    assert_eq!(again, m);

    let m = Manifest::from_yaml("name: h\ncategory: security\nsha256: abc\nrole: heuristic\n").expect("minimal");
    assert_eq!(m.role, Role::Heuristic);
    let e = Manifest::from_yaml("name: h\ncategory: weather\nsha256: abc\n").expect_err("bad category");
    assert!(e.contains("weather"), "{e}");
}
