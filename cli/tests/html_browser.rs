//! `report --html` and `compare --html` rendered by a real browser: headless
//! Chromium loads the page with name resolution disabled, and the rendered DOM
//! must hold every chart and the page's load markers (charts counted, no resource
//! fetched, no chart label laid out past its chart's edges), the summary
//! before the details, with nothing logged to the console.
//!
//! Skips (with a message) when no Chromium can be found or started, unless
//! `HSM_BENCH_REQUIRE_BROWSER=1` (scripts/test sets it once
//! `scripts/install-deps browser` has installed Debian's `chromium`).
//! `HSM_BENCH_CHROMIUM` names another binary; `HSM_BENCH_SCREENSHOT=FILE` keeps
//! the screenshot of the report (docs/img/report.png is made that way).

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{cmd, code, run};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/report-sweep.json")
}

/// The browser binary, or why there is none.
fn chromium() -> Result<String, String> {
    let names: Vec<String> = match std::env::var("HSM_BENCH_CHROMIUM") {
        Ok(b) if !b.is_empty() => vec![b],
        _ => ["chromium", "chromium-browser", "google-chrome"]
            .map(String::from)
            .to_vec(),
    };
    for n in &names {
        if let Ok(o) = Command::new(n).arg("--version").output()
            && o.status.success()
        {
            return Ok(n.clone());
        }
    }
    Err(format!(
        "no browser found (tried {}); install one with `scripts/install-deps browser`",
        names.join(", ")
    ))
}

/// Skip (return true) or, when a browser is required, fail.
fn skip(why: &str) -> bool {
    if std::env::var("HSM_BENCH_REQUIRE_BROWSER").as_deref() == Ok("1") {
        panic!("HSM_BENCH_REQUIRE_BROWSER=1 but {why}");
    }
    eprintln!("SKIPPED: browser test: {why}");
    true
}

/// Run headless Chromium on `page` with `args`; (stdout, stderr), or None when
/// it could not start or did not finish within a minute.
fn headless(browser: &str, profile: &Path, page: &Path, args: &[&str]) -> Option<(String, String)> {
    let (out_path, log_path) = (profile.with_extension("out"), profile.with_extension("log"));
    let mut child = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--enable-logging=stderr",
            "--v=0",
            // Any fetch of a host name fails (and would be logged): the page must
            // need none.
            "--host-resolver-rules=MAP * ~NOTFOUND",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .arg(format!("file://{}", page.display()))
        // Files, not pipes: the DOM outgrows a pipe's buffer while we wait.
        .stdout(Stdio::from(std::fs::File::create(&out_path).ok()?))
        .stderr(Stdio::from(std::fs::File::create(&log_path).ok()?))
        .spawn()
        .ok()?;
    let start = Instant::now();
    while child.try_wait().ok()?.is_none() {
        if start.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let read =
        |p: &Path| String::from_utf8_lossy(&std::fs::read(p).unwrap_or_default()).into_owned();
    Some((read(&out_path), read(&log_path)))
}

/// Console messages and failed loads in Chromium's log.
fn page_errors(log: &str) -> Vec<&str> {
    log.lines()
        .filter(|l| l.contains(":CONSOLE") || l.contains("net::ERR_"))
        .collect()
}

/// Load `page` and check that the rendered DOM holds exactly the `ids` charts.
/// Returns false when the browser could not be started (the test then skips).
fn check_page(browser: &str, tmp: &Path, page: &Path, ids: &[&str]) -> bool {
    let Some((dom, log)) = headless(browser, &tmp.join("profile"), page, &["--dump-dom"]) else {
        return false;
    };
    if !dom.contains("<body") {
        eprintln!("browser log:\n{log}");
        return false;
    }
    assert_eq!(page_errors(&log), Vec::<&str>::new(), "page logged errors");
    // The inline script counts the charts once the page has loaded.
    let marker = format!("data-charts=\"{}\"", ids.len());
    assert!(dom.contains(&marker), "no {marker} in the rendered DOM");
    assert!(
        dom.contains("data-resources=\"0\""),
        "the page fetched resources"
    );
    // The browser's own text layout: every label inside its <svg>.
    assert!(
        dom.contains("data-labels-outside=\"0\""),
        "chart labels reach past their chart: {}",
        dom.split("data-labels-outside=")
            .nth(1)
            .unwrap_or("no marker")
            .chars()
            .take(8)
            .collect::<String>()
    );
    // The answer first: the summary section before the first detail chart.
    let at = |what: &str| dom.find(what);
    if let Some(details) = at("id=\"section-details\"") {
        assert!(at("id=\"section-summary\"").is_some_and(|s| s < details));
    }
    assert_eq!(dom.matches("<svg ").count(), ids.len());
    for id in ids {
        assert!(
            dom.contains(&format!("<svg id=\"{id}\"")),
            "chart {id} missing from the rendered DOM"
        );
    }
    true
}

#[test]
fn report_and_compare_pages_render_in_chromium() {
    let tmp = tempfile::tempdir().unwrap();
    let report = tmp.path().join("report.html");
    let o = run(cmd()
        .arg("report")
        .arg(fixture())
        .arg("--html")
        .arg(&report));
    assert_eq!(code(&o), 0);
    assert!(o.stdout.is_empty(), "--html alone prints nothing");
    let compare = tmp.path().join("compare.html");
    let o = run(cmd()
        .arg("compare")
        .args([fixture(), fixture()])
        .arg("--html")
        .arg(&compare));
    assert_eq!(code(&o), 0);
    assert!(String::from_utf8_lossy(&o.stdout).contains("unchanged"));

    // The unit tests pin which charts the fixture gets; here every chart the
    // file holds (7: the ratios, then latency, size and threads sweeps of 2
    // ops) must be in the rendered DOM, the summary table and ratios first.
    let html = std::fs::read_to_string(&report).unwrap();
    let report_ids: Vec<&str> = html
        .split("<svg id=\"")
        .skip(1)
        .map(|s| &s[..s.find('"').unwrap()])
        .collect();
    assert_eq!(report_ids.len(), 7, "{report_ids:?}");
    assert_eq!(report_ids[0], "chart-ratio");
    let summary = html.find("<table id=\"summary\"").expect("a summary table");
    assert!(summary < html.find("<svg id=\"chart-latency-").unwrap());

    // With --output, the --format output is written as well.
    let csv = tmp.path().join("r.csv");
    let o = run(cmd()
        .arg("report")
        .arg(fixture())
        .args(["--format", "csv", "--html"])
        .arg(tmp.path().join("again.html"))
        .arg("--output")
        .arg(&csv));
    assert_eq!(code(&o), 0);
    assert!(
        std::fs::read_to_string(&csv)
            .unwrap()
            .starts_with("op,module,")
    );
    assert_eq!(
        std::fs::read_to_string(tmp.path().join("again.html")).unwrap(),
        html
    );

    let browser = match chromium() {
        Ok(b) => b,
        Err(why) => {
            skip(&why);
            return;
        }
    };
    let started = Instant::now();
    if !check_page(&browser, tmp.path(), &report, &report_ids) {
        skip(&format!("{browser} could not be started headless"));
        return;
    }
    assert!(check_page(
        &browser,
        tmp.path(),
        &compare,
        &["chart-compare"]
    ));

    // A screenshot: the charts are painted (a PNG of some size, not a blank page).
    let png = tmp.path().join("report.png");
    let shot = format!("--screenshot={}", png.display());
    let (_, log) = headless(
        &browser,
        &tmp.path().join("profile"),
        &report,
        &[&shot, "--window-size=1000,1400", "--hide-scrollbars"],
    )
    .expect("chromium takes a screenshot");
    let bytes = std::fs::read(&png).unwrap_or_else(|e| panic!("no screenshot ({e}): {log}"));
    assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"));
    assert!(bytes.len() > 20_000, "screenshot of {} bytes", bytes.len());
    if let Ok(keep) = std::env::var("HSM_BENCH_SCREENSHOT") {
        std::fs::copy(&png, keep).unwrap();
    }
    eprintln!(
        "browser test: {browser}, 3 page loads in {:.1}s",
        started.elapsed().as_secs_f64()
    );
}
