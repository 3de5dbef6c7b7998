//! The manifests read from disk, from arbitrary text: a plugin's
//! `<binary>.yaml` (`svc_ingest::host::Manifest`) and a policy pack (its
//! `manifest.yaml` and rule files, `svc_ingest::packs::parse_pack`). The
//! input is cut at 0xFF bytes: the first piece is read as both manifests,
//! the others are the pack's rule files. Nothing panics; a plugin manifest
//! that parses writes YAML that parses to a manifest writing the same YAML;
//! a pack that is accepted has a valid name, a `v` version, and rules whose
//! ids are unique, free of '/', and whose conditions compile.

#![no_main]

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use libfuzzer_sys::fuzz_target;
use svc_engine::policy::compile::compile;
use svc_ingest::host::Manifest;
use svc_ingest::packs::parse_pack;

fuzz_target!(|data: &[u8]| {
    let mut pieces = data.split(|&b| b == 0xff);
    let Some(Ok(manifest)) = pieces.next().map(std::str::from_utf8) else {
        return;
    };

    if let Ok(m) = Manifest::from_yaml(manifest) {
        let once = m.to_yaml().expect("a parsed manifest writes");
        let again = Manifest::from_yaml(&once).unwrap_or_else(|e| panic!("{once:?} does not parse back: {e}"));
        let twice = again.to_yaml().expect("a parsed manifest writes");
        assert_eq!(once, twice);
    }

    let files: Vec<(PathBuf, String)> = pieces
        .take(4)
        .enumerate()
        .filter_map(|(k, text)| {
            Some((
                PathBuf::from(format!("/pack/rules-{k}.yaml")),
                std::str::from_utf8(text).ok()?.to_owned(),
            ))
        })
        .collect();
    let Ok(info) = parse_pack(Path::new("/pack"), manifest, &files) else {
        return;
    };
    let name = &info.pack.name;
    assert!(!name.is_empty() && name.len() <= 64, "{name:?}");
    assert!(info.pack.version.starts_with('v'));
    let mut ids = HashSet::new();
    for r in &info.pack.rules {
        assert!(!r.id.contains('/'), "{:?}", r.id);
        assert!(ids.insert(r.id.clone()), "{:?} twice", r.id);
        assert!(compile(&r.condition).is_ok(), "{:?} was accepted", r.condition);
    }
});
