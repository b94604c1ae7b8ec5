//! An in-process Kubernetes API server, for tests and the sandbox.
//!
//! No kube-apiserver can run on the project's machines, yet the controller
//! and node daemon are written against the real API with kube-rs. This crate
//! serves the Kubernetes REST API over HTTP/1.1 + JSON, faithfully enough
//! that kube-rs and kubectl cannot tell the difference for the resources the
//! project uses.
//!
//! # Layers
//!
//! * [`registry`]: which `group/version/resource` triples exist (built-in
//!   kinds plus one entry per served version of every stored
//!   CustomResourceDefinition). Everything else is generic: objects are
//!   `serde_json::Value`s.
//! * [`store`]: objects keyed by (group, resource, namespace, name), one
//!   global resourceVersion counter like etcd's revision, a bounded change
//!   history for resuming watches (older versions get `410 Gone`), and watch
//!   fan-out under the same lock as the writes.
//! * [`patch`]: JSON patch, merge patch, strategic merge patch and
//!   server-side apply with `managedFields`, all pure functions.
//! * [`selector`]: label and field selectors.
//! * the server ([`EmbeddedApiServer`], [`Handle`]): URL routing, discovery
//!   documents, `Status` errors, chunked watch streams, kubeconfig.
//!
//! # Example
//!
//! [`Handle::kube_client`] needs the cargo feature `kube-client` (off by
//! default: the server itself does not use kube-rs).
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use embedded_apiserver::{Config, EmbeddedApiServer};
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use kube::api::{Api, PostParams};
//!
//! let server = EmbeddedApiServer::start(Config::default()).await?;
//! let client = server.kube_client()?;
//! let cms: Api<ConfigMap> = Api::namespaced(client, "default");
//! let mut cm = ConfigMap::default();
//! cm.metadata.name = Some("hello".into());
//! cms.create(&PostParams::default(), &cm).await?;
//! server.write_kubeconfig("/tmp/kubeconfig".as_ref())?; // for kubectl
//! server.shutdown().await;
//! # Ok(()) }
//! ```
//!
//! # Fidelity notes
//!
//! * kubectl: `apply` (client- and server-side), `get` (with the server's
//!   Table columns, `-o wide` included, and CRDs' `additionalPrinterColumns`),
//!   `get -w`, `label`, `annotate`, `patch`, `delete`, `create -f`, `create
//!   --raw`, and the typed commands that send protobuf (`kubectl create
//!   namespace|configmap|secret|deployment|service|serviceaccount`, `kubectl
//!   run`) work. Protobuf bodies are read for the built-in kinds ([`protobuf`]),
//!   and a client whose `Accept` names only protobuf gets protobuf answers
//!   for them (406 for other kinds and for watches).
//! * `kubectl exec` (websocket `v5.channel.k8s.io`, `v4.channel.k8s.io`:
//!   stdin, stdout, stderr, the exit code; no SPDY) and `kubectl logs`
//!   (`follow`, `tailLines`) are served by the [`PodRuntime`] registered
//!   with [`Handle::set_pod_runtime`] (400 without one); `kubectl scale`
//!   uses the `scale` subresource of Deployments, ReplicaSets and
//!   StatefulSets.
//! * `/openapi/v3` holds only what kubectl needs to hand validation to the
//!   server (see `server/openapi.rs`); `/openapi/v2` is 404.
//! * Dependents named by `ownerReferences` are deleted with their owner
//!   (synchronously, right after the owner) unless `propagationPolicy` is
//!   `Orphan`. Namespaces and CRDs take their objects with them.
//! * Persistence: a journal records every write before it is answered and a
//!   snapshot is written every `flush_interval`; a crash loses no
//!   acknowledged write and reuses no resourceVersion.
//! * Watches behave like kube-apiserver's watch cache: a resourceVersion
//!   ahead of the store waits up to 3 s, then ends with 504 "Too large
//!   resource version"; a watcher that falls `watch_buffer` events behind is
//!   closed (its client resumes).
//! * A Service gets its ClusterIP on create, in the response, as kube-apiserver's
//!   Service storage gives it: the lowest free address of the service range
//!   (`10.96.0.0/12` unless [`store::State::set_service_range`]) from its tenth;
//!   an address asked for must be in the range and free (422 naming it).
//! * Not implemented: authentication/authorization, admission, protobuf
//!   watch streams and protobuf for CRDs and custom resources,
//!   the aggregated discovery format (kubectl falls back to the legacy
//!   documents), graceful pod deletion (pods go at once), schema validation
//!   of custom resources, `resourceVersionMatch` (lists are always current).

pub mod error;
pub mod patch;
pub mod pod_runtime;
pub mod protobuf;
pub mod registry;
pub mod selector;
mod server;
pub mod store;
pub mod table;
pub mod validate;

pub use error::{ApiError, ClientError, Reason, StartError};
pub use pod_runtime::{
    run_process, ExecIo, ExecRequest, LogRequest, LogStream, PodRuntime, PodRuntimeError,
};
pub use server::{kubeconfig_yaml, Config, EmbeddedApiServer, Handle};
