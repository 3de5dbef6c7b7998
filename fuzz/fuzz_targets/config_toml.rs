//! The daemon's configuration, from arbitrary text: `config.toml` as read
//! at start (`Config::validate_text`, `src/config.rs`), and the merge of a
//! `PUT /api/v1/config` patch into it (`settings::patched`,
//! `src/settings.rs`), both compiled here from the daemon's own sources.
//! The input is the file's text, then optionally a 0xFF byte and the
//! patch as JSON. Nothing panics; a merge that is accepted writes text that
//! validates, holds the table it returns, and holds what a plain deep merge
//! of the patch into the file's values gives (dotted keys as nested ones,
//! `null` removing a key); the same patch applied again changes nothing.

#![no_main]

#[allow(dead_code)]
#[path = "../../src/config.rs"]
mod config;
#[allow(dead_code)]
#[path = "../../src/paths.rs"]
mod paths;
#[allow(dead_code)]
#[path = "../../src/settings.rs"]
mod settings;

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Number, Value};

use config::Config;

/// A JSON value as the merge stores it: integers that fit `i64` as
/// integers, other numbers as floats; `None` where it refuses the value.
fn stored(v: &Value) -> Option<Value> {
    Some(match v {
        Value::Null => return None,
        Value::Number(n) => match n.as_i64() {
            Some(i) => Value::from(i),
            None => Value::Number(Number::from_f64(n.as_f64()?)?),
        },
        Value::Array(items) => Value::Array(items.iter().map(stored).collect::<Option<_>>()?),
        Value::Object(o) => {
            let mut fresh = Map::new();
            model(&mut fresh, o)?;
            Value::Object(fresh)
        }
        other => other.clone(),
    })
}

/// The deep merge of `patch` into `into`, on plain values; `None` where the
/// merge refuses the patch.
fn model(into: &mut Map<String, Value>, patch: &Map<String, Value>) -> Option<()> {
    for (key, value) in patch {
        let parts: Vec<&str> = key.split('.').collect();
        if parts.iter().any(|p| p.is_empty()) {
            return None;
        }
        let (last, parents) = parts.split_last()?;
        let mut at = &mut *into;
        for p in parents {
            at = match at.entry(*p).or_insert_with(|| Value::Object(Map::new())) {
                Value::Object(o) => o,
                _ => return None,
            };
        }
        match value {
            Value::Null => {
                at.remove(*last);
            }
            Value::Object(sub) => match at.entry(*last).or_insert_with(|| Value::Object(Map::new())) {
                Value::Object(o) => model(o, sub)?,
                _ => return None,
            },
            other => {
                at.insert((*last).to_owned(), stored(other)?);
            }
        }
    }
    Some(())
}

/// `v` without its empty tables, at any depth outside arrays: a section
/// the merge creates and leaves empty is not written (TOML has no empty
/// implicit table), which says as much as an empty one.
fn pruned(v: Value) -> Value {
    match v {
        Value::Object(o) => Value::Object(
            o.into_iter()
                .map(|(k, v)| (k, pruned(v)))
                .filter(|(_, v)| v.as_object().is_none_or(|o| !o.is_empty()))
                .collect(),
        ),
        other => other,
    }
}

fuzz_target!(|data: &[u8]| {
    let mut pieces = data.splitn(2, |&b| b == 0xff);
    let Some(Ok(text)) = pieces.next().map(std::str::from_utf8) else {
        return;
    };
    let _ = Config::validate_text(text);
    let Some(Ok(Value::Object(patch))) = pieces.next().map(serde_json::from_slice::<Value>) else {
        return;
    };
    let path = Path::new("/fuzz/config.toml");
    let Ok((merged, _, table)) = settings::patched(path, text, &patch) else {
        return;
    };
    Config::validate_text(&merged).unwrap_or_else(|e| panic!("the merged text does not validate: {e:#}\n{merged}"));
    let reread: toml::Table = toml::from_str(&merged).expect("merged text is TOML");
    assert_eq!(reread, table);

    let before: toml::Table = toml::from_str(text).expect("a file the merge read is TOML");
    let Value::Object(mut want) = serde_json::to_value(&before).expect("a table is JSON") else {
        unreachable!("a table is an object");
    };
    model(&mut want, &patch).unwrap_or_else(|| panic!("the merge took a patch a deep merge refuses: {patch:?}"));
    let got = serde_json::to_value(&table).expect("a table is JSON");
    assert_eq!(
        pruned(got),
        pruned(Value::Object(want)),
        "{text:?} merged with {patch:?}:\n{merged}"
    );

    let (again, _, again_table) =
        settings::patched(path, &merged, &patch).unwrap_or_else(|e| panic!("the same patch again is refused: {e}"));
    assert_eq!(again_table, table, "{again}");
});
