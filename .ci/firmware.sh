#!/usr/bin/env bash
# Builds the bulkhead-embassy firmware (embassy-adapter/firmware) for a
# Cortex-M3 (thumbv7m, QEMU lm3s6965evb) and a Cortex-M0 without CAS
# (thumbv6m, QEMU microbit), runs it under QEMU, checks its summary, and
# prints the flash/RAM footprint next to the same program built with
# embassy-sync's FairSemaphore (feature `fair-semaphore`). `minimal` is our
# build with only the bulkhead-embassy features the scenario needs (`time`);
# `full` is the same program with bulkhead-embassy's default features (every
# core feature). Three more variants add scenarios to ours: an adaptive
# compartment (feature `adaptive`), weighted seats with a newest-first queue
# (feature `weights`), and a partitioned compartment whose seats the SysTick
# interrupt gives back (feature `partitions`); the footprint comparison is
# the minimal variant, which uses none of them.
#
# Exits non-zero if a build fails, a run exits non-zero or times out, or a
# summary line is missing. Works offline once the crates are fetched.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
fw="$root/embassy-adapter/firmware"
started=$SECONDS

# --- tools -------------------------------------------------------------------
if ! command -v qemu-system-arm >/dev/null || ! command -v arm-none-eabi-size >/dev/null; then
    echo "firmware: installing qemu-system-arm and binutils-arm-none-eabi"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends qemu-system-arm binutils-arm-none-eabi >/dev/null
fi
rustup target add thumbv6m-none-eabi thumbv7m-none-eabi >/dev/null 2>&1 ||
    rustup target add thumbv6m-none-eabi thumbv7m-none-eabi

# --- build -------------------------------------------------------------------
# The firmware is its own workspace with its own lock file and target dir;
# settings meant for the host workspace must not leak into it.
cd "$fw"
unset RUSTFLAGS CARGO_BUILD_TARGET CARGO_BUILD_RUSTFLAGS CARGO_ENCODED_RUSTFLAGS
export CARGO_TARGET_DIR="$fw/target"
export RUSTFLAGS="-D warnings"

cargo fmt --check

elf_dir="$CARGO_TARGET_DIR/elf"
mkdir -p "$elf_dir"
targets=(thumbv7m-none-eabi thumbv6m-none-eabi)
variants=(minimal full fair-semaphore adaptive weights partitions)

for target in "${targets[@]}"; do
    for variant in "${variants[@]}"; do
        features=()
        [[ $variant != minimal ]] && features=(--features "$variant")
        echo "firmware: building $variant for $target"
        cargo build --quiet --release --target "$target" "${features[@]}"
        cp "$CARGO_TARGET_DIR/$target/release/bulkhead-embassy-firmware" "$elf_dir/$target-$variant.elf"
    done
done

# --- run ---------------------------------------------------------------------
passed=0
failed=0
run() {
    local target=$1 variant=$2 machine cpu
    case $target in
        thumbv7m-none-eabi) machine=lm3s6965evb cpu=cortex-m3 ;;
        thumbv6m-none-eabi) machine=microbit cpu=cortex-m0 ;;
    esac
    local elf="$elf_dir/$target-$variant.elf" log="$elf_dir/$target-$variant.log"
    local rc=0
    timeout 60 qemu-system-arm -cpu "$cpu" -machine "$machine" -nographic \
        -semihosting-config enable=on,target=native -kernel "$elf" \
        >"$log" 2>"$log.stderr" </dev/null || rc=$?
    echo "--- $variant on $target ($cpu, QEMU $machine): exit $rc"
    sed 's/^/    /' "$log"

    local primitive=$variant
    [[ $variant != fair-semaphore ]] && primitive=bulkhead
    local required=(
        "^bulkhead-scenario: primitive=$primitive\$"
        '^flash: limit=1 peak=[01] admitted=2 rejected=1 timed_out=1$'
        '^radio: limit=2 peak=[012] admitted=12 rejected=1 timed_out=0$'
        '^flash: own counters rejected=1 timed_out=1 active=0$'
        '^radio: own counters rejected=1 timed_out=0 active=0$'
        '^isr: released=1 handed_off=1$'
        '^RESULT: PASS$'
    )
    if [[ $variant == adaptive ]]; then
        required+=('^adaptive: limit=[123] changes=[1-9][0-9]* samples=64 peak=[1-4]$')
    fi
    if [[ $variant == weights ]]; then
        required+=(
            '^weights-dma: limit=3 peak=3 order=H01 rejected=2 timed_out=0 active=0 waiting=0$'
            '^weights-uart: order=lifo served=21 dropped=1 rejected=1 active=0 waiting=0$'
            '^weights: PASS$'
        )
    fi
    if [[ $variant == partitions ]]; then
        required+=(
            '^partitions: steps=10 order=BBBBIIBB refused=1 rejected=1 timed_out=0 active=0 waiting=0$'
            '^partitions: PASS$'
        )
    fi
    local ok=1
    if [[ $rc -ne 0 ]]; then
        [[ $rc -eq 124 ]] && echo "FAIL: timed out after 60 s" || echo "FAIL: exit code $rc"
        ok=0
    fi
    for line in "${required[@]}"; do
        if ! grep -Eq "$line" "$log"; then
            echo "FAIL: missing summary line /$line/"
            ok=0
        fi
    done
    if [[ $ok -eq 0 ]]; then
        echo "    qemu stderr:"
        sed 's/^/    /' "$log.stderr"
        failed=$((failed + 1))
    else
        passed=$((passed + 1))
    fi
}

for target in "${targets[@]}"; do
    for variant in "${variants[@]}"; do
        run "$target" "$variant"
    done
done

# --- footprint ---------------------------------------------------------------
echo
echo "footprint (bytes; release, opt-level=s, LTO; flash = text, RAM = data + bss):"
printf '%-20s %-15s %-60s %8s %6s %6s %8s\n' target variant "bulkhead-embassy features" text data bss RAM
declare -A flash ram
for target in "${targets[@]}"; do
    for variant in "${variants[@]}"; do
        read -r text data bss _ < <(arm-none-eabi-size "$elf_dir/$target-$variant.elf" | tail -n 1)
        case $variant in
            minimal) set_of="time" ;;
            full) set_of="default (time barging queue-limits weights lifo partitions)" ;;
            fair-semaphore) set_of="(embassy-sync FairSemaphore)" ;;
            adaptive) set_of="time" ;;
            weights) set_of="time weights lifo queue-limits" ;;
            partitions) set_of="time partitions" ;;
        esac
        printf '%-20s %-15s %-60s %8d %6d %6d %8d\n' "$target" "$variant" "$set_of" "$text" "$data" "$bss" $((data + bss))
        flash[$target-$variant]=$text
        ram[$target-$variant]=$((data + bss))
    done
done
echo
echo "footprint against FairSemaphore, same scenario (target: minimal flash <= 1.05x, RAM no more):"
for target in "${targets[@]}"; do
    for variant in minimal full; do
        ours_flash=${flash[$target-$variant]} fair_flash=${flash[$target-fair-semaphore]}
        ours_ram=${ram[$target-$variant]} fair_ram=${ram[$target-fair-semaphore]}
        printf '%-20s %-8s text %s x (%+d bytes), RAM %+d bytes\n' "$target" "$variant" \
            "$(awk -v a="$ours_flash" -v b="$fair_flash" 'BEGIN { printf "%.3f", a / b }')" \
            $((ours_flash - fair_flash)) $((ours_ram - fair_ram))
    done
done

echo
echo "flash by function group, minimal against FairSemaphore (scripts/firmware-symbols):"
for target in "${targets[@]}"; do
    echo "$target:"
    python3 "$root/scripts/firmware-symbols" --groups \
        "$elf_dir/$target-minimal.elf" "$elf_dir/$target-fair-semaphore.elf" | sed 's/^/    /'
done

echo
echo "firmware runs took $((SECONDS - started)) s in all"
echo "firmware: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
