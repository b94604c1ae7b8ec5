//! Manifests: read and checked before anything starts, applied (created, or merged
//! into what is there on a second `up`) in an order that makes them work on the first
//! pass, then the wait for their pods.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::core::GroupVersionKind;
use kube::discovery::{Discovery, Scope};
use serde_json::Value;

use super::error::SandboxError;

/// The field manager of the sandbox's applies.
const FIELD_MANAGER: &str = "kube-ovn-sandbox";

/// A kube-rs client for the kubeconfig at `path`.
pub(crate) async fn client(path: &Path) -> Result<kube::Client, SandboxError> {
    kube_ovn_cmd::kube_client::kube_client(Some(path))
        .await
        .map_err(|e| SandboxError::Kubeconfig {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })
}

/// One object of a manifest file.
#[derive(Debug, Clone)]
pub struct Manifest {
    /// The file.
    pub path: PathBuf,
    /// The document's position in it (from 1).
    pub index: usize,
    /// `apiVersion`.
    pub api_version: String,
    /// `kind`.
    pub kind: String,
    /// `metadata.name`.
    pub name: String,
    /// `metadata.namespace`, if given.
    pub namespace: Option<String>,
    /// The whole object.
    pub object: Value,
}

impl Manifest {
    fn display_name(&self) -> String {
        match &self.namespace {
            Some(ns) => format!("{ns}/{}", self.name),
            None => self.name.clone(),
        }
    }

    /// Applied first: what others refer to (namespaces before what is in them,
    /// subnets and pools before the pods that take their addresses, policies
    /// before the pods they guard, so no pod briefly runs unguarded).
    fn rank(&self) -> u8 {
        match self.kind.as_str() {
            "Namespace" | "CustomResourceDefinition" => 0,
            "Vpc" => 1,
            "Subnet" => 2,
            "IPPool" => 3,
            "NetworkPolicy" => 4,
            "Service" | "ConfigMap" => 5,
            _ => 6,
        }
    }
}

/// Reads every file; a file that is a directory stands for its `*.yaml` and `*.yml`
/// files in name order. Every document must be an object with `apiVersion`, `kind` and
/// `metadata.name`; empty documents are skipped.
pub fn load_manifests(paths: &[PathBuf]) -> Result<Vec<Manifest>, SandboxError> {
    let mut files = Vec::new();
    for path in paths {
        if path.is_dir() {
            let mut inside: Vec<PathBuf> = std::fs::read_dir(path)
                .map_err(|source| SandboxError::ManifestRead {
                    path: path.clone(),
                    source,
                })?
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "yaml" || x == "yml"))
                .collect();
            inside.sort();
            files.extend(inside);
        } else {
            files.push(path.clone());
        }
    }
    let mut out = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path).map_err(|source| SandboxError::ManifestRead {
            path: path.clone(),
            source,
        })?;
        let docs: Vec<Value> =
            serde_saphyr::from_multiple(&text).map_err(|e| SandboxError::ManifestInvalid {
                path: path.clone(),
                index: 1,
                reason: format!("not YAML: {e}"),
            })?;
        for (i, doc) in docs.into_iter().enumerate() {
            if doc.is_null() {
                continue;
            }
            out.push(manifest(&path, i + 1, doc)?);
        }
    }
    Ok(out)
}

fn manifest(path: &Path, index: usize, object: Value) -> Result<Manifest, SandboxError> {
    let invalid = |reason: &str| SandboxError::ManifestInvalid {
        path: path.to_path_buf(),
        index,
        reason: reason.to_string(),
    };
    if !object.is_object() {
        return Err(invalid("not a mapping (a Kubernetes object)"));
    }
    let field = |value: &Value, what: &str| {
        value
            .as_str()
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .ok_or_else(|| invalid(&format!("no {what}")))
    };
    let api_version = field(&object["apiVersion"], "apiVersion")?;
    let kind = field(&object["kind"], "kind")?;
    let name = field(&object["metadata"]["name"], "metadata.name")
        .map_err(|_| invalid(&format!("{kind} has no metadata.name")))?;
    let namespace = object["metadata"]["namespace"].as_str().map(str::to_string);
    Ok(Manifest {
        path: path.to_path_buf(),
        index,
        api_version,
        kind,
        name,
        namespace,
        object,
    })
}

/// Applies the manifests (create, or a JSON merge patch of what exists: re-applying
/// after an edit wins over an earlier `up`), in [`Manifest::rank`] order. Subnets are waited for
/// (bounded) before anything that may take an address from them.
pub async fn apply_manifests(
    client: &kube::Client,
    manifests: &[Manifest],
) -> Result<(), SandboxError> {
    let discovery = Discovery::new(client.clone())
        .run()
        .await
        .map_err(SandboxError::api("API discovery"))?;
    let mut ordered: Vec<&Manifest> = manifests.iter().collect();
    ordered.sort_by_key(|m| m.rank());
    let mut subnets = Vec::new();
    for m in ordered {
        if m.rank() > 3 && !subnets.is_empty() {
            wait_subnets(client, &std::mem::take(&mut subnets)).await;
        }
        apply_one(client, &discovery, m).await?;
        if m.kind == "Subnet" {
            subnets.push(m.name.clone());
        }
    }
    wait_subnets(client, &subnets).await;
    Ok(())
}

async fn apply_one(
    client: &kube::Client,
    discovery: &Discovery,
    m: &Manifest,
) -> Result<(), SandboxError> {
    let (group, version) = match m.api_version.split_once('/') {
        Some((g, v)) => (g, v),
        None => ("", m.api_version.as_str()),
    };
    let gvk = GroupVersionKind::gvk(group, version, &m.kind);
    let (resource, caps) =
        discovery
            .resolve_gvk(&gvk)
            .ok_or_else(|| SandboxError::UnknownKind {
                path: m.path.clone(),
                api_version: m.api_version.clone(),
                kind: m.kind.clone(),
            })?;
    let api: Api<DynamicObject> = match caps.scope {
        Scope::Namespaced => {
            let ns = m.namespace.as_deref().unwrap_or("default");
            Api::namespaced_with(client.clone(), ns, &resource)
        }
        Scope::Cluster => Api::all_with(client.clone(), &resource),
    };
    let fail = |source| SandboxError::Apply {
        kind: m.kind.clone(),
        name: m.display_name(),
        path: m.path.clone(),
        source: Box::new(source),
    };
    let object: DynamicObject =
        serde_json::from_value(m.object.clone()).map_err(|e| SandboxError::ManifestInvalid {
            path: m.path.clone(),
            index: m.index,
            reason: e.to_string(),
        })?;
    match api.create(&PostParams::default(), &object).await {
        Ok(_) => {}
        // there already: a JSON merge patch (lists replaced whole, so a pod's 80/TCP
        // and 80/UDP stay two ports, which a strategic merge keyed by containerPort
        // alone would fold into one)
        Err(kube::Error::Api(e)) if e.code == 409 => {
            let params = PatchParams {
                field_manager: Some(FIELD_MANAGER.into()),
                ..PatchParams::default()
            };
            api.patch(&m.name, &params, &Patch::Merge(&m.object))
                .await
                .map_err(fail)?;
        }
        Err(e) => return Err(fail(e)),
    }
    tracing::info!(kind = %m.kind, name = %m.display_name(), "applied");
    Ok(())
}

/// Waits (up to 30 s) until the controller has handled each subnet (its status is
/// written). A subnet it refuses stays without status: the pods then say why.
async fn wait_subnets(client: &kube::Client, names: &[String]) {
    let api: Api<kube_ovn_api::crd::Subnet> = Api::all(client.clone());
    let start = Instant::now();
    for name in names {
        while start.elapsed() < Duration::from_secs(30) {
            if let Ok(Some(s)) = api.get_opt(name).await {
                if s.status
                    .as_ref()
                    .is_some_and(|st| st.v4_available_ips.is_some())
                {
                    break;
                }
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

/// Waits until every pod is Running, up to `timeout`; then fails naming each pod that
/// is not, with its phase and the reason its status gives.
pub async fn wait_pods_running(
    client: &kube::Client,
    timeout: Duration,
) -> Result<Vec<Pod>, SandboxError> {
    let api: Api<Pod> = Api::all(client.clone());
    let start = Instant::now();
    loop {
        let pods = api
            .list(&ListParams::default())
            .await
            .map_err(SandboxError::api("listing pods"))?
            .items;
        let stuck: Vec<String> = pods
            .iter()
            .filter(|p| !is_running(p))
            .map(describe)
            .collect();
        if stuck.is_empty() {
            return Ok(pods);
        }
        if start.elapsed() > timeout {
            return Err(SandboxError::PodsStuck {
                secs: timeout.as_secs(),
                stuck: stuck.join(", "),
            });
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

fn is_running(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .is_some_and(|p| p == "Running")
}

fn describe(pod: &Pod) -> String {
    let id = format!(
        "{}/{}",
        pod.metadata.namespace.as_deref().unwrap_or_default(),
        pod.metadata.name.as_deref().unwrap_or_default()
    );
    let status = pod.status.clone().unwrap_or_default();
    let phase = status.phase.unwrap_or_else(|| "Pending".into());
    let node = pod
        .spec
        .as_ref()
        .and_then(|s| s.node_name.clone())
        .unwrap_or_else(|| "unscheduled".into());
    let reason = status
        .conditions
        .iter()
        .flatten()
        .filter_map(|c| c.message.clone().or_else(|| c.reason.clone()))
        .chain(status.message)
        .next()
        .unwrap_or_default();
    if reason.is_empty() {
        format!("{id} ({phase} on {node})")
    } else {
        format!("{id} ({phase} on {node}: {reason})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn manifests_load_in_file_and_document_order_and_rank_puts_namespaces_first() {
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            "b.yaml",
            "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: x}\n",
        );
        write(
            dir.path(),
            "a.yaml",
            "apiVersion: v1\nkind: Namespace\nmetadata: {name: x}\n---\n---\napiVersion: kubeovn.io/v1\nkind: Subnet\nmetadata: {name: s}\n",
        );
        write(dir.path(), "notes.txt", "not a manifest");
        let all = load_manifests(&[dir.path().to_path_buf()]).unwrap();
        let kinds: Vec<&str> = all.iter().map(|m| m.kind.as_str()).collect();
        assert_eq!(kinds, ["Namespace", "Subnet", "Pod"]);
        assert_eq!(all[2].namespace.as_deref(), Some("x"));
        assert!(all[0].rank() < all[1].rank() && all[1].rank() < all[2].rank());
    }

    #[test]
    fn a_bad_manifest_names_its_file_and_document() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(
            dir.path(),
            "bad.yaml",
            "apiVersion: v1\nkind: Namespace\nmetadata: {name: x}\n---\napiVersion: v1\nkind: Pod\nmetadata: {}\n",
        );
        let err = load_manifests(std::slice::from_ref(&path))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("bad.yaml") && err.contains("document 2"),
            "{err}"
        );
        assert!(err.contains("Pod has no metadata.name"), "{err}");
        let missing = dir.path().join("missing.yaml");
        let err = load_manifests(&[missing]).unwrap_err().to_string();
        assert!(err.contains("missing.yaml"), "{err}");
        let not_yaml = write(dir.path(), "list.yaml", "- a\n- b\n");
        let err = load_manifests(&[not_yaml]).unwrap_err().to_string();
        assert!(err.contains("not a mapping"), "{err}");
    }
}
