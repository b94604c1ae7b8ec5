//! The controller's flags, with Kube-OVN's names.
