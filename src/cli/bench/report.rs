//! The bench document (`schemas/bench.schema.json`): reading one back,
//! the machine it ran on, and what is printed from documents: a
//! comparison with a baseline and PERF.md's table rows.

use std::path::Path;

use anyhow::{Context, bail};
use serde_json::{Map, Value, json};

use super::figures::{Better, describe, human, order};

/// The version of the document's layout this build writes and reads.
pub const SCHEMA_VERSION: u64 = 1;

/// The machine: CPU model, logical cores, memory, kernel and OS.
pub fn machine() -> Value {
    let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
    let cpuinfo = read("/proc/cpuinfo");
    let cpu_model = cpuinfo
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            matches!(k.trim(), "model name" | "Model" | "cpu model").then(|| v.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown".to_owned());
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let memory = read("/proc/meminfo")
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse::<u64>().ok())
        .map_or(0, |kib| kib * 1024);
    let kernel = read("/proc/sys/kernel/osrelease").trim().to_owned();
    let os = read("/etc/os-release")
        .lines()
        .find_map(|l| l.strip_prefix("PRETTY_NAME="))
        .map(|v| v.trim_matches('"').to_owned())
        .unwrap_or_else(|| std::env::consts::OS.to_owned());
    json!({
        "cpu_model": cpu_model,
        "logical_cores": cores,
        "memory_total_bytes": memory,
        "kernel": if kernel.is_empty() { "unknown".to_owned() } else { kernel },
        "os": os,
        "arch": std::env::consts::ARCH,
    })
}

/// The machine in a few words, for a table's column.
pub fn machine_line(m: &Value) -> String {
    let cpu = m.get("cpu_model").and_then(Value::as_str).unwrap_or("unknown CPU");
    let cores = m.get("logical_cores").and_then(Value::as_u64).unwrap_or(0);
    let mem = m.get("memory_total_bytes").and_then(Value::as_u64).unwrap_or(0) as f64 / 1073741824.0;
    format!("{cores} vCPU {cpu}, {mem:.1} GiB")
}

/// Reads a bench document, checking what the printers rely on.
pub fn load(path: &Path) -> anyhow::Result<Value> {
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let doc: Value = serde_json::from_str(&text)
        .with_context(|| format!("{} is not JSON (a `svc bench` document was expected)", path.display()))?;
    check(&doc).with_context(|| format!("{} is not a `svc bench` document", path.display()))?;
    Ok(doc)
}

fn check(doc: &Value) -> anyhow::Result<()> {
    let Some(version) = doc.get("schema_version").and_then(Value::as_u64) else {
        bail!("it has no schema_version");
    };
    if version > SCHEMA_VERSION {
        bail!("its schema_version is {version}; this svc reads up to {SCHEMA_VERSION}: use a newer svc");
    }
    let Some(runs) = doc.get("runs").and_then(Value::as_array) else {
        bail!("it has no runs");
    };
    for (i, run) in runs.iter().enumerate() {
        if run.get("scale").and_then(Value::as_u64).is_none() {
            bail!("run {i} has no scale");
        }
        let Some(figures) = run.get("figures").and_then(Value::as_object) else {
            bail!("run {i} has no figures");
        };
        if let Some((name, _)) = figures.iter().find(|(_, v)| !v.is_number()) {
            bail!("run {i}: figure {name} is not a number");
        }
    }
    Ok(())
}

fn runs(doc: &Value) -> impl Iterator<Item = (u64, &Map<String, Value>)> {
    doc.get("runs")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|r| Some((r.get("scale")?.as_u64()?, r.get("figures")?.as_object()?)))
}

/// `100000` as `10^5`, other numbers as they are.
pub fn scale_name(n: u64) -> String {
    let mut e = 0;
    let mut v = n;
    while v >= 10 && v.is_multiple_of(10) {
        v /= 10;
        e += 1;
    }
    if v == 1 && e > 0 {
        format!("10^{e}")
    } else {
        n.to_string()
    }
}

/// One line of a comparison.
pub struct Row {
    pub scale: u64,
    pub figure: String,
    pub baseline: Option<f64>,
    pub current: Option<f64>,
    pub better: Better,
}

impl Row {
    pub fn ratio(&self) -> Option<f64> {
        match (self.current, self.baseline) {
            (Some(c), Some(b)) if b != 0.0 => Some(c / b),
            _ => None,
        }
    }

    /// `better`, `worse` or `same` (within `tolerance`, as a fraction).
    pub fn verdict(&self, tolerance: f64) -> &'static str {
        let Some(r) = self.ratio() else {
            return match (self.baseline, self.current) {
                (None, Some(_)) => "new",
                (Some(_), None) => "gone",
                _ => "-",
            };
        };
        if self.better == Better::Neither {
            return "-";
        }
        if (r - 1.0).abs() <= tolerance {
            return "same";
        }
        let improved = match self.better {
            Better::Lower => r < 1.0,
            _ => r > 1.0,
        };
        if improved { "better" } else { "worse" }
    }
}

/// Each figure of `current` beside the baseline's, scale by scale (the
/// scales of either).
pub fn compare(current: &Value, baseline: &Value) -> Vec<Row> {
    let mut scales: Vec<u64> = runs(current).chain(runs(baseline)).map(|(s, _)| s).collect();
    scales.sort_unstable();
    scales.dedup();
    let mut rows = Vec::new();
    for scale in scales {
        let cur = runs(current).find(|(s, _)| *s == scale).map(|(_, f)| f);
        let base = runs(baseline).find(|(s, _)| *s == scale).map(|(_, f)| f);
        let mut names: Vec<&String> = cur.into_iter().chain(base).flat_map(|f| f.keys()).collect();
        names.sort_by_key(|n| order(n));
        names.dedup();
        for name in names {
            rows.push(Row {
                scale,
                figure: name.clone(),
                baseline: base.and_then(|f| f.get(name)).and_then(Value::as_f64),
                current: cur.and_then(|f| f.get(name)).and_then(Value::as_f64),
                better: describe(name).1,
            });
        }
    }
    rows
}

/// Differences within this fraction are printed as `same`.
pub const TOLERANCE: f64 = 0.05;

fn num(name: &str, v: Option<f64>) -> String {
    v.map_or_else(|| "-".to_owned(), |v| human(name, v))
}

/// The comparison as a table for a terminal.
pub fn compare_text(rows: &[Row]) -> Vec<Vec<String>> {
    rows.iter()
        .map(|r| {
            vec![
                scale_name(r.scale),
                r.figure.clone(),
                num(&r.figure, r.baseline),
                num(&r.figure, r.current),
                r.ratio().map_or_else(|| "-".to_owned(), |x| format!("{x:.2}")),
                r.better.word().to_owned(),
                r.verdict(TOLERANCE).to_owned(),
            ]
        })
        .collect()
}

pub const COMPARE_HEADER: [&str; 7] = ["scale", "figure", "baseline", "current", "ratio", "better", "verdict"];

/// The comparison as JSON.
pub fn compare_json(rows: &[Row]) -> Value {
    Value::Array(
        rows.iter()
            .map(|r| {
                json!({
                    "scale": r.scale,
                    "figure": r.figure,
                    "baseline": r.baseline,
                    "current": r.current,
                    "ratio": r.ratio(),
                    "better": match r.better { Better::Lower => "lower", Better::Higher => "higher", Better::Neither => "neither" },
                    "verdict": r.verdict(TOLERANCE),
                })
            })
            .collect(),
    )
}

/// PERF.md's table rows from a document: one a figure, every scale's
/// value side by side (what is measured | budget | figure | command |
/// date | machine).
pub fn markdown(doc: &Value) -> String {
    let machine = doc.get("machine").map(machine_line).unwrap_or_default();
    let date = doc
        .get("started_at")
        .and_then(Value::as_str)
        .map(|s| s.get(..16).unwrap_or(s).replace('T', " "))
        .unwrap_or_default();
    let profile = doc.get("build_profile").and_then(Value::as_str).unwrap_or("unknown");
    let commit = doc.get("git_commit").and_then(Value::as_str);
    let command = doc
        .get("args")
        .and_then(|a| a.get("command"))
        .and_then(Value::as_str)
        .unwrap_or("svc bench");
    let when = match commit {
        Some(c) => format!("{date} (`{}`)", c.get(..7).unwrap_or(c)),
        None => date,
    };
    let mut names: Vec<&String> = runs(doc).flat_map(|(_, f)| f.keys()).collect();
    names.sort_by_key(|n| order(n));
    names.dedup();
    let mut out = String::from(
        "| what is measured | budget | current figure | command | date | machine |\n| --- | --- | --- | --- | --- | --- |\n",
    );
    for name in names {
        let (what, _, budget) = describe(name);
        let values: Vec<String> = runs(doc)
            .filter_map(|(s, f)| {
                f.get(name)
                    .and_then(Value::as_f64)
                    .map(|v| format!("{}: **{}**", scale_name(s), human(name, v)))
            })
            .collect();
        out.push_str(&format!(
            "| {what} (`{name}`) | {} | {} | `{command}` ({profile} build) | {when} | {machine} |\n",
            budget.unwrap_or("—"),
            values.join("; "),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(scale: u64, figures: Value) -> Value {
        json!({"schema_version": 1, "runs": [{"scale": scale, "figures": figures}]})
    }

    #[test]
    fn ratios_and_verdicts_follow_the_direction() {
        let cur = doc(
            100000,
            json!({"first_scan_ms": 50, "first_scan_ingest_nodes_per_s": 200, "nodes": 10}),
        );
        let base = doc(
            100000,
            json!({"first_scan_ms": 100, "first_scan_ingest_nodes_per_s": 400, "nodes": 10, "gone_ms": 3}),
        );
        let rows = compare(&cur, &base);
        let get = |n: &str| rows.iter().find(|r| r.figure == n).unwrap();
        assert_eq!(get("first_scan_ms").ratio(), Some(0.5));
        assert_eq!(get("first_scan_ms").verdict(TOLERANCE), "better");
        assert_eq!(get("first_scan_ingest_nodes_per_s").verdict(TOLERANCE), "worse");
        assert_eq!(get("nodes").verdict(TOLERANCE), "-");
        assert_eq!(get("gone_ms").verdict(TOLERANCE), "gone");
        // Known figures first, in catalog order.
        assert_eq!(rows[0].figure, "nodes");
    }

    #[test]
    fn scales_read_as_powers_of_ten() {
        assert_eq!(scale_name(100_000), "10^5");
        assert_eq!(scale_name(10_000_000), "10^7");
        assert_eq!(scale_name(300), "300");
        assert_eq!(scale_name(1), "1");
    }

    #[test]
    fn documents_without_runs_or_with_text_figures_are_refused() {
        assert!(check(&json!({"schema_version": 1})).is_err());
        assert!(check(&json!({"runs": []})).is_err());
        assert!(check(&json!({"schema_version": 99, "runs": []})).is_err());
        assert!(check(&doc(5, json!({"a_ms": "fast"}))).is_err());
        assert!(check(&doc(5, json!({"a_ms": 1}))).is_ok());
    }
}
