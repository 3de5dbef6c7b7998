//! The web dashboard's sources against what is committed and embedded:
//! the API types generated from `schemas/openapi.yaml` are current, the
//! TypeScript type-checks against them (so an API change that breaks the
//! dashboard fails here), the UI's unit tests pass, and a fresh build of
//! `web/` gives exactly the committed `web/dist` that the daemon embeds.
//!
//! Needs Node.js and `web/node_modules` (`npm ci` in `web/`; `scripts/test`
//! does both).

#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

fn web() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("web")
}

/// Runs a tool from `web/node_modules/.bin` in `web/`, failing the test
/// with its output when it fails.
fn npx(tool: &str, args: &[&str]) -> String {
    let bin = web().join("node_modules/.bin").join(tool);
    assert!(
        bin.exists(),
        "{} is missing: run `npm ci` in web/ (scripts/test does)",
        bin.display()
    );
    let out = Command::new(&bin)
        .args(args)
        .current_dir(web())
        .env("NO_COLOR", "1")
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e} (is Node.js installed?)", bin.display()));
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{tool} {args:?} failed:\n{text}");
    text
}

/// Every file under `dir`, by its path relative to `dir`.
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for e in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display())) {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                let rel = p.strip_prefix(root).unwrap().to_string_lossy().replace('\\', "/");
                out.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

#[test]
fn the_api_types_are_generated_from_the_committed_openapi_document() {
    let tmp = tempfile::tempdir().unwrap();
    let fresh = tmp.path().join("schema.d.ts");
    npx(
        "openapi-typescript",
        &["../schemas/openapi.yaml", "-o", fresh.to_str().unwrap()],
    );
    let committed = std::fs::read_to_string(web().join("src/api/schema.d.ts")).unwrap();
    assert!(
        std::fs::read_to_string(&fresh).unwrap() == committed,
        "web/src/api/schema.d.ts is stale: run `npm run gen:types` in web/ and commit it"
    );
}

#[test]
fn the_dashboard_type_checks_and_its_unit_tests_pass() {
    npx("tsc", &["--noEmit"]);
    let out = npx("vitest", &["run"]);
    assert!(out.contains("passed"), "vitest ran no test:\n{out}");
}

#[test]
fn the_committed_bundle_is_what_the_sources_build() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("dist");
    npx(
        "vite",
        &[
            "build",
            "--outDir",
            out.to_str().unwrap(),
            "--emptyOutDir",
            "--logLevel",
            "warn",
        ],
    );
    let fresh = files(&out);
    let committed = files(&web().join("dist"));
    let names = |m: &BTreeMap<String, Vec<u8>>| m.keys().cloned().collect::<Vec<_>>();
    assert_eq!(
        names(&committed),
        names(&fresh),
        "web/dist is stale: run `npm run build` in web/ and commit web/dist"
    );
    for (name, bytes) in &fresh {
        assert!(
            committed[name] == *bytes,
            "web/dist/{name} is stale: run `npm run build` in web/ and commit web/dist"
        );
    }
}
