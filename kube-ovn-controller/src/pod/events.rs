//! The reasons of the Warning Events on pods whose requests the controller refuses
//! (Kube-OVN's), recorded through the context's [`Recorder`].
//!
//! [`Recorder`]: crate::events::Recorder

use k8s_openapi::api::core::v1::Pod;

use crate::events::EventKind;
use crate::Context;
/// A static or claimed address cannot be had (Kube-OVN's reason).
pub const ACQUIRE_ADDRESS_FAILED: &str = "AcquireAddressFailed";
/// A malformed annotation or an impossible subnet/pool choice.
pub const VALIDATE_FAILED: &str = "ValidatePodNetworkFailed";
/// Two live pods claimed one address; this one lost it.
pub const ADDRESS_CONFLICT: &str = "AddressConflict";

/// Records a Warning Event about `pod`.
pub async fn warn(ctx: &Context, pod: &Pod, reason: &str, message: &str) {
    ctx.events
        .record(pod, EventKind::Warning, reason, message)
        .await;
}
