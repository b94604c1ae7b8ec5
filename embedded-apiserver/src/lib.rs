//! embedded-apiserver (work in progress)
