//! `kube::runtime::Controller` with a finalizer, end to end: the finalizer is
//! added, deletion waits for the cleanup, and the object then disappears.

use super::common::{server, within};
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::finalizer::{finalizer, Event};
use kube::runtime::watcher;
use serde_json::json;
use std::sync::{Arc, Mutex};
use std::time::Duration;

const FINALIZER: &str = "example.com/cleanup";

struct Ctx {
    api: Api<ConfigMap>,
    cleaned: Mutex<Vec<String>>,
}

async fn reconcile(
    obj: Arc<ConfigMap>,
    ctx: Arc<Ctx>,
) -> Result<Action, kube::runtime::finalizer::Error<kube::Error>> {
    let outer = ctx.api.clone();
    let api = ctx.api.clone();
    finalizer(&outer, FINALIZER, obj, |event| async move {
        match event {
            Event::Apply(cm) => {
                let name = cm.metadata.name.clone().unwrap_or_default();
                let patch = json!({"metadata": {"annotations": {"reconciled": "yes"}}});
                api.patch(&name, &PatchParams::default(), &Patch::Merge(patch))
                    .await?;
                Ok(Action::await_change())
            }
            Event::Cleanup(cm) => {
                let name = cm.metadata.name.clone().unwrap_or_default();
                ctx.cleaned.lock().unwrap().push(name);
                Ok(Action::await_change())
            }
        }
    })
    .await
}

fn error_policy(
    _: Arc<ConfigMap>,
    _: &kube::runtime::finalizer::Error<kube::Error>,
    _: Arc<Ctx>,
) -> Action {
    Action::requeue(Duration::from_millis(200))
}

#[tokio::test]
async fn controller_with_finalizer() {
    let server = server().await;
    let api: Api<ConfigMap> = Api::namespaced(server.kube_client().unwrap(), "default");
    let ctx = Arc::new(Ctx {
        api: api.clone(),
        cleaned: Mutex::new(Vec::new()),
    });
    let controller = Controller::new(api.clone(), watcher::Config::default())
        .run(reconcile, error_policy, ctx.clone())
        .for_each(|_| async {});
    let running = tokio::spawn(controller);

    let cm: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "guarded"}})).unwrap();
    api.create(&PostParams::default(), &cm).await.unwrap();
    within("finalizer and annotation", async {
        loop {
            let cm = api.get("guarded").await.unwrap();
            let has_finalizer = cm
                .metadata
                .finalizers
                .unwrap_or_default()
                .contains(&FINALIZER.to_string());
            let annotated = cm
                .metadata
                .annotations
                .unwrap_or_default()
                .contains_key("reconciled");
            if has_finalizer && annotated {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;

    api.delete("guarded", &DeleteParams::default())
        .await
        .unwrap();
    within("deletion after cleanup", async {
        while api.get_opt("guarded").await.unwrap().is_some() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert_eq!(*ctx.cleaned.lock().unwrap(), vec!["guarded".to_string()]);
    running.abort();
    server.shutdown().await;
}
