//! Flags as Kube-OVN's Go commands take them (pflag, with klog's flag set added): Go's
//! booleans, and flags accepted for compatibility but not acted on.

use clap::builder::ValueParser;
use clap::{Arg, ArgAction, Command};

/// How a flag takes its value, as pflag parses it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlagKind {
    /// A boolean: bare `--flag` is `true`; a value only as `--flag=VALUE`.
    Bool,
    /// Takes a value: `--flag=VALUE` or `--flag VALUE`.
    Value,
}

use FlagKind::{Bool, Value};

/// klog's flags (`k8s.io/klog/v2` `InitFlags`), which Kube-OVN's controller and daemon
/// both add to their pflag sets: accepted and ignored by both.
pub const KLOG_FLAGS: &[(&str, FlagKind)] = &[
    ("v", Value),
    ("vmodule", Value),
    ("log_dir", Value),
    ("log_file", Value),
    ("log_file_max_size", Value),
    ("logtostderr", Bool),
    ("alsologtostderr", Bool),
    ("stderrthreshold", Value),
    ("log_backtrace_at", Value),
    ("add_dir_header", Bool),
    ("skip_headers", Bool),
    ("skip_log_headers", Bool),
    ("one_output", Bool),
];

/// Go's `strconv.ParseBool`: what pflag accepts for a boolean flag.
pub fn parse_go_bool(text: &str) -> Result<bool, String> {
    match text {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Ok(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Ok(false),
        _ => Err(format!("{text:?} is not a boolean (true or false)")),
    }
}

/// `cmd` accepting each of `flags` as pflag would, hidden from `--help`: a boolean bare
/// or with `=`, a value with `=` or as the next argument.
pub fn with_ignored<'a>(
    cmd: Command,
    flags: impl IntoIterator<Item = &'a (&'static str, FlagKind)>,
) -> Command {
    flags.into_iter().fold(cmd, |cmd, (name, kind)| {
        let arg = Arg::new(*name)
            .long(*name)
            .hide(true)
            .action(ArgAction::Set);
        cmd.arg(match kind {
            FlagKind::Bool => arg
                .num_args(0..=1)
                .require_equals(true)
                .default_missing_value("true")
                .value_parser(ValueParser::new(parse_go_bool)),
            FlagKind::Value => arg,
        })
    })
}
