# Sourced by scripts/perf-gate and scripts/refresh-baselines: where the gate's
# binary, baselines, floors and profile are, which builds of our module it
# measures, and this machine's class. Each can be overridden from the
# environment (the gate's own tests do, to point it at a temporary baselines
# directory, a small profile or the delay shim):
#   HSM_BENCH             hsm-bench binary (target/release/hsm-bench)
#   PERF_GATE_BASELINES   baselines directory (baselines)
#   PERF_GATE_FLOORS      portable floors (baselines/floors.toml)
#   PERF_GATE_PROFILE     profile measured on every build (ci)
#   PERF_GATE_BREADTH_PROFILE  profile measured on the default build alone
#                         (breadth; empty: none), judged by its own baseline
#                         (<class>/breadth-default.json) and floors
#   PERF_GATE_BREADTH_FLOORS   floors of that profile
#                         (baselines/floors-breadth.toml)
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
breadth_profile="${PERF_GATE_BREADTH_PROFILE-breadth}"
breadth_floors="${PERF_GATE_BREADTH_FLOORS:-baselines/floors-breadth.toml}"
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

# The gates, one per line: NAME PROFILE FLOORS BUILD. A gate's result is
# <NAME>-<BUILD>.json (the ci gate's: <BUILD>.json in a results directory),
# its baseline <class>/<NAME>-<BUILD>.json. The ci profile is measured on
# every build; the breadth profile (every mechanism the peers share) on the
# default build, the one whose speed docs/benchmarking.md promises op by op.
gates() {
  local build
  for build in $builds; do
    echo "ci $profile $floors $build"
  done
  if [ -n "$breadth_profile" ] && [[ " $builds " == *" default "* ]]; then
    echo "breadth $breadth_profile $breadth_floors default"
  fi
}

# The file name of a gate's result in a results directory.
result_name() {
  if [ "$1" = ci ]; then echo "$2.json"; else echo "$1-$2.json"; fi
}

# Measures a profile on one build of our module and SoftHSM2 side by side,
# ratios to SoftHSM2 recorded: measure PROFILE BUILD OUTPUT [run arguments].
measure() {
  local profile="$1" build="$2" out="$3" module
  shift 3
  module="$(module_of "$build")"
  "$bench" run --module "$module" --module softhsm --profile "$profile" \
    --reference softhsm --format json --output "$out" --quiet "$@"
}

class="$("$bench" machine --id)"
