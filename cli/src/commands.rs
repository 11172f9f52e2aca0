//! The subcommands: run, compare, check-floors, machine, list, ops, report.

use std::fmt::Write as _;
use std::path::Path;

use cryptoki_sys::*;

use serde::Serialize;

use crate::bench::{self, Options};
use crate::ckr::{ckm_name, ckr_name, cryptoki_error_name};
use crate::compare;
use crate::error::{
    CliError, EXIT_CLOSED_STDOUT, EXIT_FAILED_OPS, EXIT_INTERRUPTED, EXIT_NOTHING_MEASURED,
    EXIT_OK, Result,
};
use crate::floors::{self, Floors};
use crate::machine::MachineClass;
use crate::module::{self, Module, ModuleChoice};
use crate::report::verdict::VerdictPage;
use crate::report::{self, Report, SCHEMA, fmt_size};
use crate::settings::{Flags, Settings, parse_mix};
use crate::suite::generic::{self, GenericFn};
use crate::suite::keys::{KeyStore, StoreMode, detect};
use crate::suite::{self, DataSpec, OpDef, catalogue};
use crate::sysinfo;
use crate::{
    CheckFloorsArgs, CompareArgs, KeyStoreArg, ListArgs, ListFormat, MachineArgs, MachineFormat,
    ReportArgs, ReportFormat, RunArgs, RunFormat,
};

/// Write `text` to stdout. A reader that has gone away (`| head -1`) ends the
/// program quietly with exit 141 instead of a panic about a broken pipe.
pub fn out(text: &str) -> Result<()> {
    use std::io::Write;
    let mut so = std::io::stdout().lock();
    match so.write_all(text.as_bytes()).and_then(|()| so.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
            Err(CliError::quiet(EXIT_CLOSED_STDOUT))
        }
        Err(e) => Err(CliError::usage(format!("cannot write to stdout: {e}"))),
    }
}

fn write_or_print(text: &str, output: Option<&Path>) -> Result<()> {
    match output {
        Some(p) => std::fs::write(p, text)
            .map_err(|e| CliError::usage(format!("cannot write {}: {e}", p.display()))),
        None if text.ends_with('\n') => out(text),
        None => out(&format!("{text}\n")),
    }
}

/// Refuse an output path that cannot be written (missing or unwritable
/// directory, a directory given as the file), before anything is loaded.
fn check_output(path: &Path, flag: &str) -> Result<()> {
    let fail = |why: String| {
        Err(CliError::usage(format!(
            "cannot write {flag} {}: {why}",
            path.display()
        )))
    };
    if path.is_dir() {
        return fail("is a directory".into());
    }
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if !parent.is_dir() {
        let what = if parent.exists() {
            "is not a directory"
        } else {
            "does not exist"
        };
        return fail(format!("{} {what}", parent.display()));
    }
    let (target, what) = if path.exists() {
        (path, "the file is not writable".to_string())
    } else {
        (
            parent,
            format!("directory {} is not writable", parent.display()),
        )
    };
    if !writable(target) {
        return fail(what);
    }
    Ok(())
}

/// access(2) with W_OK: whether this process may write `p`.
fn writable(p: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(p.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: `c` is a valid NUL-terminated path that outlives the call.
    unsafe { libc::access(c.as_ptr(), libc::W_OK) == 0 }
}

/// `hsm-bench run`.
pub fn run(args: &RunArgs) -> Result<i32> {
    // Output paths first: a typo must not cost a whole benchmark.
    if let Some(p) = &args.output {
        check_output(p, "--output")?;
    }
    if let Some(p) = &args.html {
        check_output(p, "--html")?;
    }
    let generic = generic_request(args)?;
    let store = key_store_mode(args)?;
    crate::interrupt::install();
    let specs = if args.modules.is_empty() {
        vec!["dalek".to_string()]
    } else {
        args.modules.clone()
    };
    let choices = ModuleChoice::resolve_all(&specs)?;
    // `--key-label`, or `key-label=` given with a module: every module then
    // benchmarks its existing key (all or none of them).
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
    let all = catalogue();
    let mix = match &settings.mix {
        Some(m) => {
            if existing_keys {
                return Err(CliError::usage("--mix and --key-label cannot be combined"));
            }
            if generic.is_some() {
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
    let selected: Vec<OpDef> = if mix.is_some() || existing_keys || generic.is_some() {
        Vec::new()
    } else {
        suite::select(&all, &settings.ops)
            .map_err(CliError::usage)?
            .into_iter()
            .cloned()
            .collect()
    };
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

    if let Some(r) = &args.reference
        && !choices.iter().any(|c| &c.name == r)
    {
        return Err(CliError::usage(format!(
            "--reference {r} is not one of the modules run"
        )));
    }
    let global_token = args.token.choice();
    let tokens = choices
        .iter()
        .map(|c| c.token(&global_token))
        .collect::<Result<Vec<_>>>()?;
    // Environment first: before any module is loaded and before any thread starts.
    let temps = module::prepare_environment(&choices, &tokens)?;
    let timestamp = report::rfc3339_now();
    let timer = sysinfo::timer();
    let system = sysinfo::system();
    let mut modules = Vec::new();
    for ((c, t), token) in choices.iter().zip(temps).zip(&tokens) {
        modules.push(Module::open(c, t, token)?);
    }
    let mut keys: Vec<KeyStore> = modules
        .iter()
        .map(|m| {
            KeyStore::new(
                m.raw.clone(),
                m.setup_session().handle(),
                store,
                args.keep_keys,
            )
        })
        .collect();

    let mut ops = selected;
    let key_desc = match key_labels.first().cloned().flatten() {
        Some(first_label) => {
            let mut found = None;
            for ((m, k), label) in modules.iter().zip(keys.iter_mut()).zip(&key_labels) {
                let label = label.as_deref().expect("all modules have a key label");
                let objs = m
                    .setup_session()
                    .find_objects(&[cryptoki::object::Attribute::Label(
                        label.as_bytes().to_vec(),
                    )])
                    .map_err(|e| {
                        CliError::usage(format!(
                            "C_FindObjects failed: {}",
                            cryptoki_error_name(&e)
                        ))
                    })?;
                let handles: Vec<CK_OBJECT_HANDLE> = objs.iter().map(|o| o.handle()).collect();
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
                    ops = match &generic {
                        Some(g) => g.ops(Some(&ex), m)?,
                        None => suite::ops_for_existing(&ex),
                    };
                }
            }
            if !args.ops.is_empty() {
                ops.retain(|o| args.ops.iter().any(|p| suite::glob_match(p, &o.id)));
            }
            // Of what the key allows, the ops no token here can run are left
            // out (a generic op named on the command line stays: its result
            // says why it did not run).
            if generic.is_none() {
                ops.retain(|o| {
                    modules.iter().any(|m| {
                        crate::support::unsupported(&m.caps(), o, crate::support::default_size(o))
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
            if key_labels
                .iter()
                .all(|l| l.as_deref() == Some(&first_label))
            {
                format!("label:{first_label}")
            } else {
                let each: Vec<String> = modules
                    .iter()
                    .zip(&key_labels)
                    .map(|(m, l)| format!("{}={}", m.name, l.as_deref().unwrap_or_default()))
                    .collect();
                format!("labels:{}", each.join(","))
            }
        }
        None if generic.is_some() => {
            let g = generic.as_ref().expect("checked");
            ops = g.ops(None, &modules[0])?;
            if !args.ops.is_empty() {
                ops.retain(|o| args.ops.iter().any(|p| suite::glob_match(p, &o.id)));
            }
            "none".to_string()
        }
        None if args.per_thread_keys => "generated per thread".to_string(),
        None => "generated".to_string(),
    };
    if ops.is_empty() && mix.is_none() {
        return Err(CliError::usage(
            "--ops leaves no operation to run (see the ops the key or mechanism allows)",
        ));
    }
    let jobs = bench::jobs(&ops, mix, &settings);
    let opts = Options {
        histogram: args.histogram,
        raw_samples: args.raw_samples,
        quiet: args.quiet,
        key: key_desc,
        per_thread_keys: args.per_thread_keys && !existing_keys,
    };
    let results = bench::run(&mut modules, &mut keys, &jobs, &settings, &opts);
    let interrupted = crate::interrupt::requested();
    let token_keys: Vec<String> = keys.iter().flat_map(KeyStore::token_key_labels).collect();
    let session_keys = keys.iter().any(KeyStore::made_session_keys);
    // Wrapping keys made role-separated where a module refused the usual ones.
    let role_separated: Vec<String> = keys
        .iter()
        .zip(&modules)
        .flat_map(|(k, m)| {
            k.role_separated_keys()
                .into_iter()
                .map(move |n| format!("{n} on {}", m.name))
        })
        .collect();
    drop(keys);
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
    let metadata = report::Metadata {
        timestamp,
        hsm_bench: report::ToolInfo::current(),
        command_line: redact(std::env::args().collect()),
        profile: settings.profile.clone(),
        modules: modules.iter().map(|m| m.meta.clone()).collect(),
        iterations: settings.iterations(),
        duration_s: settings.duration_s(),
        warmup: settings.warmup,
        threads: settings.threads.clone(),
        data_sizes: settings.data_sizes.clone(),
        rounds: settings.rounds,
        rate: settings.rate,
        mix: settings.mix.clone(),
        percentiles: settings.percentiles.clone(),
        keys: if existing_keys {
            "existing key, shared by every thread".into()
        } else if opts.per_thread_keys {
            format!("per thread: each thread has its own {store_desc}{token_note}{role_note}")
        } else {
            format!("shared: one set of {store_desc} used by every thread{token_note}{role_note}")
        },
        reference: args.reference.clone(),
        max_op_time_s: settings.max_op_time.map(|d| d.as_secs_f64()),
        interrupted,
        system,
        timer,
    };
    drop(modules);
    let ratios = args.reference.as_ref().map(|r| report::ratios(&results, r));
    let rep = Report {
        schema: SCHEMA.into(),
        metadata,
        results,
        ratios,
    };
    let rendered = match args.format {
        RunFormat::Text => report::text::render(&rep),
        RunFormat::Json => report::json::to_string(&rep),
        RunFormat::Csv => report::csv::to_string(&rep.results),
        RunFormat::GhBench => report::gh::to_string(&rep),
    };
    write_or_print(&rendered, args.output.as_deref())?;
    if let Some(p) = &args.html {
        let page = report::html::render(&rep).map_err(CliError::usage)?;
        write_or_print(&page, Some(p))?;
    }
    let stdout_is_data = args.output.is_none() && args.format != RunFormat::Text;
    if args.output.is_some() && args.format != RunFormat::Text && !args.quiet {
        out(&report::text::render(&rep))?;
    }
    if interrupted {
        // Modules and temporary tokens are gone; say what was kept.
        eprintln!(
            "hsm-bench: interrupted: {} finished results written",
            rep.results.len()
        );
        return Ok(EXIT_INTERRUPTED);
    }
    let mut code = EXIT_OK;
    if let Some(base) = baseline {
        if !args.allow_class_mismatch
            && let Some(why) = compare::class_mismatch(&rep, &base, args.reference.as_deref())
        {
            return Err(CliError::inconclusive(why));
        }
        let c = compare::compare(&rep, &base, args.threshold, args.reference.as_deref());
        let text = c.render_text();
        if stdout_is_data {
            eprint!("{text}");
        } else {
            out(&format!("\n{text}"))?;
        }
        code = c.exit_code(args.fail_on_regression);
    }
    Ok(run_exit_code(&rep.results, args.fail_on_error).unwrap_or(code))
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
    fn ops(&self, key: Option<&suite::keys::ExistingKey>, m: &Module) -> Result<Vec<OpDef>> {
        let name = crate::ckr::ckm_name(self.mechanism);
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
fn run_exit_code(results: &[crate::report::BenchResult], fail_on_error: bool) -> Option<i32> {
    use crate::report::Status;
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

/// `hsm-bench compare`.
pub fn compare(args: &CompareArgs) -> Result<i32> {
    if !(args.threshold >= 0.0 && args.threshold.is_finite()) {
        return Err(CliError::usage(
            "--threshold must be a non-negative percentage",
        ));
    }
    let cur = report::json::load(&args.current)?;
    let base = report::json::load(&args.baseline)?;
    if let Some(r) = &args.reference {
        let has = |rep: &Report| rep.results.iter().any(|x| &x.module == r);
        if !has(&cur) || !has(&base) {
            return Err(CliError::inconclusive(format!(
                "reference module '{r}' is not in both result files"
            )));
        }
    }
    if !args.allow_class_mismatch
        && let Some(why) = compare::class_mismatch(&cur, &base, args.reference.as_deref())
    {
        return Err(CliError::inconclusive(why));
    }
    let c = compare::compare(&cur, &base, args.threshold, args.reference.as_deref());
    if let Some(p) = &args.html {
        let page = report::html::render_compare(&c).map_err(CliError::usage)?;
        write_or_print(&page, Some(p))?;
    }
    write_or_print(&c.render(args.format), None)?;
    Ok(c.exit_code(args.fail_on_regression))
}

/// `hsm-bench check-floors`: a run against portable floors.
pub fn check_floors(args: &CheckFloorsArgs) -> Result<i32> {
    let rep = report::json::load(&args.current)?;
    let mut f = Floors::load(&args.floors)?;
    if let Some(r) = &args.reference {
        f.reference = r.clone();
    }
    let c = floors::check(&rep, &f);
    write_or_print(&c.render(args.format), None)?;
    Ok(c.exit_code())
}

/// `hsm-bench machine`: this machine's class.
pub fn machine(args: &MachineArgs) -> Result<i32> {
    let c = MachineClass::detect();
    let text = if args.id {
        c.id.clone()
    } else if args.format == MachineFormat::Json {
        serde_json::to_string_pretty(&c).expect("machine class serialises")
    } else {
        let known = crate::machine::FEATURES
            .iter()
            .find(|(a, _)| *a == c.arch)
            .map_or(&[][..], |(_, f)| *f);
        let absent: Vec<&str> = known
            .iter()
            .copied()
            .filter(|f| !c.features.iter().any(|x| x == f))
            .collect();
        let rows = vec![
            vec!["class".to_string(), c.id.clone()],
            vec!["arch".into(), c.arch.clone()],
            vec!["vendor".into(), c.vendor.clone()],
            vec![
                "cpu".into(),
                format!("{} ({})", c.family, sysinfo::system().cpu_model),
            ],
            vec!["cores".into(), c.cores.to_string()],
            vec!["os".into(), c.os.clone()],
            vec!["features".into(), c.features.join(" ")],
            vec!["absent".into(), absent.join(" ")],
            vec!["baselines".into(), format!("baselines/{}/", c.id)],
        ];
        crate::report::text::table(&["part".into(), "value".into()], &rows, 2)
    };
    write_or_print(&text, None)?;
    Ok(EXIT_OK)
}

/// `hsm-bench report`: re-render a saved result file.
pub fn report(args: &ReportArgs) -> Result<i32> {
    if let Some(p) = &args.output {
        check_output(p, "--output")?;
    }
    let rep = report::json::load(&args.file)?;
    if let Some(p) = &args.html {
        let page = report::html::render(&rep).map_err(CliError::usage)?;
        write_or_print(&page, Some(p))?;
        if args.output.is_none() {
            return Ok(EXIT_OK);
        }
    }
    let text = match args.format {
        ReportFormat::Text => report::text::render(&rep),
        ReportFormat::Json => report::json::to_string(&rep),
        ReportFormat::Csv => report::csv::to_string(&rep.results),
        ReportFormat::GhBench => report::gh::to_string(&rep),
    };
    write_or_print(&text, args.output.as_deref())?;
    Ok(EXIT_OK)
}

/// `hsm-bench ops`: the catalogue.
pub fn ops() -> Result<i32> {
    let headers: Vec<String> = ["op", "mechanism", "key", "input", "title"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let rows: Vec<Vec<String>> = catalogue()
        .iter()
        .map(|o| {
            vec![
                o.id.clone(),
                o.mechanism_name(),
                o.key.map(|k| k.name()).unwrap_or_else(|| "-".into()),
                match o.data {
                    DataSpec::Fixed(0) => "-".into(),
                    DataSpec::Fixed(n) => fmt_size(n as u64),
                    DataSpec::Variable { default, .. } => {
                        format!("{} (--data-sizes)", fmt_size(default as u64))
                    }
                },
                o.title.clone(),
            ]
        })
        .collect();
    out(&report::text::table(&headers, &rows, 5))?;
    Ok(EXIT_OK)
}

fn mech_flags(f: CK_FLAGS) -> String {
    const NAMES: &[(CK_FLAGS, &str)] = &[
        (CKF_HW, "hw"),
        (CKF_ENCRYPT, "encrypt"),
        (CKF_DECRYPT, "decrypt"),
        (CKF_DIGEST, "digest"),
        (CKF_SIGN, "sign"),
        (CKF_SIGN_RECOVER, "sign-recover"),
        (CKF_VERIFY, "verify"),
        (CKF_VERIFY_RECOVER, "verify-recover"),
        (CKF_GENERATE, "generate"),
        (CKF_GENERATE_KEY_PAIR, "generate-key-pair"),
        (CKF_WRAP, "wrap"),
        (CKF_UNWRAP, "unwrap"),
        (CKF_DERIVE, "derive"),
        (CKF_EC_F_P, "ec-fp"),
        (CKF_EC_NAMEDCURVE, "ec-named-curve"),
        (CKF_EC_UNCOMPRESS, "ec-uncompressed"),
        (CKF_EC_COMPRESS, "ec-compressed"),
    ];
    NAMES
        .iter()
        .filter(|(b, _)| f & b != 0)
        .map(|(_, n)| *n)
        .collect::<Vec<_>>()
        .join(" ")
}

/// One module as `list` shows it.
#[derive(Debug, Serialize)]
struct ListedModule {
    name: String,
    path: String,
    sha256: String,
    library: module::LibraryInfo,
    slots: Vec<ListedSlot>,
}

/// One slot as `list` shows it. `token` is absent when the slot has no token
/// or its `C_GetTokenInfo` failed (`token_error`).
#[derive(Debug, Serialize)]
struct ListedSlot {
    id: u64,
    description: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    token: Option<ListedToken>,
    #[serde(skip_serializing_if = "Option::is_none")]
    token_error: Option<String>,
    mechanisms: Vec<ListedMechanism>,
    #[serde(skip_serializing_if = "Option::is_none")]
    mechanisms_error: Option<String>,
    ops_supported: usize,
    ops_unsupported: Vec<String>,
}

#[derive(Debug, Serialize)]
struct ListedToken {
    #[serde(flatten)]
    summary: module::TokenSummary,
    flags: CK_FLAGS,
    initialized: bool,
    login_required: bool,
    /// "user PIN not set" and the named user-PIN warning flags.
    pin_warnings: Vec<String>,
}

#[derive(Debug, Serialize)]
struct ListedMechanism {
    name: String,
    min_key_size: CK_ULONG,
    max_key_size: CK_ULONG,
    flags: String,
}

/// Token info read raw and never rejected: a token whose info a stricter
/// reader refuses is still listed, and a failing C_GetTokenInfo is kept, not
/// turned into "no token".
fn listed_token(
    raw: &crate::raw::RawModule,
    slot: CK_SLOT_ID,
    present: Option<bool>,
) -> (Option<ListedToken>, Option<String>) {
    match module::token_state(raw, slot) {
        Ok(t) => {
            let mut pin: Vec<String> = module::pin_flag_names(t.flags)
                .into_iter()
                .map(String::from)
                .collect();
            if t.flags & CKF_TOKEN_INITIALIZED != 0 && t.flags & CKF_USER_PIN_INITIALIZED == 0 {
                pin.insert(0, "user PIN not set".into());
            }
            let token = ListedToken {
                summary: t.summary,
                flags: t.flags,
                initialized: t.flags & CKF_TOKEN_INITIALIZED != 0,
                login_required: t.flags & CKF_LOGIN_REQUIRED != 0,
                pin_warnings: pin,
            };
            (Some(token), None)
        }
        Err(rv) if rv == CKR_TOKEN_NOT_PRESENT || present == Some(false) => (None, None),
        Err(rv) => (None, Some(ckr_name(rv))),
    }
}

fn listed_module(c: &ModuleChoice, all: &[OpDef]) -> Result<ListedModule> {
    let (ctx, raw, finalize) = module::load_context(c)?;
    let library = module::library_info(&ctx)?;
    let slots = ctx.get_all_slots().map_err(|e| {
        CliError::usage(format!("C_GetSlotList failed: {}", cryptoki_error_name(&e)))
    })?;
    let mut listed = Vec::with_capacity(slots.len());
    for slot in slots {
        let info = ctx.get_slot_info(slot).ok();
        let (token, token_error) =
            listed_token(&raw, slot.id(), info.as_ref().map(|i| i.token_present()));
        let (mechs, mechanisms_error) = match token {
            Some(_) => match module::mechanisms(&raw, slot) {
                Ok(m) => (m, None),
                Err(e) => (Default::default(), Some(e.message)),
            },
            None => (Default::default(), None),
        };
        let caps = crate::support::TokenCaps {
            mechanisms: &mechs,
            verify_batch: raw.has_verify_batch(),
        };
        let ops_unsupported: Vec<String> = all
            .iter()
            .filter(|o| {
                crate::support::unsupported(&caps, o, crate::support::default_size(o)).is_some()
            })
            .map(|o| o.id.clone())
            .collect();
        listed.push(ListedSlot {
            id: slot.id(),
            description: info
                .map(|i| i.slot_description().trim().to_string())
                .unwrap_or_default(),
            token,
            token_error,
            mechanisms: mechs
                .iter()
                .map(|(m, i)| ListedMechanism {
                    name: ckm_name(*m),
                    min_key_size: i.ulMinKeySize,
                    max_key_size: i.ulMaxKeySize,
                    flags: mech_flags(i.flags),
                })
                .collect(),
            mechanisms_error,
            ops_supported: all.len() - ops_unsupported.len(),
            ops_unsupported,
        });
    }
    if finalize {
        let _ = ctx.finalize();
    }
    Ok(ListedModule {
        name: c.name.clone(),
        path: c.path.display().to_string(),
        sha256: module::file_sha256(&c.path)?,
        library,
        slots: listed,
    })
}

fn print_listed_token(o: &mut String, t: &ListedToken) {
    let ts = &t.summary;
    let _ = writeln!(
        o,
        "    token '{}': {} {}, serial {}, firmware {}, {}{}{}{}",
        ts.label,
        ts.manufacturer,
        ts.model,
        ts.serial,
        ts.firmware,
        if t.initialized {
            "initialised"
        } else {
            "not initialised"
        },
        if t.login_required {
            ", login required"
        } else {
            ""
        },
        ts.utc_time
            .as_ref()
            .map(|u| format!(", clock {u}"))
            .unwrap_or_default(),
        t.pin_warnings
            .iter()
            .map(|p| format!(", {p}"))
            .collect::<String>()
    );
}

fn print_listed(o: &mut String, m: &ListedModule, total_ops: usize) {
    let _ = writeln!(o, "module {}: {}", m.name, m.path);
    let lib = &m.library;
    let _ = writeln!(
        o,
        "  library: {} {} (cryptoki {}), manufacturer {}, sha256 {}",
        lib.description, lib.version, lib.cryptoki_version, lib.manufacturer, m.sha256
    );
    if m.slots.is_empty() {
        let _ = writeln!(o, "  no slots");
    }
    for s in &m.slots {
        let _ = writeln!(o, "  slot {}: {}", s.id, s.description);
        let Some(t) = &s.token else {
            match &s.token_error {
                Some(e) => {
                    let _ = writeln!(o, "    token: C_GetTokenInfo failed: {e}");
                }
                None => {
                    let _ = writeln!(o, "    no token");
                }
            }
            continue;
        };
        print_listed_token(o, t);
        if let Some(e) = &s.mechanisms_error {
            let _ = writeln!(o, "    mechanisms: {e}");
            continue;
        }
        let _ = writeln!(o, "    mechanisms ({}):", s.mechanisms.len());
        let rows: Vec<Vec<String>> = s
            .mechanisms
            .iter()
            .map(|i| {
                vec![
                    format!("      {}", i.name),
                    if i.max_key_size > 0 {
                        format!("{}..{}", i.min_key_size, i.max_key_size)
                    } else {
                        "-".into()
                    },
                    i.flags.clone(),
                ]
            })
            .collect();
        let headers = vec![
            "      mechanism".to_string(),
            "key sizes".into(),
            "flags".into(),
        ];
        o.push_str(&report::text::table(&headers, &rows, 1));
        let _ = writeln!(
            o,
            "    hsm-bench ops: {} of {} supported{}",
            s.ops_supported,
            total_ops,
            if s.ops_unsupported.is_empty() {
                String::new()
            } else {
                format!("; unsupported: {}", s.ops_unsupported.join(", "))
            }
        );
    }
}

/// `hsm-bench list`: slots, tokens, mechanisms (with flags and key sizes) and which
/// hsm-bench ops each token supports. Uses the module's normal configuration.
pub fn list(args: &ListArgs) -> Result<i32> {
    let specs = if args.modules.is_empty() {
        vec!["dalek".to_string()]
    } else {
        args.modules.clone()
    };
    let choices = ModuleChoice::resolve_all(&specs)?;
    let all = catalogue();
    let mut listed = Vec::with_capacity(choices.len());
    for c in &choices {
        let m = listed_module(c, &all)?;
        if args.format == ListFormat::Text {
            let mut text = String::new();
            print_listed(&mut text, &m, all.len());
            out(&text)?;
        }
        listed.push(m);
    }
    if args.format == ListFormat::Json {
        let doc = serde_json::json!({ "modules": listed });
        out(&format!(
            "{}\n",
            serde_json::to_string_pretty(&doc).expect("plain structs serialise")
        ))?;
    }
    Ok(EXIT_OK)
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
