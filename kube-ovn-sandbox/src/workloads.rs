//! What kube-controller-manager's Deployment and ReplicaSet controllers do,
//! in their simplest form: a Deployment owns one ReplicaSet per pod
//! template (named by the template's hash, older ones scaled to zero), a
//! ReplicaSet owns `replicas` pods made from its template. Owners are
//! `ownerReferences` with `controller: true`, so deleting a Deployment takes
//! its ReplicaSets and pods with it (the API server cascades).

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::Resource;
use serde_json::json;

/// The label that ties a ReplicaSet and its pods to one template.
pub const POD_TEMPLATE_HASH: &str = "pod-template-hash";

fn controller_ref<K: Resource<DynamicType = ()>>(owner: &K) -> OwnerReference {
    OwnerReference {
        api_version: K::api_version(&()).into_owned(),
        kind: K::kind(&()).into_owned(),
        name: owner.meta().name.clone().unwrap_or_default(),
        uid: owner.meta().uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

fn owned_by(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta, uid: &str) -> bool {
    meta.owner_references
        .iter()
        .flatten()
        .any(|r| r.controller == Some(true) && r.uid == uid)
}

/// FNV-1a of the template, spelled in kube's safe alphabet (no vowels).
pub fn template_hash(template: &serde_json::Value) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let text = serde_json::to_string(template).unwrap_or_default();
    let mut hash: u32 = 0x811c_9dc5;
    for b in text.bytes() {
        hash ^= u32::from(b);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    let mut out = String::new();
    while out.len() < 10 {
        out.push(ALPHABET[(hash % ALPHABET.len() as u32) as usize] as char);
        hash /= ALPHABET.len() as u32;
        if hash == 0 {
            hash = 0x9e37_79b9 ^ out.len() as u32;
        }
    }
    out
}

/// One pass over every Deployment.
pub async fn reconcile_deployments(client: &kube::Client) -> Result<(), kube::Error> {
    let all: Api<Deployment> = Api::all(client.clone());
    for d in all.list(&ListParams::default()).await?.items {
        if d.metadata.deletion_timestamp.is_none() {
            reconcile_deployment(client, &d).await?;
        }
    }
    Ok(())
}

async fn reconcile_deployment(client: &kube::Client, d: &Deployment) -> Result<(), kube::Error> {
    let ns = d.metadata.namespace.clone().unwrap_or_default();
    let name = d.metadata.name.clone().unwrap_or_default();
    let uid = d.metadata.uid.clone().unwrap_or_default();
    let spec = d.spec.clone();
    let replicas = spec.replicas.unwrap_or(1);
    let hash = template_hash(&serde_json::to_value(&spec.template).unwrap_or_default());
    let current_name = format!("{name}-{hash}");
    let api: Api<ReplicaSet> = Api::namespaced(client.clone(), &ns);
    let owned: Vec<ReplicaSet> = api
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .filter(|rs| owned_by(&rs.metadata, &uid))
        .collect();
    let scale = |n: i32| json!({"spec": {"replicas": n}});
    for rs in &owned {
        let rs_name = rs.metadata.name.clone().unwrap_or_default();
        let want = if rs_name == current_name { replicas } else { 0 };
        if rs.spec.replicas != Some(want) {
            api.patch(
                &rs_name,
                &PatchParams::default(),
                &Patch::Merge(&scale(want)),
            )
            .await?;
        }
    }
    let current = owned
        .iter()
        .find(|rs| rs.metadata.name.as_deref() == Some(current_name.as_str()));
    if current.is_none() {
        let rs = new_replica_set(d, &current_name, &hash, replicas);
        api.create(&PostParams::default(), &rs).await?;
    }
    let count = |f: fn(&ReplicaSet) -> Option<i32>| owned.iter().filter_map(f).sum::<i32>();
    let ready = current
        .and_then(|rs| rs.status.as_ref()?.ready_replicas)
        .unwrap_or(0);
    let updated = current
        .and_then(|rs| Some(rs.status.as_ref()?.replicas))
        .unwrap_or(0);
    let status = json!({"status": {
        "observedGeneration": d.metadata.generation,
        "replicas": count(|rs| Some(rs.status.as_ref()?.replicas)),
        "updatedReplicas": updated,
        "readyReplicas": ready,
        "availableReplicas": ready,
        "unavailableReplicas": (replicas - ready).max(0),
        "conditions": [{"type": "Available",
                        "status": if ready >= replicas { "True" } else { "False" },
                        "reason": "MinimumReplicasAvailable"}],
    }});
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &ns);
    deployments
        .patch_status(&name, &PatchParams::default(), &Patch::Merge(&status))
        .await?;
    Ok(())
}

fn new_replica_set(d: &Deployment, name: &str, hash: &str, replicas: i32) -> ReplicaSet {
    let spec = d.spec.clone();
    let mut template = spec.template.clone();
    let mut labels = template
        .metadata
        .as_ref()
        .and_then(|m| m.labels.clone())
        .unwrap_or_default();
    labels.insert(POD_TEMPLATE_HASH.into(), hash.into());
    template
        .metadata
        .get_or_insert_with(Default::default)
        .labels = Some(labels.clone());
    let mut selector = spec.selector.clone();
    selector
        .match_labels
        .get_or_insert_with(Default::default)
        .insert(POD_TEMPLATE_HASH.into(), hash.into());
    let mut rs = ReplicaSet::default();
    rs.metadata.name = Some(name.into());
    rs.metadata.namespace = d.metadata.namespace.clone();
    rs.metadata.labels = Some(labels);
    rs.metadata.owner_references = Some(vec![controller_ref(d)]);
    rs.spec = k8s_openapi::api::apps::v1::ReplicaSetSpec {
        replicas: Some(replicas),
        selector,
        template: Some(template),
        ..Default::default()
    };
    rs
}

fn is_ready(p: &Pod) -> bool {
    p.status
        .iter()
        .flat_map(|s| s.conditions.iter().flatten())
        .any(|c| c.type_ == "Ready" && c.status == "True")
}

/// One pass over every ReplicaSet: create or delete pods to match
/// `replicas` (unscheduled, then unready, then newest pods go first).
pub async fn reconcile_replica_sets(client: &kube::Client) -> Result<(), kube::Error> {
    let all: Api<ReplicaSet> = Api::all(client.clone());
    for rs in all.list(&ListParams::default()).await?.items {
        if rs.metadata.deletion_timestamp.is_none() {
            reconcile_replica_set(client, &rs).await?;
        }
    }
    Ok(())
}

async fn reconcile_replica_set(client: &kube::Client, rs: &ReplicaSet) -> Result<(), kube::Error> {
    let ns = rs.metadata.namespace.clone().unwrap_or_default();
    let name = rs.metadata.name.clone().unwrap_or_default();
    let uid = rs.metadata.uid.clone().unwrap_or_default();
    let spec = rs.spec.clone();
    let want = usize::try_from(spec.replicas.unwrap_or(1)).unwrap_or(0);
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
    let mut active: Vec<Pod> = pods
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .filter(|p| owned_by(&p.metadata, &uid) && p.metadata.deletion_timestamp.is_none())
        .collect();
    while active.len() < want {
        let template = spec.template.clone().unwrap_or_default();
        let mut pod = Pod {
            metadata: template.metadata.unwrap_or_default(),
            spec: template.spec,
            status: None,
        };
        pod.metadata.generate_name = Some(format!("{name}-"));
        pod.metadata.namespace = Some(ns.clone());
        pod.metadata.owner_references = Some(vec![controller_ref(rs)]);
        active.push(pods.create(&PostParams::default(), &pod).await?);
    }
    if active.len() > want {
        // Keep the best: scheduled, ready, oldest.
        active.sort_by_key(|p| {
            let scheduled = p.spec.as_ref().is_some_and(|s| s.node_name.is_some());
            (
                !scheduled,
                !is_ready(p),
                std::cmp::Reverse(p.metadata.creation_timestamp.clone()),
            )
        });
        for extra in active.split_off(want) {
            let extra_name = extra.metadata.name.clone().unwrap_or_default();
            pods.delete(&extra_name, &DeleteParams::default()).await?;
        }
    }
    let ready = active.iter().filter(|p| is_ready(p)).count();
    let status = json!({"status": {
        "observedGeneration": rs.metadata.generation,
        "replicas": active.len(),
        "fullyLabeledReplicas": active.len(),
        "readyReplicas": ready,
        "availableReplicas": ready,
    }});
    let api: Api<ReplicaSet> = Api::namespaced(client.clone(), &ns);
    api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&status))
        .await?;
    Ok(())
}
