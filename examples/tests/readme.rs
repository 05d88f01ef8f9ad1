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
