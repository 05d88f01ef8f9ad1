//! The figures the top-level README quotes from `demo --adaptive` are the
//! program's own: the adaptive demo runs on simulated time, so its summary
//! lines are reproducible, and a change that moves them fails here until
//! the README is regenerated (paste the lines this test prints).

use bulkhead_examples::adaptive::{demo_scenario, run_demo};

#[test]
fn the_readme_quotes_the_adaptive_demo_as_it_prints() {
    let readme = include_str!("../../README.md");
    let (fixed, adapted) = run_demo(&demo_scenario());
    let lines = [fixed.summary_line(), adapted.summary_line()];
    let missing: Vec<&String> = lines
        .iter()
        .filter(|l| !readme.lines().any(|r| r == l.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "README.md must quote `demo -- --adaptive` as it prints today; replace its two summary lines with:\n{}",
        lines.join("\n")
    );
}

/// Each published crate's README is its front page on docs.rs and the
/// registry, so its features table must list exactly the crate's features
/// (a missing or stale row misleads whoever picks features from it).
#[test]
fn each_crate_readme_lists_exactly_its_features() {
    let crates = [
        (
            "core",
            include_str!("../../core/README.md"),
            include_str!("../../core/Cargo.toml"),
        ),
        (
            "std-adapter",
            include_str!("../../std-adapter/README.md"),
            include_str!("../../std-adapter/Cargo.toml"),
        ),
        (
            "tokio-adapter",
            include_str!("../../tokio-adapter/README.md"),
            include_str!("../../tokio-adapter/Cargo.toml"),
        ),
        (
            "embassy-adapter",
            include_str!("../../embassy-adapter/README.md"),
            include_str!("../../embassy-adapter/Cargo.toml"),
        ),
    ];
    for (dir, readme, manifest) in crates {
        let mut declared = features_of(manifest);
        declared.retain(|f| f != "default");
        let mut documented: Vec<String> = features_section(readme)
            .filter_map(|l| l.strip_prefix("| `"))
            .filter_map(|l| l.split_once('`'))
            .map(|(name, _)| name.to_string())
            .filter(|name| declared.contains(name) || looks_like_a_feature(name))
            .collect();
        documented.sort();
        documented.dedup();
        declared.sort();
        assert_eq!(
            documented, declared,
            "{dir}/README.md's features table must list exactly the features of {dir}/Cargo.toml \
             (left: the table's rows, right: the manifest)"
        );
    }
}

/// The lines of a README's `## Features` section.
fn features_section(readme: &str) -> impl Iterator<Item = &str> {
    readme
        .lines()
        .skip_while(|l| l.trim() != "## Features")
        .skip(1)
        .take_while(|l| !l.starts_with("## "))
}

/// The names under `[features]` in a manifest.
fn features_of(manifest: &str) -> Vec<String> {
    manifest
        .lines()
        .skip_while(|l| l.trim() != "[features]")
        .skip(1)
        .take_while(|l| !l.starts_with('['))
        .filter_map(|l| l.split_once(" = "))
        .map(|(name, _)| name.trim().to_string())
        .filter(|name| !name.starts_with('#'))
        .collect()
}

/// A table row's first cell that is a lower-case word with dashes: a
/// feature name, as opposed to a type or a path in another table.
fn looks_like_a_feature(name: &str) -> bool {
    !name.is_empty() && name.chars().all(|c| c.is_ascii_lowercase() || c == '-')
}
