//! A per-domain registry configured from code, a TOML file and the
//! environment, with the precedence code < file < environment.
//!
//! Run it with `cargo run -p bulkhead-examples --bin registry_config`, or
//! override a setting the way an operator would:
//!
//! ```sh
//! BULKHEAD_DATABASE_MAX_CONCURRENT=3 cargo run -p bulkhead-examples --bin registry_config
//! BULKHEAD_SEARCH_LIMIT_ALGORITHM=gradient2 cargo run -p bulkhead-examples --bin registry_config
//! cargo run -p bulkhead-examples --bin registry_config -- path/to/bulkhead.toml
//! ```
//!
//! The `search` compartment is adaptive (a `limit` table): its limit
//! starts at `max_concurrent` and moves with the calls it admits.

use bulkhead_std::MaxWait;
use bulkhead_std::registry::{DomainConfig, EnvSource, Registry, RegistryError};

/// The compartment's current limit.
fn limit(registry: &Registry, name: &str) -> Result<usize, RegistryError> {
    Ok(registry.get(name)?.state().max_concurrent)
}

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

[domains.search]               # adaptive: the limit starts here and moves
max_concurrent = 10
limit = { algorithm = "aimd", min = 2, max = 40 }   # also: initial, window
"#;

fn main() -> Result<(), RegistryError> {
    let file = std::env::args().nth(1);
    let builder = Registry::builder()
        // code: the defaults the program ships with
        .builtin(
            "cache",
            DomainConfig::new(64).max_wait(MaxWait::from_millis(5)),
        )
        // environment: BULKHEAD_<NAME>_MAX_CONCURRENT, _MAX_WAIT (e.g. 250ms),
        // _LIMIT_ALGORITHM, _LIMIT_MAX, ... (on by default)
        .env(EnvSource::process());
    let builder = match &file {
        Some(path) => builder.toml_file(path),
        None => builder.toml_str(FILE),
    };
    let registry = builder.build()?;
    registry.database("replica")?; // "database:replica", from the file
    registry.get_or_create_default("tenant-42")?; // the [default] template
    registry.get_or_create_default("search")?; // [domains.search]: adaptive

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
    let rows = registry.execute("database", || Ok::<_, std::io::Error>(42))?;
    println!("\nran a database call inside its compartment: {rows:?}");

    // The adaptive compartment learns from the calls the registry runs: a
    // failing dependency (each `Err` counts as dropped) brings the limit
    // down, a healthy one under load brings it back up.
    let start = limit(&registry, "search")?;
    for _ in 0..50 {
        let _ = registry.execute("search", || Err::<(), _>("503 from the search service"));
    }
    let failing = limit(&registry, "search")?;
    for _ in 0..20 {
        let seats = (0..limit(&registry, "search")?)
            .map(|_| registry.acquire_blocking("search"))
            .collect::<Result<Vec<_>, _>>()?;
        drop(seats); // each seat given back is a success, with the compartment full
    }
    let healthy = limit(&registry, "search")?;
    let changes = registry
        .domain("search")?
        .controller()
        .map_or(0, |c| c.changes());
    println!(
        "\nadaptive search limit: {start} at start, {failing} after failures, \
         {healthy} after healthy load ({changes} changes)"
    );

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
