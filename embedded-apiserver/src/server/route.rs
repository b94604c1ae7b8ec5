//! URL layout of the Kubernetes API, parsed into a [`Route`].
//!
//! ```text
//! /api/v1/{plural}[/{name}[/{sub}]]                       core, cluster-scoped (or all namespaces)
//! /api/v1/namespaces/{ns}/{plural}[/{name}[/{sub}]]       core, namespaced
//! /apis/{group}/{version}/...                             the same under a group
//! /api, /api/v1, /apis, /apis/{group}, /apis/{g}/{v}      discovery
//! ```
//! `/api/v1/namespaces/{name}/status` is the Namespace's own status, not a
//! resource called "status" (no resource has that name).

use std::collections::HashMap;

/// A resource request path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourcePath {
    /// API group ("" for core).
    pub group: String,
    /// Version.
    pub version: String,
    /// Namespace in the path, if any.
    pub namespace: Option<String>,
    /// Plural resource.
    pub plural: String,
    /// Object name, if any.
    pub name: Option<String>,
    /// Subresource (`status`), if any.
    pub sub: Option<String>,
}

/// What a request path addresses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// `/`
    Root,
    /// `/version`
    Version,
    /// `/healthz`, `/readyz`, `/livez`
    Health,
    /// `/api`
    CoreVersions,
    /// `/apis`
    Groups,
    /// `/apis/{group}`
    Group(String),
    /// `/api/v1` or `/apis/{group}/{version}`
    Resources(String, String),
    /// A resource or object.
    Resource(ResourcePath),
    /// `/openapi/v3`
    OpenApiIndex,
    /// `/openapi/v3/{api/v1 | apis/G/V}`
    OpenApiDocument(String),
    /// Anything else (including `/openapi/v2`, which kubectl treats as optional).
    Unknown,
}

/// Decodes `%XX` escapes (and `+` as space when `plus_is_space`).
pub fn percent_decode(s: &str, plus_is_space: bool) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                (Some(h), Some(l)) => {
                    out.push((h * 16 + l) as u8);
                    i += 3;
                    continue;
                }
                _ => out.push(b'%'),
            },
            b'+' if plus_is_space => out.push(b' '),
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Parses a query string into a map (last value wins).
pub fn parse_query(query: Option<&str>) -> HashMap<String, String> {
    query
        .unwrap_or_default()
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (percent_decode(k, true), percent_decode(v, true))
        })
        .collect()
}

/// Parses a request path.
pub fn parse_path(path: &str) -> Route {
    let segments: Vec<String> = path
        .split('/')
        .filter(|s| !s.is_empty())
        .map(|s| percent_decode(s, false))
        .collect();
    let s: Vec<&str> = segments.iter().map(String::as_str).collect();
    match s.as_slice() {
        [] => Route::Root,
        ["version"] => Route::Version,
        ["healthz"] | ["readyz"] | ["livez"] => Route::Health,
        ["api"] => Route::CoreVersions,
        ["api", v] => Route::Resources(String::new(), v.to_string()),
        ["api", v, rest @ ..] => resource("", v, rest),
        ["apis"] => Route::Groups,
        ["apis", g] => Route::Group(g.to_string()),
        ["apis", g, v] => Route::Resources(g.to_string(), v.to_string()),
        ["apis", g, v, rest @ ..] => resource(g, v, rest),
        ["openapi", "v3"] => Route::OpenApiIndex,
        ["openapi", "v3", rest @ ..] => Route::OpenApiDocument(rest.join("/")),
        _ => Route::Unknown,
    }
}

fn resource(group: &str, version: &str, rest: &[&str]) -> Route {
    let own_namespace_sub = rest.len() == 3 && matches!(rest[2], "status" | "finalize");
    let (namespace, tail) = if rest[0] == "namespaces" && rest.len() >= 3 && !own_namespace_sub {
        (Some(rest[1].to_string()), &rest[2..])
    } else {
        (None, rest)
    };
    if tail.len() > 3 {
        return Route::Unknown;
    }
    Route::Resource(ResourcePath {
        group: group.to_string(),
        version: version.to_string(),
        namespace,
        plural: tail[0].to_string(),
        name: tail.get(1).map(|s| s.to_string()),
        sub: tail.get(2).map(|s| s.to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rp(g: &str, ns: Option<&str>, plural: &str, name: Option<&str>, sub: Option<&str>) -> Route {
        Route::Resource(ResourcePath {
            group: g.into(),
            version: "v1".into(),
            namespace: ns.map(Into::into),
            plural: plural.into(),
            name: name.map(Into::into),
            sub: sub.map(Into::into),
        })
    }

    #[test]
    fn paths() {
        assert_eq!(parse_path("/api/v1/pods"), rp("", None, "pods", None, None));
        assert_eq!(
            parse_path("/api/v1/namespaces"),
            rp("", None, "namespaces", None, None)
        );
        assert_eq!(
            parse_path("/api/v1/namespaces/a"),
            rp("", None, "namespaces", Some("a"), None)
        );
        assert_eq!(
            parse_path("/api/v1/namespaces/a/status"),
            rp("", None, "namespaces", Some("a"), Some("status"))
        );
        assert_eq!(
            parse_path("/api/v1/namespaces/a/pods"),
            rp("", Some("a"), "pods", None, None)
        );
        assert_eq!(
            parse_path("/api/v1/namespaces/a/pods/p/status"),
            rp("", Some("a"), "pods", Some("p"), Some("status"))
        );
        assert_eq!(
            parse_path("/apis/kubeovn.io/v1/subnets/s"),
            rp("kubeovn.io", None, "subnets", Some("s"), None)
        );
        assert_eq!(
            parse_path("/apis/kubeovn.io"),
            Route::Group("kubeovn.io".into())
        );
        assert_eq!(parse_path("/openapi/v2"), Route::Unknown);
    }

    #[test]
    fn query_decoding() {
        let q = parse_query(Some("labelSelector=app%3Dweb%2Ctier+in+(a)&watch=1"));
        assert_eq!(q["labelSelector"], "app=web,tier in (a)");
        assert_eq!(q["watch"], "1");
    }
}
