//! Runnable example binaries; see `src/bin/`.
