//! Request dispatch: route, resolve the resource type, call the store.

use super::response::{
    error_response, json_response, protobuf_response, text_response, watch_error_response,
    watch_response, Body,
};
use super::route::{parse_path, parse_query, ResourcePath, Route};
use super::Shared;
use super::{discovery, openapi};
use crate::error::{ApiError, Reason};
use crate::patch::PatchType;
use crate::protobuf;
use crate::registry::ResourceType;
use crate::selector::{FieldSelector, LabelSelector};
use crate::store::watch::WatchFilter;
use crate::store::{DeleteOptions, ListOptions, Part, State, WatchOptions, WriteOptions};
use crate::table::{self, IncludeObject};
use bytes::Bytes;
use http::{header, Method, Request, Response};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::time::Duration;

/// A request with its body already read.
#[derive(Debug)]
pub struct ApiRequest {
    /// HTTP method.
    pub method: Method,
    /// Path without query.
    pub path: String,
    /// Decoded query parameters.
    pub query: HashMap<String, String>,
    /// `Content-Type`.
    pub content_type: String,
    /// `Accept`, for Tables.
    pub accept: String,
    /// `User-Agent`, for the default field manager.
    pub user_agent: String,
    /// The body.
    pub body: Bytes,
}

impl ApiRequest {
    /// Collects the parts of a hyper request this server looks at.
    pub fn from_parts<B>(req: &Request<B>, body: Bytes) -> Self {
        let header = |name: header::HeaderName| {
            req.headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_string()
        };
        ApiRequest {
            method: req.method().clone(),
            path: req.uri().path().to_string(),
            query: parse_query(req.uri().query()),
            content_type: header(header::CONTENT_TYPE),
            accept: header(header::ACCEPT),
            user_agent: header(header::USER_AGENT),
            body,
        }
    }

    fn param(&self, name: &str) -> Option<&str> {
        self.query
            .get(name)
            .map(String::as_str)
            .filter(|s| !s.is_empty())
    }

    fn flag(&self, name: &str) -> bool {
        matches!(self.param(name), Some("true" | "1"))
    }

    fn json_body(&self) -> Result<Value, ApiError> {
        if self.content_type.starts_with(protobuf::MEDIA_TYPE) {
            return protobuf::to_json(&self.body);
        }
        if self.content_type.contains("protobuf") || self.content_type.contains("cbor") {
            return Err(ApiError::new(
                Reason::UnsupportedMediaType,
                format!("the body of the request was in an unsupported format {:?}: this server speaks JSON, and protobuf for the built-in kinds", self.content_type),
            ));
        }
        serde_json::from_slice(&self.body)
            .map_err(|e| ApiError::bad_request(format!("the request body is not valid JSON: {e}")))
    }

    fn include_object(&self) -> IncludeObject {
        IncludeObject::from_param(self.param("includeObject"))
    }

    /// How a watch's events are to be encoded.
    fn watch_format(&self) -> Option<IncludeObject> {
        table::wants_table(&self.accept).then(|| self.include_object())
    }

    fn write_options(&self) -> WriteOptions {
        let manager = match self.param("fieldManager") {
            Some(m) => m.to_string(),
            None => self
                .user_agent
                .split('/')
                .next()
                .unwrap_or_default()
                .to_string(),
        };
        WriteOptions {
            manager,
            dry_run: self.param("dryRun") == Some("All"),
            force: self.flag("force"),
        }
    }
}

/// How long a watch from a resourceVersion the store has not reached waits
/// for it before failing, as kube-apiserver's watch cache waits
/// (`blockTimeout`, 3 s) before answering "Too large resource version".
const FRESHNESS_WAIT: Duration = Duration::from_secs(3);

/// Answers one request.
pub async fn handle(shared: &Shared, req: ApiRequest) -> Response<Body> {
    let deadline = tokio::time::Instant::now() + FRESHNESS_WAIT;
    loop {
        match respond(shared, &req) {
            Ok(resp) => return resp,
            Err(err) if err.reason == Reason::Timeout && req.flag("watch") => {
                if tokio::time::Instant::now() >= deadline {
                    // Once the request is accepted, watch failures travel as
                    // an ERROR event, not as the HTTP status.
                    return watch_error_response(err);
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(err) => return error_answer(&req, &err),
        }
    }
}

/// Whether the client can read a JSON answer: kube-apiserver answers 406
/// to an `Accept` it cannot serve, and this server writes only JSON.
fn accepts_json(accept: &str) -> bool {
    accept.is_empty()
        || accept.split(',').any(|media| {
            let media = media.split(';').next().unwrap_or_default().trim();
            matches!(media, "application/json" | "application/*" | "*/*" | "")
        })
}

/// The answer in JSON, or in protobuf for a client that takes only that.
fn answer(req: &ApiRequest, code: u16, value: &Value) -> Result<Response<Body>, ApiError> {
    if !protobuf::wants_only_protobuf(&req.accept) {
        return Ok(json_response(code, value));
    }
    let body = protobuf::from_json(value).map_err(|e| {
        ApiError::new(
            Reason::NotAcceptable,
            format!(
                "only the following media types are accepted: application/json ({})",
                e.message
            ),
        )
    })?;
    Ok(protobuf_response(code, body))
}

fn error_answer(req: &ApiRequest, err: &ApiError) -> Response<Body> {
    if protobuf::wants_only_protobuf(&req.accept) {
        if let Ok(body) = protobuf::from_json(&err.to_status()) {
            return protobuf_response(err.code(), body);
        }
    }
    error_response(err)
}

fn respond(shared: &Shared, req: &ApiRequest) -> Result<Response<Body>, ApiError> {
    if !accepts_json(&req.accept) && !protobuf::wants_only_protobuf(&req.accept) {
        return Err(ApiError::new(
            Reason::NotAcceptable,
            format!(
                "only the following media types are accepted: application/json (asked for {:?})",
                req.accept
            ),
        ));
    }
    let route = parse_path(&req.path);
    let Route::Resource(path) = route else {
        return discovery_response(shared, req, route);
    };
    let mut state = shared.state.lock().unwrap_or_else(|p| p.into_inner());
    let rt = resolve(state.registry(), &path)?;
    let ns = path.namespace.as_deref();
    let part = match path.sub.as_deref() {
        None => Part::Main,
        Some("scale") if super::scale::serves(&rt) && path.name.is_some() => {
            let name = path.name.as_deref().unwrap_or_default();
            let scale =
                super::scale::respond(&mut state, &rt, ns, name, req, &req.write_options())?;
            return answer(req, 200, &scale);
        }
        Some("status") if rt.has_status => Part::Status,
        Some(_) => return Err(not_served(&req.path)),
    };
    let name = path.name.as_deref();
    let as_table = table::wants_table(&req.accept) && part == Part::Main;
    let (code, value) = match (&req.method, name) {
        (&Method::GET, Some(name)) if as_table => {
            let object = state.get(&rt, ns, name)?;
            let metadata = json!({"resourceVersion": object["metadata"]["resourceVersion"]});
            (
                200,
                table::table(&rt, &[object], metadata, req.include_object(), true),
            )
        }
        (&Method::GET, Some(name)) => (200, state.get(&rt, ns, name)?),
        (&Method::GET, None) if req.flag("watch") => return start_watch(&mut state, req, rt, ns),
        (&Method::GET, None) if as_table => {
            let mut list = state.list(&rt, ns, &list_options(req, &rt)?)?;
            let items = list["items"].take();
            let items = items.as_array().map(Vec::as_slice).unwrap_or_default();
            let metadata = list["metadata"].take();
            (
                200,
                table::table(&rt, items, metadata, req.include_object(), true),
            )
        }
        (&Method::GET, None) => (200, state.list(&rt, ns, &list_options(req, &rt)?)?),
        (&Method::POST, None) if part == Part::Main => {
            require_namespace(&rt, ns, &req.path)?;
            (
                201,
                state.create(&rt, ns, req.json_body()?, &req.write_options())?,
            )
        }
        (&Method::PUT, Some(name)) => (
            200,
            state.update(&rt, ns, name, req.json_body()?, part, &req.write_options())?,
        ),
        (&Method::PATCH, Some(name)) => {
            let kind = PatchType::from_content_type(&req.content_type)?;
            let body = patch_body(req, kind)?;
            (
                200,
                state.patch(&rt, ns, name, kind, &body, part, &req.write_options())?,
            )
        }
        (&Method::DELETE, Some(name)) => (200, state.delete(&rt, ns, name, &delete_options(req)?)?),
        (&Method::DELETE, None) => (200, delete_collection(&mut state, req, &rt, ns)?),
        _ => {
            return Err(ApiError::new(
                Reason::MethodNotAllowed,
                format!(
                    "the server does not allow this method on the requested resource: {} {}",
                    req.method, req.path
                ),
            ))
        }
    };
    answer(req, code, &value)
}

/// Watch responses are streams: the store queues events on a channel that
/// the response body drains.
fn start_watch(
    state: &mut State,
    req: &ApiRequest,
    rt: ResourceType,
    ns: Option<&str>,
) -> Result<Response<Body>, ApiError> {
    if protobuf::wants_only_protobuf(&req.accept) {
        return Err(ApiError::new(
            Reason::NotAcceptable,
            "watches are served as application/json only",
        ));
    }
    let events = state.watch(watch_options(req, &rt, ns)?)?;
    let timeout = req
        .param("timeoutSeconds")
        .and_then(|t| t.parse().ok())
        .unwrap_or(1800);
    Ok(watch_response(
        rt,
        events,
        Duration::from_secs(timeout),
        req.watch_format(),
    ))
}

/// DELETE on a collection: deletes what the selectors match, answers the
/// list of what was matched.
fn delete_collection(
    state: &mut State,
    req: &ApiRequest,
    rt: &ResourceType,
    ns: Option<&str>,
) -> Result<Value, ApiError> {
    let list = state.list(rt, ns, &list_options(req, rt)?)?;
    let opts = delete_options(req)?;
    for item in list["items"].as_array().into_iter().flatten() {
        let item_ns = item["metadata"]["namespace"].as_str();
        let item_name = item["metadata"]["name"].as_str().unwrap_or_default();
        state.delete(rt, item_ns, item_name, &opts)?;
    }
    Ok(list)
}

fn not_served(path: &str) -> ApiError {
    ApiError::new(
        Reason::NotFound,
        format!("the server could not find the requested resource ({path})"),
    )
}

fn resolve(
    registry: &crate::registry::Registry,
    path: &ResourcePath,
) -> Result<ResourceType, ApiError> {
    let rt = registry
        .find(&path.group, &path.version, &path.plural)
        .cloned()
        .ok_or_else(|| not_served(&format!("{}/{}/{}", path.group, path.version, path.plural)))?;
    if !rt.namespaced && path.namespace.is_some() {
        return Err(not_served(&rt.plural));
    }
    Ok(rt)
}

fn require_namespace(rt: &ResourceType, ns: Option<&str>, path: &str) -> Result<(), ApiError> {
    if rt.namespaced && ns.is_none() {
        return Err(not_served(path));
    }
    Ok(())
}

fn patch_body(req: &ApiRequest, kind: PatchType) -> Result<Value, ApiError> {
    match (kind, serde_json::from_slice::<Value>(&req.body)) {
        (_, Ok(v)) => Ok(v),
        (PatchType::Apply, Err(e)) => Err(ApiError::bad_request(format!(
            "apply patch body must be JSON (the JSON subset of YAML): {e}"
        ))),
        (_, Err(e)) => Err(ApiError::bad_request(format!(
            "the patch is not valid JSON: {e}"
        ))),
    }
}

fn list_options(req: &ApiRequest, rt: &ResourceType) -> Result<ListOptions, ApiError> {
    Ok(ListOptions {
        labels: LabelSelector::parse(req.param("labelSelector").unwrap_or_default())?,
        fields: FieldSelector::parse(req.param("fieldSelector").unwrap_or_default(), &rt.kind)?,
        limit: req.param("limit").and_then(|l| l.parse().ok()).unwrap_or(0),
        continue_token: req.param("continue").map(String::from),
    })
}

fn watch_options(
    req: &ApiRequest,
    rt: &ResourceType,
    ns: Option<&str>,
) -> Result<WatchOptions, ApiError> {
    let list = list_options(req, rt)?;
    let resource_version = match req.param("resourceVersion") {
        None => None,
        Some(rv) => Some(rv.parse::<u64>().map_err(|_| {
            ApiError::bad_request(format!(
                "invalid resourceVersion {rv:?}: must be an integer"
            ))
        })?),
    };
    Ok(WatchOptions {
        filter: WatchFilter {
            group: rt.group.clone(),
            resource: rt.plural.clone(),
            namespace: ns.map(String::from),
            labels: list.labels,
            fields: list.fields,
        },
        resource_version,
        bookmarks: req.flag("allowWatchBookmarks"),
        send_initial_events: req.flag("sendInitialEvents"),
    })
}

fn delete_options(req: &ApiRequest) -> Result<DeleteOptions, ApiError> {
    let mut opts = DeleteOptions {
        dry_run: req.param("dryRun") == Some("All"),
        orphan: req.param("propagationPolicy") == Some("Orphan"),
        ..Default::default()
    };
    if req.body.iter().all(u8::is_ascii_whitespace) {
        return Ok(opts);
    }
    let body = req.json_body()?;
    let pre = &body["preconditions"];
    opts.uid = pre["uid"].as_str().map(String::from);
    opts.resource_version = pre["resourceVersion"].as_str().map(String::from);
    if let Some(policy) = body["propagationPolicy"].as_str() {
        if !matches!(policy, "Orphan" | "Background" | "Foreground") {
            return Err(ApiError::bad_request(format!(
                "unknown propagationPolicy {policy:?}"
            )));
        }
        opts.orphan = policy == "Orphan";
    }
    if body["orphanDependents"].as_bool() == Some(true) {
        opts.orphan = true;
    }
    if body["dryRun"]
        .as_array()
        .is_some_and(|d| d.iter().any(|v| v == "All"))
    {
        opts.dry_run = true;
    }
    Ok(opts)
}

fn discovery_response(
    shared: &Shared,
    req: &ApiRequest,
    route: Route,
) -> Result<Response<Body>, ApiError> {
    if req.method != Method::GET {
        return Err(ApiError::new(
            Reason::MethodNotAllowed,
            format!("{} is not allowed on {}", req.method, req.path),
        ));
    }
    let state = shared.state.lock().unwrap_or_else(|p| p.into_inner());
    let registry = state.registry();
    let value = match route {
        Route::Root => discovery::root(registry),
        Route::Version => discovery::version(),
        Route::Health => return Ok(text_response(200, "ok")),
        Route::CoreVersions => discovery::core_versions(&shared.addr.to_string()),
        Route::Groups => discovery::groups(registry),
        Route::Group(g) => discovery::group(registry, &g).ok_or_else(|| not_served(&req.path))?,
        Route::Resources(g, v) => {
            discovery::resources(registry, &g, &v).ok_or_else(|| not_served(&req.path))?
        }
        Route::OpenApiIndex => openapi::index(registry),
        Route::OpenApiDocument(key) => {
            openapi::document(registry, &key).ok_or_else(|| not_served(&req.path))?
        }
        Route::Resource(_) | Route::Unknown => return Err(not_served(&req.path)),
    };
    Ok(json_response(200, &value))
}
