//! The table: one row per figure, medians, targets and bounds, printed and written as TSV for
//! `js/bench/table.mjs`.

use crate::NO_GC;

/// One line of the table.
pub struct Row {
    pub workload: &'static str,
    pub engine: &'static str,
    pub path: String,
    pub ops: u64,
    pub unit: &'static str,
    /// Median nanoseconds per operation.
    pub ns: f64,
    /// Upper bound for `ns` (W1/W2 component rows), if any.
    pub bound: Option<f64>,
    /// Minimum operations per second (or, for W6, maximum µs per instance), if any.
    pub target: Option<Target>,
    pub note: String,
}

#[derive(Clone, Copy)]
pub enum Target {
    OpsPerSec(f64),
    MaxNs(f64),
}

impl Row {
    pub fn met(&self) -> &'static str {
        let ok = match self.target {
            None => return "",
            Some(Target::OpsPerSec(t)) => 1e9 / self.ns >= t,
            Some(Target::MaxNs(t)) => self.ns <= t,
        } && self.bound.is_none_or(|b| self.ns <= b);
        if ok { "met" } else { "MISSED" }
    }

    pub fn target_text(&self) -> String {
        match self.target {
            None => String::new(),
            Some(Target::OpsPerSec(t)) => format!(">= {}/s", si(t)),
            Some(Target::MaxNs(t)) => format!("<= {:.0} us", t / 1e3),
        }
    }
}

pub fn si(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.2}M", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.1}k", v / 1e3)
    } else {
        format!("{v:.0}")
    }
}

pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Runs `f` `runs` times; each returns its measured nanoseconds; the median per op.
pub fn measure(runs: usize, ops: u64, mut f: impl FnMut() -> f64) -> f64 {
    median((0..runs).map(|_| f() / ops as f64).collect())
}

pub fn rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |pages| pages * 4096)
}

pub fn print(rows: &[Row]) {
    let header = [
        "workload", "engine", "path", "ops", "ns/op", "ops/s", "x native", "bound ns", "target",
        "", "note",
    ];
    let mut lines: Vec<[String; 11]> = vec![header.map(String::from)];
    for r in rows {
        let native = rows
            .iter()
            .find(|n| {
                n.workload == r.workload
                    && n.engine == "native"
                    && n.path.contains(NO_GC) == r.path.contains(NO_GC)
            })
            .map(|n| n.ns);
        lines.push([
            r.workload.into(),
            r.engine.into(),
            r.path.clone(),
            format!("{} {}", si(r.ops as f64), r.unit),
            format!("{:.1}", r.ns),
            si(1e9 / r.ns),
            match native {
                Some(n) if r.engine != "native" => format!("{:.2}", r.ns / n),
                _ => String::new(),
            },
            r.bound.map(|b| format!("{b:.0}")).unwrap_or_default(),
            r.target_text(),
            r.met().into(),
            r.note.clone(),
        ]);
    }
    let mut widths = [0usize; 11];
    for l in &lines {
        for (w, c) in widths.iter_mut().zip(l) {
            *w = (*w).max(c.chars().count());
        }
    }
    for l in &lines {
        let cells: Vec<String> = l
            .iter()
            .zip(widths)
            .enumerate()
            .map(|(i, (c, w))| {
                if (3..=7).contains(&i) {
                    format!("{c:>w$}")
                } else {
                    format!("{c:<w$}")
                }
            })
            .collect();
        println!("{}", cells.join(" | ").trim_end());
    }
}

pub fn write_tsv(rows: &[Row], path: &str) {
    let mut out = String::new();
    for r in rows {
        let (tkind, tval) = match r.target {
            None => ("", 0.0),
            Some(Target::OpsPerSec(v)) => ("min_ops", v),
            Some(Target::MaxNs(v)) => ("max_ns", v),
        };
        out.push_str(&format!(
            "{}\t{}\t{}\t{}\t{}\t{:.3}\t{}\t{}\t{}\t{}\n",
            r.workload,
            r.engine,
            r.path,
            r.ops,
            r.unit,
            r.ns,
            r.bound.map(|b| format!("{b:.3}")).unwrap_or_default(),
            tkind,
            tval,
            r.note
        ));
    }
    std::fs::write(path, out).expect("write BENCH_OUT");
}
