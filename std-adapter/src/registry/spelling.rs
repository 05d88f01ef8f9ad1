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

/// How far `typed` is from `meant`, if it nearly spells it: an edit
/// distance of at most a third of `meant`'s length. The one rule behind
/// every "did you mean" of the registry (variables, compartment names in
/// variables, file keys).
pub(crate) fn nearly_spells(typed: &str, meant: &str) -> Option<usize> {
    let distance = edit_distance(typed, meant);
    (distance * 3 <= meant.len()).then_some(distance)
}

/// The candidate `typed` nearly spells, the closest if several are near.
pub(crate) fn nearest<'a>(
    typed: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    candidates
        .into_iter()
        .filter_map(|c| Some((nearly_spells(typed, c)?, c)))
        .min_by_key(|&(distance, _)| distance)
        .map(|(_, c)| c)
}

/// Levenshtein distance, by bytes (variable names and keys are ASCII;
/// anything else only counts as more different).
fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, &ca) in a.iter().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1)
                .min(row[j] + 1)
                .min(diagonal + usize::from(ca != cb));
            diagonal = above;
        }
    }
    row[b.len()]
}
