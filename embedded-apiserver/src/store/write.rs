//! The mutating verbs: create, update (PUT), patch, delete.
//!
//! Each verb computes the new object from the stored one without touching
//! the store, validates it, and only then commits; a request that fails at
//! any step leaves everything as it was.

use super::defaults::{keep_server_fields, prepare_new, spec_changed};
use super::watch::EventType;
use super::{ObjectKey, State};
use crate::error::ApiError;
use crate::patch::{self, apply, PatchType};
use crate::registry::ResourceType;
use crate::validate;
use serde_json::{json, Value};
use std::sync::Arc;

/// Options common to writes.
#[derive(Debug, Clone, Default)]
pub struct WriteOptions {
    /// `fieldManager` (or the client's user agent when absent).
    pub manager: String,
    /// `dryRun=All`: validate and answer, store nothing.
    pub dry_run: bool,
    /// `force` for server-side apply.
    pub force: bool,
}

impl WriteOptions {
    /// Options with only a manager name.
    pub fn manager(name: &str) -> Self {
        WriteOptions {
            manager: name.to_string(),
            ..Default::default()
        }
    }
}

/// The parts of `DeleteOptions` the server honours.
#[derive(Debug, Clone, Default)]
pub struct DeleteOptions {
    /// `preconditions.uid`.
    pub uid: Option<String>,
    /// `preconditions.resourceVersion`.
    pub resource_version: Option<String>,
    /// `dryRun=All`.
    pub dry_run: bool,
    /// `propagationPolicy: Orphan`: leave dependents (objects naming this
    /// one in `ownerReferences`) alone. Otherwise (`Background`, the
    /// default, or `Foreground`) they are deleted with their owner.
    pub orphan: bool,
}

/// Which part of an object a write addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// The object (status kept, for kinds with a status subresource).
    Main,
    /// The `/status` subresource (only status taken).
    Status,
}

pub(crate) fn now_rfc3339() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

fn random_suffix() -> String {
    // The alphabet kube-apiserver uses for generateName (no vowels, no
    // look-alike characters).
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let bytes = uuid::Uuid::new_v4().into_bytes();
    bytes[..5]
        .iter()
        .map(|b| ALPHABET[*b as usize % ALPHABET.len()] as char)
        .collect()
}

fn str_at<'a>(v: &'a Value, field: &str) -> Option<&'a str> {
    v["metadata"].get(field).and_then(Value::as_str)
}

impl State {
    fn check_namespace(&self, rt: &ResourceType, ns: Option<&str>) -> Result<(), ApiError> {
        match (rt.namespaced, ns) {
            (false, _) => Ok(()),
            (true, None) => Err(ApiError::bad_request(format!(
                "the server could not find the requested resource: {} is namespaced",
                rt.plural
            ))),
            (true, Some(ns)) => {
                let key = ObjectKey {
                    group: String::new(),
                    resource: "namespaces".into(),
                    namespace: String::new(),
                    name: ns.into(),
                };
                if self.objects.contains_key(&key) {
                    Ok(())
                } else {
                    Err(ApiError::not_found("", "namespaces", ns))
                }
            }
        }
    }

    /// The namespace to use: the path's, which the body must agree with.
    fn resolve_namespace(
        rt: &ResourceType,
        ns: Option<&str>,
        body: &mut Value,
    ) -> Result<(), ApiError> {
        if !rt.namespaced {
            if let Some(m) = body["metadata"].as_object_mut() {
                m.remove("namespace");
            }
            return Ok(());
        }
        let path_ns = ns.unwrap_or_default();
        match str_at(body, "namespace") {
            Some(b) if !b.is_empty() && b != path_ns => Err(ApiError::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            )),
            _ => {
                body["metadata"]["namespace"] = json!(path_ns);
                Ok(())
            }
        }
    }

    fn writer<'a>(
        rt: &ResourceType,
        opts: &'a WriteOptions,
        api_version: &'a str,
        time: &'a str,
    ) -> apply::Writer<'a> {
        apply::Writer {
            manager: &opts.manager,
            api_version,
            time,
            keyed: !rt.custom,
        }
    }

    /// POST: creates an object.
    pub fn create(
        &mut self,
        rt: &ResourceType,
        ns: Option<&str>,
        mut body: Value,
        opts: &WriteOptions,
    ) -> Result<Value, ApiError> {
        validate::check_type(rt, &body, rt.custom)?;
        if body.get("metadata").is_none() {
            body["metadata"] = json!({});
        }
        let name = match (str_at(&body, "name"), str_at(&body, "generateName")) {
            (Some(n), _) if !n.is_empty() => n.to_string(),
            (_, Some(prefix)) if !prefix.is_empty() => format!("{prefix}{}", random_suffix()),
            _ => {
                return Err(ApiError::invalid(
                    &rt.kind,
                    "",
                    "metadata.name",
                    "Required value: name or generateName is required",
                ))
            }
        };
        validate::check_name(rt, &name)?;
        validate::check_metadata_maps(rt, &name, &body)?;
        Self::resolve_namespace(rt, ns, &mut body)?;
        self.check_namespace(rt, ns)?;
        let key = ObjectKey::new(rt, ns, &name);
        if self.objects.contains_key(&key) {
            return Err(ApiError::already_exists(&rt.group, &rt.plural, &name));
        }
        prepare_new(rt, &mut body, &name)?;
        if rt.group.is_empty() && rt.plural == "services" {
            self.allocate_cluster_ip(&name, &mut body)?;
        }
        let api_version = rt.api_version();
        let time = now_rfc3339();
        if self.track_update_managers {
            apply::record_update(
                None,
                &mut body,
                &Self::writer(rt, opts, &api_version, &time),
            );
        }
        if opts.dry_run {
            return Ok(body);
        }
        let stored = self.commit(key, EventType::Added, body);
        Ok(Self::present(rt, &stored))
    }

    /// PUT: replaces an object (or its status).
    pub fn update(
        &mut self,
        rt: &ResourceType,
        ns: Option<&str>,
        name: &str,
        mut body: Value,
        part: Part,
        opts: &WriteOptions,
    ) -> Result<Value, ApiError> {
        validate::check_type(rt, &body, rt.custom)?;
        if let Some(body_name) = str_at(&body, "name") {
            if body_name != name {
                return Err(ApiError::bad_request(format!(
                    "the name of the object ({body_name}) does not match the name on the URL ({name})"
                )));
            }
        }
        Self::resolve_namespace(rt, ns, &mut body)?;
        let key = ObjectKey::new(rt, ns, name);
        let old = self
            .objects
            .get(&key)
            .cloned()
            .ok_or_else(|| ApiError::not_found(&rt.group, &rt.plural, name))?;
        if let Some(rv) = str_at(&body, "resourceVersion") {
            if !rv.is_empty() && Some(rv) != str_at(&old, "resourceVersion") {
                return Err(ApiError::conflict(&rt.group, &rt.plural, name));
            }
        }
        self.write_over(rt, key, &old, body, part, opts, None)
    }

    /// Shared tail of update and patch: keep server-owned fields, validate,
    /// record managers, and commit unless nothing changed.
    #[allow(clippy::too_many_arguments)]
    fn write_over(
        &mut self,
        rt: &ResourceType,
        key: ObjectKey,
        old: &Arc<Value>,
        mut new: Value,
        part: Part,
        opts: &WriteOptions,
        applied: Option<()>,
    ) -> Result<Value, ApiError> {
        validate::check_type(rt, &new, rt.custom)?;
        validate::check_metadata_maps(rt, &key.name, &new)?;
        keep_server_fields(rt, old, &mut new, part);
        validate::check_no_new_finalizers(rt, &key.name, old, &new)?;
        if *old.as_ref() == new {
            return Ok(Self::present(rt, old));
        }
        if applied.is_none() && self.track_update_managers {
            let api_version = rt.api_version();
            let time = now_rfc3339();
            apply::record_update(
                Some(old),
                &mut new,
                &Self::writer(rt, opts, &api_version, &time),
            );
        }
        if rt.tracks_generation() && spec_changed(old, &new) {
            let generation = old["metadata"]["generation"].as_i64().unwrap_or(0) + 1;
            new["metadata"]["generation"] = json!(generation);
        }
        if opts.dry_run {
            return Ok(Self::present(rt, &new));
        }
        let deleting = new["metadata"].get("deletionTimestamp").is_some();
        let finalizers_left = new["metadata"]["finalizers"]
            .as_array()
            .is_some_and(|f| !f.is_empty());
        let event = if deleting && !finalizers_left {
            EventType::Deleted
        } else {
            EventType::Modified
        };
        let stored = self.commit(key, event, new);
        if event == EventType::Deleted {
            self.collect_garbage(&stored);
        }
        Ok(Self::present(rt, &stored))
    }

    /// PATCH in any of the four flavours.
    #[allow(clippy::too_many_arguments)]
    pub fn patch(
        &mut self,
        rt: &ResourceType,
        ns: Option<&str>,
        name: &str,
        kind: PatchType,
        body: &Value,
        part: Part,
        opts: &WriteOptions,
    ) -> Result<Value, ApiError> {
        let key = ObjectKey::new(rt, ns, name);
        let old = self.objects.get(&key).cloned();
        if kind == PatchType::Apply {
            return self.apply(rt, ns, name, key, old, body, part, opts);
        }
        let old = old.ok_or_else(|| ApiError::not_found(&rt.group, &rt.plural, name))?;
        let new = match kind {
            PatchType::Json => patch::json_patch(&old, body, &rt.kind, name)?,
            PatchType::Merge => patch::merge_patch(&old, body),
            PatchType::Strategic if rt.custom => {
                return Err(ApiError::new(
                    crate::error::Reason::UnsupportedMediaType,
                    "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml",
                ))
            }
            PatchType::Strategic => {
                if !body.is_object() {
                    return Err(ApiError::bad_request("strategic merge patch must be a JSON object"));
                }
                patch::strategic::strategic_merge(&old, body)?
            }
            PatchType::Apply => unreachable!("handled above"),
        };
        if !new.is_object() {
            return Err(ApiError::bad_request(
                "the patch does not produce an object",
            ));
        }
        self.check_identity(rt, &old, &new, name)?;
        self.write_over(rt, key, &old, new, part, opts, None)
    }

    /// A patch may not rename or move an object; a resourceVersion it sets
    /// is a precondition.
    fn check_identity(
        &self,
        rt: &ResourceType,
        old: &Value,
        new: &Value,
        name: &str,
    ) -> Result<(), ApiError> {
        for field in ["name", "namespace", "uid"] {
            if str_at(new, field) != str_at(old, field) {
                return Err(ApiError::invalid(
                    &rt.kind,
                    name,
                    &format!("metadata.{field}"),
                    "Invalid value: field is immutable",
                ));
            }
        }
        if str_at(new, "resourceVersion") != str_at(old, "resourceVersion") {
            return Err(ApiError::conflict(&rt.group, &rt.plural, name));
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn apply(
        &mut self,
        rt: &ResourceType,
        ns: Option<&str>,
        name: &str,
        key: ObjectKey,
        old: Option<Arc<Value>>,
        body: &Value,
        part: Part,
        opts: &WriteOptions,
    ) -> Result<Value, ApiError> {
        if opts.manager.is_empty() {
            return Err(ApiError::invalid(
                "PatchOptions",
                "",
                "fieldManager",
                "Required value: is required for apply patch",
            ));
        }
        validate::check_type(rt, body, rt.custom)?;
        if str_at(body, "name").is_some_and(|n| n != name) {
            return Err(ApiError::bad_request(format!(
                "the name of the object does not match the name on the URL ({name})"
            )));
        }
        let api_version = rt.api_version();
        let time = now_rfc3339();
        let writer = Self::writer(rt, opts, &api_version, &time);
        let mut config = body.clone();
        config["apiVersion"] = json!(api_version);
        config["kind"] = json!(rt.kind);
        config["metadata"]["name"] = json!(name);
        match old {
            None => {
                let created = apply::server_side_apply(None, &config, &writer, opts.force)?;
                let managed = created["metadata"]["managedFields"].clone();
                let mut out = self.create(
                    rt,
                    ns,
                    created,
                    &WriteOptions {
                        dry_run: true,
                        ..opts.clone()
                    },
                )?;
                out["metadata"]["managedFields"] = managed;
                if opts.dry_run {
                    return Ok(out);
                }
                let stored = self.commit(key, EventType::Added, out);
                Ok(Self::present(rt, &stored))
            }
            Some(old) => {
                Self::resolve_namespace(rt, ns, &mut config)?;
                let mut new = apply::server_side_apply(Some(&old), &config, &writer, opts.force)?;
                new["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"].clone();
                self.write_over(rt, key, &old, new, part, opts, Some(()))
            }
        }
    }

    /// DELETE: removes the object, or only marks it (deletionTimestamp) while
    /// finalizers remain. A namespace takes its contents with it; a CRD its
    /// custom objects.
    pub fn delete(
        &mut self,
        rt: &ResourceType,
        ns: Option<&str>,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<Value, ApiError> {
        let key = ObjectKey::new(rt, ns, name);
        let old = self
            .objects
            .get(&key)
            .cloned()
            .ok_or_else(|| ApiError::not_found(&rt.group, &rt.plural, name))?;
        if opts
            .uid
            .as_deref()
            .is_some_and(|u| Some(u) != str_at(&old, "uid"))
            || opts
                .resource_version
                .as_deref()
                .is_some_and(|r| Some(r) != str_at(&old, "resourceVersion"))
        {
            return Err(ApiError::conflict(&rt.group, &rt.plural, name));
        }
        if opts.dry_run {
            return Ok(Self::present(rt, &old));
        }
        let has_finalizers = old["metadata"]["finalizers"]
            .as_array()
            .is_some_and(|f| !f.is_empty());
        if has_finalizers {
            if old["metadata"].get("deletionTimestamp").is_some() {
                return Ok(Self::present(rt, &old));
            }
            let mut marked = (*old).clone();
            marked["metadata"]["deletionTimestamp"] = json!(now_rfc3339());
            marked["metadata"]["deletionGracePeriodSeconds"] = json!(0);
            let stored = self.commit(key, EventType::Modified, marked);
            return Ok(Self::present(rt, &stored));
        }
        self.cascade(rt, &old);
        let stored = self.commit(key, EventType::Deleted, (*old).clone());
        if !opts.orphan {
            self.collect_garbage(&stored);
        }
        Ok(Self::present(rt, &stored))
    }

    /// Deletes the dependents of a deleted object (those whose
    /// `ownerReferences` name its uid), transitively; dependents with
    /// finalizers are only marked for deletion. kube-apiserver's garbage
    /// collector does this asynchronously; here it happens right after the
    /// owner's DELETED event, so watchers still see the owner go first.
    fn collect_garbage(&mut self, owner: &Value) {
        let mut owners: Vec<String> = str_at(owner, "uid").map(String::from).into_iter().collect();
        while let Some(uid) = owners.pop() {
            let dependents: Vec<ObjectKey> = self
                .objects
                .iter()
                .filter(|(_, o)| {
                    o["metadata"]["ownerReferences"]
                        .as_array()
                        .is_some_and(|refs| refs.iter().any(|r| r["uid"] == uid.as_str()))
                })
                .map(|(k, _)| k.clone())
                .collect();
            for key in dependents {
                let Some(obj) = self.objects.get(&key).cloned() else {
                    continue;
                };
                let has_finalizers = obj["metadata"]["finalizers"]
                    .as_array()
                    .is_some_and(|f| !f.is_empty());
                if !has_finalizers {
                    let gone = self.commit(key, EventType::Deleted, (*obj).clone());
                    owners.extend(str_at(&gone, "uid").map(String::from));
                } else if obj["metadata"].get("deletionTimestamp").is_none() {
                    let mut marked = (*obj).clone();
                    marked["metadata"]["deletionTimestamp"] = json!(now_rfc3339());
                    self.commit(key, EventType::Modified, marked);
                }
            }
        }
    }

    fn cascade(&mut self, rt: &ResourceType, object: &Value) {
        let doomed: Vec<ObjectKey> = if rt.group.is_empty() && rt.plural == "namespaces" {
            let ns = str_at(object, "name").unwrap_or_default();
            self.objects
                .keys()
                .filter(|k| k.namespace == ns && !ns.is_empty())
                .cloned()
                .collect()
        } else if rt.plural == "customresourcedefinitions" && rt.group == "apiextensions.k8s.io" {
            let group = object["spec"]["group"].as_str().unwrap_or_default();
            let plural = object["spec"]["names"]["plural"]
                .as_str()
                .unwrap_or_default();
            self.objects
                .keys()
                .filter(|k| k.group == group && k.resource == plural)
                .cloned()
                .collect()
        } else {
            Vec::new()
        };
        for key in doomed {
            if let Some(obj) = self.objects.get(&key).cloned() {
                self.commit(key, EventType::Deleted, (*obj).clone());
            }
        }
    }
}
