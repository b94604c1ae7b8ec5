//! Percentiles of a set of samples, one line per workload.

use std::time::Duration;

pub struct Row {
    what: String,
    took: Vec<Duration>,
}

impl Row {
    pub fn new(what: impl Into<String>, took: Vec<Duration>) -> Row {
        Row {
            what: what.into(),
            took,
        }
    }
}

/// The sample at quantile `q` (nearest rank) of sorted `ms`.
fn at(ms: &[f64], q: f64) -> f64 {
    ms[((ms.len() as f64 * q).ceil() as usize).clamp(1, ms.len()) - 1]
}

pub fn report(rows: &[Row]) {
    let width = rows.iter().map(|r| r.what.len()).max().unwrap_or(0);
    for row in rows {
        let mut ms: Vec<f64> = row.took.iter().map(|d| d.as_secs_f64() * 1000.0).collect();
        ms.sort_by(f64::total_cmp);
        if ms.is_empty() {
            println!("{:<width$}  n=0", row.what);
            continue;
        }
        println!(
            "{:<width$}  n={:<4} p50 {:>8.1} ms  p99 {:>8.1} ms  min {:>8.1}  max {:>8.1}",
            row.what,
            ms.len(),
            at(&ms, 0.50),
            at(&ms, 0.99),
            ms[0],
            ms[ms.len() - 1],
        );
    }
}
