//! How long a reconciler waits before it tries again what failed: [`RETRY_MIN`] after a
//! first failure, doubled with each failure in a row, at most [`RETRY_MAX`]; a success
//! starts over. One policy for every reconciler that keeps its own count (the Service
//! reconciler per key, the NetworkPolicy reconciler per pass).

use std::time::Duration;

/// The wait after a first failure.
pub const RETRY_MIN: Duration = Duration::from_millis(500);
/// The longest wait, for what keeps failing.
pub const RETRY_MAX: Duration = Duration::from_secs(30);

/// The wait after the `failures`-th failure in a row (1 for the first).
pub fn retry_delay(failures: u32) -> Duration {
    let doublings = failures.saturating_sub(1).min(16);
    RETRY_MIN.saturating_mul(1 << doublings).min(RETRY_MAX)
}

/// A count of failures in a row.
#[derive(Debug, Clone, Default)]
pub struct Backoff {
    failures: u32,
}

impl Backoff {
    /// Counts a failure; how long to wait before the next try.
    pub fn failed(&mut self) -> Duration {
        self.failures = self.failures.saturating_add(1);
        retry_delay(self.failures)
    }

    /// Counts a success: the next failure waits [`RETRY_MIN`] again.
    pub fn succeeded(&mut self) {
        self.failures = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_double_up_to_the_cap_and_start_over_after_a_success() {
        let ms = Duration::from_millis;
        let mut backoff = Backoff::default();
        let delays: Vec<Duration> = (0..9).map(|_| backoff.failed()).collect();
        let expected = [500, 1000, 2000, 4000, 8000, 16000].map(ms);
        assert_eq!(delays[..6], expected);
        assert_eq!(delays[6..], [RETRY_MAX; 3]);
        assert_eq!(retry_delay(u32::MAX), RETRY_MAX);
        backoff.succeeded();
        assert_eq!(backoff.failed(), RETRY_MIN);
    }
}
