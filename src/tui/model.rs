//! Pure functions over the node rows: workspaces (categories), the `/`
//! filter, sorting and the short forms the tables show.

use super::wire::Row;

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

    /// Whether a row of `provider` and `ty` (`service:kind`) belongs here.
    pub fn holds(self, provider: &str, ty: &str) -> bool {
        self == Category::All || category_of(provider, ty) == self
    }
}

/// The category of a resource from its provider and `service:kind` type.
pub fn category_of(provider: &str, ty: &str) -> Category {
    let (service, kind) = ty.split_once(':').unwrap_or(("", ty));
    let provider = provider.to_ascii_lowercase();
    if matches!(provider.as_str(), "kubernetes" | "k8s")
        || matches!(
            service,
            "eks" | "gke" | "aks" | "container" | "core" | "apps" | "kubernetes"
        )
    {
        return Category::Kubernetes;
    }
    match service {
        "lambda" | "functions" | "cloudfunctions" | "run" | "web" | "logic" => return Category::Serverless,
        "rds" | "sql" | "dynamodb" | "elasticache" | "redshift" | "spanner" | "bigtable" | "cosmosdb"
        | "documentdb" | "firestore" | "memorystore" => return Category::Database,
        "s3" | "storage" | "efs" | "fsx" | "glacier" | "backup" | "filestore" => return Category::Storage,
        "elb" | "elbv2" | "network" | "route53" | "cloudfront" | "apigateway" | "dns" | "vpc" => {
            return Category::Network;
        }
        _ => {}
    }
    match kind {
        "volume" | "disk" | "snapshot" | "image" | "bucket" | "storage-account" | "pvc" => Category::Storage,
        "instance" | "vm" | "nodegroup" | "machine" | "autoscaling-group" => Category::Compute,
        "eip" | "nat-gateway" | "security-group" | "vpc" | "subnet" | "address" | "public-ip" | "load-balancer"
        | "record" | "firewall" => Category::Network,
        "db" | "table" | "cache" | "sql-instance" | "sql-database" | "cluster" => Category::Database,
        "function" => Category::Serverless,
        _ => Category::Other,
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
}

impl SortKey {
    pub const ALL: [SortKey; 5] = [
        SortKey::Cost,
        SortKey::Name,
        SortKey::Type,
        SortKey::State,
        SortKey::Provider,
    ];

    pub fn name(self) -> &'static str {
        match self {
            SortKey::Cost => "cost",
            SortKey::Name => "name",
            SortKey::Type => "type",
            SortKey::State => "state",
            SortKey::Provider => "provider",
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

/// One term of a `/` filter: `key:value` on a column, or a word anywhere.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Term {
    Field(String, String),
    Word(String),
}

fn terms(filter: &str) -> Vec<Term> {
    filter
        .split_whitespace()
        .map(|t| match t.split_once(':') {
            Some((k, v))
                if matches!(
                    k,
                    "state" | "type" | "provider" | "region" | "phase" | "waste" | "reach"
                ) =>
            {
                Term::Field(k.to_owned(), v.to_ascii_lowercase())
            }
            _ => Term::Word(t.to_ascii_lowercase()),
        })
        .collect()
}

/// Whether `row` passes the filter: every term must hold. A word matches a
/// case-insensitive substring of the CRN, type, state, region or waste
/// reason; `state:`, `type:`, `provider:`, `region:`, `phase:` and
/// `reach:` match a column's prefix, `waste:yes|no` the verdict.
pub fn matches(row: &Row, filter: &str) -> bool {
    terms(filter).iter().all(|t| match t {
        Term::Word(w) => [&row.crn, &row.ty, &row.state, &row.region, &row.waste_reason]
            .iter()
            .any(|f| f.to_ascii_lowercase().contains(w.as_str())),
        Term::Field(k, v) => {
            let col = match k.as_str() {
                "state" => &row.state,
                "type" => &row.ty,
                "provider" => &row.provider,
                "region" => &row.region,
                "phase" => &row.phase,
                "reach" => &row.reachability,
                _ => {
                    let yes = matches!(v.as_str(), "yes" | "true" | "1" | "y");
                    return row.is_waste == yes;
                }
            };
            col.to_ascii_lowercase().starts_with(v.as_str())
        }
    })
}

/// The indexes of the rows a workspace and filter show, in sort order.
pub fn visible(rows: &[Row], category: Category, filter: &str, sort: SortKey, descending: bool) -> Vec<usize> {
    let mut out: Vec<usize> = (0..rows.len())
        .filter(|&i| category.holds(&rows[i].provider, &rows[i].ty) && matches(&rows[i], filter))
        .collect();
    out.sort_by(|&a, &b| {
        let (x, y) = (&rows[a], &rows[b]);
        let o = match sort {
            SortKey::Cost => x.cost_usd_mo.total_cmp(&y.cost_usd_mo),
            SortKey::Name => short_name(&x.crn).cmp(short_name(&y.crn)),
            SortKey::Type => x.ty.cmp(&y.ty),
            SortKey::State => x.state.cmp(&y.state),
            SortKey::Provider => x.provider.cmp(&y.provider),
        };
        let o = if descending { o.reverse() } else { o };
        o.then_with(|| x.crn.cmp(&y.crn))
    });
    out
}

/// Rows per workspace, in [`Category::ALL`] order.
pub fn counts(rows: &[Row]) -> [usize; 8] {
    let mut c = [0usize; 8];
    c[0] = rows.len();
    for r in rows {
        let cat = category_of(&r.provider, &r.ty);
        if let Some(i) = Category::ALL.iter().position(|x| *x == cat) {
            c[i] += 1;
        }
    }
    c
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

    fn row(crn: &str, provider: &str, ty: &str, state: &str, cost: f64, waste: bool) -> Row {
        Row {
            crn: crn.into(),
            provider: provider.into(),
            ty: ty.into(),
            state: state.into(),
            cost_usd_mo: cost,
            is_waste: waste,
            region: "us-east-1".into(),
            ..Row::default()
        }
    }

    #[test]
    fn categories_of_the_mock_estate_types() {
        assert_eq!(category_of("aws", "ec2:instance"), Category::Compute);
        assert_eq!(category_of("aws", "ec2:volume"), Category::Storage);
        assert_eq!(category_of("aws", "ec2:security-group"), Category::Network);
        assert_eq!(category_of("aws", "elb:load-balancer"), Category::Network);
        assert_eq!(category_of("aws", "rds:db"), Category::Database);
        assert_eq!(category_of("aws", "lambda:function"), Category::Serverless);
        assert_eq!(category_of("aws", "s3:bucket"), Category::Storage);
        assert_eq!(category_of("aws", "eks:nodegroup"), Category::Kubernetes);
        assert_eq!(category_of("gcp", "container:cluster"), Category::Kubernetes);
        assert_eq!(category_of("kubernetes", "core:pvc"), Category::Kubernetes);
        assert_eq!(category_of("gcp", "sql:sql-instance"), Category::Database);
        assert_eq!(category_of("azure", "network:public-ip"), Category::Network);
        assert_eq!(category_of("azure", "compute:vm"), Category::Compute);
        assert_eq!(category_of("aws", "iam:role"), Category::Other);
    }

    #[test]
    fn category_words_parse_and_cycle() {
        assert_eq!(Category::parse("k8s"), Some(Category::Kubernetes));
        assert_eq!(Category::parse("STOR"), Some(Category::Storage));
        assert_eq!(Category::parse("co"), None);
        assert_eq!(Category::parse("nope"), None);
        assert_eq!(Category::Other.next(), Category::All);
        assert_eq!(Category::All.prev(), Category::Other);
    }

    #[test]
    fn filter_words_and_fields() {
        let r = row(
            "crn:svc:aws:us-east-1:ec2:volume:1:vol-9",
            "aws",
            "ec2:volume",
            "available",
            8.0,
            true,
        );
        assert!(matches(&r, ""));
        assert!(matches(&r, "VOL-9"));
        assert!(matches(&r, "state:avail waste:yes"));
        assert!(!matches(&r, "state:in-use"));
        assert!(!matches(&r, "waste:no"));
        assert!(matches(&r, "provider:aws type:ec2:vol"));
        assert!(!matches(&r, "vol-9 gcp"));
    }

    #[test]
    fn visible_filters_and_sorts() {
        let rows = vec![
            row(
                "crn:svc:aws:r:ec2:volume:1:b",
                "aws",
                "ec2:volume",
                "available",
                5.0,
                true,
            ),
            row(
                "crn:svc:aws:r:ec2:instance:1:a",
                "aws",
                "ec2:instance",
                "running",
                70.0,
                false,
            ),
            row(
                "crn:svc:aws:r:ec2:volume:1:c",
                "aws",
                "ec2:volume",
                "in-use",
                9.0,
                false,
            ),
        ];
        assert_eq!(visible(&rows, Category::All, "", SortKey::Cost, true), vec![1, 2, 0]);
        assert_eq!(visible(&rows, Category::Storage, "", SortKey::Name, false), vec![0, 2]);
        assert_eq!(visible(&rows, Category::All, "waste:yes", SortKey::Cost, true), vec![0]);
        assert_eq!(counts(&rows)[..3], [3, 1, 2]);
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
