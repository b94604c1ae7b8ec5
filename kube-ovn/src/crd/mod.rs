//! The `kubeovn.io/v1` custom resources.
