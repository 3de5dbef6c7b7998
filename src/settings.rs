//! `PUT /api/v1/config` and `svc plugins toggle`: edits of `config.toml`.
//! A patch is deep-merged into the file (objects merge key by key, anything
//! else replaces, `null` removes a key; keys may be nested or dotted:
//! `{"sau": {"audit_bucket": ..}}` and `{"sau.audit_bucket": ..}` are the
//! same), the result is validated as a whole (unknown keys and bad values
//! are refused and nothing changes), written atomically and applied live.
//!
//! The patch is applied to the parsed document, not to its values: the
//! operator's comments, the order of keys and sections, and the formatting
//! of everything the patch does not touch survive, as does the comment
//! after a value that is replaced. A section the patch creates is written
//! in the style of its parent: a `[header]` at the top level, a dotted key
//! among dotted keys, an inline table inside an inline table.

use std::path::{Path, PathBuf};

use parking_lot::Mutex;
use serde_json::{Map, Value};
use svc_api::config::{ConfigError, ConfigService};
use svc_engine::store::atomic::write_bytes_atomic;
use toml_edit::{DocumentMut, InlineTable, Item, Table, TableLike};

use crate::config::Config;

/// Applies a validated configuration to the running daemon.
pub type Apply = Box<dyn Fn(&Config) + Send + Sync>;

/// Serializes the read-merge-write cycles of every writer of the file (the
/// API's configuration and the plugin catalog), so neither loses the
/// other's change.
static EDITS: Mutex<()> = Mutex::new(());

pub struct FileConfig {
    path: PathBuf,
    apply: Apply,
}

impl FileConfig {
    pub fn new(path: PathBuf, apply: Apply) -> FileConfig {
        FileConfig { path, apply }
    }
}

impl ConfigService for FileConfig {
    fn get(&self) -> Value {
        let table = read_text(&self.path).and_then(|text| {
            toml::from_str::<toml::Table>(&text)
                .map_err(|e| ConfigError::Failed(format!("{} is not valid TOML: {e}", self.path.display())))
        });
        match table {
            Ok(t) => redacted(serde_json::to_value(&t).unwrap_or_default()),
            Err(e) => {
                tracing::error!(error = %e, "cannot read the configuration");
                Value::Object(Default::default())
            }
        }
    }

    fn put(&self, patch: Value) -> Result<Value, ConfigError> {
        let Value::Object(mut patch) = patch else {
            return Err(ConfigError::Invalid(
                "the configuration patch must be a JSON object".into(),
            ));
        };
        keep_hidden(&mut patch);
        let (config, table) = edit(&self.path, &patch)?;
        (self.apply)(&config);
        tracing::info!(path = %self.path.display(), "configuration changed");
        Ok(redacted(serde_json::to_value(&table).unwrap_or_default()))
    }
}

/// What the API shows in place of a secret's value.
pub const HIDDEN: &str = "(hidden)";

/// Whether a key names a secret: credentials of plugins and AI providers,
/// webhook URLs (which carry their own credential), passwords, tokens.
fn is_secret(key: &str) -> bool {
    let key = key.rsplit('.').next().unwrap_or(key).to_ascii_lowercase();
    // The name of the environment variable that holds a secret is not one.
    if key.ends_with("_env") {
        return false;
    }
    [
        "key",
        "secret",
        "token",
        "password",
        "passwd",
        "credential",
        "webhook",
        "auth",
        "private",
        "session",
    ]
    .iter()
    .any(|word| key.contains(word))
}

/// The configuration as the API shows it: every secret's value (at any
/// depth, a whole table under a secret's name too) replaced by [`HIDDEN`].
/// The file keeps them; nothing but the file and the daemon reads them.
fn redacted(mut v: Value) -> Value {
    if let Value::Object(map) = &mut v {
        for (k, v) in map.iter_mut() {
            if is_secret(k) && !v.is_null() {
                *v = Value::from(HIDDEN);
            } else {
                *v = redacted(std::mem::take(v));
            }
        }
    }
    v
}

/// A patch that sends back a secret as shown ([`HIDDEN`]) leaves it as it
/// is: a client may PUT what it read.
fn keep_hidden(patch: &mut Map<String, Value>) {
    patch.retain(|k, v| !(is_secret(k) && v.as_str() == Some(HIDDEN)));
    for v in patch.values_mut() {
        if let Value::Object(inner) = v {
            keep_hidden(inner);
        }
    }
}

/// Applies `patch` to the configuration file at `path` (a missing file is
/// an empty one) and writes the result atomically once it validates.
/// Returns the configuration the written file holds, and the file as a
/// table; on any error the file is unchanged.
pub fn edit(path: &Path, patch: &Map<String, Value>) -> Result<(Config, toml::Table), ConfigError> {
    let _guard = EDITS.lock();
    let (text, config, table) = patched(path, &read_text(path)?, patch)?;
    write_bytes_atomic(path, text.as_bytes())
        .map_err(|e| ConfigError::Failed(format!("cannot write {}: {e}", path.display())))?;
    Ok((config, table))
}

/// `patch` applied to `text`, the configuration file at `path` (named in
/// errors): the new text, once it validates, with the configuration and
/// the table it holds.
pub fn patched(
    path: &Path,
    text: &str,
    patch: &Map<String, Value>,
) -> Result<(String, Config, toml::Table), ConfigError> {
    let mut doc: DocumentMut = text
        .parse()
        .map_err(|e| ConfigError::Failed(format!("{} is not valid TOML: {e}", path.display())))?;
    // A file of comments only: they stay at the top, above what is added.
    let mut lead = String::new();
    if doc.as_table().is_empty() {
        lead = doc.trailing().as_str().unwrap_or_default().to_owned();
        doc.set_trailing("");
    }
    merge(doc.as_table_mut(), false, patch, "")?;
    let text = above(&lead, doc.to_string());
    let config = Config::validate_text(&text).map_err(|e| ConfigError::Invalid(format!("{e:#}")))?;
    let table: toml::Table = toml::from_str(&text)
        .map_err(|e| ConfigError::Invalid(format!("the merged configuration is not valid TOML: {e}")))?;
    Ok((text, config, table))
}

/// `lead` above `body`, a blank line between them.
fn above(lead: &str, body: String) -> String {
    if lead.is_empty() || body.is_empty() {
        return format!("{lead}{body}");
    }
    let gap = match (lead.ends_with("\n\n"), lead.ends_with('\n')) {
        (true, _) => "",
        (false, true) => "\n",
        (false, false) => "\n\n",
    };
    format!("{lead}{gap}{body}")
}

fn read_text(path: &Path) -> Result<String, ConfigError> {
    match std::fs::read_to_string(path) {
        Ok(t) => Ok(t),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(e) => Err(ConfigError::Failed(format!("cannot read {}: {e}", path.display()))),
    }
}

/// Deep-merges `patch` into `table`, an inline table when `inline`. `at` is
/// the dotted path so far, for messages.
fn merge(
    table: &mut (dyn TableLike + 'static),
    inline: bool,
    patch: &Map<String, Value>,
    at: &str,
) -> Result<(), ConfigError> {
    for (key, value) in patch {
        let full = join(at, key);
        let parts: Vec<&str> = key.split('.').collect();
        if parts.iter().any(|p| p.is_empty()) {
            return Err(ConfigError::Invalid(format!("invalid key {full:?}: empty segment")));
        }
        let (last, parents) = parts.split_last().unwrap_or((&"", &[]));
        let mut t = &mut *table;
        let mut t_inline = inline;
        let mut path = at.to_owned();
        for p in parents {
            path = join(&path, p);
            (t, t_inline) = section(t, t_inline, p, &path)?;
        }
        match value {
            Value::Null => {
                t.remove(last);
            }
            Value::Object(sub) => {
                let (s, s_inline) = section(t, t_inline, last, &full)?;
                merge(s, s_inline, sub, &full)?;
            }
            other => set(t, t_inline, last, to_toml(other, &full)?),
        }
    }
    Ok(())
}

fn join(at: &str, key: &str) -> String {
    if at.is_empty() {
        key.to_owned()
    } else {
        format!("{at}.{key}")
    }
}

/// The section `key` of `table`, created in the style of `table` when it is
/// absent; whether it is an inline table comes back with it.
fn section<'a>(
    table: &'a mut (dyn TableLike + 'static),
    inline: bool,
    key: &str,
    path: &str,
) -> Result<(&'a mut (dyn TableLike + 'static), bool), ConfigError> {
    if !table.contains_key(key) {
        let fresh = if inline {
            let mut t = InlineTable::new();
            t.set_dotted(table.is_dotted());
            Item::Value(toml_edit::Value::InlineTable(t))
        } else {
            let mut t = Table::new();
            // No header of its own while it only holds sections.
            t.set_implicit(true);
            t.set_dotted(table.is_dotted());
            Item::Table(t)
        };
        append(table, inline, key, fresh);
    }
    match table.get_mut(key) {
        Some(Item::Table(t)) => Ok((t, false)),
        Some(Item::Value(toml_edit::Value::InlineTable(t))) => Ok((t, true)),
        _ => Err(ConfigError::Invalid(format!("{path} is a value, not a section"))),
    }
}

/// Sets `key` to `value`. A value replaced in place keeps its key, with the
/// comments above it, and the spacing and comment around the old value.
fn set(table: &mut dyn TableLike, inline: bool, key: &str, mut value: toml_edit::Value) {
    match table.get_mut(key) {
        Some(Item::Value(old)) => {
            *value.decor_mut() = old.decor().clone();
            *old = value;
        }
        Some(item) => *item = Item::Value(value),
        None => append(table, inline, key, Item::Value(value)),
    }
}

/// Adds `key` after the last key of `table`. In an inline table the space
/// before the closing brace moves from the old last value to the new one
/// (`{ a = 1 }` becomes `{ a = 1, b = 2 }`, not `{ a = 1 , b = 2 }`).
fn append(table: &mut dyn TableLike, inline: bool, key: &str, mut item: Item) {
    if inline
        && let Some(v) = item.as_value_mut()
        && let Some(space) = closing_space(table)
    {
        v.decor_mut().set_suffix(space);
    }
    table.insert(key, item);
}

/// Takes the whitespace after the last value of an inline table.
fn closing_space(table: &mut dyn TableLike) -> Option<String> {
    let (_, last) = table.iter_mut().last()?;
    let decor = last.as_value_mut()?.decor_mut();
    let space = decor.suffix()?.as_str()?.to_owned();
    if !space.trim().is_empty() {
        return None;
    }
    decor.set_suffix("");
    Some(space)
}

fn to_toml(v: &Value, at: &str) -> Result<toml_edit::Value, ConfigError> {
    Ok(match v {
        Value::Null => {
            return Err(ConfigError::Invalid(format!(
                "{at}: null is only allowed to remove a key"
            )));
        }
        Value::Bool(b) => (*b).into(),
        Value::Number(n) => match n.as_i64() {
            Some(i) => i.into(),
            None => n
                .as_f64()
                .ok_or_else(|| ConfigError::Invalid(format!("{at}: number out of range")))?
                .into(),
        },
        Value::String(s) => s.as_str().into(),
        Value::Array(items) => toml_edit::Value::Array(items.iter().map(|i| to_toml(i, at)).collect::<Result<_, _>>()?),
        Value::Object(o) => {
            let mut t = InlineTable::new();
            merge(&mut t, true, o, at)?;
            toml_edit::Value::InlineTable(t)
        }
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use serde_json::json;

    fn merged_text(start: &str, patch: Value) -> Result<String, ConfigError> {
        let mut doc: DocumentMut = start.parse().unwrap();
        let Value::Object(p) = patch else { unreachable!() };
        merge(doc.as_table_mut(), false, &p, "")?;
        Ok(doc.to_string())
    }

    fn merged(start: &str, patch: Value) -> Result<toml::Table, ConfigError> {
        Ok(toml::from_str(&merged_text(start, patch)?).unwrap())
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

    /// A file as an operator keeps it: comments above, beside and between
    /// keys, sections out of the usual order, aligned values.
    const OPERATOR_FILE: &str = r#"# svc on the build estate; owned by the platform team

[sau]
# the audit export goes to the team's bucket
audit_export_interval = "2h"   # twice the default

[daemon]
# scans are slow here
scan_timeout  = "30m"
scan_interval = "10m" # in step with the nightly job

[plugins]
active = [] # none yet
"#;

    #[test]
    fn a_change_keeps_the_operators_comments_order_and_formatting() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        std::fs::write(&path, OPERATOR_FILE).unwrap();
        let applied = Arc::new(Mutex::new(None));
        let seen = applied.clone();
        let service = FileConfig::new(
            path.clone(),
            Box::new(move |c: &Config| {
                *seen.lock() = Some((c.daemon.scan_interval.clone(), c.heuristics.disabled.clone()));
            }),
        );
        let answer = service
            .put(json!({"daemon": {"scan_interval": "15m"}, "heuristics.disabled": ["aws-ebs-gp2-to-gp3"]}))
            .unwrap();

        let written = std::fs::read_to_string(&path).unwrap();
        let expected =
            OPERATOR_FILE.replace(r#""10m""#, r#""15m""#) + "\n[heuristics]\ndisabled = [\"aws-ebs-gp2-to-gp3\"]\n";
        assert_eq!(written, expected);
        // What was applied is what the file now says, and what the API answered.
        let on_disk = Config::load(&path).unwrap();
        assert_eq!(on_disk.daemon.scan_interval, "15m");
        assert_eq!(on_disk.daemon.scan_timeout, "30m");
        assert_eq!(
            *applied.lock(),
            Some((
                on_disk.daemon.scan_interval.clone(),
                on_disk.heuristics.disabled.clone()
            ))
        );
        assert_eq!(answer["daemon"]["scan_interval"], "15m");
        assert_eq!(answer["heuristics"]["disabled"], json!(["aws-ebs-gp2-to-gp3"]));
        assert_eq!(answer, service.get());
    }

    /// Secrets are never shown: credentials of plugins and AI providers and
    /// webhook URLs read as hidden; sending back what was read keeps them,
    /// a new value replaces them.
    #[test]
    fn secrets_are_hidden_and_survive_a_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        let file = "[ai]\nprovider = \"anthropic\"\napi_key = \"sk-live-1\"\napi_key_env = \"MY_KEY\"\n\n\
                    [plugins.config.aws]\nregion = \"eu-west-1\"\nsecret_access_key = \"s3cr3t\"\n";
        std::fs::write(&path, file).unwrap();
        let service = FileConfig::new(path.clone(), Box::new(|_: &Config| {}));
        let shown = service.get();
        // The name of the variable that holds a key is shown; a key is not.
        assert_eq!(
            shown["ai"],
            json!({"provider": "anthropic", "api_key": HIDDEN, "api_key_env": "MY_KEY"})
        );
        assert_eq!(
            shown["plugins"]["config"]["aws"],
            json!({"region": "eu-west-1", "secret_access_key": HIDDEN})
        );
        assert!(!shown.to_string().contains("s3cr3t") && !shown.to_string().contains("sk-live"));

        let answer = service.put(shown.clone()).unwrap();
        assert_eq!(answer, shown);
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            file,
            "sent back as read: nothing changes"
        );
        service
            .put(json!({"plugins.config.aws.secret_access_key": "n3w"}))
            .unwrap();
        let on_disk = Config::load(&path).unwrap();
        assert_eq!(on_disk.plugins.config["aws"]["secret_access_key"].as_str(), Some("n3w"));
        assert_eq!(service.get()["plugins"]["config"]["aws"]["secret_access_key"], HIDDEN);
    }

    #[test]
    fn a_refused_change_leaves_the_file_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        std::fs::write(&path, OPERATOR_FILE).unwrap();
        let service = FileConfig::new(path.clone(), Box::new(|_: &Config| panic!("nothing may be applied")));
        for bad in [
            json!({"daemon": {"scan_interval": "soon"}}),
            json!({"daemon.no_such_key": 1}),
            json!({"sau.audit_export_interval": {"nested": true}}),
        ] {
            assert!(
                matches!(service.put(bad.clone()), Err(ConfigError::Invalid(_))),
                "{bad}"
            );
            assert_eq!(std::fs::read_to_string(&path).unwrap(), OPERATOR_FILE, "{bad}");
        }
    }

    #[test]
    fn new_keys_follow_the_style_of_their_section() {
        // Dotted keys stay dotted, inline tables stay inline, a new section
        // nested in an existing one follows it.
        let text = merged_text(
            "daemon.scan_interval = \"5m\" # fast\noracle = { enabled = true }\n\n[plugins]\nactive = [\"aws\"]\n\n[sau]\naudit_export_interval = \"1h\"\n",
            json!({
                "daemon": {"scan_timeout": "20m"},
                "oracle.enabled": false,
                "oracle.solver": {"budget": 3},
                "plugins.config.aws.region": "eu-west-1",
            }),
        )
        .unwrap();
        assert_eq!(
            text,
            "daemon.scan_interval = \"5m\" # fast\ndaemon.scan_timeout = \"20m\"\noracle = { enabled = false, solver = { budget = 3 } }\n\n[plugins]\nactive = [\"aws\"]\n\n[plugins.config.aws]\nregion = \"eu-west-1\"\n\n[sau]\naudit_export_interval = \"1h\"\n"
        );
    }
}
