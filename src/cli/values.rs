//! The flags that take one of a known set of values, as clap enums: the
//! shell completes them and a wrong one is a usage error naming the choices.

use clap::ValueEnum;

/// The name a value is written with on the command line and in the API.
pub fn name<T: ValueEnum>(value: &T) -> String {
    value
        .to_possible_value()
        .map(|v| v.get_name().to_owned())
        .unwrap_or_default()
}

/// A stage of the remediation pipeline.
#[derive(ValueEnum, Debug, Clone, Copy)]
#[value(rename_all = "snake_case")]
pub enum Stage {
    Flagged,
    Analyzed,
    Codegen,
    SauGate,
    Pending,
    Applied,
    Rejected,
}

/// What `svc remediation bulk` does to every item named.
#[derive(ValueEnum, Debug, Clone, Copy)]
pub enum BulkAction {
    Approve,
    Reject,
}

/// What a quarantine does to the resource.
#[derive(ValueEnum, Debug, Clone, Copy)]
#[value(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum QuarantineAction {
    Isolate,
    Stop,
    Delete,
}

/// What a policy rule's violation does.
#[derive(ValueEnum, Debug, Clone, Copy)]
pub enum RuleAction {
    Block,
    Flag,
    Warn,
}

/// An API token's role.
#[derive(ValueEnum, Debug, Clone, Copy)]
pub enum Role {
    Viewer,
    Operator,
    Admin,
}

/// A plugin's category in its manifest.
#[derive(ValueEnum, Debug, Clone, Copy)]
pub enum PluginCategory {
    Cloud,
    Database,
    Infrastructure,
    Saas,
    Iot,
    Devops,
    Security,
}

/// A plugin's role in its manifest.
#[derive(ValueEnum, Debug, Clone, Copy)]
pub enum PluginRole {
    Provider,
    Heuristic,
}

/// A shell `svc completion` writes a script for.
#[derive(ValueEnum, Debug, Clone, Copy)]
pub enum Shell {
    Bash,
    Zsh,
    Fish,
}
