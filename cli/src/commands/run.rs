//! `hsm-bench run`: resolve the settings, open the modules, prepare the
//! suites, measure, judge the results and write the reports.

use cryptoki_sys::CK_MECHANISM_TYPE;

use crate::cli::{KeyStoreArg, RunArgs, RunFormat};
use crate::commands::fleet::start_workers;
use crate::commands::output::{check_output, out, write_or_print};
use crate::error::{
    CliError, EXIT_FAILED_OPS, EXIT_INTERRUPTED, EXIT_NOTHING_MEASURED, EXIT_OK, Result,
};
use crate::judge::compare;
use crate::machine::MachineClass;
use crate::measure::bench::{self, Restart};
use crate::measure::checks::{Mix, parse_mix};
use crate::measure::ipc::{FromWorker, KeysInfo, Opened, ToWorker};
use crate::measure::job::{JobInfo, Options};
use crate::measure::remote::Remote;
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
use crate::suite::generic;
use crate::suite::keyset::StoreMode;
use crate::suite::op::OpDef;
use crate::sysinfo;
use crate::token::choice::ModuleChoice;
use crate::token::module::Module;
use crate::token::temp_token::prepare_environment;
use std::time::Duration;

/// `hsm-bench run`: resolve the settings, start a worker process per
/// module, agree on the ops, measure (writing the results after every
/// job), judge, write the reports and pick the exit code. This process
/// never loads a module (`measure/remote.rs`, docs/ARCHITECTURE.md).
pub fn run(args: &RunArgs) -> Result<i32> {
    let mut req = resolve(args)?;
    let global_token = args.token.choice();
    let tokens = req
        .choices
        .iter()
        .map(|c| c.token(&global_token))
        .collect::<Result<Vec<_>>>()?;
    // Environment first: before any worker starts (they inherit it).
    let temps = prepare_environment(&req.choices, &tokens)?;
    let temporary: Vec<bool> = temps.iter().map(Option::is_some).collect();
    let timestamp = rfc3339_now();
    let timer = sysinfo::timer();
    let system = sysinfo::system();
    let sockets = tempfile::Builder::new()
        .prefix("hsm-bench-workers-")
        .tempdir()
        .map_err(|e| CliError::usage(format!("cannot create a temporary directory: {e}")))?;
    let step = bench::step_limit(&req.settings);
    // Per module, its worker processes: as many as the largest --processes.
    let procs = req.settings.processes.iter().copied().max().unwrap_or(1) as usize;
    let (mut remotes, opened, shares) =
        start_workers(&req.choices, &temporary, sockets.path(), procs, step)?;
    let (ids, key_desc) = agree_on_ops(args, &req, &opened)?;
    let mut jobs: Option<Vec<JobInfo>> = None;
    for r in remotes.iter_mut().flatten() {
        let j = bench::set_ops(r, &ids, &key_desc, step)
            .map_err(|l| CliError::usage(format!("module {}: {}", r.name, l.describe())))?;
        match &jobs {
            Some(prev) if prev != &j => {
                return Err(CliError::usage(format!(
                    "module {}: its worker built another job list than the first module's",
                    r.name
                )));
            }
            Some(_) => {}
            None => jobs = Some(j),
        }
    }
    let jobs = jobs.unwrap_or_default();
    let per_thread_keys = args.per_thread_keys && !req.existing_keys;
    let opts = Options {
        histogram: args.histogram,
        raw_samples: args.raw_samples,
        quiet: args.quiet,
        key: key_desc,
        per_thread_keys,
    };
    let mut metadata = Metadata {
        timestamp,
        hsm_bench: ToolInfo::current(),
        command_line: redact(std::env::args().collect()),
        profile: req.settings.profile.clone(),
        modules: opened.iter().map(|o| o.meta.clone()).collect(),
        iterations: req.settings.iterations(),
        duration_s: req.settings.duration_s(),
        warmup: req.settings.warmup,
        threads: req.settings.threads.clone(),
        processes: (req.settings.processes != [1]).then(|| req.settings.processes.clone()),
        merged_from: None,
        data_sizes: req.settings.data_sizes.clone(),
        rounds: req.settings.rounds,
        rate: req.settings.rate,
        mix: req.settings.mix.clone(),
        percentiles: req.settings.percentiles.clone(),
        keys: "being made".into(),
        reference: args.reference.clone(),
        max_op_time_s: req.settings.max_op_time.map(|d| d.as_secs_f64()),
        interrupted: false,
        partial: true,
        system,
        timer,
    };
    let env: Vec<Vec<(String, String)>> =
        req.choices.iter().map(|c| c.options.env.clone()).collect();
    // A restarted process rejoins its module's token when there are several.
    let shares = if procs > 1 {
        shares
    } else {
        vec![None; shares.len()]
    };
    let restart = Restart {
        dir: sockets.path(),
        temporary: &temporary,
        env: &env,
        shares: &shares,
        ids: &ids,
        key: &opts.key,
        jobs: &jobs,
        limit: step,
    };
    let results = bench::run(&mut remotes, &restart, &req.settings, &opts, |so_far| {
        write_partial(args, &metadata, so_far)
    });
    let interrupted = crate::measure::interrupt::requested();
    metadata.keys = describe_keys(args, &req, &mut remotes, per_thread_keys);
    for (group, meta) in remotes.iter_mut().zip(&mut metadata.modules) {
        let limit = if interrupted {
            Duration::from_secs(5)
        } else {
            step
        };
        let n = group.len();
        for (k, r) in group.iter_mut().enumerate() {
            if r.gone().is_none()
                && let Err(l) = r.finish(limit)
            {
                let who = if n > 1 {
                    format!("process {} of {n} ", k + 1)
                } else {
                    String::new()
                };
                let why = format!("{who}at the end of the run: {}", l.describe());
                eprintln!("hsm-bench: warning: module {}: {why}", r.name);
                meta.failures.push(why);
            }
        }
    }
    drop(remotes);
    drop(temps);
    metadata.interrupted = interrupted;
    metadata.partial = false;
    let ratios = args.reference.as_ref().map(|r| ratios(&results, r));
    let rep = Report {
        schema: SCHEMA.into(),
        metadata,
        results,
        ratios,
    };
    write_reports(args, &rep)?;
    if interrupted {
        // Workers and temporary tokens are gone; say what was kept.
        eprintln!(
            "hsm-bench: interrupted: {} finished results written",
            rep.results.len()
        );
        return Ok(EXIT_INTERRUPTED);
    }
    let code = judge(args, req.baseline.take(), &rep)?;
    Ok(run_exit_code(&rep.results, args.fail_on_error).unwrap_or(code))
}

/// The results so far, written to `--output` (atomically, marked partial)
/// after every job, so that nothing that happens later loses them.
fn write_partial(args: &RunArgs, metadata: &Metadata, results: &[BenchResult]) {
    let Some(path) = &args.output else { return };
    let rep = Report {
        schema: SCHEMA.into(),
        metadata: metadata.clone(),
        results: results.to_vec(),
        ratios: args.reference.as_ref().map(|r| ratios(results, r)),
    };
    if let Err(e) = write_or_print(&render(args.format, &rep), Some(path)) {
        eprintln!("hsm-bench: warning: {}", e.message);
    }
}

/// A parsed `--mix` with the ops it names.
pub type MixOps = Option<(Vec<OpDef>, Mix)>;

/// What `run` was asked for, resolved and checked before any module is loaded.
pub struct Request {
    pub generic: Option<GenericRequest>,
    pub store: StoreMode,
    pub choices: Vec<ModuleChoice>,
    /// Per module: the label of its existing key (`--key-label`, `key-label=`).
    pub key_labels: Vec<Option<String>>,
    pub existing_keys: bool,
    pub settings: Settings,
    pub mix: MixOps,
    pub selected: Vec<OpDef>,
    pub baseline: Option<Report>,
}

/// Step 1: the settings (flags over profile over defaults), the modules asked
/// for, the ops, and the baseline; every usage error before any module loads.
pub fn resolve(args: &RunArgs) -> Result<Request> {
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
        processes: args.processes.clone(),
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

/// The ops every module runs (ids) and the keys' description: the ops
/// asked for; or what the first module's existing key (`--key-label`) or
/// mechanism (`--mechanism`) allows, narrowed by `--ops` and, for keys, to
/// what some token offers.
fn agree_on_ops(args: &RunArgs, req: &Request, opened: &[Opened]) -> Result<(Vec<String>, String)> {
    let first = opened
        .first()
        .ok_or_else(|| CliError::usage("no module to run"))?;
    let names: Vec<&str> = req.choices.iter().map(|c| c.name.as_str()).collect();
    let narrow = |ids: &mut Vec<String>| {
        if !args.ops.is_empty() {
            ids.retain(|id| {
                args.ops
                    .iter()
                    .any(|p| crate::suite::catalogue::glob_match(p, id))
            });
        }
    };
    let (mut ids, key_desc) = match req.key_labels.first().cloned().flatten() {
        Some(first_label) => {
            for (o, name) in opened.iter().zip(&names).skip(1) {
                if o.key_kind != first.key_kind {
                    let label = req.key_labels[names.iter().position(|n| n == name).unwrap_or(0)]
                        .clone()
                        .unwrap_or_default();
                    return Err(CliError::usage(format!(
                        "key '{label}' on {name} has another type than the key on the first module"
                    )));
                }
            }
            let mut ids = first.ops.clone().map_err(CliError::usage)?;
            narrow(&mut ids);
            // Of what the key allows, the ops no token here can run are
            // left out (a generic op named on the command line stays: its
            // result says why it did not run).
            if req.generic.is_none() {
                ids.retain(|id| opened.iter().any(|o| o.supported.contains(id)));
            }
            if ids.is_empty() {
                return Err(CliError::usage(format!(
                    "key '{first_label}' allows no operation hsm-bench measures that the token offers{}",
                    if args.ops.is_empty() {
                        ""
                    } else {
                        " and --ops selects"
                    }
                )));
            }
            let desc = if req
                .key_labels
                .iter()
                .all(|l| l.as_deref() == Some(first_label.as_str()))
            {
                format!("label:{first_label}")
            } else {
                let each: Vec<String> = names
                    .iter()
                    .zip(&req.key_labels)
                    .map(|(m, l)| format!("{m}={}", l.as_deref().unwrap_or_default()))
                    .collect();
                format!("labels:{}", each.join(","))
            };
            (ids, desc)
        }
        None if req.generic.is_some() => {
            let mut ids = first.ops.clone().map_err(CliError::usage)?;
            narrow(&mut ids);
            (ids, "none".to_string())
        }
        None if args.per_thread_keys => (
            req.selected.iter().map(|o| o.id.clone()).collect(),
            "generated per thread".to_string(),
        ),
        None => (
            req.selected.iter().map(|o| o.id.clone()).collect(),
            "generated".to_string(),
        ),
    };
    if ids.is_empty() && req.mix.is_none() {
        return Err(CliError::usage(
            "--ops leaves no operation to run (see the ops the key or mechanism allows)",
        ));
    }
    ids.dedup();
    Ok((ids, key_desc))
}

/// The metadata's account of the keys: shared or per thread, session or token
/// objects (with the token keys' labels and fate), role-separated ones.
fn describe_keys(
    args: &RunArgs,
    req: &Request,
    remotes: &mut [Vec<Remote>],
    per_thread_keys: bool,
) -> String {
    let step = bench::step_limit(&req.settings);
    let infos: Vec<(String, KeysInfo)> = remotes
        .iter_mut()
        .flatten()
        .filter(|r| r.gone().is_none())
        .filter_map(|r| {
            let name = r.name.clone();
            match r.ask(&ToWorker::Describe, "describing its keys", step) {
                Ok(FromWorker::Keys(k)) => Some((name, k)),
                _ => None,
            }
        })
        .collect();
    let token_keys: Vec<String> = infos
        .iter()
        .flat_map(|(_, k)| k.token_key_labels.clone())
        .collect();
    let session_keys = infos.iter().any(|(_, k)| k.made_session_keys);
    // Wrapping keys made role-separated where a module refused the usual ones.
    let role_separated: Vec<String> = infos
        .iter()
        .flat_map(|(m, k)| k.role_separated.iter().map(move |n| format!("{n} on {m}")))
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
    let several = req.settings.processes.iter().any(|&p| p > 1);
    if req.existing_keys {
        let each = if several { " and process" } else { "" };
        format!("existing key, shared by every thread{each}")
    } else if per_thread_keys {
        format!("per thread: each thread has its own {store_desc}{token_note}{role_note}")
    } else if several {
        format!(
            "shared per process: each process has one set of {store_desc} used by its threads{token_note}{role_note}"
        )
    } else {
        format!("shared: one set of {store_desc} used by every thread{token_note}{role_note}")
    }
}

/// Step 5: write the report in the asked format (and the HTML page).
fn write_reports(args: &RunArgs, rep: &Report) -> Result<()> {
    write_or_print(&render(args.format, rep), args.output.as_deref())?;
    if let Some(p) = &args.html {
        let page = report::html::render(rep).map_err(CliError::usage)?;
        write_or_print(&page, Some(p))?;
    }
    if args.output.is_some() && args.format != RunFormat::Text && !args.quiet {
        out(&report::text::render(rep))?;
    }
    Ok(())
}

/// The report in `format`.
fn render(format: RunFormat, rep: &Report) -> String {
    match format {
        RunFormat::Text => report::text::render(rep),
        RunFormat::Json => report::json::to_string(rep),
        RunFormat::Csv => report::csv::to_string(&rep.results),
        RunFormat::GhBench => report::gh::to_string(rep),
    }
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
pub struct GenericRequest {
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
    /// Every generic op of the mechanism, one per function (what another
    /// module's mechanism list may ask this one to run).
    pub fn all_ops(&self) -> Vec<OpDef> {
        GenericFn::ALL
            .into_iter()
            .map(|f| generic::op(self.mechanism, &self.param, f))
            .collect()
    }

    pub fn ops(
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
                    (GenericFn::Encapsulate, Some(k)) => k.can_encapsulate,
                    (GenericFn::Decapsulate, Some(k)) => k.can_decapsulate,
                })
                .collect()
        };
        if functions.is_empty() {
            return Err(CliError::usage(format!(
                "{name} offers no function (sign, verify, encrypt, decrypt, digest, \
                 encapsulate, decapsulate) that the key allows on {}",
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
        } else if a.contains("env=") {
            // A module's `,env=VAR=VALUE`: the value may be a secret.
            out.push(crate::token::choice::redact_module_spec(&a));
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
