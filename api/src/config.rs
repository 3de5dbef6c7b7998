//! The daemon configuration as the API sees it. The daemon owns the file,
//! its schema and what applying a change means; the API only reads it and
//! hands it merge patches (`PUT /api/v1/config`).

use serde_json::Value;

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The merged configuration does not validate (unknown key, wrong
    /// type, bad value); nothing was applied or written.
    #[error("{0}")]
    Invalid(String),
    /// Valid, but it could not be written.
    #[error("{0}")]
    Failed(String),
}

pub trait ConfigService: Send + Sync {
    /// The configuration file as a JSON object.
    fn get(&self) -> Value;
    /// Deep-merges `patch` (an object; keys may be nested or dotted,
    /// `null` removes a key) into the configuration, validates the result,
    /// writes it atomically and applies it live. Returns the new
    /// configuration.
    fn put(&self, patch: Value) -> Result<Value, ConfigError>;
}
