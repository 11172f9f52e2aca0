//! `hsm-bench run`: resolve the settings, open the modules, prepare the
//! suites, measure, judge the results and write the reports.

use cryptoki_sys::CK_MECHANISM_TYPE;

use crate::cli::{KeyStoreArg, RunArgs, RunFormat};
use crate::commands::output::{check_output, out, write_or_print};
use crate::error::{
    CliError, EXIT_FAILED_OPS, EXIT_INTERRUPTED, EXIT_NOTHING_MEASURED, EXIT_OK, Result,
};
use crate::judge::compare;
use crate::machine::MachineClass;
use crate::measure::bench::{self, Options};
use crate::measure::checks::{Mix, parse_mix};
use crate::measure::settings::{Flags, Settings};
use crate::report;
use crate::report::format::rfc3339_now;
use crate::report::result::Metadata;
use crate::report::result::SCHEMA;
use crate::report::result::ToolInfo;
use crate::report::result::ratios;
use crate::report::result::{BenchResult, Report};
use crate::report::verdict::VerdictPage;
use crate::suite;
use crate::suite::alg::GenericFn;
use crate::suite::catalogue::catalogue;
use crate::suite::existing::detect;
use crate::suite::generic;
use crate::suite::keys::KeyStore;
use crate::suite::keyset::StoreMode;
use crate::suite::op::OpDef;
use crate::sysinfo::{self, SystemInfo, TimerInfo};
use crate::token::choice::ModuleChoice;
use crate::token::module::Module;
use crate::token::temp_token::prepare_environment;

/// `hsm-bench run`: resolve the settings, open the modules, prepare the
/// suites, measure, judge, write the reports and pick the exit code.
pub fn run(args: &RunArgs) -> Result<i32> {
    let mut req = resolve(args)?;
    let Opened {
        mut modules,
        mut keys,
        timestamp,
        timer,
        system,
    } = open_modules(args, &req)?;
    let (ops, key_desc) = prepare_ops(args, &req, &modules, &mut keys)?;
    let per_thread_keys = args.per_thread_keys && !req.existing_keys;
    let results = measure(args, &mut req, &mut modules, &mut keys, &ops, key_desc);
    let interrupted = crate::measure::interrupt::requested();
    let keys_desc = describe_keys(args, &req, &keys, &modules, per_thread_keys);
    drop(keys);
    let metadata = Metadata {
        timestamp,
        hsm_bench: ToolInfo::current(),
        command_line: redact(std::env::args().collect()),
        profile: req.settings.profile.clone(),
        modules: modules.iter().map(|m| m.meta.clone()).collect(),
        iterations: req.settings.iterations(),
        duration_s: req.settings.duration_s(),
        warmup: req.settings.warmup,
        threads: req.settings.threads.clone(),
        data_sizes: req.settings.data_sizes.clone(),
        rounds: req.settings.rounds,
        rate: req.settings.rate,
        mix: req.settings.mix.clone(),
        percentiles: req.settings.percentiles.clone(),
        keys: keys_desc,
        reference: args.reference.clone(),
        max_op_time_s: req.settings.max_op_time.map(|d| d.as_secs_f64()),
        interrupted,
        system,
        timer,
    };
    drop(modules);
    let ratios = args.reference.as_ref().map(|r| ratios(&results, r));
    let rep = Report {
        schema: SCHEMA.into(),
        metadata,
        results,
        ratios,
    };
    write_reports(args, &rep)?;
    if interrupted {
        // Modules and temporary tokens are gone; say what was kept.
        eprintln!(
            "hsm-bench: interrupted: {} finished results written",
            rep.results.len()
        );
        return Ok(EXIT_INTERRUPTED);
    }
    let code = judge(args, req.baseline.take(), &rep)?;
    Ok(run_exit_code(&rep.results, args.fail_on_error).unwrap_or(code))
}

/// A parsed `--mix` with the ops it names.
type MixOps = Option<(Vec<OpDef>, Mix)>;

/// What `run` was asked for, resolved and checked before any module is loaded.
struct Request {
    generic: Option<GenericRequest>,
    store: StoreMode,
    choices: Vec<ModuleChoice>,
    /// Per module: the label of its existing key (`--key-label`, `key-label=`).
    key_labels: Vec<Option<String>>,
    existing_keys: bool,
    settings: Settings,
    mix: MixOps,
    selected: Vec<OpDef>,
    baseline: Option<Report>,
}

/// Step 1: the settings (flags over profile over defaults), the modules asked
/// for, the ops, and the baseline; every usage error before any module loads.
fn resolve(args: &RunArgs) -> Result<Request> {
    // Output paths first: a typo must not cost a whole benchmark.
    if let Some(p) = &args.output {
        check_output(p, "--output")?;
    }
    if let Some(p) = &args.html {
        check_output(p, "--html")?;
    }
    let generic = generic_request(args)?;
    let store = key_store_mode(args)?;
    crate::measure::interrupt::install();
    let specs = if args.modules.is_empty() {
        vec!["dalek".to_string()]
    } else {
        args.modules.clone()
    };
    let choices = ModuleChoice::resolve_all(&specs)?;
    let key_labels = key_labels(args, &choices)?;
    let existing_keys = key_labels.iter().any(Option::is_some);
    let flags = Flags {
        profile: args.profile.clone(),
        ops: args.ops.clone(),
        iterations: args.iterations,
        duration: args.duration,
        warmup: args.warmup,
        threads: args.threads.clone(),
        data_sizes: args.data_sizes.clone(),
        rate: args.rate,
        mix: args.mix.clone(),
        percentiles: args.percentiles.clone(),
        rounds: args.rounds,
        max_op_time: args.max_op_time,
        modules: specs.len(),
        key_label: existing_keys || generic.is_some(),
    };
    let settings = Settings::resolve(&flags)?;
    if !(args.threshold >= 0.0 && args.threshold.is_finite()) {
        return Err(CliError::usage(
            "--threshold must be a non-negative percentage",
        ));
    }
    let (mix, selected) = ops_asked(&settings, existing_keys, generic.is_some())?;
    let baseline = load_baseline(args)?;

    if let Some(r) = &args.reference
        && !choices.iter().any(|c| &c.name == r)
    {
        return Err(CliError::usage(format!(
            "--reference {r} is not one of the modules run"
        )));
    }
    Ok(Request {
        generic,
        store,
        choices,
        key_labels,
        existing_keys,
        settings,
        mix,
        selected,
        baseline,
    })
}

/// Per module, the label of its existing key: `key-label=` given with the
/// module, else `--key-label`; every module then benchmarks its existing key
/// (all or none of them).
fn key_labels(args: &RunArgs, choices: &[ModuleChoice]) -> Result<Vec<Option<String>>> {
    let key_labels: Vec<Option<String>> = choices
        .iter()
        .map(|c| c.options.key_label.clone().or(args.key_label.clone()))
        .collect();
    let existing_keys = key_labels.iter().any(Option::is_some);
    if existing_keys && key_labels.iter().any(Option::is_none) {
        return Err(CliError::usage(
            "key-label= is given for some modules but not for others (and no --key-label for the rest)",
        ));
    }
    Ok(key_labels)
}

/// The parsed mix and the ops `--ops` (or the profile) selects; none when a
/// mix, existing keys or `--mechanism` decide the ops.
fn ops_asked(
    settings: &Settings,
    existing_keys: bool,
    generic: bool,
) -> Result<(MixOps, Vec<OpDef>)> {
    let all = catalogue();
    let mix = match &settings.mix {
        Some(m) => {
            if existing_keys {
                return Err(CliError::usage("--mix and --key-label cannot be combined"));
            }
            if generic {
                return Err(CliError::usage("--mix and --mechanism cannot be combined"));
            }
            let m = parse_mix(m, &all).map_err(|e| CliError::usage(format!("--mix: {e}")))?;
            let ops: Vec<OpDef> = m
                .parts
                .iter()
                .map(|(id, _)| {
                    all.iter()
                        .find(|o| &o.id == id)
                        .expect("checked by parse_mix")
                        .clone()
                })
                .collect();
            Some((ops, m))
        }
        None => None,
    };
    let selected: Vec<OpDef> = if mix.is_some() || existing_keys || generic {
        Vec::new()
    } else {
        crate::suite::catalogue::select(&all, &settings.ops)
            .map_err(CliError::usage)?
            .into_iter()
            .cloned()
            .collect()
    };
    Ok((mix, selected))
}

/// `--compare FILE`, refused before measuring anything when it was measured
/// on another machine class.
fn load_baseline(args: &RunArgs) -> Result<Option<Report>> {
    let baseline = match &args.compare {
        Some(p) => Some(report::json::load(p)?),
        None => None,
    };
    // Refuse a baseline of another machine class before measuring anything.
    if let Some(base) = &baseline
        && !args.allow_class_mismatch
        && let Some(why) = compare::machine_mismatch(&MachineClass::detect(), base)
    {
        return Err(CliError::inconclusive(why));
    }
    Ok(baseline)
}

/// The modules of a run, open, with their key stores.
struct Opened {
    modules: Vec<Module>,
    keys: Vec<KeyStore>,
    timestamp: String,
    timer: TimerInfo,
    system: SystemInfo,
}

/// Step 2: prepare the environment (temporary tokens), then open every module
/// and a key store on its set-up session.
fn open_modules(args: &RunArgs, req: &Request) -> Result<Opened> {
    let choices = &req.choices;
    let global_token = args.token.choice();
    let tokens = choices
        .iter()
        .map(|c| c.token(&global_token))
        .collect::<Result<Vec<_>>>()?;
    // Environment first: before any module is loaded and before any thread starts.
    let temps = prepare_environment(choices, &tokens)?;
    let timestamp = rfc3339_now();
    let timer = sysinfo::timer();
    let system = sysinfo::system();
    let mut modules = Vec::new();
    for ((c, t), token) in choices.iter().zip(temps).zip(&tokens) {
        modules.push(Module::open(c, t, token)?);
    }
    let keys: Vec<KeyStore> = modules
        .iter()
        .map(|m| {
            KeyStore::new(
                m.raw.clone(),
                m.setup_session().handle(),
                req.store,
                args.keep_keys,
            )
        })
        .collect();

    Ok(Opened {
        modules,
        keys,
        timestamp,
        timer,
        system,
    })
}

/// Step 3: the ops to run (selected, or what existing keys or `--mechanism`
/// allow) and the description of their keys for the metadata.
fn prepare_ops(
    args: &RunArgs,
    req: &Request,
    modules: &[Module],
    keys: &mut [KeyStore],
) -> Result<(Vec<OpDef>, String)> {
    let (generic, key_labels) = (&req.generic, &req.key_labels);
    let mut ops = req.selected.clone();
    let key_desc = match key_labels.first().cloned().flatten() {
        Some(first_label) => existing_key_ops(args, req, modules, keys, &first_label, &mut ops)?,
        None if generic.is_some() => {
            let g = generic.as_ref().expect("checked");
            ops = g.ops(None, &modules[0])?;
            if !args.ops.is_empty() {
                ops.retain(|o| {
                    args.ops
                        .iter()
                        .any(|p| crate::suite::catalogue::glob_match(p, &o.id))
                });
            }
            "none".to_string()
        }
        None if args.per_thread_keys => "generated per thread".to_string(),
        None => "generated".to_string(),
    };
    if ops.is_empty() && req.mix.is_none() {
        return Err(CliError::usage(
            "--ops leaves no operation to run (see the ops the key or mechanism allows)",
        ));
    }
    Ok((ops, key_desc))
}

/// The ops the existing keys allow (`--key-label`), narrowed by `--ops` and
/// by what the tokens offer, and the keys' description for the metadata.
fn existing_key_ops(
    args: &RunArgs,
    req: &Request,
    modules: &[Module],
    keys: &mut [KeyStore],
    first_label: &str,
    ops: &mut Vec<OpDef>,
) -> Result<String> {
    let (generic, key_labels) = (&req.generic, &req.key_labels);
    let mut found = None;
    for ((m, k), label) in modules.iter().zip(keys.iter_mut()).zip(key_labels) {
        let label = label.as_deref().expect("all modules have a key label");
        let handles = m
            .raw
            .find_all(
                m.setup_session().handle(),
                &mut crate::token::raw::Template::new()
                    .bytes(cryptoki_sys::CKA_LABEL, label.as_bytes()),
            )
            .map_err(|e| CliError::usage(format!("module {}: {e}", m.name)))?;
        let ex = detect(&m.raw, m.setup_session().handle(), &handles)
            .map_err(|e| CliError::usage(format!("key '{label}' on {}: {e}", m.name)))?;
        if let Some(prev) = &found
            && prev != &ex.kind
        {
            return Err(CliError::usage(format!(
                "key '{label}' on {} has another type than the key on the first module",
                m.name
            )));
        }
        found = Some(ex.kind.clone());
        k.insert_existing(ex.handles.clone());
        if ops.is_empty() {
            *ops = match &generic {
                Some(g) => g.ops(Some(&ex), m)?,
                None => crate::suite::catalogue::ops_for_existing(&ex),
            };
        }
    }
    if !args.ops.is_empty() {
        ops.retain(|o| {
            args.ops
                .iter()
                .any(|p| crate::suite::catalogue::glob_match(p, &o.id))
        });
    }
    // Of what the key allows, the ops no token here can run are left
    // out (a generic op named on the command line stays: its result
    // says why it did not run).
    if generic.is_none() {
        ops.retain(|o| {
            modules.iter().any(|m| {
                crate::suite::support::unsupported(
                    &m.caps(),
                    o,
                    crate::suite::support::default_size(o),
                )
                .is_none()
            })
        });
    }
    if ops.is_empty() {
        return Err(CliError::usage(format!(
            "key '{first_label}' allows no operation hsm-bench measures that the token offers{}",
            if args.ops.is_empty() {
                ""
            } else {
                " and --ops selects"
            }
        )));
    }
    if key_labels.iter().all(|l| l.as_deref() == Some(first_label)) {
        Ok(format!("label:{first_label}"))
    } else {
        let each: Vec<String> = modules
            .iter()
            .zip(key_labels)
            .map(|(m, l)| format!("{}={}", m.name, l.as_deref().unwrap_or_default()))
            .collect();
        Ok(format!("labels:{}", each.join(",")))
    }
}

/// Step 4: measure every op on every module.
fn measure(
    args: &RunArgs,
    req: &mut Request,
    modules: &mut [Module],
    keys: &mut [KeyStore],
    ops: &[OpDef],
    key_desc: String,
) -> Vec<BenchResult> {
    let jobs = bench::jobs(ops, req.mix.take(), &req.settings);
    let opts = Options {
        histogram: args.histogram,
        raw_samples: args.raw_samples,
        quiet: args.quiet,
        key: key_desc,
        per_thread_keys: args.per_thread_keys && !req.existing_keys,
    };
    bench::run(modules, keys, &jobs, &req.settings, &opts)
}

/// The metadata's account of the keys: shared or per thread, session or token
/// objects (with the token keys' labels and fate), role-separated ones.
fn describe_keys(
    args: &RunArgs,
    req: &Request,
    keys: &[KeyStore],
    modules: &[Module],
    per_thread_keys: bool,
) -> String {
    let token_keys: Vec<String> = keys.iter().flat_map(KeyStore::token_key_labels).collect();
    let session_keys = keys.iter().any(KeyStore::made_session_keys);
    // Wrapping keys made role-separated where a module refused the usual ones.
    let role_separated: Vec<String> = keys
        .iter()
        .zip(modules)
        .flat_map(|(k, m)| {
            k.role_separated_keys()
                .into_iter()
                .map(move |n| format!("{n} on {}", m.name))
        })
        .collect();
    let role_note = if role_separated.is_empty() {
        String::new()
    } else {
        format!(
            "; role-separated wrapping keys ({}), where the module refused the usual ones: {}",
            suite::role_separated::DESCRIPTION,
            role_separated.join(", ")
        )
    };
    // What kind of objects the keys were, and (for token keys) their labels.
    let (store_desc, token_note) = if token_keys.is_empty() {
        ("session-object keys", String::new())
    } else {
        let store_desc = if session_keys {
            "session-object keys and token-object keys"
        } else {
            "token-object keys"
        };
        let fate = if args.keep_keys {
            "kept on the token"
        } else {
            "destroyed at the end"
        };
        (store_desc, format!(" ({}; {fate})", token_keys.join(", ")))
    };
    if req.existing_keys {
        "existing key, shared by every thread".into()
    } else if per_thread_keys {
        format!("per thread: each thread has its own {store_desc}{token_note}{role_note}")
    } else {
        format!("shared: one set of {store_desc} used by every thread{token_note}{role_note}")
    }
}

/// Step 5: write the report in the asked format (and the HTML page).
fn write_reports(args: &RunArgs, rep: &Report) -> Result<()> {
    let rendered = match args.format {
        RunFormat::Text => report::text::render(rep),
        RunFormat::Json => report::json::to_string(rep),
        RunFormat::Csv => report::csv::to_string(&rep.results),
        RunFormat::GhBench => report::gh::to_string(rep),
    };
    write_or_print(&rendered, args.output.as_deref())?;
    if let Some(p) = &args.html {
        let page = report::html::render(rep).map_err(CliError::usage)?;
        write_or_print(&page, Some(p))?;
    }
    if args.output.is_some() && args.format != RunFormat::Text && !args.quiet {
        out(&report::text::render(rep))?;
    }
    Ok(())
}

/// Step 6: judge against the baseline (`--compare`); its exit code, or 0.
fn judge(args: &RunArgs, baseline: Option<Report>, rep: &Report) -> Result<i32> {
    let stdout_is_data = args.output.is_none() && args.format != RunFormat::Text;
    let mut code = EXIT_OK;
    if let Some(base) = baseline {
        if !args.allow_class_mismatch
            && let Some(why) = compare::class_mismatch(rep, &base, args.reference.as_deref())
        {
            return Err(CliError::inconclusive(why));
        }
        let c = compare::compare(rep, &base, args.threshold, args.reference.as_deref());
        let text = c.render_text();
        if stdout_is_data {
            eprint!("{text}");
        } else {
            out(&format!("\n{text}"))?;
        }
        code = c.exit_code(args.fail_on_regression);
    }
    Ok(code)
}

/// `--key-store` and `--keep-keys`.
fn key_store_mode(args: &RunArgs) -> Result<StoreMode> {
    Ok(match (args.key_store, args.keep_keys) {
        (Some(KeyStoreArg::Session), true) => {
            return Err(CliError::usage(
                "--keep-keys keeps token keys: it cannot be combined with --key-store session",
            ));
        }
        (Some(KeyStoreArg::Token), _) | (None, true) => StoreMode::Token,
        (Some(KeyStoreArg::Session), false) => StoreMode::Session,
        (None, false) => StoreMode::Auto,
    })
}

/// What `--mechanism`, `--mech-param-hex` and `--function` ask for.
struct GenericRequest {
    mechanism: CK_MECHANISM_TYPE,
    param: Vec<u8>,
    functions: Vec<GenericFn>,
}

/// Parse the generic-op flags (before any module is loaded: a typo costs nothing).
fn generic_request(args: &RunArgs) -> Result<Option<GenericRequest>> {
    let Some(name) = &args.mechanism else {
        return Ok(None);
    };
    let mechanism =
        generic::parse_mechanism(name).map_err(|e| CliError::usage(format!("--mechanism: {e}")))?;
    let param = match &args.mech_param_hex {
        Some(h) => generic::parse_param_hex(h)
            .map_err(|e| CliError::usage(format!("--mech-param-hex: {e}")))?,
        None => Vec::new(),
    };
    let mut functions = Vec::new();
    for f in &args.function {
        let f =
            GenericFn::parse(f.trim()).map_err(|e| CliError::usage(format!("--function: {e}")))?;
        if !functions.contains(&f) {
            functions.push(f);
        }
    }
    let has_key = args.key_label.is_some() || args.modules.iter().any(|m| m.contains("key-label="));
    if !has_key {
        if functions.is_empty() {
            functions.push(GenericFn::Digest);
        }
        if let Some(f) = functions.iter().find(|f| f.needs_key()) {
            return Err(CliError::usage(format!(
                "--mechanism with function {} needs a key: give --key-label",
                f.name()
            )));
        }
    }
    Ok(Some(GenericRequest {
        mechanism,
        param,
        functions,
    }))
}

impl GenericRequest {
    /// The generic ops to run: the functions asked for, or else those that
    /// the mechanism's info on `m` (`CKF_SIGN`, …) and the key's usage flags
    /// both allow.
    fn ops(
        &self,
        key: Option<&crate::suite::existing::ExistingKey>,
        m: &Module,
    ) -> Result<Vec<OpDef>> {
        let name = crate::token::ckr::ckm_name(self.mechanism);
        let functions: Vec<GenericFn> = if !self.functions.is_empty() {
            self.functions.clone()
        } else {
            let Some(info) = m.mechanisms.get(&self.mechanism) else {
                return Err(CliError::usage(format!(
                    "{name} is not in the mechanism list of {}'s token; name the function with --function to try it anyway",
                    m.name
                )));
            };
            GenericFn::ALL
                .into_iter()
                .filter(|f| info.flags & f.flag() != 0)
                .filter(|f| match (f, key) {
                    (GenericFn::Digest, _) => true,
                    (_, None) => false,
                    (GenericFn::Sign, Some(k)) => k.can_sign,
                    (GenericFn::Verify, Some(k)) => k.can_verify,
                    (GenericFn::Encrypt, Some(k)) => k.can_encrypt,
                    (GenericFn::Decrypt, Some(k)) => k.can_decrypt,
                })
                .collect()
        };
        if functions.is_empty() {
            return Err(CliError::usage(format!(
                "{name} offers no function (sign, verify, encrypt, decrypt, digest) that the key allows on {}",
                m.name
            )));
        }
        Ok(functions
            .into_iter()
            .map(|f| generic::op(self.mechanism, &self.param, f))
            .collect())
    }
}

/// The exit code the results themselves call for, with its one-line message
/// on stderr: nothing measured (4), or a failed op with `--fail-on-error` (5).
fn run_exit_code(
    results: &[crate::report::result::BenchResult],
    fail_on_error: bool,
) -> Option<i32> {
    use crate::report::result::Status;
    let failed: Vec<String> = results
        .iter()
        .filter(|r| r.status == Status::Error)
        .map(|r| {
            let why = r.reason.clone().unwrap_or_else(|| {
                let codes: Vec<&str> = r.error_codes.keys().map(String::as_str).collect();
                format!(
                    "{} of {} calls failed: {}",
                    r.errors,
                    r.iterations,
                    codes.join(", ")
                )
            });
            format!("{} [{}] ({why})", r.op, r.module)
        })
        .collect();
    if !results.iter().any(|r| r.iterations > r.errors) {
        let unsupported = results
            .iter()
            .filter(|r| r.status == Status::Unsupported)
            .count();
        eprintln!(
            "hsm-bench: error: nothing was measured ({unsupported} unsupported, {} failed)",
            failed.len()
        );
        return Some(EXIT_NOTHING_MEASURED);
    }
    if fail_on_error && !failed.is_empty() {
        eprintln!(
            "hsm-bench: error: {} failed (--fail-on-error): {}",
            if failed.len() == 1 {
                "1 op".to_string()
            } else {
                format!("{} ops", failed.len())
            },
            failed.join("; ")
        );
        return Some(EXIT_FAILED_OPS);
    }
    None
}

/// Hide the value of `--pin` (as `--pin X` or `--pin=X`) in the recorded command line.
fn redact(args: Vec<String>) -> Vec<String> {
    let mut out = Vec::with_capacity(args.len());
    let mut hide_next = false;
    for a in args {
        if hide_next {
            out.push("***".to_string());
            hide_next = false;
        } else if a == "--pin" {
            hide_next = true;
            out.push(a);
        } else if a.starts_with("--pin=") {
            out.push("--pin=***".to_string());
        } else {
            out.push(a);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::redact;

    #[test]
    fn pins_are_masked_in_the_recorded_command_line() {
        let v = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            redact(v(&[
                "hsm-bench",
                "run",
                "--pin",
                "1234",
                "--pin=5678",
                "--ops",
                "sha256"
            ])),
            v(&[
                "hsm-bench",
                "run",
                "--pin",
                "***",
                "--pin=***",
                "--ops",
                "sha256"
            ])
        );
    }
}
