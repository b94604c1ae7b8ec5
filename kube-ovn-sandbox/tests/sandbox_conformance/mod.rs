//! The parts of `sandbox_conformance.rs`: the sandbox as a person drives it
//! (`sandbox`), NetworkPolicy conformance (`policies`), Services and a StatefulSet's
//! pod (`services`), and kubectl as typed (`kubectl`).

pub mod kubectl;
pub mod policies;
pub mod sandbox;
pub mod services;
