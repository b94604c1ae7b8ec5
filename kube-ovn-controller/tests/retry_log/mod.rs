//! What the retry tests read of the reconcilers' logs: the failures they report (a
//! WARN event with a given message), counted per value of one field, beside the usual
//! test output.

#![allow(dead_code)] // each test binary uses a different part

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::sync::{Mutex, OnceLock};

use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::Layer;

/// (message, value of the field asked for) -> how many times it was logged at WARN.
static SEEN: OnceLock<Mutex<BTreeMap<(String, String), usize>>> = OnceLock::new();

fn seen() -> &'static Mutex<BTreeMap<(String, String), usize>> {
    SEEN.get_or_init(Mutex::default)
}

#[derive(Default)]
struct Fields(BTreeMap<String, String>);

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_string(), value.to_string());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn Debug) {
        self.0
            .insert(field.name().to_string(), format!("{value:?}"));
    }
}

struct Warnings;

impl<S: Subscriber> Layer<S> for Warnings {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        if *event.metadata().level() != Level::WARN {
            return;
        }
        let mut fields = Fields::default();
        event.record(&mut fields);
        let message = fields.0.remove("message").unwrap_or_default();
        let mut seen = seen().lock().expect("log counter lock");
        for (field, value) in fields.0 {
            *seen
                .entry((message.clone(), format!("{field}={value}")))
                .or_default() += 1;
        }
        *seen.entry((message, String::new())).or_default() += 1;
    }
}

/// Installs the counting layer with the usual test output (first caller wins).
pub fn init() {
    let _ = tracing_subscriber::registry()
        .with(
            tracing_subscriber::fmt::layer()
                .with_test_writer()
                .with_filter(tracing_subscriber::filter::LevelFilter::INFO),
        )
        .with(Warnings)
        .try_init();
}

/// How many WARN events with `message` were logged with `field` (`name=value`,
/// values as the log prints them), or at all when `field` is empty.
pub fn warnings(message: &str, field: &str) -> usize {
    let seen = seen().lock().expect("log counter lock");
    seen.get(&(message.to_string(), field.to_string()))
        .copied()
        .unwrap_or(0)
}
