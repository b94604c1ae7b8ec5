//! StatefulSet pods keep their address across recreation under the same name, as in
//! Kube-OVN (`isStatefulSetPod`, `isStatefulSetPodToDel`): a deleted pod's address is
//! kept while its StatefulSet exists (same UID, not being deleted) and the pod's ordinal
//! is below `spec.replicas`.

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;

/// The pod's `podType` for its IP object.
pub const POD_TYPE: &str = "StatefulSet";

/// The StatefulSet owning `pod` (name, UID), if any.
pub fn owner(pod: &Pod) -> Option<(String, String)> {
    let name = pod.metadata.name.as_deref().unwrap_or_default();
    pod.metadata
        .owner_references
        .iter()
        .flatten()
        .find(|o| {
            o.kind == "StatefulSet"
                && o.api_version.starts_with("apps/")
                && name.starts_with(&o.name)
        })
        .map(|o| (o.name.clone(), o.uid.clone()))
}

/// The ordinal of a StatefulSet pod name (`web-3` → 3).
pub fn ordinal(pod: &str) -> Option<i32> {
    pod.rsplit('-').next()?.parse().ok()
}

/// Whether the deleted `pod` keeps its address, given its StatefulSet as read now.
pub fn keeps_address(pod: &Pod, owner_uid: &str, sts: Option<&StatefulSet>) -> bool {
    let Some(sts) = sts else {
        return false;
    };
    if sts.metadata.deletion_timestamp.is_some() || sts.metadata.uid.as_deref() != Some(owner_uid) {
        return false;
    }
    let replicas = sts.spec.replicas.unwrap_or(1);
    let name = pod.metadata.name.as_deref().unwrap_or_default();
    ordinal(name).is_some_and(|i| i < replicas)
}

/// Whether the deleted `pod` keeps its address (reads its StatefulSet).
pub async fn keep_on_delete(client: &kube::Client, pod: &Pod) -> Result<bool, kube::Error> {
    let Some((name, uid)) = owner(pod) else {
        return Ok(false);
    };
    let namespace = pod.metadata.namespace.as_deref().unwrap_or_default();
    let api: Api<StatefulSet> = Api::namespaced(client.clone(), namespace);
    let sts = api.get_opt(&name).await?;
    Ok(keeps_address(pod, &uid, sts.as_ref()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::StatefulSetSpec;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
    use kube::api::ObjectMeta;

    fn pod(name: &str) -> Pod {
        Pod {
            metadata: ObjectMeta {
                name: Some(name.into()),
                owner_references: Some(vec![OwnerReference {
                    api_version: "apps/v1".into(),
                    kind: "StatefulSet".into(),
                    name: "web".into(),
                    uid: "u1".into(),
                    ..Default::default()
                }]),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    fn sts(uid: &str, replicas: i32) -> StatefulSet {
        StatefulSet {
            metadata: ObjectMeta {
                name: Some("web".into()),
                uid: Some(uid.into()),
                ..Default::default()
            },
            spec: StatefulSetSpec {
                replicas: Some(replicas),
                ..Default::default()
            },
            status: None,
        }
    }

    #[test]
    fn kept_below_replicas_of_the_same_statefulset_only() {
        assert_eq!(owner(&pod("web-1")), Some(("web".into(), "u1".into())));
        assert!(keeps_address(&pod("web-1"), "u1", Some(&sts("u1", 2))));
        assert!(!keeps_address(&pod("web-2"), "u1", Some(&sts("u1", 2))));
        assert!(!keeps_address(&pod("web-1"), "u1", Some(&sts("u2", 2))));
        assert!(!keeps_address(&pod("web-1"), "u1", None));
        assert_eq!(ordinal("web-x"), None);
    }
}
