//! A module's worker process for `hsm-bench run`: the same executable and
//! command line, started by the scheduler (`measure/remote.rs`) with
//! [`WORKER_ENV`] naming its socket and its module. It opens that one
//! module (and makes its keys), then does what the scheduler asks: build
//! the job list, prepare a job, run a round, hand over results, and at the
//! end destroy its keys and finalize the module. Whatever the module does
//! to this process — a segfault, an abort, a hang, exhausted memory — the
//! scheduler and the other modules' results live on.

use std::io::BufReader;
use std::os::unix::net::UnixStream;
use std::sync::Mutex;
use std::time::Duration;

use crate::cli::RunArgs;
use crate::commands::run::{Request, resolve};
use crate::error::{CliError, EXIT_OK, Result};
use crate::measure::ipc::{
    self, Endpoint, FromWorker, KeysInfo, Opened, Share, ToWorker, WORKER_ENV,
};
use crate::measure::job::{Options, jobs};
use crate::measure::module_bench::ModuleBench;
use crate::measure::runner::Gate;
use crate::suite::catalogue::catalogue;
use crate::suite::existing::{Detected, detect};
use crate::suite::keys::KeyStore;
use crate::suite::op::OpDef;
use crate::suite::support::{default_size, unsupported};
use crate::token::ckr::ckk_name;
use crate::token::module::Module;
use crate::token::temp_token::TempToken;

/// This process's endpoint when the scheduler started it as a worker.
pub fn endpoint() -> Option<Endpoint> {
    Endpoint::from_env()
}

/// Limit the harm a module can do from here: the worker dies with the
/// scheduler, and its data segment (heap and private mappings,
/// `RLIMIT_DATA`) is capped at half the machine's memory, so a module that
/// allocates without end fails in this process instead of taking the
/// machine (`HSM_BENCH_WORKER_MEMORY_MIB` sets another cap).
fn confine() {
    // SAFETY: prctl(2) with PR_SET_PDEATHSIG and a valid signal number
    // touches only this process's death signal.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) };
    let mib = std::env::var("HSM_BENCH_WORKER_MEMORY_MIB")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or_else(|| crate::sysinfo::system().memory_total_mb.max(2048) / 2);
    let bytes = mib.saturating_mul(1 << 20) as libc::rlim_t;
    let limit = libc::rlimit {
        rlim_cur: bytes,
        rlim_max: bytes,
    };
    // SAFETY: setrlimit(2) reads the struct it is given, which lives on
    // this stack for the call.
    unsafe { libc::setrlimit(libc::RLIMIT_DATA, &limit) };
}

/// Serve the scheduler until it says finish (or goes away).
pub fn serve(args: &RunArgs, ep: Endpoint) -> Result<i32> {
    // Nothing of this process's own should look like a worker's to a
    // probe process it starts (the cold-start ops).
    // SAFETY: single-threaded here (no module loaded, no thread started).
    unsafe { std::env::remove_var(WORKER_ENV) };
    confine();
    let stream = UnixStream::connect(&ep.socket)
        .map_err(|e| CliError::usage(format!("worker: cannot reach the scheduler: {e}")))?;
    let mut reader = BufReader::new(
        stream
            .try_clone()
            .map_err(|e| CliError::usage(format!("worker: {e}")))?,
    );
    let say = |m: &FromWorker| ipc::send(&stream, m).is_ok();
    // The first message: the token to log in to, when the module's first
    // process made it (`--processes`), else none.
    let share = match ipc::receive::<ToWorker>(&mut reader) {
        Ok(Some(ToWorker::Join(share))) => share,
        _ => return Ok(EXIT_OK),
    };
    let (mut bench, req, universe) = match open(args, &ep, share) {
        Ok((bench, req, universe, opened)) => {
            say(&FromWorker::Opened(Box::new(opened)));
            (bench, req, universe)
        }
        Err(e) => {
            say(&FromWorker::Failed {
                message: e.message,
                code: e.code,
            });
            return Ok(EXIT_OK);
        }
    };
    let reader = Mutex::new(reader);
    // A gated round: warm, say so, and measure at the scheduler's go (or
    // when it is gone: then nobody waits for the figures anyway).
    let ready = || {
        say(&FromWorker::Ready);
        let mut r = reader.lock().unwrap_or_else(|e| e.into_inner());
        let _ = ipc::receive::<ToWorker>(&mut *r);
    };
    let mut mix = req.mix;
    loop {
        let next = ipc::receive::<ToWorker>(&mut *reader.lock().unwrap_or_else(|e| e.into_inner()));
        let Ok(Some(msg)) = next else { break };
        let reply = match msg {
            ToWorker::Ops { ids, key } => {
                let ops: Vec<OpDef> = ids
                    .iter()
                    .filter_map(|id| universe.iter().find(|o| &o.id == id).cloned())
                    .collect();
                bench.set_jobs(jobs(&ops, mix.take(), &req.settings), key);
                FromWorker::Jobs(bench.job_infos())
            }
            ToWorker::Prepare { job } => FromWorker::Prepared(bench.prepare(job).map(Box::new)),
            ToWorker::Round {
                round,
                gate,
                remaining_ms,
                bar,
            } => {
                let gate: Gate<'_> = if gate { Some(&ready) } else { None };
                let d = bench.round(round, remaining_ms.map(Duration::from_millis), bar, gate);
                FromWorker::RoundDone {
                    cut_short: d.cut_short,
                    skip_rest: d.skip_rest,
                    results: d.results,
                }
            }
            // A go or a join out of turn asks for nothing.
            ToWorker::Go | ToWorker::Join(_) => continue,
            ToWorker::EndJob => FromWorker::Results(bench.end_job()),
            ToWorker::Describe => FromWorker::Keys(KeysInfo {
                token_key_labels: bench.keys.token_key_labels(),
                made_session_keys: bench.keys.made_session_keys(),
                role_separated: bench.keys.role_separated_keys(),
            }),
            ToWorker::Finish => {
                let (module, keys) = bench.into_parts();
                say(&FromWorker::Phase(
                    "destroying its keys (C_DestroyObject)".into(),
                ));
                drop(keys);
                say(&FromWorker::Phase(
                    "closing its sessions and finalizing (C_CloseSession, C_Finalize)".into(),
                ));
                drop(module);
                say(&FromWorker::Finished);
                return Ok(EXIT_OK);
            }
        };
        if !say(&reply) {
            break;
        }
    }
    // The scheduler is gone: leave without finalizing anything more.
    Ok(EXIT_OK)
}

/// Open the worker's module, make its key store, and find the ops its key
/// or mechanism allows; the ops it may be asked for (`universe`).
fn open(
    args: &RunArgs,
    ep: &Endpoint,
    share: Option<Share>,
) -> Result<(ModuleBench, Request, Vec<OpDef>, Opened)> {
    let req = resolve(args)?;
    let choice = req
        .choices
        .get(ep.index)
        .ok_or_else(|| CliError::usage("worker: no such module"))?;
    let mut token = choice.token(&args.token.choice())?;
    if let Some(sh) = share {
        // The first process's temporary token, by label, with its PIN.
        (token.slot, token.label, token.pin) = (None, Some(sh.label), Some(sh.pin));
    }
    let temp = ep.temporary.then(TempToken::made_by_scheduler);
    let module = Module::open(choice, temp, &token)?;
    let share = ep.temporary.then(|| Share {
        label: module.probe.token_label.clone(),
        pin: module.probe.pin.clone(),
    });
    let mut keys = KeyStore::new(
        module.raw.clone(),
        module.setup_session().handle(),
        req.store,
        args.keep_keys,
    );
    let (ops, key_kind) = match req.key_labels.get(ep.index).cloned().flatten() {
        Some(label) => {
            let handles = module
                .raw
                .find_all(
                    module.setup_session().handle(),
                    &mut crate::token::raw::Template::new()
                        .bytes(cryptoki_sys::CKA_LABEL, label.as_bytes()),
                )
                .map_err(|e| CliError::usage(format!("module {}: {e}", module.name)))?;
            let ex = detect(&module.raw, module.setup_session().handle(), &handles)
                .map_err(|e| CliError::usage(format!("key '{label}' on {}: {e}", module.name)))?;
            keys.insert_existing(ex.handles.clone());
            let kind = match &ex.kind {
                Detected::Other { key_type, .. } => ckk_name(*key_type),
                known => format!("{known:?}"),
            };
            let ops = match (&req.generic, &ex.kind) {
                (Some(g), _) => g.ops(Some(&ex), &module),
                (None, Detected::Other { why, .. }) => Err(CliError::usage(format!(
                    "key '{label}' on {} is {why}: measure it with --mechanism \
                     (e.g. --mechanism CKM_NAME --function sign,verify)",
                    module.name
                ))),
                (None, _) => Ok(crate::suite::catalogue::ops_for_existing(&ex)),
            };
            (ops, Some(kind))
        }
        None => match &req.generic {
            Some(g) => (g.ops(None, &module), None),
            None => (Ok(Vec::new()), None),
        },
    };
    let caps = module.caps();
    let supported = ops
        .iter()
        .flatten()
        .filter(|o| unsupported(&caps, o, default_size(o)).is_none())
        .map(|o| o.id.clone())
        .collect();
    let ids: std::result::Result<Vec<String>, String> = match &ops {
        Ok(v) => Ok(v.iter().map(|o| o.id.clone()).collect()),
        Err(e) => Err(e.message.clone()),
    };
    // The ops an id may name, the first match counting: this module's key
    // or mechanism's (an existing key's `hmac-sha256` is not the
    // catalogue's, which makes its own key); what another module's
    // mechanism list allows (the first module's decides); the catalogue.
    let mut universe: Vec<OpDef> = ops.into_iter().flatten().collect();
    if let Some(g) = &req.generic {
        universe.extend(g.all_ops());
    }
    universe.extend(catalogue());
    let opened = Opened {
        meta: module.meta.clone(),
        ops: ids,
        key_kind,
        supported,
        share,
    };
    let opts = Options {
        histogram: args.histogram,
        raw_samples: args.raw_samples,
        quiet: args.quiet,
        key: String::new(),
        per_thread_keys: args.per_thread_keys && !req.existing_keys,
    };
    let bench = ModuleBench::new(module, keys, req.settings.clone(), opts);
    Ok((bench, req, universe, opened))
}
