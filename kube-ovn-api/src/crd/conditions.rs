//! Status conditions as Kube-OVN writes them (`pkg/apis/kubeovn/v1/condition.go`).
//!
//! Unlike `metav1.Condition`, Kube-OVN's condition has a `lastUpdateTime` besides
//! `lastTransitionTime`, optional `reason`/`message`, and `observedGeneration` only where
//! newer kinds fill it. The update rule is Kube-OVN's: setting a condition to the status,
//! reason and message it already has changes nothing; any other change stamps
//! `lastUpdateTime`, and `lastTransitionTime` only when the status flips.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::open_enum::open_enum;

/// Condition type: the controller considers the object ready.
pub const READY: &str = "Ready";
/// Condition type: the spec passed validation.
pub const VALIDATED: &str = "Validated";
/// Condition type: the last error seen while reconciling.
pub const ERROR: &str = "Error";
/// Reason Kube-OVN gives a condition it has not observed yet.
pub const REASON_INIT: &str = "Init";

open_enum! {
    /// `corev1.ConditionStatus`.
    pub enum ConditionStatus {
        True = "True",
        False = "False",
        Unknown = "Unknown",
    }
}

/// One observation of an object's state.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    /// Condition type: [`READY`], [`VALIDATED`], [`ERROR`] or a kind's own.
    #[serde(rename = "type")]
    pub type_: String,
    /// True, False or Unknown.
    pub status: ConditionStatus,
    /// Machine-readable reason for the last transition.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// Human-readable details.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// The `metadata.generation` this condition was computed from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Last time the condition was written with a change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_update_time: Option<Time>,
    /// Last time the status flipped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Time>,
}

/// A ProviderNetwork's condition: one per node and type.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ProviderNetworkCondition {
    /// The node this condition is about.
    pub node: String,
    /// The condition itself.
    #[serde(flatten)]
    pub condition: Condition,
}

/// Finds the condition of type `type_`.
pub fn find<'a>(conditions: &'a [Condition], type_: &str) -> Option<&'a Condition> {
    conditions.iter().find(|c| c.type_ == type_)
}

/// Sets the condition of type `type_` with Kube-OVN's rule (see the module docs), adding it
/// if missing. Returns whether anything changed, so callers can skip a status write.
pub fn set(
    conditions: &mut Vec<Condition>,
    type_: &str,
    status: ConditionStatus,
    reason: &str,
    message: &str,
    now: Time,
) -> bool {
    let Some(existing) = conditions.iter_mut().find(|c| c.type_ == type_) else {
        conditions.push(Condition {
            type_: type_.to_owned(),
            status,
            reason: reason.to_owned(),
            message: message.to_owned(),
            observed_generation: None,
            last_update_time: Some(now.clone()),
            last_transition_time: Some(now),
        });
        return true;
    };
    if existing.status == status && existing.reason == reason && existing.message == message {
        return false;
    }
    if existing.status != status {
        existing.last_transition_time = Some(now.clone());
    }
    existing.last_update_time = Some(now);
    existing.status = status;
    existing.reason = reason.to_owned();
    existing.message = message.to_owned();
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(seconds: i64) -> Time {
        Time(k8s_openapi::jiff::Timestamp::from_second(seconds).expect("in range"))
    }

    #[test]
    fn set_stamps_transition_only_when_status_flips() {
        let mut conditions = Vec::new();
        assert!(set(
            &mut conditions,
            READY,
            ConditionStatus::False,
            "Init",
            "",
            at(1)
        ));
        assert!(!set(
            &mut conditions,
            READY,
            ConditionStatus::False,
            "Init",
            "",
            at(2)
        ));
        assert_eq!(conditions[0].last_update_time, Some(at(1)));

        assert!(set(
            &mut conditions,
            READY,
            ConditionStatus::False,
            "Wait",
            "ls",
            at(3)
        ));
        assert_eq!(conditions[0].last_update_time, Some(at(3)));
        assert_eq!(conditions[0].last_transition_time, Some(at(1)));

        assert!(set(
            &mut conditions,
            READY,
            ConditionStatus::True,
            "Done",
            "",
            at(4)
        ));
        assert_eq!(conditions[0].last_transition_time, Some(at(4)));
        assert_eq!(conditions.len(), 1);
        assert_eq!(
            find(&conditions, READY).map(|c| c.reason.as_str()),
            Some("Done")
        );
    }
}
