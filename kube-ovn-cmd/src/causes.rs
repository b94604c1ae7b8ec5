//! An error printed with its causes on one line, for the one log record that reports it
//! (each layer's message names its own step; the causes follow, `: `-separated).

use std::error::Error;
use std::fmt;

/// Displays an error and every `source()` below it: `step: cause: root cause`.
#[derive(Debug, Clone, Copy)]
pub struct Causes<'a>(pub &'a (dyn Error + 'static));

impl fmt::Display for Causes<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)?;
        let mut source = self.0.source();
        while let Some(cause) = source {
            write!(f, ": {cause}")?;
            source = cause.source();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("writing the port")]
    struct Outer(#[source] std::io::Error);

    #[test]
    fn every_cause_once() {
        let err = Outer(std::io::Error::other("connection reset"));
        assert_eq!(
            Causes(&err).to_string(),
            "writing the port: connection reset"
        );
    }
}
