//! `schemas/openapi.yaml` is the OpenAPI document the code generates
//! (`svc_api::openapi()`), committed. This test fails when the two differ;
//! `SVC_BLESS=1 cargo test -p svc-api --test openapi_generated` rewrites the file.

const SPEC_PATH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../schemas/openapi.yaml");
const HEADER: &str = "# Generated from the svc-api code by `SVC_BLESS=1 cargo test -p svc-api --test openapi_generated`;\n# do not edit by hand.\n";

/// The document as committed: the header, then YAML.
fn generated() -> String {
    let yaml = serde_yaml_ng::to_string(&svc_api::openapi()).expect("the document is YAML");
    format!("{HEADER}{yaml}")
}

#[test]
fn committed_document_is_the_generated_one() {
    let want = generated();
    if std::env::var_os("SVC_BLESS").is_some() {
        std::fs::write(SPEC_PATH, &want).unwrap_or_else(|e| panic!("cannot write {SPEC_PATH}: {e}"));
        return;
    }
    let have = std::fs::read_to_string(SPEC_PATH).unwrap_or_default();
    if have != want {
        let line = have
            .lines()
            .zip(want.lines())
            .position(|(a, b)| a != b)
            .map_or_else(|| have.lines().count().min(want.lines().count()) + 1, |i| i + 1);
        panic!(
            "{SPEC_PATH} is not the document the code generates (first difference at line {line}).\n\
             Regenerate it with:\n    SVC_BLESS=1 cargo test -p svc-api --test openapi_generated"
        );
    }
}
