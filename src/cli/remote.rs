//! Where the daemon is, how to authenticate and how to print its answers:
//! the flags every client verb shares, accepted before or after the verb
//! (the commands that are no client, `daemon`, `worker`, ..., neither show
//! nor take them: `args::LOCAL`).

use std::path::PathBuf;

/// How a verb prints what the daemon answered.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Columns for people.
    Table,
    /// The table with more columns.
    Wide,
    /// The API's answer as it came.
    Json,
    /// The API's answer as YAML.
    Yaml,
}

/// Where the daemon is, how to authenticate and how to print.
#[derive(clap::Args, Debug, Clone)]
pub struct Remote {
    /// Address of the daemon (`http://` or `https://`).
    #[arg(long, global = true, env = "SVC_URL", default_value = "http://127.0.0.1:8080")]
    pub url: String,
    /// API token; defaults to the admin token in `$SVC_DATA_DIR/token`.
    #[arg(long, global = true, env = "SVC_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// A CA certificate (PEM) an `https://` daemon's certificate is checked
    /// against, besides the system's roots.
    #[arg(long, global = true, value_name = "FILE", env = "SVC_CA_FILE")]
    pub ca_file: Option<PathBuf>,
    /// Output format.
    #[arg(short = 'o', long = "output", global = true, value_enum, value_name = "FORMAT")]
    pub output: Option<Format>,
    /// Same as `-o json`.
    #[arg(long, global = true, conflicts_with = "output")]
    pub json: bool,
}

impl Remote {
    /// The format asked for; a table when none was.
    pub fn format(&self) -> Format {
        match (self.output, self.json) {
            (Some(f), _) => f,
            (None, true) => Format::Json,
            (None, false) => Format::Table,
        }
    }

    /// Whether the answer is printed for a program (JSON or YAML).
    pub fn machine(&self) -> bool {
        matches!(self.format(), Format::Json | Format::Yaml)
    }

    /// Whether the table has its wide columns.
    pub fn wide(&self) -> bool {
        self.format() == Format::Wide
    }
}
