//! The node table's workspaces (categories) and sort keys, and the short
//! forms the tables show. Filtering and sorting are the daemon's
//! (`GET /api/v1/nodes`): the table only ever holds a window of the rows.

/// A workspace: the rows of one category of resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Category {
    All,
    Compute,
    Storage,
    Network,
    Database,
    Serverless,
    Kubernetes,
    Other,
}

impl Category {
    /// Every workspace in tab order.
    pub const ALL: [Category; 8] = [
        Category::All,
        Category::Compute,
        Category::Storage,
        Category::Network,
        Category::Database,
        Category::Serverless,
        Category::Kubernetes,
        Category::Other,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Category::All => "all",
            Category::Compute => "compute",
            Category::Storage => "storage",
            Category::Network => "network",
            Category::Database => "database",
            Category::Serverless => "serverless",
            Category::Kubernetes => "kubernetes",
            Category::Other => "other",
        }
    }

    /// The workspace a `:` command names: its name, a prefix of at least
    /// three letters, or `k8s`.
    pub fn parse(word: &str) -> Option<Category> {
        let w = word.to_ascii_lowercase();
        if w == "k8s" {
            return Some(Category::Kubernetes);
        }
        if w.len() < 3 {
            return None;
        }
        Category::ALL.into_iter().find(|c| c.name().starts_with(&w))
    }

    pub fn next(self) -> Category {
        let i = Category::ALL.iter().position(|c| *c == self).unwrap_or(0);
        Category::ALL[(i + 1) % Category::ALL.len()]
    }

    pub fn prev(self) -> Category {
        let i = Category::ALL.iter().position(|c| *c == self).unwrap_or(0);
        Category::ALL[(i + Category::ALL.len() - 1) % Category::ALL.len()]
    }

    /// The `category` the daemon filters by; none for every workspace.
    pub fn query(self) -> Option<&'static str> {
        (self != Category::All).then(|| self.name())
    }
}

/// How the node table is ordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortKey {
    Cost,
    Name,
    Type,
    State,
    Provider,
    Region,
}

impl SortKey {
    pub const ALL: [SortKey; 6] = [
        SortKey::Cost,
        SortKey::Name,
        SortKey::Type,
        SortKey::State,
        SortKey::Provider,
        SortKey::Region,
    ];

    pub fn name(self) -> &'static str {
        match self {
            SortKey::Cost => "cost",
            SortKey::Name => "name",
            SortKey::Type => "type",
            SortKey::State => "state",
            SortKey::Provider => "provider",
            SortKey::Region => "region",
        }
    }

    pub fn parse(word: &str) -> Option<SortKey> {
        SortKey::ALL.into_iter().find(|k| k.name() == word.to_ascii_lowercase())
    }

    pub fn next(self) -> SortKey {
        let i = SortKey::ALL.iter().position(|k| *k == self).unwrap_or(0);
        SortKey::ALL[(i + 1) % SortKey::ALL.len()]
    }
}

/// The physical id of a CRN (its last segment), or the CRN itself.
pub fn short_name(crn: &str) -> &str {
    let parts = crn.splitn(8, ':').collect::<Vec<_>>();
    if parts.len() == 8 { parts[7] } else { crn }
}

/// US dollars a month as the tables show them: `$1,234.50`.
pub fn money(usd: f64) -> String {
    if !usd.is_finite() {
        return "-".into();
    }
    let cents = (usd.abs() * 100.0).round() as u64;
    let (whole, frac) = (cents / 100, cents % 100);
    let digits = whole.to_string();
    let mut grouped = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(ch);
    }
    let sign = if usd < 0.0 { "-" } else { "" };
    format!("{sign}${grouped}.{frac:02}")
}

/// `text` cut to `width` characters, the last one an ellipsis when cut.
pub fn clip(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_owned();
    }
    if width == 0 {
        return String::new();
    }
    let mut s: String = text.chars().take(width - 1).collect();
    s.push('…');
    s
}

/// A Unix time as `HH:MM:SS` UTC.
pub fn clock(unix: i64) -> String {
    let s = unix.rem_euclid(86_400);
    format!("{:02}:{:02}:{:02}", s / 3600, (s / 60) % 60, s % 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn category_words_parse_and_cycle() {
        assert_eq!(Category::parse("k8s"), Some(Category::Kubernetes));
        assert_eq!(Category::parse("STOR"), Some(Category::Storage));
        assert_eq!(Category::parse("co"), None);
        assert_eq!(Category::parse("nope"), None);
        assert_eq!(Category::Other.next(), Category::All);
        assert_eq!(Category::All.prev(), Category::Other);
        assert_eq!(
            (Category::All.query(), Category::Storage.query()),
            (None, Some("storage"))
        );
        assert_eq!(SortKey::parse("Region"), Some(SortKey::Region));
        assert_eq!(SortKey::Region.next(), SortKey::Cost);
    }

    #[test]
    fn short_forms() {
        assert_eq!(short_name("crn:svc:aws:us-east-1:ec2:volume:123:vol-1"), "vol-1");
        assert_eq!(short_name("crn:svc:k8s:c:core:pod:ns:a:b"), "a:b");
        assert_eq!(short_name("odd"), "odd");
        assert_eq!(money(1234.5), "$1,234.50");
        assert_eq!(money(0.004), "$0.00");
        assert_eq!(money(-12.0), "-$12.00");
        assert_eq!(clip("abcdef", 4), "abc…");
        assert_eq!(clip("abc", 4), "abc");
        assert_eq!(clock(3661), "01:01:01");
    }
}
