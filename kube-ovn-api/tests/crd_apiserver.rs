//! Against an API server holding Kube-OVN's own chart CRDs (then ours): every sample is
//! created through our typed `Api<K>`, gets its status written the way
//! `StatusSubresource::STATUS_SUBRESOURCE` says (`/status`, or with the object for Vip), and
//! reads back unchanged. This is what lets users moving from Kube-OVN keep their CRDs.

mod common;

use std::fmt::Debug;

use common::{yaml_documents, KINDS};
use embedded_apiserver::{Config, EmbeddedApiServer};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::{Client, Resource};
use kube_ovn_api::crd::{
    crds, IPPool, OvnDnatRule, OvnEip, OvnFip, OvnSnatRule, ProviderNetwork, QoSPolicy,
    StatusSubresource, Subnet, SwitchLBRule, Vip, Vlan, Vpc, IP,
};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Value};

/// `spec` and `status` without nulls and empty lists, for comparison.
fn spec_and_status(object: &Value) -> Value {
    fn normalize(value: &Value) -> Value {
        match value {
            Value::Object(map) => Value::Object(
                map.iter()
                    .filter(|(_, v)| !v.is_null() && v.as_array().is_none_or(|a| !a.is_empty()))
                    .map(|(k, v)| (k.clone(), normalize(v)))
                    .collect(),
            ),
            Value::Array(items) => Value::Array(items.iter().map(normalize).collect()),
            other => other.clone(),
        }
    }
    normalize(&json!({ "spec": object["spec"], "status": object["status"] }))
}

async fn create_and_write_status<K>(client: &Client, sample: &Value) -> Result<(), String>
where
    K: Resource<DynamicType = ()> + StatusSubresource + Clone + Debug,
    K: Serialize + DeserializeOwned,
{
    let name = sample["metadata"]["name"].as_str().unwrap_or_default();
    let typed: K = serde_json::from_value(sample.clone()).map_err(|e| format!("decode: {e}"))?;
    let mut body = serde_json::to_value(&typed).map_err(|e| format!("encode: {e}"))?;
    let status = body.as_object_mut().and_then(|o| o.remove("status"));
    let body: K = serde_json::from_value(body).map_err(|e| format!("decode: {e}"))?;

    let api: Api<K> = Api::all(client.clone());
    api.create(&PostParams::default(), &body)
        .await
        .map_err(|e| format!("create: {e}"))?;
    if let Some(status) = status {
        let patch = Patch::Merge(json!({ "status": status }));
        let params = PatchParams::default();
        let written = if K::STATUS_SUBRESOURCE {
            api.patch_status(name, &params, &patch).await
        } else {
            api.patch(name, &params, &patch).await
        };
        written.map_err(|e| format!("status write: {e}"))?;
    }
    let stored = api.get(name).await.map_err(|e| format!("get: {e}"))?;
    let stored = serde_json::to_value(stored).map_err(|e| format!("encode: {e}"))?;
    let (want, got) = (spec_and_status(sample), spec_and_status(&stored));
    (want == got)
        .then_some(())
        .ok_or_else(|| format!("stored object differs:\n  want {want}\n  got  {got}"))
}

async fn exercise(client: &Client, sample: &Value) -> Result<(), String> {
    match sample["kind"].as_str().unwrap_or_default() {
        "Subnet" => create_and_write_status::<Subnet>(client, sample).await,
        "IP" => create_and_write_status::<IP>(client, sample).await,
        "IPPool" => create_and_write_status::<IPPool>(client, sample).await,
        "Vpc" => create_and_write_status::<Vpc>(client, sample).await,
        "Vip" => create_and_write_status::<Vip>(client, sample).await,
        "Vlan" => create_and_write_status::<Vlan>(client, sample).await,
        "ProviderNetwork" => create_and_write_status::<ProviderNetwork>(client, sample).await,
        "OvnEip" => create_and_write_status::<OvnEip>(client, sample).await,
        "OvnFip" => create_and_write_status::<OvnFip>(client, sample).await,
        "OvnSnatRule" => create_and_write_status::<OvnSnatRule>(client, sample).await,
        "OvnDnatRule" => create_and_write_status::<OvnDnatRule>(client, sample).await,
        "QoSPolicy" => create_and_write_status::<QoSPolicy>(client, sample).await,
        "SwitchLBRule" => create_and_write_status::<SwitchLBRule>(client, sample).await,
        other => Err(format!("no type for kind {other}")),
    }
}

/// Installs `crds`, then exercises every sample; one report line per failure.
async fn exercise_all(crds: Vec<CustomResourceDefinition>) -> Vec<String> {
    let server = EmbeddedApiServer::start(Config::default())
        .await
        .expect("the embedded API server starts");
    let client = server.kube_client().expect("a client for it");
    let crd_api: Api<CustomResourceDefinition> = Api::all(client.clone());
    for crd in &crds {
        crd_api
            .create(&PostParams::default(), crd)
            .await
            .unwrap_or_else(|e| panic!("CRD {:?} is accepted: {e}", crd.metadata.name));
    }
    let mut report = Vec::new();
    for sample in yaml_documents("samples.yaml") {
        if let Err(e) = exercise(&client, &sample).await {
            report.push(format!(
                "{} {}: {e}",
                sample["kind"], sample["metadata"]["name"]
            ));
        }
    }
    server.shutdown().await;
    report
}

fn chart_crds() -> Vec<CustomResourceDefinition> {
    yaml_documents("kube-ovn-crd.yaml")
        .into_iter()
        .map(|doc| serde_json::from_value(doc).expect("the chart's CRDs decode"))
        .collect()
}

#[tokio::test]
async fn typed_objects_work_on_kube_ovn_chart_crds() {
    assert_eq!(chart_crds().len(), KINDS.len());
    let report = exercise_all(chart_crds()).await;
    assert!(
        report.is_empty(),
        "with Kube-OVN's CRDs:\n{}",
        report.join("\n")
    );
}

#[tokio::test]
async fn typed_objects_work_on_our_crds() {
    let report = exercise_all(crds()).await;
    assert!(report.is_empty(), "with our CRDs:\n{}", report.join("\n"));
}
