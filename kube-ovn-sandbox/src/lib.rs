//! The sandbox's stand-ins for what a real cluster has and this machine
//! cannot run: a scheduler, the Deployment and ReplicaSet controllers, a
//! node agent in place of kubelet and a container runtime (network
//! namespaces, the real CNI path, a responder per pod), an independent
//! NetworkPolicy evaluator and a prober that checks the datapath against it;
//! and [`cluster`], which composes them with OVN, the controller and the
//! daemons into the `kube-ovn-sandbox` command.

pub mod agent;
pub mod cluster;
pub mod controllers;
pub mod endpointslices;
pub mod matrix;
pub mod netns;
pub mod pod_status;
pub mod policy_eval;
pub mod responder;
pub mod runtime;
pub mod scheduler;
mod wake;
pub mod workloads;
