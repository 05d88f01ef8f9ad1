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

/// Edit distance by bytes, counting an insertion, a deletion, a
/// substitution or a swap of two neighbouring bytes as one edit (the
/// optimal string alignment distance): a swap is the commonest slip of
/// the fingers (`SHAER` for `SHARE`), and plain Levenshtein would count
/// it as two, too far for a short name. Variable names and keys are
/// ASCII; anything else only counts as more different.
fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    // Three rows: the one before the previous is what a swap looks back to.
    let mut before: Vec<usize> = vec![0; b.len() + 1];
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    let mut row: Vec<usize> = vec![0; b.len() + 1];
    for i in 1..=a.len() {
        row[0] = i;
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut d = (previous[j] + 1)
                .min(row[j - 1] + 1)
                .min(previous[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d = d.min(before[j - 2] + 1);
            }
            row[j] = d;
        }
        std::mem::swap(&mut before, &mut previous);
        std::mem::swap(&mut previous, &mut row);
    }
    previous[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_swap_of_neighbours_is_one_edit() {
        assert_eq!(edit_distance("LVIE", "LIVE"), 1);
        assert_eq!(edit_distance("SHAER", "SHARE"), 1);
        assert_eq!(edit_distance("max_concurent", "max_concurrent"), 1);
        assert_eq!(edit_distance("abc", "abc"), 0);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("abc", ""), 3);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        // Two swaps are two edits; a swap of non-neighbours is two.
        assert_eq!(edit_distance("BADTHC", "BATCH"), 2);
        assert_eq!(edit_distance("acb", "bca"), 2);
        assert_eq!(nearest("LVIE", ["LIVE", "BATCH"]), Some("LIVE"));
        assert_eq!(nearest("shaer", ["share", "borrow"]), Some("share"));
    }
}
