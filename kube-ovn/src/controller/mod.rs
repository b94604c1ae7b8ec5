//! One reconciler per kind.
