//! Partition settings from the environment:
//! `BULKHEAD_<NAME>_PARTITIONS_<P>_<KEY>` variables applied to a domain's
//! partitions. Apart from `partition`, so that the partition module needs
//! nothing of the environment (which needs its keys).

use std::sync::Arc;

use bulkhead_core::partition::{Amount, PartitionConfig};

use super::env::EnvSource;
use super::parse::{SettingsError, SettingsErrorKind};
use super::partition::{KEYS, intern, set, unknown_setting};
use super::spelling::{ENV_PREFIX, env_segment, nearest};
use crate::partition::Partitioned;

/// `partitions` with the environment's `BULKHEAD_<NAME>_PARTITIONS_<P>_<KEY>`
/// variables applied. A variable for a partition that `partitions` does
/// not have is an error naming it, the partitions known and the one it
/// nearly spells: a variable never declares a partition. `max_concurrent`
/// is the compartment's limit, against which a share given as a bare
/// number is checked (see [`bare_share_hint`]).
pub(crate) fn env_overrides(
    env: &EnvSource,
    domain: &str,
    max_concurrent: usize,
    partitions: &'static [PartitionConfig],
) -> Result<&'static [PartitionConfig], SettingsError> {
    let prefix = format!("{ENV_PREFIX}{}_PARTITIONS_", env_segment(domain));
    let vars: Vec<(&str, &str)> = env.with_prefix(&prefix).collect();
    if vars.is_empty() {
        return Ok(partitions);
    }
    let mut out = partitions.to_vec();
    let segments: Vec<String> = out.iter().map(|p| env_segment(&p.name)).collect();
    // The share variables written as bare numbers a percentage could mean.
    let mut bare_shares = Vec::new();
    for (var, raw) in vars {
        let rest = &var[prefix.len()..];
        let Some((part, setting)) = split_partition_variable(rest) else {
            if let Some(upper) = upper_cased(var, &prefix, &segments) {
                return Err(lower_case(var, raw, &upper));
            }
            let last = rest.rsplit('_').next().unwrap_or(rest).to_ascii_lowercase();
            return Err(unknown_setting(var, &last, raw));
        };
        let Some(index) = segments.iter().position(|s| s == part) else {
            if let Some(upper) = upper_cased(var, &prefix, &segments) {
                return Err(lower_case(var, raw, &upper));
            }
            return Err(unknown_partition(
                var, raw, domain, part, setting, &out, &segments,
            ));
        };
        let config = out[index].clone();
        out[index] = set(config, setting, var, raw, true)?;
        if setting == "share" && matches!(out[index].share, Amount::Seats(1..=100)) {
            bare_shares.push((var, raw, index));
        }
    }
    if let Some(hint) = bare_share_hint(domain, max_concurrent, &out, &bare_shares) {
        return Err(hint);
    }
    Ok(intern(out))
}

/// The partition segment and the setting of a variable's tail after
/// `BULKHEAD_<NAME>_PARTITIONS_` (`LIVE_MAX_WAIT` → `LIVE`, `max_wait`).
fn split_partition_variable(rest: &str) -> Option<(&str, &'static str)> {
    KEYS.iter().find_map(|k| {
        let upper = k.to_ascii_uppercase();
        let part = rest.strip_suffix(upper.as_str())?.strip_suffix('_')?;
        Some((part, *k))
    })
}

/// `var` upper-cased, if that is the variable of a declared partition:
/// the registry reads variables as written, and its own are upper case.
fn upper_cased(var: &str, prefix: &str, segments: &[String]) -> Option<String> {
    let upper = var.to_ascii_uppercase();
    if upper == var {
        return None;
    }
    let (part, _) = split_partition_variable(&upper[prefix.len()..])?;
    segments.iter().any(|s| s == part).then_some(upper)
}

/// The error for a variable with lower-case letters that, upper-cased,
/// is a declared partition's.
fn lower_case(var: &str, raw: &str, upper: &str) -> SettingsError {
    SettingsError::new(
        SettingsErrorKind::UnknownKey,
        var,
        raw,
        format!(
            "a variable in upper case, as every partition's variable is spelled (the \
             partition's name upper-cased, other characters `_`); upper-case it: {upper}"
        ),
    )
}

/// When the shares do not fit the limit and a share was given as a bare
/// number (`BULKHEAD_DB_PARTITIONS_LIVE_SHARE=75`), which reads as seats:
/// an error on that variable saying so, with the percentage spelled as
/// it is written (`75%`). Only when the number alone is above the limit
/// (as seats it could never fit) and, read as a percentage, the shares
/// fit: then a percentage was surely meant. The fit is core's own check,
/// so the two never disagree.
fn bare_share_hint(
    domain: &str,
    max_concurrent: usize,
    partitions: &[PartitionConfig],
    bare_shares: &[(&str, &str, usize)],
) -> Option<SettingsError> {
    let fits = |partitions: &[PartitionConfig]| {
        Partitioned::with_lock(
            bulkhead_core::Name::shared(Arc::from(domain)),
            max_concurrent,
            partitions,
            crate::StdLock::new(),
        )
    };
    let Err(error @ bulkhead_core::ConfigError::SharesExceedLimit { .. }) = fits(partitions) else {
        return None;
    };
    let &(var, raw, _) = bare_shares.iter().find(|&&(_, _, index)| {
        let Amount::Seats(n) = partitions[index].share else {
            return false;
        };
        let mut as_percent = partitions.to_vec();
        as_percent[index].share = Amount::Percent(u8::try_from(n).unwrap_or(u8::MAX));
        n > max_concurrent && fits(&as_percent).is_ok()
    })?;
    let percent = raw.trim();
    Some(SettingsError::new(
        SettingsErrorKind::Overflow,
        var,
        raw,
        format!(
            "shares that fit the limit ({error}); a bare number is a count of seats, and a \
             percentage of the limit is written with its sign: {var}={percent}%"
        ),
    ))
}

/// The error for a variable that names a partition the compartment does
/// not have.
fn unknown_partition(
    var: &str,
    raw: &str,
    domain: &str,
    part: &str,
    setting: &str,
    known: &[PartitionConfig],
    segments: &[String],
) -> SettingsError {
    if known.is_empty() {
        return SettingsError::new(
            SettingsErrorKind::UnknownKey,
            var,
            raw,
            format!(
                "a variable for a declared partition, but compartment `{domain}` has no \
                 partitions; declare them in code (DomainConfig::partitions) or in the file \
                 ([domains.{domain}.partitions.NAME])"
            ),
        );
    }
    let names: Vec<String> = known.iter().map(|p| format!("`{}`", p.name)).collect();
    let meant = match nearest(part, segments.iter().map(String::as_str)) {
        Some(segment) => format!(
            "; did you mean {prefix}{segment}_{}?",
            setting.to_ascii_uppercase(),
            prefix = &var[..var.len() - part.len() - setting.len() - 1],
        ),
        None => String::new(),
    };
    SettingsError::new(
        SettingsErrorKind::UnknownKey,
        var,
        raw,
        format!(
            "a variable for one of compartment `{domain}`'s partitions ({}); a variable never \
             declares a partition, code or the file does{meant}",
            names.join(", ")
        ),
    )
}
