//! CEL conformance through the daemon: every cel-spec case that needs no
//! bindings (`tests/fixtures/cel-spec/*.textproto`) is sent to `POST
//! /api/v1/policies/dry-run`, and its `value` (or `value_error`, or a 422
//! when the error is found as the condition is compiled) compared with the
//! expected result. At least 97% must pass, and the cases that fail must
//! be exactly those of `known-failures.txt`, so a new failure and a new
//! pass both show. `SVC_BLESS=1` rewrites that list (keeping the reasons
//! written for cases still failing).

#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

mod cel_spec;
mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use cel_spec::{Case, Expected};
use common::Daemon;
use serde_json::json;

const FIXTURES: &str = "tests/fixtures/cel-spec";
const KNOWN_FAILURES: &str = "tests/fixtures/cel-spec/known-failures.txt";
const REQUIRED_PASS_RATE: f64 = 0.97;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn load_cases() -> Vec<Case> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(root().join(FIXTURES))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "textproto"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no cel-spec files under {FIXTURES}");
    let mut cases = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        let doc = cel_spec::parse(&text).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        let stem = f.file_stem().unwrap().to_string_lossy().into_owned();
        cases.extend(cel_spec::cases(&stem, &doc));
    }
    cases
}

/// `id<TAB>reason` lines; `#` comments and blank lines skipped.
fn read_known(path: &Path) -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| match l.split_once('\t') {
            Some((id, reason)) => (id.to_owned(), reason.to_owned()),
            None => (l.to_owned(), String::new()),
        })
        .collect()
}

#[test]
fn the_textproto_reader_reads_what_the_cases_use() {
    let doc = cel_spec::parse(
        r#"# comment
        name: "f"
        section {
          name: "s"
          test { name: "a" expr: "1u" value: { uint64_value: 1 } }
          test { name: "b" expr: 'b"\303\277"' value: { bytes_value: "\303\277" } }
          test { name: "c" expr: "{2: 'x', 1: 'y'}" value: { map_value { entries { key: { int64_value: 2 } value: { string_value: "x" } } entries { key { int64_value: 1 } value { string_value: "y" } } } } }
          test { name: "d" expr: "1/0" eval_error: { errors: { message: "divide by zero" } } }
          test { name: "e" expr: "x" bindings { key: "x" value { value { int64_value: 1 } } } }
          test { name: "f" expr: "true" }
          test { name: "g" expr: "duration('1.5s')" value: { object_value { [type.googleapis.com/google.protobuf.Duration] { seconds: 1 nanos: 500000000 } } } }
          test { name: "h" expr: "[1.0, -0.5]" value: { list_value { values { double_value: 1 } values: { double_value: -0.5 } } } }
        }"#,
    )
    .unwrap();
    let cases = cel_spec::cases("f", &doc);
    let got: Vec<(String, String)> = cases
        .iter()
        .map(|c| {
            let e = match &c.expected {
                Expected::Value(v) => v.clone().unwrap_or_else(|e| e),
                Expected::Error => "error".to_owned(),
            };
            (c.id.clone(), e)
        })
        .collect();
    let want = [
        ("f/s/a", "1u"),
        ("f/s/b", "b\"\\xc3\\xbf\""),
        ("f/s/c", "{1: \"y\", 2: \"x\"}"),
        ("f/s/d", "error"),
        ("f/s/f", "true"),
        ("f/s/g", "duration(\"1.5s\")"),
        ("f/s/h", "[1.0, -0.5]"),
    ];
    let want: Vec<(String, String)> = want.iter().map(|(a, b)| ((*a).to_owned(), (*b).to_owned())).collect();
    assert_eq!(got, want, "the case with bindings is left out");
}

#[tokio::test]
async fn cel_spec_cases_without_bindings_pass_through_dry_run() {
    let cases = load_cases();
    assert!(cases.len() > 500, "only {} cases selected", cases.len());
    let dir = common::data_dir();
    let d = Daemon::start(dir.path(), 20).await;
    let api = d.api();

    let mut failures: BTreeMap<String, String> = BTreeMap::new();
    let mut refused_at_compile = 0usize;
    for c in &cases {
        let r = api
            .post_json("/api/v1/policies/dry-run", &json!({"condition": c.expr, "limit": 1}))
            .await;
        let status = r.status.as_u16();
        let got = match status {
            200 => match (r.json["value"].as_str(), r.json["value_error"].as_str()) {
                (Some(v), _) => Ok(v.to_owned()),
                (None, Some(e)) => Err(format!("evaluation error: {e}")),
                (None, None) => Err(format!("no value: {}", r.text)),
            },
            422 => Err(format!(
                "refused when compiled: {}",
                r.json["error"]["message"].as_str().unwrap_or_default()
            )),
            s => panic!("{}: status {s}: {}", c.id, r.text),
        };
        let pass = match (&c.expected, &got) {
            (Expected::Value(Ok(want)), Ok(v)) => want == v,
            (Expected::Error, Err(_)) => {
                if status == 422 {
                    refused_at_compile += 1;
                }
                true
            }
            _ => false,
        };
        if !pass {
            let want = match &c.expected {
                Expected::Value(Ok(v)) => v.clone(),
                Expected::Value(Err(e)) => format!("({e})"),
                Expected::Error => "an error".to_owned(),
            };
            let got = got.unwrap_or_else(|e| e);
            let got: String = got.chars().take(160).collect();
            failures.insert(c.id.clone(), format!("expected {want}, got {got}"));
        }
    }

    let total = cases.len();
    let passed = total - failures.len();
    let rate = passed as f64 / total as f64;
    println!(
        "cel-spec conformance: {passed}/{total} passed ({:.2}%), {refused_at_compile} expected errors found when compiling",
        rate * 100.0
    );

    let known_path = root().join(KNOWN_FAILURES);
    let known = read_known(&known_path);
    if std::env::var_os("SVC_BLESS").is_some() {
        let mut out = String::from(
            "# cel-spec cases (file/section/test) that fail through dry-run, and why.\n\
             # Checked by tests/e2e_cel_conformance.rs; SVC_BLESS=1 rewrites the list,\n\
             # keeping the reason written for a case that still fails.\n",
        );
        for (id, observed) in &failures {
            let reason = known.get(id).filter(|r| !r.is_empty()).unwrap_or(observed);
            out.push_str(&format!("{id}\t{reason}\n"));
        }
        std::fs::write(&known_path, out).unwrap();
    }
    let known = read_known(&known_path);
    let new_failures: Vec<String> = failures
        .iter()
        .filter(|(id, _)| !known.contains_key(*id))
        .map(|(id, why)| format!("{id}: {why}"))
        .collect();
    let new_passes: Vec<&String> = known.keys().filter(|id| !failures.contains_key(*id)).collect();
    assert!(
        new_failures.is_empty() && new_passes.is_empty(),
        "failures differ from {KNOWN_FAILURES}:\nnew failures:\n{}\nnow passing:\n{}",
        new_failures.join("\n"),
        new_passes.iter().map(|s| s.as_str()).collect::<Vec<_>>().join("\n")
    );
    assert!(
        rate >= REQUIRED_PASS_RATE,
        "{passed}/{total} passed ({:.2}%), below {:.0}%",
        rate * 100.0,
        REQUIRED_PASS_RATE * 100.0
    );
}
