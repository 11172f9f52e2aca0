//! The command-line definition of hsm-bench (clap): subcommands, their flags
//! and output formats. Nothing here does any work; `main.rs` parses and hands
//! each subcommand to its file under `commands/`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

pub use crate::report::verdict::CompareFormat;

/// Benchmark PKCS#11 modules: sign, verify, encrypt, decrypt, digest, MAC, random,
/// key generation and object search, with percentiles, confidence intervals,
/// side-by-side modules and a regression gate.
///
/// Without a subcommand: `hsm-bench run --profile quick` on our module with a
/// temporary token.
#[derive(Parser, Debug)]
#[command(name = "hsm-bench", version = concat!(env!("CARGO_PKG_VERSION"), " (", env!("HSM_BENCH_GIT_COMMIT"), ")"))]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run a benchmark suite on one or more modules.
    Run(Box<RunArgs>),
    /// Compare two result files (CURRENT against BASELINE).
    Compare(CompareArgs),
    /// List slots, tokens and mechanisms (with flags and key sizes) of modules.
    List(ListArgs),
    /// Check a result file against portable floors (minimum ratios to a
    /// reference module), as the CI gate does where no baseline exists.
    CheckFloors(CheckFloorsArgs),
    /// Show the machine class baselines are keyed by (CPU vendor, family and
    /// model, crypto instruction sets, cores, OS).
    Machine(MachineArgs),
    /// List the operations hsm-bench can measure.
    Ops,
    /// Re-render a saved result file as text, JSON, CSV or gh-bench.
    Report(ReportArgs),
    /// Merge result files of runs made at the same time on several hosts
    /// into one report: per-host rows and a merged row per result, the
    /// latency histograms merged exactly.
    Merge(MergeArgs),
    /// Prepare benchmark keys on a token once (create), show them (list),
    /// remove them (delete); reuse them with `run --key-label`.
    #[command(subcommand)]
    Keys(KeysCommand),
    /// Probe process of the cold-start ops (started by hsm-bench itself).
    #[command(hide = true)]
    ColdStart(ColdStartArgs),
}

/// Output formats of `run`.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunFormat {
    /// Summary table (modules side by side).
    Text,
    /// hsm-bench/1 JSON with full metadata.
    Json,
    /// One row per result.
    Csv,
    /// github-action-benchmark "customBiggerIsBetter" JSON.
    GhBench,
}

/// Output formats of `report`.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReportFormat {
    /// Summary table.
    Text,
    /// hsm-bench/1 JSON.
    Json,
    /// CSV.
    Csv,
    /// github-action-benchmark JSON.
    GhBench,
}

/// Arguments of the probe (set by hsm-bench itself).
#[derive(clap::Args, Debug, Clone)]
pub struct ColdStartArgs {
    /// Module library.
    #[arg(long)]
    pub module: PathBuf,
    /// Label of the token.
    #[arg(long)]
    pub token_label: String,
    /// Label of an object to find after logging in.
    #[arg(long)]
    pub label: String,
}

/// Arguments of `run`.
#[derive(Args, Debug, Clone)]
pub struct RunArgs {
    /// Module to benchmark: `dalek` (ours), `dalek-pure-rust` (ours built
    /// without AWS-LC), `softhsm`, or a path; repeat to run several side by
    /// side (interleaved rounds). Default: dalek. Settings of one module
    /// follow it: `PATH,token=LABEL` or `,slot=N`, `,pin-env=VAR` (its user
    /// PIN from that variable), `,key-label=KEY`, `,env=VAR=VALUE`
    /// (repeatable: set in that module's worker processes only; values are
    /// never printed), `,name=LABEL` (its name in reports); they override
    /// the global flags for that module. The same module may be given twice
    /// (e.g. with other `env=`). `HSM_BENCH_MODULE` gives one module.
    #[arg(
        long = "module",
        env = "HSM_BENCH_MODULE",
        hide_env_values = true,
        value_name = "PATH|dalek|dalek-pure-rust|softhsm[,token=L][,slot=N][,pin-env=VAR][,key-label=K][,env=VAR=VALUE][,name=LABEL]"
    )]
    pub modules: Vec<String>,
    #[command(flatten)]
    pub token: TokenArgs,
    /// Profile: quick, full, ci, sizes, threads, mix, scaling, or a TOML file.
    #[arg(long, value_name = "NAME|FILE")]
    pub profile: Option<String>,
    /// Ops to run: ids or globs, comma-separated (e.g. `ed25519-*,sha*`).
    #[arg(long, value_delimiter = ',', value_name = "PATTERN")]
    pub ops: Vec<String>,
    /// Benchmark an existing key: every op its type, size, usage flags and
    /// CKA_ALLOWED_MECHANISMS allow (narrow them with `--ops`).
    #[arg(long, value_name = "LABEL")]
    pub key_label: Option<String>,
    /// Generic op: time this mechanism (`CKM_AES_XTS`, or a number such as
    /// 0x80000001) with the `--key-label` key (none for a digest), for what the
    /// catalogue lacks. Results are checked with the inverse function.
    #[arg(long, value_name = "CKM_NAME|NUMBER")]
    pub mechanism: Option<String>,
    /// Parameter of `--mechanism`, in hex, passed as it is (default: none).
    #[arg(long, value_name = "HEX", requires = "mechanism")]
    pub mech_param_hex: Option<String>,
    /// Functions to time with `--mechanism` (default: every one the token's
    /// mechanism info and the key's usage flags allow).
    #[arg(
        long,
        value_delimiter = ',',
        value_name = "sign|verify|encrypt|decrypt|digest",
        requires = "mechanism"
    )]
    pub function: Vec<String>,
    /// Measured operations per thread and op.
    #[arg(long, conflicts_with = "duration")]
    pub iterations: Option<u64>,
    /// Seconds per op instead of a count.
    #[arg(long, value_name = "SECS")]
    pub duration: Option<f64>,
    /// Unrecorded operations per thread before measuring (each round).
    #[arg(long, value_name = "N")]
    pub warmup: Option<u64>,
    /// Thread counts to sweep, e.g. `1,2,4` (one session per thread).
    #[arg(long, value_delimiter = ',', value_name = "N")]
    pub threads: Vec<u32>,
    /// Process counts to sweep, e.g. `1,2,4,8`: each module is driven by
    /// that many worker processes at once (each loading the module, with
    /// `--threads` threads, on one token, started together); their latency
    /// histograms are merged exactly and their calls counted over the
    /// common window.
    #[arg(long, value_delimiter = ',', value_name = "N")]
    pub processes: Vec<u32>,
    /// Sweep input sizes for ops that take data (default 1K,10K,100K,1M).
    #[arg(long, num_args = 0..=1, default_missing_value = "", value_name = "SIZES")]
    pub data_sizes: Option<String>,
    /// Open loop: start operations at this total rate (ops/s); latency counts from
    /// each operation's intended start.
    #[arg(long, value_name = "OPS_PER_SEC")]
    pub rate: Option<f64>,
    /// Weighted mix, e.g. `verify=80,sign=15,encrypt=5` (short names or op ids).
    #[arg(long, value_name = "OP=WEIGHT,...")]
    pub mix: Option<String>,
    /// Percentiles to report, e.g. `50,90,99,99.9`.
    #[arg(long, value_name = "LIST")]
    pub percentiles: Option<String>,
    /// Longest time one op may take on one module (warmup and all rounds);
    /// an op still running then ends with a partial result and a warning.
    #[arg(long, value_name = "SECONDS")]
    pub max_op_time: Option<f64>,
    /// Interleaved rounds per op (default 1, or 3 with several modules).
    #[arg(long, value_name = "N")]
    pub rounds: Option<u32>,
    /// Give every thread its own keys (default: all threads share one set).
    #[arg(long)]
    pub per_thread_keys: bool,
    /// Where keys (and the objects of keygen and find ops) are made:
    /// session objects, or token objects labelled `hsm-bench-tmp-<pid>-<ms>-…`
    /// and destroyed at the end. Default: session objects, falling back to
    /// token objects when the token refuses session objects (and saying so).
    #[arg(long, value_enum, value_name = "session|token")]
    pub key_store: Option<KeyStoreArg>,
    /// Leave the token keys on the token at the end and print their labels
    /// (for reuse with --key-label; delete them with `hsm-bench keys
    /// delete`). Implies --key-store token.
    #[arg(long)]
    pub keep_keys: bool,
    /// Print an ASCII latency histogram per result (and keep bins in JSON).
    #[arg(long)]
    pub histogram: bool,
    /// Keep every latency sample in the JSON output.
    #[arg(long)]
    pub raw_samples: bool,
    /// Output format.
    #[arg(long, value_enum, default_value_t = RunFormat::Text)]
    pub format: RunFormat,
    /// Write the output to FILE (the text table still goes to stdout).
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Also write the results as a self-contained HTML page with charts (as
    /// `hsm-bench report --html` does).
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// No progress bars and no per-op lines on stderr.
    #[arg(long, short)]
    pub quiet: bool,
    /// Compare with a baseline result file after the run.
    #[arg(long, value_name = "BASELINE.json")]
    pub compare: Option<PathBuf>,
    /// Regression threshold in percent.
    #[arg(long, default_value_t = 5.0, value_name = "PCT")]
    pub threshold: f64,
    /// Exit 1 when the comparison finds a regression.
    #[arg(long)]
    pub fail_on_regression: bool,
    /// Exit 5 when any op failed (status error), after writing the results.
    #[arg(long)]
    pub fail_on_error: bool,
    /// Reference module: record (and compare) each module's ops/s divided by this
    /// module's in the same run.
    #[arg(long, value_name = "MODULE")]
    pub reference: Option<String>,
    /// Compare with a baseline of another machine class (or other builds) anyway,
    /// with a warning, instead of refusing with exit code 3.
    #[arg(long)]
    pub allow_class_mismatch: bool,
}

/// `--key-store`.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyStoreArg {
    /// Session objects only (`CKA_TOKEN=false`).
    Session,
    /// Token objects with a unique label prefix, destroyed at the end.
    Token,
}

/// Arguments of `compare`.
#[derive(Args, Debug, Clone)]
pub struct CompareArgs {
    /// Result file of the current run.
    pub current: PathBuf,
    /// Result file of the baseline.
    pub baseline: PathBuf,
    /// Regression threshold in percent.
    #[arg(long, default_value_t = 5.0, value_name = "PCT")]
    pub threshold: f64,
    /// Exit 1 when a regression is found.
    #[arg(long)]
    pub fail_on_regression: bool,
    /// Output format.
    #[arg(long, value_enum, default_value_t = CompareFormat::Text)]
    pub format: CompareFormat,
    /// Compare ratios to this module (in both files) instead of raw ops/s.
    #[arg(long, value_name = "MODULE")]
    pub reference: Option<String>,
    /// Judge the run against a baseline of another machine class (or other
    /// builds) anyway, with a warning, instead of refusing with exit code 3.
    #[arg(long)]
    pub allow_class_mismatch: bool,
    /// Also write a self-contained HTML page with a chart of current ÷ baseline
    /// per compared result.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}

/// Arguments of `check-floors`.
#[derive(Args, Debug, Clone)]
pub struct CheckFloorsArgs {
    /// Result file of the run (with the reference module in it).
    pub current: PathBuf,
    /// Floors file (TOML), e.g. `baselines/floors.toml`.
    pub floors: PathBuf,
    /// Reference module, instead of the floors file's.
    #[arg(long, value_name = "MODULE")]
    pub reference: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = CompareFormat::Text)]
    pub format: CompareFormat,
}

/// Output formats of `machine`.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum MachineFormat {
    /// One part per line.
    Text,
    /// The `machine_class` object of result files.
    Json,
}

/// Arguments of `machine`.
#[derive(Args, Debug, Clone)]
pub struct MachineArgs {
    /// Print only the class id (the baseline directory name).
    #[arg(long)]
    pub id: bool,
    /// Output format.
    #[arg(long, value_enum, default_value_t = MachineFormat::Text, conflicts_with = "id")]
    pub format: MachineFormat,
}

/// Output formats of `list`.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ListFormat {
    /// Slots, tokens and mechanism tables.
    Text,
    /// The same as one JSON document.
    Json,
}

/// Arguments of `list`.
#[derive(Args, Debug, Clone)]
pub struct ListArgs {
    /// Module(s) to list: `dalek`, `dalek-pure-rust`, `softhsm`, or a path. Default: dalek.
    #[arg(long = "module", value_name = "PATH|dalek|dalek-pure-rust|softhsm")]
    pub modules: Vec<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = ListFormat::Text)]
    pub format: ListFormat,
}

/// `hsm-bench keys …`.
#[derive(Subcommand, Debug, Clone)]
pub enum KeysCommand {
    /// Generate a key (pair) as token objects labelled LABEL.
    Create(KeysCreateArgs),
    /// List the key objects on the token.
    List(KeysListArgs),
    /// Destroy the key objects labelled LABEL (or whose label starts with PREFIX).
    Delete(KeysDeleteArgs),
}

/// The token a `keys` command works on (a named token: keys on a temporary
/// token would vanish with it).
#[derive(Args, Debug, Clone)]
pub struct KeysTokenArgs {
    /// Module: `dalek`, `dalek-pure-rust`, `softhsm`, or a path (with
    /// `,token=L`, `,slot=N`, `,pin-env=VAR` as for `run`).
    #[arg(
        long,
        env = "HSM_BENCH_MODULE",
        default_value = "dalek",
        value_name = "PATH|NAME[,…]"
    )]
    pub module: String,
    #[command(flatten)]
    pub token: TokenArgs,
}

/// The token of a named module and how to log in to it (`run`, `keys`).
#[derive(Args, Debug, Clone)]
pub struct TokenArgs {
    /// Slot id of the token to use (no temporary token is made).
    #[arg(long, env = "HSM_BENCH_SLOT", conflicts_with = "token_label")]
    pub slot: Option<u64>,
    /// Label of the token to use (no temporary token is made).
    #[arg(long, env = "HSM_BENCH_TOKEN_LABEL", value_name = "LABEL")]
    pub token_label: Option<String>,
    /// User PIN of that token (never printed).
    #[arg(long, env = "HSM_BENCH_PIN", hide_env_values = true)]
    pub pin: Option<String>,
    /// Log in even when the token reports CKF_USER_PIN_FINAL_TRY (one wrong PIN
    /// left before it locks); without this hsm-bench refuses to spend that try.
    #[arg(long)]
    pub allow_final_pin_try: bool,
}

impl TokenArgs {
    /// As the module layer takes it.
    pub fn choice(&self) -> crate::token::choice::TokenChoice {
        crate::token::choice::TokenChoice {
            slot: self.slot,
            label: self.token_label.clone(),
            pin: self.pin.clone(),
            allow_final_pin_try: self.allow_final_pin_try,
        }
    }
}

/// Arguments of `keys create`.
#[derive(Args, Debug, Clone)]
pub struct KeysCreateArgs {
    #[command(flatten)]
    pub token: KeysTokenArgs,
    /// Key type: ed25519, p256, p384, p521, secp256k1 (ECDSA), rsa2048,
    /// rsa3072, rsa4096, aes128, aes192, aes256, hmac-sha256 (32-byte generic
    /// secret), hmac-sha512 (64-byte generic secret), des3, p256-ecdh,
    /// p384-ecdh, p521-ecdh, x25519 (key agreement), mlkem512, mlkem768,
    /// mlkem1024 (ML-KEM), slhdsa-sha2-128f, slhdsa-shake-128f,
    /// slhdsa-sha2-128s (SLH-DSA; PKCS#11 3.2).
    #[arg(long = "type", value_name = "TYPE")]
    pub key_type: String,
    /// Label of the new key objects (a pair shares it); must be unused.
    #[arg(long)]
    pub label: String,
}

/// Arguments of `keys list`.
#[derive(Args, Debug, Clone)]
pub struct KeysListArgs {
    #[command(flatten)]
    pub token: KeysTokenArgs,
    /// Output format.
    #[arg(long, value_enum, default_value_t = ListFormat::Text)]
    pub format: ListFormat,
}

/// Arguments of `keys delete`.
#[derive(Args, Debug, Clone)]
pub struct KeysDeleteArgs {
    #[command(flatten)]
    pub token: KeysTokenArgs,
    /// Exact label of the key objects to destroy.
    #[arg(long, required_unless_present = "prefix", conflicts_with = "prefix")]
    pub label: Option<String>,
    /// Destroy every key and data object whose label starts with this (e.g.
    /// `hsm-bench-tmp-` for the keys and find-object objects a killed run
    /// left behind).
    #[arg(long)]
    pub prefix: Option<String>,
}

/// Output formats of `merge`.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum MergeFormat {
    /// Merged table, then the per-host rows.
    Text,
    /// hsm-bench/1 JSON: merged results with their `hosts` rows.
    Json,
    /// One row per host and result, then the merged row (`host` column).
    Csv,
}

/// Arguments of `merge`.
#[derive(Args, Debug, Clone)]
pub struct MergeArgs {
    /// hsm-bench/1 JSON files, one per host, of runs made at the same time.
    #[arg(required = true, num_args = 2..)]
    pub files: Vec<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = MergeFormat::Text)]
    pub format: MergeFormat,
    /// Write to FILE instead of stdout.
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Also write the merged results as a self-contained HTML page of charts.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}

/// Arguments of `report`.
#[derive(Args, Debug, Clone)]
pub struct ReportArgs {
    /// hsm-bench/1 JSON file.
    pub file: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
    pub format: ReportFormat,
    /// Write to FILE instead of stdout.
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Write a self-contained HTML page of charts (latency CDF per op, sweeps,
    /// ratios between modules) to FILE; the `--format` output is then written
    /// only with `--output`.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}
