//! A per-domain registry configured from code, a TOML file and the
//! environment, with the precedence code < file < environment.
//!
//! Run it with `cargo run -p bulkhead-examples --bin registry_config`, or
//! override a setting the way an operator would:
//!
//! ```sh
//! BULKHEAD_DATABASE_MAX_CONCURRENT=3 cargo run -p bulkhead-examples --bin registry_config
//! cargo run -p bulkhead-examples --bin registry_config -- path/to/bulkhead.toml
//! ```

use bulkhead_std::MaxWait;
use bulkhead_std::registry::{DomainConfig, EnvSource, Registry, RegistryError};

/// What a deployment's `bulkhead.toml` might say (used when no path is given).
const FILE: &str = r#"
[default]                      # the template for names created on the fly
max_concurrent = 4

[domains.database]
max_concurrent = 20
max_wait = "50ms"              # a duration with a unit (or max_wait_ms = 50)

[domains."database:replica"]   # a per-alias compartment
max_concurrent = 8

[domains.external_api]
max_concurrent = 5
max_waiting = 10
admission = "barging"
"#;

fn main() -> Result<(), RegistryError> {
    let file = std::env::args().nth(1);
    let builder = Registry::builder()
        // code: the defaults the program ships with
        .builtin(
            "cache",
            DomainConfig::new(64).max_wait(MaxWait::from_millis(5)),
        )
        // environment: BULKHEAD_<NAME>_MAX_CONCURRENT, _MAX_WAIT (e.g. 250ms), ... (on by default)
        .env(EnvSource::process());
    let builder = match &file {
        Some(path) => builder.toml_file(path),
        None => builder.toml_str(FILE),
    };
    let registry = builder.build()?;
    registry.database("replica")?; // "database:replica", from the file
    registry.get_or_create_default("tenant-42")?; // the [default] template

    println!(
        "compartments (file: {}):",
        file.as_deref().unwrap_or("built-in example")
    );
    println!(
        "{:<18} {:>6} {:>8} {:>8}",
        "name", "max", "active", "waiting"
    );
    for (name, s) in registry.all_states() {
        println!(
            "{name:<18} {:>6} {:>8} {:>8}",
            s.max_concurrent, s.active, s.waiting
        );
    }

    // Work runs inside a compartment with that compartment's wait budget.
    let rows = registry.execute("database", || 42)?;
    println!("\nran a database call inside its compartment: {rows}");

    // A strict lookup names what is missing and what exists.
    if let Err(e) = registry.get("databse") {
        println!("\na typo is an error, not a new compartment:\n  {e}");
    }

    // A malformed value is an error naming the variable, the value and what is accepted.
    let bad = Registry::builder()
        .env(EnvSource::from_pairs([(
            "BULKHEAD_CACHE_MAX_CONCURRENT",
            "-3",
        )]))
        .build();
    if let Err(e) = bad {
        println!("\na bad environment value is refused:\n  {e}");
    }

    // Live reconfiguration: later admissions see the new limit.
    registry.reconfigure("database", DomainConfig::new(2))?;
    println!(
        "\nafter reconfigure: database admits {} at once",
        registry.get("database")?.state().max_concurrent
    );
    Ok(())
}
