//! Criterion benchmarks; see `benches/`.
