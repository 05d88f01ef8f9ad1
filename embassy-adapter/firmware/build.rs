//! Picks the emulated board from the target, writes its `memory.x`, and
//! links with cortex-m-rt's `link.x`.

use std::env;
use std::fs;
use std::path::PathBuf;

/// Texas Instruments LM3S6965 (QEMU `lm3s6965evb`), a Cortex-M3.
const LM3S6965: &str = "MEMORY
{
  FLASH : ORIGIN = 0x00000000, LENGTH = 256K
  RAM   : ORIGIN = 0x20000000, LENGTH = 64K
}
";

/// Nordic nRF51822 (QEMU `microbit`), a Cortex-M0.
const MICROBIT: &str = "MEMORY
{
  FLASH : ORIGIN = 0x00000000, LENGTH = 256K
  RAM   : ORIGIN = 0x20000000, LENGTH = 16K
}
";

fn main() {
    let target = env::var("TARGET").expect("cargo sets TARGET");
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let (board, memory) = if target.starts_with("thumbv6m") {
        ("microbit", MICROBIT)
    } else {
        ("lm3s6965", LM3S6965)
    };
    fs::write(out.join("memory.x"), memory).expect("write memory.x");
    println!("cargo::rustc-link-search={}", out.display());
    println!("cargo::rustc-cfg=board=\"{board}\"");
    if target.starts_with("thumb") {
        println!("cargo::rustc-link-arg-bins=-Tlink.x");
    }
    println!("cargo::rerun-if-changed=build.rs");
}
