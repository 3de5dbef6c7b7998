//! `PUT /api/v1/config`: the configuration file behind the API's
//! [`ConfigService`]. A patch is deep-merged into `config.toml` (objects
//! merge key by key, anything else replaces, `null` removes a key; keys may
//! be nested or dotted: `{"sau": {"audit_bucket": ..}}` and
//! `{"sau.audit_bucket": ..}` are the same), the result is validated as a
//! whole (unknown keys and bad values are refused and nothing changes),
//! written atomically and applied live.

use std::path::PathBuf;

use parking_lot::Mutex;
use serde_json::Value;
use svc_api::config::{ConfigError, ConfigService};
use svc_engine::store::atomic::write_bytes_atomic;

use crate::config::Config;

/// Applies a validated configuration to the running daemon.
pub type Apply = Box<dyn Fn(&Config) + Send + Sync>;

pub struct FileConfig {
    path: PathBuf,
    apply: Apply,
    /// Serializes read-merge-write cycles.
    lock: Mutex<()>,
}

impl FileConfig {
    pub fn new(path: PathBuf, apply: Apply) -> FileConfig {
        FileConfig {
            path,
            apply,
            lock: Mutex::new(()),
        }
    }

    fn read(&self) -> Result<toml::Table, ConfigError> {
        let text = match std::fs::read_to_string(&self.path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(ConfigError::Failed(format!("cannot read {}: {e}", self.path.display()))),
        };
        toml::from_str(&text)
            .map_err(|e| ConfigError::Failed(format!("{} is not valid TOML: {e}", self.path.display())))
    }

    fn write(&self, text: &str) -> Result<(), ConfigError> {
        let failed = |e: std::io::Error| ConfigError::Failed(format!("cannot write {}: {e}", self.path.display()));
        write_bytes_atomic(&self.path, text.as_bytes()).map_err(failed)
    }
}

impl ConfigService for FileConfig {
    fn get(&self) -> Value {
        let _guard = self.lock.lock();
        match self.read() {
            Ok(t) => serde_json::to_value(&t).unwrap_or_default(),
            Err(e) => {
                tracing::error!(error = %e, "cannot read the configuration");
                Value::Object(Default::default())
            }
        }
    }

    fn put(&self, patch: Value) -> Result<Value, ConfigError> {
        let Value::Object(patch) = patch else {
            return Err(ConfigError::Invalid(
                "the configuration patch must be a JSON object".into(),
            ));
        };
        let _guard = self.lock.lock();
        let mut table = self.read()?;
        merge(&mut table, &patch, "")?;
        let text = toml::to_string(&table)
            .map_err(|e| ConfigError::Invalid(format!("cannot write the merged configuration as TOML: {e}")))?;
        let config = Config::validate_text(&text).map_err(|e| ConfigError::Invalid(format!("{e:#}")))?;
        self.write(&text)?;
        (self.apply)(&config);
        tracing::info!(path = %self.path.display(), "configuration changed");
        Ok(serde_json::to_value(&table).unwrap_or_default())
    }
}

/// Deep-merges `patch` into `table`. `at` is the dotted path so far, for messages.
fn merge(table: &mut toml::Table, patch: &serde_json::Map<String, Value>, at: &str) -> Result<(), ConfigError> {
    for (key, value) in patch {
        let full = if at.is_empty() {
            key.clone()
        } else {
            format!("{at}.{key}")
        };
        let parts: Vec<&str> = key.split('.').collect();
        if parts.iter().any(|p| p.is_empty()) {
            return Err(ConfigError::Invalid(format!("invalid key {full:?}: empty segment")));
        }
        let (last, parents) = parts.split_last().unwrap_or((&"", &[]));
        let mut t = &mut *table;
        let mut path = at.to_owned();
        for p in parents {
            path = if path.is_empty() {
                (*p).to_owned()
            } else {
                format!("{path}.{p}")
            };
            let entry = t
                .entry((*p).to_owned())
                .or_insert_with(|| toml::Value::Table(toml::Table::new()));
            t = entry
                .as_table_mut()
                .ok_or_else(|| ConfigError::Invalid(format!("{path} is a value, not a section")))?;
        }
        match value {
            Value::Null => {
                t.remove(*last);
            }
            Value::Object(sub) => {
                let entry = t
                    .entry((*last).to_owned())
                    .or_insert_with(|| toml::Value::Table(toml::Table::new()));
                let sub_table = entry
                    .as_table_mut()
                    .ok_or_else(|| ConfigError::Invalid(format!("{full} is a value, not a section")))?;
                merge(sub_table, sub, &full)?;
            }
            other => {
                t.insert((*last).to_owned(), to_toml(other, &full)?);
            }
        }
    }
    Ok(())
}

fn to_toml(v: &Value, at: &str) -> Result<toml::Value, ConfigError> {
    Ok(match v {
        Value::Null => {
            return Err(ConfigError::Invalid(format!(
                "{at}: null is only allowed to remove a key"
            )));
        }
        Value::Bool(b) => toml::Value::Boolean(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => toml::Value::Integer(i),
            None => toml::Value::Float(
                n.as_f64()
                    .ok_or_else(|| ConfigError::Invalid(format!("{at}: number out of range")))?,
            ),
        },
        Value::String(s) => toml::Value::String(s.clone()),
        Value::Array(items) => toml::Value::Array(items.iter().map(|i| to_toml(i, at)).collect::<Result<_, _>>()?),
        Value::Object(o) => {
            let mut t = toml::Table::new();
            merge(&mut t, o, at)?;
            toml::Value::Table(t)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn merged(start: &str, patch: Value) -> Result<toml::Table, ConfigError> {
        let mut t: toml::Table = toml::from_str(start).unwrap();
        let Value::Object(p) = patch else { unreachable!() };
        merge(&mut t, &p, "")?;
        Ok(t)
    }

    #[test]
    fn deep_merge_keeps_siblings_and_accepts_dotted_keys() {
        let t = merged(
            "[daemon]\nscan_interval = \"5m\"\n[sau]\naudit_export_interval = \"1h\"",
            json!({"sau.audit_bucket": "s3://a-b/c", "daemon": {"scan_timeout": "20m"}}),
        )
        .unwrap();
        assert_eq!(t["daemon"]["scan_interval"].as_str(), Some("5m"));
        assert_eq!(t["daemon"]["scan_timeout"].as_str(), Some("20m"));
        assert_eq!(t["sau"]["audit_bucket"].as_str(), Some("s3://a-b/c"));
        assert_eq!(t["sau"]["audit_export_interval"].as_str(), Some("1h"));
        let t = merged(
            "[sau]\naudit_bucket = \"s3://a-b\"",
            json!({"sau": {"audit_bucket": null}}),
        )
        .unwrap();
        assert!(t["sau"].as_table().unwrap().is_empty());
        assert!(merged("[daemon]\nscan_interval = \"5m\"", json!({"daemon.scan_interval.x": 1})).is_err());
        assert!(merged("", json!({"a..b": 1})).is_err());
    }
}
