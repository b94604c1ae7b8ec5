//! The `ovn.kubernetes.io/*` annotations of pods, nodes and namespaces.
