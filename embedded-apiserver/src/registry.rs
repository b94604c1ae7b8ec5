//! The resource registry: which `group/version/resource` triples are served.
//!
//! Objects are stored generically (as JSON); what differs between kinds is only
//! the data held here: the `Kind`, whether it is namespaced, whether it has a
//! `/status` subresource, and how to name it. Built-in kinds are listed in
//! [`Registry::builtin`]; a `CustomResourceDefinition` adds one entry per
//! served version when it is stored ([`ResourceType::from_crd`]).

use serde_json::Value;

/// One served resource type (one row of an `APIResourceList`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceType {
    /// API group (`""` for the core group).
    pub group: String,
    /// Version within the group (`v1`).
    pub version: String,
    /// Plural resource name used in URLs (`pods`).
    pub plural: String,
    /// Singular name (`pod`).
    pub singular: String,
    /// Kind (`Pod`).
    pub kind: String,
    /// Namespaced or cluster-scoped.
    pub namespaced: bool,
    /// Whether `/status` is a separate subresource: writes to the main
    /// resource then keep the stored status, and `/status` writes keep the rest.
    pub has_status: bool,
    /// kubectl short names (`po`).
    pub short_names: Vec<String>,
    /// Categories the type belongs to (`all`: what `kubectl get all` lists).
    pub categories: Vec<String>,
    /// Defined by a CRD (as opposed to built in); CRDs get JSON merge
    /// semantics for strategic merge patches and atomic lists in apply.
    pub custom: bool,
    /// A CRD version's `additionalPrinterColumns` (empty for built-ins).
    pub printer_columns: Vec<crate::table::PrinterColumn>,
}

impl ResourceType {
    fn builtin(
        gv: &str,
        plural: &str,
        kind: &str,
        namespaced: bool,
        has_status: bool,
        short: &[&str],
    ) -> Self {
        let (group, version) = split_group_version(gv);
        ResourceType {
            group: group.to_string(),
            version: version.to_string(),
            plural: plural.to_string(),
            singular: kind.to_ascii_lowercase(),
            kind: kind.to_string(),
            namespaced,
            has_status,
            short_names: short.iter().map(|s| s.to_string()).collect(),
            categories: builtin_categories(group, plural),
            custom: false,
            printer_columns: Vec::new(),
        }
    }

    /// Whether objects of this type carry `metadata.generation` (1 on create, one more
    /// per change outside metadata and status), as Kubernetes' registry strategies
    /// set it: custom resources, CRDs, Pods, the apps workloads, NetworkPolicies and
    /// EndpointSlices do; Namespaces, Nodes, Services, Endpoints, ConfigMaps, Secrets,
    /// ServiceAccounts, Events and Leases have none.
    pub fn tracks_generation(&self) -> bool {
        self.custom
            || matches!(
                (self.group.as_str(), self.plural.as_str()),
                ("", "pods")
                    | ("apps", _)
                    | ("discovery.k8s.io", "endpointslices")
                    | ("networking.k8s.io", "networkpolicies")
                    | ("apiextensions.k8s.io", "customresourcedefinitions")
            )
    }

    /// `apiVersion` as written in objects (`v1`, `apps/v1`).
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// The group/version/plural triple this type is served under.
    pub fn matches(&self, group: &str, version: &str, plural: &str) -> bool {
        self.group == group && self.version == version && self.plural == plural
    }

    /// The served versions of a stored CustomResourceDefinition.
    pub fn from_crd(crd: &Value) -> Vec<ResourceType> {
        let spec = &crd["spec"];
        let names = &spec["names"];
        let str_of = |v: &Value| v.as_str().unwrap_or_default().to_string();
        let plural = str_of(&names["plural"]);
        let kind = str_of(&names["kind"]);
        let singular = match names["singular"].as_str() {
            Some(s) if !s.is_empty() => s.to_string(),
            _ => kind.to_ascii_lowercase(),
        };
        let strings = |v: &Value| -> Vec<String> {
            v.as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|s| s.as_str())
                        .map(String::from)
                        .collect()
                })
                .unwrap_or_default()
        };
        let short_names = strings(&names["shortNames"]);
        let categories = strings(&names["categories"]);
        let namespaced = spec["scope"].as_str() == Some("Namespaced");
        let versions = spec["versions"].as_array().cloned().unwrap_or_default();
        versions
            .iter()
            .filter(|v| v["served"].as_bool().unwrap_or(true))
            .map(|v| ResourceType {
                group: str_of(&spec["group"]),
                version: str_of(&v["name"]),
                plural: plural.clone(),
                singular: singular.clone(),
                kind: kind.clone(),
                namespaced,
                has_status: v["subresources"]["status"].is_object(),
                short_names: short_names.clone(),
                categories: categories.clone(),
                custom: true,
                printer_columns: crate::table::PrinterColumn::from_crd_version(v),
            })
            .collect()
    }
}

/// The built-in types in the `all` category, as kube-apiserver lists them (those of
/// them this server serves): what `kubectl get all` shows.
fn builtin_categories(group: &str, plural: &str) -> Vec<String> {
    let all = matches!(
        (group, plural),
        ("", "pods" | "services")
            | (
                "apps",
                "deployments" | "replicasets" | "daemonsets" | "statefulsets"
            )
    );
    if all {
        vec!["all".to_string()]
    } else {
        Vec::new()
    }
}

/// Splits `apps/v1` into (`apps`, `v1`) and `v1` into (``, `v1`).
pub fn split_group_version(gv: &str) -> (&str, &str) {
    match gv.split_once('/') {
        Some((g, v)) => (g, v),
        None => ("", gv),
    }
}

const NS: bool = true;
const CLUSTER: bool = false;
const STATUS: bool = true;
const NO_STATUS: bool = false;

/// (apiVersion, plural, kind, namespaced, has /status, short names)
type BuiltinRow = (
    &'static str,
    &'static str,
    &'static str,
    bool,
    bool,
    &'static [&'static str],
);

#[rustfmt::skip]
const BUILTIN: &[BuiltinRow] = &[
    ("v1", "namespaces", "Namespace", CLUSTER, STATUS, &["ns"]),
    ("v1", "pods", "Pod", NS, STATUS, &["po"]),
    ("v1", "nodes", "Node", CLUSTER, STATUS, &["no"]),
    ("v1", "services", "Service", NS, STATUS, &["svc"]),
    ("v1", "endpoints", "Endpoints", NS, NO_STATUS, &["ep"]),
    ("v1", "configmaps", "ConfigMap", NS, NO_STATUS, &["cm"]),
    ("v1", "secrets", "Secret", NS, NO_STATUS, &[]),
    ("v1", "serviceaccounts", "ServiceAccount", NS, NO_STATUS, &["sa"]),
    ("v1", "events", "Event", NS, NO_STATUS, &["ev"]),
    ("apps/v1", "deployments", "Deployment", NS, STATUS, &["deploy"]),
    ("apps/v1", "replicasets", "ReplicaSet", NS, STATUS, &["rs"]),
    ("apps/v1", "daemonsets", "DaemonSet", NS, STATUS, &["ds"]),
    ("apps/v1", "statefulsets", "StatefulSet", NS, STATUS, &["sts"]),
    ("discovery.k8s.io/v1", "endpointslices", "EndpointSlice", NS, NO_STATUS, &[]),
    ("networking.k8s.io/v1", "networkpolicies", "NetworkPolicy", NS, STATUS, &["netpol"]),
    ("coordination.k8s.io/v1", "leases", "Lease", NS, NO_STATUS, &[]),
    ("apiextensions.k8s.io/v1", "customresourcedefinitions", "CustomResourceDefinition", CLUSTER, STATUS, &["crd", "crds"]),
];

/// All served resource types.
#[derive(Debug, Clone)]
pub struct Registry {
    types: Vec<ResourceType>,
}

impl Registry {
    /// The built-in kinds this project uses.
    pub fn builtin() -> Self {
        let types = BUILTIN
            .iter()
            .map(|(gv, plural, kind, scope, status, short)| {
                ResourceType::builtin(gv, plural, kind, *scope == NS, *status == STATUS, short)
            })
            .collect();
        Registry { types }
    }

    /// Finds the type served at `group/version/plural`.
    pub fn find(&self, group: &str, version: &str, plural: &str) -> Option<&ResourceType> {
        self.types
            .iter()
            .find(|t| t.matches(group, version, plural))
    }

    /// Any served version of `group`/`plural` (objects are stored once per
    /// group and resource, whatever version they were written through).
    pub fn find_any_version(&self, group: &str, plural: &str) -> Option<&ResourceType> {
        self.types
            .iter()
            .find(|t| t.group == group && t.plural == plural)
    }

    /// All served types.
    pub fn types(&self) -> &[ResourceType] {
        &self.types
    }

    /// Adds (or replaces) the types of a CRD named `group`/`plural`.
    pub fn register_crd(&mut self, crd: &Value) {
        let new = ResourceType::from_crd(crd);
        if let Some(first) = new.first() {
            let (group, plural) = (first.group.clone(), first.plural.clone());
            self.unregister(&group, &plural);
        }
        self.types.extend(new);
    }

    /// Removes every version of `group`/`plural`.
    pub fn unregister(&mut self, group: &str, plural: &str) {
        self.types
            .retain(|t| !(t.custom && t.group == group && t.plural == plural));
    }

    /// The groups other than core, in first-seen order, with their versions.
    pub fn groups(&self) -> Vec<(String, Vec<String>)> {
        let mut groups: Vec<(String, Vec<String>)> = Vec::new();
        for t in self.types.iter().filter(|t| !t.group.is_empty()) {
            match groups.iter_mut().find(|(g, _)| *g == t.group) {
                Some((_, versions)) if !versions.contains(&t.version) => {
                    versions.push(t.version.clone())
                }
                Some(_) => {}
                None => groups.push((t.group.clone(), vec![t.version.clone()])),
            }
        }
        groups
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn crd_registers_served_versions_only() {
        let crd = json!({
            "spec": {
                "group": "kubeovn.io",
                "scope": "Cluster",
                "names": {"plural": "subnets", "singular": "subnet", "kind": "Subnet"},
                "versions": [
                    {"name": "v1", "served": true, "subresources": {"status": {}}},
                    {"name": "v0", "served": false}
                ]
            }
        });
        let mut registry = Registry::builtin();
        registry.register_crd(&crd);
        let subnet = registry.find("kubeovn.io", "v1", "subnets").unwrap();
        assert!(!subnet.namespaced);
        assert!(subnet.has_status);
        assert!(registry.find("kubeovn.io", "v0", "subnets").is_none());
        assert!(registry
            .groups()
            .iter()
            .any(|(g, v)| g == "kubeovn.io" && v == &["v1"]));
        registry.unregister("kubeovn.io", "subnets");
        assert!(registry.find("kubeovn.io", "v1", "subnets").is_none());
    }
}
