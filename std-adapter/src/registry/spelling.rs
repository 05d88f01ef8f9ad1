//! How a compartment name is spelled where the registry reads and reports
//! it: the longest accepted name, and a name's segment in environment
//! variables. A leaf, so that the registry's errors, its environment
//! source and its limit settings all spell names one way without
//! depending on each other.

/// The longest accepted compartment name, in bytes.
pub const MAX_NAME_LEN: usize = 100;

/// The prefix of every variable the registry reads.
pub const ENV_PREFIX: &str = "BULKHEAD_";

/// The segment a compartment name contributes to its variables: ASCII
/// upper case, every other character `_`.
///
/// ```
/// use bulkhead_std::registry::env_segment;
/// assert_eq!(env_segment("database:replica"), "DATABASE_REPLICA");
/// assert_eq!(env_segment("tenant-42.eu"), "TENANT_42_EU");
/// ```
pub fn env_segment(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect()
}
