//! Eviction of idle dynamic compartments (see [`Registry`]'s docs for the
//! rule: never a busy one).

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::time::Duration;

use bulkhead_core::Name;

use super::{Entry, Registry, RegistryError};

impl Registry {
    /// Removes the dynamic compartments unused for at least `older_than`
    /// that are idle by the eviction rule (no outstanding handle, no seat
    /// held, nobody waiting); returns their names, sorted. Built-ins and
    /// the compartments the file declares are never evicted.
    ///
    /// ```
    /// use std::time::Duration;
    /// use bulkhead_std::registry::{DomainConfig, Registry};
    ///
    /// let registry = Registry::local();
    /// let busy = registry.get_or_create("tenant-a", DomainConfig::new(1))?;
    /// drop(registry.get_or_create("tenant-b", DomainConfig::new(1))?);
    /// assert_eq!(registry.evict_idle(Duration::ZERO), ["tenant-b"]);
    /// assert!(registry.get("tenant-a").is_ok()); // `busy` still holds a handle
    /// # drop(busy);
    /// # Ok::<(), bulkhead_std::registry::RegistryError>(())
    /// ```
    pub fn evict_idle(&self, older_than: Duration) -> Vec<Name> {
        let mut map = self.write();
        self.evict_older(&mut map, older_than)
    }

    fn evict_older(&self, map: &mut HashMap<Name, Entry>, older_than: Duration) -> Vec<Name> {
        let now = self.now_ms();
        let limit = u64::try_from(older_than.as_millis()).unwrap_or(u64::MAX);
        let mut gone: Vec<Name> = map
            .iter()
            .filter(|(_, e)| {
                evictable(e) && now.saturating_sub(e.last_used.load(Ordering::Relaxed)) >= limit
            })
            .map(|(n, _)| n.clone())
            .collect();
        for name in &gone {
            map.remove(name);
        }
        gone.sort_unstable();
        gone
    }

    /// Before inserting `name`: applies `idle_after`, then makes room
    /// under `max_entries` by evicting the least recently used idle entry.
    pub(super) fn make_room(
        &self,
        map: &mut HashMap<Name, Entry>,
        name: &Name,
    ) -> Result<(), RegistryError> {
        if let Some(idle_after) = self.idle_after {
            self.evict_older(map, idle_after);
        }
        let Some(limit) = self.max_entries else {
            return Ok(());
        };
        while map.values().filter(|e| !e.builtin && !e.declared).count() >= limit {
            let victim = map
                .iter()
                .filter(|(_, e)| evictable(e))
                .min_by_key(|(_, e)| e.last_used.load(Ordering::Relaxed))
                .map(|(n, _)| n.clone());
            match victim {
                Some(victim) => {
                    map.remove(&victim);
                }
                None => {
                    return Err(RegistryError::AtCapacity {
                        name: name.clone(),
                        limit,
                    });
                }
            }
        }
        Ok(())
    }
}

/// A dynamic entry whose compartment is idle by the eviction rule.
fn evictable(entry: &Entry) -> bool {
    !entry.builtin && !entry.declared && entry.compartment.is_idle()
}
