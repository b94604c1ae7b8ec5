//! Store-level tests: resourceVersion order, watch history and 410,
//! finalizers, status subresource, and that failed writes change nothing.

use super::*;
use crate::patch::PatchType;
use crate::store::watch::WatchMsg;

pub(super) fn rt(state: &State, g: &str, v: &str, plural: &str) -> ResourceType {
    state.registry.find(g, v, plural).cloned().unwrap()
}

pub(super) fn opts() -> WriteOptions {
    WriteOptions::manager("test")
}

pub(super) fn cm(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": "v"}})
}

pub(super) fn drain(rx: &mut WatchStream) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    while let Some(msg) = rx.try_next() {
        match msg {
            WatchMsg::Event(t, o) => out.push((
                t.as_str().to_string(),
                o["metadata"]["name"].as_str().unwrap().to_string(),
                o["metadata"]["resourceVersion"]
                    .as_str()
                    .unwrap()
                    .to_string(),
            )),
            WatchMsg::Error(e) => {
                out.push((e.reason.as_str().into(), String::new(), String::new()))
            }
            WatchMsg::Bookmark { rv, .. } => {
                out.push(("BOOKMARK".into(), String::new(), rv.to_string()))
            }
        }
    }
    out
}

pub(super) fn watch_all(rv: Option<u64>) -> WatchOptions {
    WatchOptions {
        filter: WatchFilter {
            group: String::new(),
            resource: "configmaps".into(),
            namespace: Some("default".into()),
            labels: Default::default(),
            fields: Default::default(),
        },
        resource_version: rv,
        bookmarks: true,
        send_initial_events: false,
    }
}

/// PATCH of the main resource of `name` in `default`, as a client sends it.
fn patch_main(
    state: &mut State,
    rt: &ResourceType,
    name: &str,
    kind: PatchType,
    body: &Value,
) -> Result<Value, ApiError> {
    state.patch(rt, Some("default"), name, kind, body, Part::Main, &opts())
}

#[test]
fn resource_versions_increase_and_watch_resumes_from_history() {
    let mut state = State::new(100);
    let cms = rt(&state, "", "v1", "configmaps");
    let a = state
        .create(&cms, Some("default"), cm("a"), &opts())
        .unwrap();
    let rv_a: u64 = a["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let b = state
        .create(&cms, Some("default"), cm("b"), &opts())
        .unwrap();
    let rv_b: u64 = b["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(rv_b > rv_a);
    let mut rx = state.watch(watch_all(Some(rv_a))).unwrap();
    state
        .delete(&cms, Some("default"), "a", &DeleteOptions::default())
        .unwrap();
    let events = drain(&mut rx);
    let kinds: Vec<&str> = events.iter().map(|e| e.0.as_str()).collect();
    assert_eq!(kinds, vec!["ADDED", "DELETED"]);
    assert_eq!(events[0].1, "b");
    assert!(events[1].2.parse::<u64>().unwrap() > rv_b);
}

#[test]
fn compaction_expires_old_versions_but_not_a_fresh_list() {
    let mut state = State::new(100);
    let cms = rt(&state, "", "v1", "configmaps");
    state
        .create(&cms, Some("default"), cm("a"), &opts())
        .unwrap();
    let before = state.resource_version();
    state.compact_history();
    let mut rx = state.watch(watch_all(Some(before))).unwrap();
    assert_eq!(drain(&mut rx)[0].0, "Expired");
    let list = state
        .list(&cms, Some("default"), &ListOptions::default())
        .unwrap();
    let rv: u64 = list["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let mut rx = state.watch(watch_all(Some(rv))).unwrap();
    state
        .create(&cms, Some("default"), cm("b"), &opts())
        .unwrap();
    assert_eq!(drain(&mut rx).len(), 1);
}

#[test]
fn history_limit_trims_and_expires() {
    let mut state = State::new(2);
    let cms = rt(&state, "", "v1", "configmaps");
    let start = state.resource_version();
    for n in ["a", "b", "c", "d"] {
        state.create(&cms, Some("default"), cm(n), &opts()).unwrap();
    }
    let mut rx = state.watch(watch_all(Some(start))).unwrap();
    assert_eq!(drain(&mut rx)[0].0, "Expired");
}

#[test]
fn finalizers_hold_deletion() {
    let mut state = State::new(100);
    let cms = rt(&state, "", "v1", "configmaps");
    let mut obj = cm("f");
    obj["metadata"]["finalizers"] = json!(["example.com/x"]);
    state.create(&cms, Some("default"), obj, &opts()).unwrap();
    let marked = state
        .delete(&cms, Some("default"), "f", &DeleteOptions::default())
        .unwrap();
    assert!(marked["metadata"]["deletionTimestamp"].is_string());
    assert!(state.get(&cms, Some("default"), "f").is_ok());
    let patch = json!([{"op": "remove", "path": "/metadata/finalizers"}]);
    patch_main(&mut state, &cms, "f", PatchType::Json, &patch).unwrap();
    assert_eq!(
        state.get(&cms, Some("default"), "f").unwrap_err().reason,
        Reason::NotFound
    );
}

#[test]
fn an_object_being_deleted_takes_no_new_finalizer() {
    let mut state = State::new(100);
    let cms = rt(&state, "", "v1", "configmaps");
    let mut obj = cm("f");
    obj["metadata"]["finalizers"] = json!(["example.com/x"]);
    state.create(&cms, Some("default"), obj, &opts()).unwrap();
    state
        .delete(&cms, Some("default"), "f", &DeleteOptions::default())
        .unwrap();
    let before = state.get(&cms, Some("default"), "f").unwrap();
    let add = json!({"metadata": {"finalizers": ["example.com/x", "example.com/late"]}});
    let err = patch_main(&mut state, &cms, "f", PatchType::Merge, &add).unwrap_err();
    assert_eq!(err.reason, Reason::Invalid);
    assert!(err.message.contains("example.com/late"), "{}", err.message);
    assert!(
        err.message.contains("metadata.finalizers"),
        "{}",
        err.message
    );
    assert_eq!(state.get(&cms, Some("default"), "f").unwrap(), before);
    // giving one up is what a terminating object is for
    let drop = json!({"metadata": {"finalizers": []}});
    patch_main(&mut state, &cms, "f", PatchType::Merge, &drop).unwrap();
    assert_eq!(
        state.get(&cms, Some("default"), "f").unwrap_err().reason,
        Reason::NotFound
    );
}

#[test]
fn status_subresource_is_kept_apart() {
    let mut state = State::new(100);
    let pods = rt(&state, "", "v1", "pods");
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "image": "i"}]}});
    state.create(&pods, Some("default"), pod, &opts()).unwrap();
    let main = json!({"spec": {"nodeName": "n1"}, "status": {"phase": "Running"}});
    let out = patch_main(&mut state, &pods, "p", PatchType::Merge, &main).unwrap();
    assert_eq!(out["status"]["phase"], "Pending");
    assert_eq!(out["spec"]["nodeName"], "n1");
    let status = json!({"spec": {"nodeName": "n2"}, "status": {"phase": "Running"}});
    let out = state
        .patch(
            &pods,
            Some("default"),
            "p",
            PatchType::Merge,
            &status,
            Part::Status,
            &opts(),
        )
        .unwrap();
    assert_eq!(out["status"]["phase"], "Running");
    assert_eq!(out["spec"]["nodeName"], "n1");
}

#[test]
fn failed_writes_change_nothing() {
    let mut state = State::new(100);
    let cms = rt(&state, "", "v1", "configmaps");
    state
        .create(&cms, Some("default"), cm("a"), &opts())
        .unwrap();
    let rv = state.resource_version();
    let bad_name = state
        .create(&cms, Some("default"), cm("Bad_Name"), &opts())
        .unwrap_err();
    assert_eq!(bad_name.reason, Reason::Invalid);
    let mut wrong_kind = cm("b");
    wrong_kind["kind"] = json!("Secret");
    assert_eq!(
        state
            .create(&cms, Some("default"), wrong_kind, &opts())
            .unwrap_err()
            .reason,
        Reason::BadRequest
    );
    let no_ns = state
        .create(&cms, Some("nope"), cm("c"), &opts())
        .unwrap_err();
    assert_eq!(no_ns.reason, Reason::NotFound);
    let test_fails = json!([{"op": "test", "path": "/data/k", "value": "other"}, {"op": "remove", "path": "/data"}]);
    let err = patch_main(&mut state, &cms, "a", PatchType::Json, &test_fails).unwrap_err();
    assert_eq!(err.reason, Reason::Invalid);
    let mut stale = state.get(&cms, Some("default"), "a").unwrap();
    stale["metadata"]["resourceVersion"] = json!("1");
    stale["data"]["k"] = json!("changed");
    assert_eq!(
        state
            .update(&cms, Some("default"), "a", stale, Part::Main, &opts())
            .unwrap_err()
            .reason,
        Reason::Conflict
    );
    assert_eq!(state.resource_version(), rv);
    assert_eq!(
        state.get(&cms, Some("default"), "a").unwrap()["data"]["k"],
        "v"
    );
}

#[test]
fn noop_update_does_not_bump_resource_version() {
    let mut state = State::new(100);
    let cms = rt(&state, "", "v1", "configmaps");
    let a = state
        .create(&cms, Some("default"), cm("a"), &opts())
        .unwrap();
    let rv = state.resource_version();
    let same = state
        .update(&cms, Some("default"), "a", a.clone(), Part::Main, &opts())
        .unwrap();
    assert_eq!(
        same["metadata"]["resourceVersion"],
        a["metadata"]["resourceVersion"]
    );
    assert_eq!(state.resource_version(), rv);
}

/// `metadata.generation` where Kubernetes keeps one (a Deployment: 1, then one more
/// per spec change, none for a metadata or status change) and nowhere else (a
/// ConfigMap or Service never gets one, even when its data changes).
#[test]
fn generation_only_for_the_kinds_kubernetes_counts_it_for() {
    let mut state = State::new(100);
    let deploys = rt(&state, "apps", "v1", "deployments");
    let deploy = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}});
    let created = state
        .create(&deploys, Some("default"), deploy, &opts())
        .unwrap();
    assert_eq!(created["metadata"]["generation"], json!(1));
    let mut labelled = created.clone();
    labelled["metadata"]["labels"] = json!({"tier": "front"});
    let labelled = state
        .update(
            &deploys,
            Some("default"),
            "web",
            labelled,
            Part::Main,
            &opts(),
        )
        .unwrap();
    assert_eq!(labelled["metadata"]["generation"], json!(1));
    let mut scaled = labelled.clone();
    scaled["spec"]["replicas"] = json!(3);
    let scaled = state
        .update(
            &deploys,
            Some("default"),
            "web",
            scaled,
            Part::Main,
            &opts(),
        )
        .unwrap();
    assert_eq!(scaled["metadata"]["generation"], json!(2));

    let cms = rt(&state, "", "v1", "configmaps");
    let mut sent = cm("c");
    sent["metadata"]["generation"] = json!(7);
    let c = state.create(&cms, Some("default"), sent, &opts()).unwrap();
    assert!(c["metadata"].get("generation").is_none(), "{c}");
    let mut changed = c.clone();
    changed["data"]["k"] = json!("w");
    let changed = state
        .update(&cms, Some("default"), "c", changed, Part::Main, &opts())
        .unwrap();
    assert!(changed["metadata"].get("generation").is_none(), "{changed}");
    let svcs = rt(&state, "", "v1", "services");
    let svc = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
        "spec": {"ports": [{"port": 80}]}});
    let svc = state.create(&svcs, Some("default"), svc, &opts()).unwrap();
    assert!(svc["metadata"].get("generation").is_none(), "{svc}");
}

#[test]
fn crd_serves_its_kind_and_takes_objects_with_it() {
    let mut state = State::new(100);
    let crds = rt(
        &state,
        "apiextensions.k8s.io",
        "v1",
        "customresourcedefinitions",
    );
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "subnets.kubeovn.io"},
        "spec": {"group": "kubeovn.io", "scope": "Cluster",
                 "names": {"plural": "subnets", "singular": "subnet", "kind": "Subnet"},
                 "versions": [{"name": "v1", "served": true, "storage": true, "subresources": {"status": {}}}]}});
    state.create(&crds, None, crd, &opts()).unwrap();
    let subnets = rt(&state, "kubeovn.io", "v1", "subnets");
    let s = json!({"apiVersion": "kubeovn.io/v1", "kind": "Subnet", "metadata": {"name": "s1"},
        "spec": {"cidrBlock": "10.0.0.0/24"}, "status": {"v4availableIPs": 1}});
    let created = state.create(&subnets, None, s, &opts()).unwrap();
    assert!(created.get("status").is_none());
    state
        .delete(&crds, None, "subnets.kubeovn.io", &DeleteOptions::default())
        .unwrap();
    assert!(state.registry.find("kubeovn.io", "v1", "subnets").is_none());
    assert_eq!(state.len(), 4, "only the default namespaces remain");
}

#[test]
fn persistence_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.json");
    let mut state = State::new(100);
    let cms = rt(&state, "", "v1", "configmaps");
    state
        .create(&cms, Some("default"), cm("a"), &opts())
        .unwrap();
    state.save(&path).unwrap();
    let loaded = State::load(&path, 100).unwrap();
    assert_eq!(loaded.resource_version(), state.resource_version());
    assert_eq!(
        loaded.get(&cms, Some("default"), "a").unwrap(),
        state.get(&cms, Some("default"), "a").unwrap()
    );
}

#[test]
fn list_pages_with_continue() {
    let mut state = State::new(100);
    let cms = rt(&state, "", "v1", "configmaps");
    for n in ["a", "b", "c"] {
        state.create(&cms, Some("default"), cm(n), &opts()).unwrap();
    }
    let page = |token: Option<String>| ListOptions {
        limit: 2,
        continue_token: token,
        ..Default::default()
    };
    let first = state.list(&cms, Some("default"), &page(None)).unwrap();
    assert_eq!(first["items"].as_array().unwrap().len(), 2);
    let token = first["metadata"]["continue"].as_str().unwrap().to_string();
    let second = state
        .list(&cms, Some("default"), &page(Some(token)))
        .unwrap();
    assert_eq!(second["items"][0]["metadata"]["name"], "c");
    assert!(second["metadata"].get("continue").is_none());
}

#[test]
fn dependents_are_collected_unless_orphaned() {
    let mut state = State::new(100);
    let cms = rt(&state, "", "v1", "configmaps");
    let owner = state
        .create(&cms, Some("default"), cm("owner"), &opts())
        .unwrap();
    let uid = owner["metadata"]["uid"].clone();
    let owned = |name: &str| {
        let mut o = cm(name);
        o["metadata"]["ownerReferences"] =
            json!([{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": uid}]);
        o
    };
    let child = state
        .create(&cms, Some("default"), owned("child"), &opts())
        .unwrap();
    let mut grandchild = cm("grandchild");
    grandchild["metadata"]["ownerReferences"] = json!([{"apiVersion": "v1", "kind": "ConfigMap",
        "name": "child", "uid": child["metadata"]["uid"]}]);
    state
        .create(&cms, Some("default"), grandchild, &opts())
        .unwrap();
    let mut rx = state
        .watch(watch_all(Some(state.resource_version())))
        .unwrap();
    state
        .delete(&cms, Some("default"), "owner", &DeleteOptions::default())
        .unwrap();
    let names: Vec<String> = drain(&mut rx).into_iter().map(|e| e.1).collect();
    assert_eq!(names, vec!["owner", "child", "grandchild"]);

    let owner = state
        .create(&cms, Some("default"), cm("owner"), &opts())
        .unwrap();
    let mut kept = cm("kept");
    kept["metadata"]["ownerReferences"] = json!([{"uid": owner["metadata"]["uid"]}]);
    state.create(&cms, Some("default"), kept, &opts()).unwrap();
    let orphan = DeleteOptions {
        orphan: true,
        ..Default::default()
    };
    state
        .delete(&cms, Some("default"), "owner", &orphan)
        .unwrap();
    assert!(state.get(&cms, Some("default"), "kept").is_ok());
}

#[test]
fn update_manager_tracking_can_be_switched_off() {
    let mut state = State::new(100);
    let cms = rt(&state, "", "v1", "configmaps");
    let tracked = state
        .create(&cms, Some("default"), cm("a"), &opts())
        .unwrap();
    assert_eq!(tracked["metadata"]["managedFields"][0]["manager"], "test");
    state.set_track_update_managers(false);
    let untracked = state
        .create(&cms, Some("default"), cm("b"), &opts())
        .unwrap();
    assert!(untracked["metadata"].get("managedFields").is_none());
}

fn svc(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": spec})
}

#[test]
fn services_get_their_cluster_ip_on_create_as_kube_apiserver_gives_it() {
    let mut s = State::new(100);
    let rt = rt(&s, "", "v1", "services");
    let port = json!([{"port": 80}]);
    let a = s
        .create(
            &rt,
            Some("default"),
            svc("a", json!({"ports": port})),
            &opts(),
        )
        .unwrap();
    // in the create response itself: `kubectl apply` then `get` shows it at once
    assert_eq!(a["spec"]["clusterIP"], "10.96.0.10");
    assert_eq!(a["spec"]["clusterIPs"], json!(["10.96.0.10"]));
    assert_eq!(a["spec"]["type"], "ClusterIP");
    assert_eq!(a["spec"]["ipFamilies"], json!(["IPv4"]));
    let b = s
        .create(
            &rt,
            Some("default"),
            svc("b", json!({"ports": port})),
            &opts(),
        )
        .unwrap();
    assert_eq!(b["spec"]["clusterIP"], "10.96.0.11");
    // an address asked for: kept when free
    let c = s
        .create(
            &rt,
            Some("default"),
            svc("c", json!({"clusterIP": "10.96.5.5", "ports": port})),
            &opts(),
        )
        .unwrap();
    assert_eq!(c["spec"]["clusterIP"], "10.96.5.5");
    // headless and ExternalName Services get none
    let headless = s
        .create(
            &rt,
            Some("default"),
            svc("h", json!({"clusterIP": "None", "ports": port})),
            &opts(),
        )
        .unwrap();
    assert_eq!(headless["spec"]["clusterIPs"], json!(["None"]));
    let external = s
        .create(
            &rt,
            Some("default"),
            svc(
                "e",
                json!({"type": "ExternalName", "externalName": "example.org"}),
            ),
            &opts(),
        )
        .unwrap();
    assert!(external["spec"]["clusterIP"].is_null(), "{external}");
    // bad addresses are refused naming the field and the address; nothing is stored
    let rv = s.resource_version;
    for (name, ip, why) in [
        ("taken", "10.96.0.10", "provided IP is already allocated"),
        ("outside", "192.168.0.1", "not in the valid range"),
        ("garbage", "10.96.0.x", "must be a valid IP address"),
    ] {
        let err = s
            .create(
                &rt,
                Some("default"),
                svc(name, json!({"clusterIP": ip, "ports": port})),
                &opts(),
            )
            .unwrap_err();
        assert_eq!(err.reason, Reason::Invalid, "{name}");
        assert!(
            err.message.contains("spec.clusterIPs") && err.message.contains(ip),
            "{name}: {}",
            err.message
        );
        assert!(err.message.contains(why), "{name}: {}", err.message);
    }
    assert_eq!(s.resource_version, rv, "refused creates stored nothing");
    // a freed address is given again
    s.delete(&rt, Some("default"), "a", &DeleteOptions::default())
        .unwrap();
    let d = s
        .create(
            &rt,
            Some("default"),
            svc("d", json!({"ports": port})),
            &opts(),
        )
        .unwrap();
    assert_eq!(d["spec"]["clusterIP"], "10.96.0.10");
}
