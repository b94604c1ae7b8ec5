//! A replica of monitored tables (being written).
