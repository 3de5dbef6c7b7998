//! The flags of a verb that lists in pages.

/// `--limit`, `--cursor` and `--all` of a verb that lists in pages.
#[derive(clap::Args, Debug, Clone)]
pub struct Page {
    /// How many to list (one page).
    #[arg(long, default_value_t = 50)]
    pub limit: usize,
    /// Start at this cursor (`next_cursor` of a previous page).
    #[arg(long, conflicts_with = "all")]
    pub cursor: Option<String>,
    /// Follow the pages to the end.
    #[arg(long)]
    pub all: bool,
}
