//! Cell formatting as kubectl's server-side printers do it.

use serde_json::Value;

/// `k8s.io/apimachinery/pkg/util/duration.HumanDuration`: `45s`, `5m30s`,
/// `12m`, `3h20m`, `20h`, `3d4h`, `40d`, `2y30d`, `9y`.
pub fn human_age(seconds: i64) -> String {
    if seconds < -1 {
        return "<invalid>".into();
    }
    if seconds < 0 {
        return "0s".into();
    }
    if seconds < 60 * 2 {
        return format!("{seconds}s");
    }
    let minutes = seconds / 60;
    if minutes < 10 {
        let s = seconds % 60;
        return if s == 0 {
            format!("{minutes}m")
        } else {
            format!("{minutes}m{s}s")
        };
    }
    if minutes < 60 * 3 {
        return format!("{minutes}m");
    }
    let hours = minutes / 60;
    if hours < 8 {
        let m = minutes % 60;
        return if m == 0 {
            format!("{hours}h")
        } else {
            format!("{hours}h{m}m")
        };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    let days = hours / 24;
    if hours < 24 * 8 {
        let h = hours % 24;
        return if h == 0 {
            format!("{days}d")
        } else {
            format!("{days}d{h}h")
        };
    }
    if hours < 24 * 365 * 2 {
        return format!("{days}d");
    }
    let years = days / 365;
    if hours < 24 * 365 * 8 {
        let d = days % 365;
        return if d == 0 {
            format!("{years}y")
        } else {
            format!("{years}y{d}d")
        };
    }
    format!("{years}y")
}

/// `translateTimestampSince`: the age of an RFC 3339 timestamp, or
/// `<unknown>` when there is none.
pub fn age_of(timestamp: &Value) -> String {
    match timestamp
        .as_str()
        .and_then(|t| t.parse::<jiff::Timestamp>().ok())
    {
        Some(t) => human_age(jiff::Timestamp::now().as_second() - t.as_second()),
        None => "<unknown>".into(),
    }
}

/// A string field, or `<none>` when missing or empty.
pub fn or_none(v: &Value) -> String {
    match v.as_str() {
        Some(s) if !s.is_empty() => s.to_string(),
        _ => "<none>".into(),
    }
}

/// `labels.FormatLabels`: `k=v` sorted by key, `<none>` when empty.
pub fn format_labels(map: &Value) -> String {
    let mut pairs: Vec<String> = map
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
        .collect();
    pairs.sort();
    if pairs.is_empty() {
        "<none>".into()
    } else {
        pairs.join(",")
    }
}

/// `metav1.FormatLabelSelector`: matchLabels then matchExpressions, `<none>`
/// for an empty selector.
pub fn format_selector(selector: &Value) -> String {
    let mut parts: Vec<String> = Vec::new();
    let labels = format_labels(&selector["matchLabels"]);
    if labels != "<none>" {
        parts.push(labels);
    }
    for expr in selector["matchExpressions"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let key = expr["key"].as_str().unwrap_or_default();
        let values: Vec<&str> = expr["values"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        parts.push(match expr["operator"].as_str().unwrap_or_default() {
            "In" => format!("{key} in ({})", values.join(",")),
            "NotIn" => format!("{key} notin ({})", values.join(",")),
            "Exists" => key.to_string(),
            "DoesNotExist" => format!("!{key}"),
            op => format!("{key} {op} ({})", values.join(",")),
        });
    }
    if parts.is_empty() {
        "<none>".into()
    } else {
        parts.join(",")
    }
}

/// Up to three entries, then ` + N more...` (endpoints, as kubectl).
pub fn first_three(items: &[String], empty: &str) -> String {
    match items.len() {
        0 => empty.into(),
        n if n <= 3 => items.join(","),
        n => format!("{} + {} more...", items[..3].join(","), n - 3),
    }
}
