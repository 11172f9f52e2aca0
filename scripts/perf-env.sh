# Sourced by scripts/perf-gate and scripts/refresh-baselines: where the gate's
# binary, baselines, floors and profile are, which builds of our module it
# measures, and this machine's class. Each can be overridden from the
# environment (the gate's own tests do, to point it at a temporary baselines
# directory, a small profile or the delay shim):
#   HSM_BENCH             hsm-bench binary (target/release/hsm-bench)
#   PERF_GATE_BASELINES   baselines directory (baselines)
#   PERF_GATE_FLOORS      portable floors (baselines/floors.toml)
#   PERF_GATE_PROFILE     profile measured (ci)
#   PERF_GATE_BUILDS      builds of our module: "default pure-rust" when the
#                         pure-Rust module is built (target/pure-rust or
#                         HSM_BENCH_DALEK_PURE_MODULE), else "default"
#   PERF_GATE_OUT         where the gate writes its results (target/perf-gate)
#   PERF_GATE_MEASURED    judge results measured before instead of measuring:
#                         a directory holding <build>.json for each build
#                         (e.g. a PERF_GATE_OUT of an earlier run, or results
#                         measured in another CI job on the same machine)
bench="${HSM_BENCH:-target/release/hsm-bench}"
baselines="${PERF_GATE_BASELINES:-baselines}"
floors="${PERF_GATE_FLOORS:-baselines/floors.toml}"
profile="${PERF_GATE_PROFILE:-ci}"
if [ -n "${PERF_GATE_BUILDS:-}" ]; then
  builds="$PERF_GATE_BUILDS"
elif [ -n "${HSM_BENCH_DALEK_PURE_MODULE:-}" ] || [ -f target/pure-rust/release/libdalek_pkcs11.so ]; then
  builds="default pure-rust"
else
  builds="default"
fi

# The hsm-bench module alias of a build of our module.
module_of() {
  case "$1" in
    default) echo dalek ;;
    pure-rust) echo dalek-pure-rust ;;
    *) echo "unknown build '$1' (default, pure-rust)" >&2; return 2 ;;
  esac
}

# Measures the gate's profile on one build of our module and SoftHSM2 side by
# side, ratios to SoftHSM2 recorded: measure BUILD OUTPUT [run arguments].
measure() {
  local build="$1" out="$2" module
  shift 2
  module="$(module_of "$build")"
  "$bench" run --module "$module" --module softhsm --profile "$profile" \
    --reference softhsm --format json --output "$out" --quiet "$@"
}

class="$("$bench" machine --id)"
