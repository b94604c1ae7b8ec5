//! Integration tests: kube-rs and kubectl against the embedded API server.
//! One test binary with modules, so kube-rs is linked once.

mod api {
    mod binary;
    pub mod common;
    mod controller;
    mod crud;
    mod exec;
    pub mod kubectl;
    mod kubectl_create;
    mod kubectl_print;
    mod leader;
    mod persist;
    mod protobuf;
    mod scale;
    mod watch;
}
