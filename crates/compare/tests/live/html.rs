//! `compare report --format html` rendered by a real headless Chromium:
//! the page loads offline with no console message, has one row section and
//! one chart per row of the JSON report, and its screenshot is saved under
//! the target folder (`docs/report.png` is a copy of it).
//!
//! main.rs runs it when a Chromium is on the PATH; without one it is
//! ignored with the reason, unless the environment variable `CI` is set: CI
//! installs Debian's `chromium`, so there a missing browser is a failure.

use std::path::{Path, PathBuf};
use std::process::Command;

use comparison::report::Report;

use crate::helpers::{compare, text};

/// The first Chromium on the PATH.
pub(crate) fn chromium() -> Option<&'static str> {
    ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|name| {
            Command::new(name)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        })
}

/// Runs headless Chromium on `page` with `args`; returns stdout and stderr.
fn headless(browser: &str, profile: &Path, page: &Path, args: &[&str]) -> (String, String) {
    let out = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox", // the tests may run as root
            "--disable-gpu",
            "--no-first-run",
            "--enable-logging=stderr",
            "--v=0",
            &format!("--user-data-dir={}", profile.display()),
        ])
        .args(args)
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("run chromium");
    assert!(
        out.status.success(),
        "chromium failed: {}",
        text(&out.stderr)
    );
    (text(&out.stdout), text(&out.stderr))
}

pub(crate) fn html_report_renders_in_chromium() {
    let browser = chromium().expect("no chromium on the PATH: apt-get install -y chromium");
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    // The default report, as a user gets it.
    let out = compare(&["report", "--format", "html"], "");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let page = dir.join("report.html");
    std::fs::write(&page, &out.stdout).expect("write the page");
    // Its rows, from the JSON report (the row set does not depend on draws).
    let json = compare(&["report", "--format", "json", "--draws", "0"], "");
    let report: Report = serde_json::from_slice(&json.stdout).expect("JSON report");
    let rows = report.rows.len();
    assert!(rows > 100, "{rows}");

    let html = text(&out.stdout);
    for external in ["<script", "<link", "@import", "url(", "src="] {
        assert!(
            !html.contains(external),
            "page refers to something outside: {external}"
        );
    }

    let profile = dir.join("chromium-profile");
    let (dom, log) = headless(browser, &profile, &page, &["--dump-dom"]);
    // Console messages (a resource that failed to load, a script error)
    // are logged as "INFO:CONSOLE..." lines; the page must cause none.
    let console: Vec<&str> = log.lines().filter(|l| l.contains(":CONSOLE")).collect();
    assert!(console.is_empty(), "console messages: {console:#?}");
    assert_eq!(dom.matches("<figure class=\"chart\"").count(), rows);
    assert_eq!(dom.matches("<details class=\"row ").count(), rows);
    assert_eq!(dom.matches("<svg ").count(), rows);
    assert!(
        dom.contains("id=\"summary\""),
        "{}",
        &dom[..dom.len().min(2000)]
    );
    // The heatmap has a cell linking to every row.
    assert_eq!(dom.matches("href=\"#row-").count(), rows);

    let shot = dir.join("report.png");
    let _ = std::fs::remove_file(&shot);
    headless(
        browser,
        &profile,
        &page,
        &[
            "--window-size=1200,1500",
            &format!("--screenshot={}", shot.display()),
        ],
    );
    let png = std::fs::read(&shot).expect("screenshot written");
    assert!(png.starts_with(b"\x89PNG"), "not a PNG");
    eprintln!("screenshot: {}", shot.display());
}
