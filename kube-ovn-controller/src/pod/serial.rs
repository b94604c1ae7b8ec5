//! One pod's reconcile and the clean-up of its deletion never run at once: kube-rs's
//! `Controller` serializes reconciles per object, but the deleted-pod worker
//! ([`super::delete::clean_deleted`]) runs beside it, as Kube-OVN's `deletePodQueue`
//! runs beside its `addOrUpdatePodQueue` under one per-key lock.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use kube_ovn_api::NamespacedName;
use tokio::sync::OwnedMutexGuard;

/// A lock per `namespace/name`; an entry lives only while someone holds or waits on it.
#[derive(Debug, Default)]
pub struct PodLocks {
    held: Mutex<HashMap<NamespacedName, Arc<tokio::sync::Mutex<()>>>>,
}

/// The lock of one pod, released (and forgotten once unused) on drop.
#[derive(Debug)]
pub struct PodGuard<'a> {
    locks: &'a PodLocks,
    key: NamespacedName,
    guard: Option<OwnedMutexGuard<()>>,
}

impl PodLocks {
    /// Waits for `key`'s lock.
    pub async fn lock(&self, key: &NamespacedName) -> PodGuard<'_> {
        let mutex = {
            let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
            held.entry(key.clone()).or_default().clone()
        };
        PodGuard {
            locks: self,
            key: key.clone(),
            guard: Some(mutex.lock_owned().await),
        }
    }

    /// Keys with a holder or a waiter.
    pub fn len(&self) -> usize {
        self.held
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// Whether no key is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Drop for PodGuard<'_> {
    fn drop(&mut self) {
        drop(self.guard.take());
        let mut held = self
            .locks
            .held
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        // only the map refers to it: nobody holds or waits
        if held
            .get(&self.key)
            .is_some_and(|m| Arc::strong_count(m) == 1)
        {
            held.remove(&self.key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn one_holder_per_key_and_no_entry_left_behind() {
        let locks = Arc::new(PodLocks::default());
        let (a, b) = (
            NamespacedName::new("ns", "a"),
            NamespacedName::new("ns", "b"),
        );
        let first = locks.lock(&a).await;
        let other = locks.lock(&b).await;
        let waiter = {
            let (locks, a) = (locks.clone(), a.clone());
            tokio::spawn(async move {
                let _g = locks.lock(&a).await;
            })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiter.is_finished(), "a second holder of ns/a got in");
        drop(other);
        drop(first);
        waiter.await.unwrap();
        assert!(locks.is_empty());
    }
}
