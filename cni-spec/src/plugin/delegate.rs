//! Delegation (spec section 4): a plugin runs another plugin, usually its IPAM plugin,
//! found on `CNI_PATH`, with the same environment and the complete configuration.
//!
//! If the delegate refuses the configuration's version (error 1), the configuration is
//! offered again at the highest older version the delegate lists in VERSION; the caller
//! converts the delegate's result back as needed. STATUS and GC are only forwarded to a
//! delegate that supports 1.1.0 (older plugins do not know these commands).

use std::time::Duration;

use serde_json::Value;

use super::env::{CmdArgs, Command};
use crate::error::{CniError, ErrorCode};
use crate::exec::{exec_plugin, find_plugin, garbage, ExecError};
use crate::result::CniResult;
use crate::version::{CniVersion, VersionInfo};

/// How long a delegate may run.
pub const DEFAULT_DELEGATE_TIMEOUT: Duration = Duration::from_secs(60);

/// Runs `plugin` with ADD and returns its result (in whatever version it answered).
pub fn delegate_add(plugin: &str, config: &[u8], args: &CmdArgs) -> Result<CniResult, CniError> {
    let output = exec_with_version_fallback(plugin, config, args, Command::Add)?;
    let (binary, bytes) = output;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(ExecError::NoOutput { binary }.to_cni_error());
    }
    CniResult::from_slice(&bytes).map_err(|e| garbage(&binary, &bytes, e).to_cni_error())
}

/// Runs `plugin` with DEL.
pub fn delegate_del(plugin: &str, config: &[u8], args: &CmdArgs) -> Result<(), CniError> {
    exec_with_version_fallback(plugin, config, args, Command::Del).map(drop)
}

/// Runs `plugin` with CHECK.
pub fn delegate_check(plugin: &str, config: &[u8], args: &CmdArgs) -> Result<(), CniError> {
    exec_with_version_fallback(plugin, config, args, Command::Check).map(drop)
}

/// Runs `plugin` with STATUS if it supports 1.1.0; returns whether it was run.
pub fn delegate_status(plugin: &str, config: &[u8], args: &CmdArgs) -> Result<bool, CniError> {
    delegate_if_modern(plugin, config, args, Command::Status)
}

/// Runs `plugin` with GC if it supports 1.1.0; returns whether it was run.
pub fn delegate_gc(plugin: &str, config: &[u8], args: &CmdArgs) -> Result<bool, CniError> {
    delegate_if_modern(plugin, config, args, Command::Gc)
}

fn delegate_if_modern(
    plugin: &str,
    config: &[u8],
    args: &CmdArgs,
    command: Command,
) -> Result<bool, CniError> {
    let binary = find_plugin(plugin, &args.path).map_err(|e| e.to_cni_error())?;
    let versions = query_versions(&binary, args)?;
    if !versions.iter().any(|v| v.supports_status_and_gc()) {
        tracing::debug!(
            plugin,
            command = command.as_str(),
            "delegate predates 1.1.0, skipped"
        );
        return Ok(false);
    }
    exec_plugin(
        &binary,
        &args.to_env(command),
        config,
        DEFAULT_DELEGATE_TIMEOUT,
    )
    .map_err(|e| e.to_cni_error())?;
    Ok(true)
}

fn exec_with_version_fallback(
    plugin: &str,
    config: &[u8],
    args: &CmdArgs,
    command: Command,
) -> Result<(std::path::PathBuf, Vec<u8>), CniError> {
    let binary = find_plugin(plugin, &args.path).map_err(|e| e.to_cni_error())?;
    let env = args.to_env(command);
    match exec_plugin(&binary, &env, config, DEFAULT_DELEGATE_TIMEOUT) {
        Ok(out) => Ok((binary, out)),
        Err(ExecError::Failed { error, .. }) if error.code == ErrorCode::IncompatibleCniVersion => {
            let Some(downgraded) = downgrade_config(&binary, config, args)? else {
                return Err(error);
            };
            tracing::debug!(plugin, "retrying delegate at an older CNI version");
            exec_plugin(&binary, &env, &downgraded, DEFAULT_DELEGATE_TIMEOUT)
                .map(|out| (binary, out))
                .map_err(|e| e.to_cni_error())
        }
        Err(e) => Err(e.to_cni_error()),
    }
}

/// The configuration at the delegate's highest version older than the configuration's,
/// with `prevResult` converted to match; `None` if there is no such version.
fn downgrade_config(
    binary: &std::path::Path,
    config: &[u8],
    args: &CmdArgs,
) -> Result<Option<Vec<u8>>, CniError> {
    let mut value: Value = serde_json::from_slice(config)
        .map_err(|e| CniError::new(ErrorCode::DecodingFailure, format!("delegate config: {e}")))?;
    let current = value
        .get("cniVersion")
        .and_then(Value::as_str)
        .and_then(|s| CniVersion::parse(s).ok());
    let Some(current) = current else {
        return Ok(None);
    };
    let theirs = query_versions(binary, args)?;
    let Some(target) = theirs.into_iter().filter(|v| *v < current).max() else {
        return Ok(None);
    };
    let obj = value
        .as_object_mut()
        .expect("a config with cniVersion is an object");
    obj.insert("cniVersion".into(), target.as_str().into());
    if let Some(prev) = obj.remove("prevResult") {
        let converted = CniResult::from_value_or(prev, Some(current))
            .ok()
            .and_then(|r| r.convert_to(target).ok());
        if let Some(r) = converted {
            obj.insert("prevResult".into(), r.to_value());
        }
    }
    Ok(Some(serde_json::to_vec(&value).expect("serializes")))
}

fn query_versions(binary: &std::path::Path, args: &CmdArgs) -> Result<Vec<CniVersion>, CniError> {
    let out = exec_plugin(
        binary,
        &args.to_env(Command::Version),
        b"{}",
        DEFAULT_DELEGATE_TIMEOUT,
    )
    .map_err(|e| e.to_cni_error())?;
    let info: VersionInfo =
        serde_json::from_slice(&out).map_err(|e| garbage(binary, &out, e).to_cni_error())?;
    Ok(info.known_versions())
}
