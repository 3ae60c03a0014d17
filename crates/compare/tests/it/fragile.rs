//! Fragile decisions in `compare report`: the fixtures built to sit on a
//! float-rounding boundary are flagged with their margins; the SmolLM2
//! differences that come from the engines' rules are not; `--ignore-fragile`
//! passes only rows whose whole difference is fragile.

use comparison::report::{Report, Row, Verdict};
use parity_core::FragileKind;

use crate::helpers::{compare, fixture, text};

fn json_report(args: &[&str]) -> (Option<i32>, Report) {
    let mut all = vec!["report", "--format", "json", "--draws", "0"];
    all.extend_from_slice(args);
    let out = compare(&all, "");
    let report: Report = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", text(&out.stderr)));
    (out.status.code(), report)
}

fn rows<'a>(r: &'a Report, setting: &str) -> impl Iterator<Item = &'a Row> {
    r.rows.iter().filter(move |x| x.setting == setting)
}

#[test]
fn top_p_boundaries_are_flagged_with_their_ulps() {
    // Each file puts the ascending f32 cumulative mass at one sorted index
    // exactly on float32(1 - p), one ulp below or one ulp above it
    // (docs/fixtures.md): margins 0, 1, 1. The logits descend with the id,
    // so ascending sorted index s is id V − 1 − s: p = 0.5 cuts at index 2
    // of 4 (id 1), p = 0.8 at index 0 of 3 (id 2), p = 0.9 at index 1 of 5
    // (id 3), as each file's description says.
    for (p, token) in [("050", 1), ("080", 2), ("090", 3)] {
        for (side, margin) in [("eq", 0), ("below", 1), ("above", 1)] {
            let file = fixture(&format!("edge/top_p_boundary_{p}_{side}"));
            let setting = format!("p{p}");
            let (code, r) = json_report(&[
                "--settings",
                &setting,
                "--pairs",
                "hf:candle,hf:spec",
                &file,
            ]);
            assert_eq!(code, Some(0));
            for row in rows(&r, &setting) {
                let f = &row.fragile;
                assert_eq!(f.len(), 1, "{p} {side}: {f:?}");
                assert_eq!(
                    (f[0].kind, f[0].tokens.as_slice(), f[0].margin_ulps),
                    (FragileKind::TopPCut, &[token][..], margin),
                    "{p} {side} {}",
                    row.right
                );
                // Where the sides differ, they differ only at the cut.
                assert_eq!(row.only_fragile, row.verdict == Verdict::Differs, "{row:?}");
            }
        }
    }
}

#[test]
fn ties_are_flagged_with_how_many_tie() {
    // [3, 2, 2, 1], k = 2: ids 1 and 2 tie at the k-th score.
    let (_, r) = json_report(&[
        "--settings",
        "top_k2",
        "--pairs",
        "hf:candle",
        &fixture("edge/ties_3221"),
    ]);
    let row = rows(&r, "top_k2").next().expect("row");
    assert_eq!(row.fragile.len(), 1);
    let f = &row.fragile[0];
    assert_eq!(
        (f.kind, f.tokens.as_slice(), f.margin_ulps),
        (FragileKind::TopKTie, &[1, 2][..], 0)
    );
    assert!(row.only_fragile);
    // int_ties_v1000, k = 5: 120 tokens hold the top value 4 (docs/fixtures.md).
    let (_, r) = json_report(&[
        "--settings",
        "top_k5",
        "--pairs",
        "hf:candle",
        &fixture("edge/int_ties_v1000"),
    ]);
    let row = rows(&r, "top_k5").next().expect("row");
    assert_eq!((row.kept_left, row.kept_right), (Some(120), Some(5)));
    let f = &row.fragile[0];
    assert_eq!(
        (f.kind, f.tokens.len(), f.margin_ulps),
        (FragileKind::TopKTie, 120, 0)
    );
    assert!(f.detail.contains("drops 115"), "{}", f.detail); // 120 − 5
    assert!(row.only_fragile);
}

#[test]
fn smollm2_differences_from_the_rules_are_not_fragile() {
    let dir = format!("{}/../../fixtures/smollm2", env!("CARGO_MANIFEST_DIR"));
    let (_, r) = json_report(&["--pairs", "hf:candle,hf:spec", &dir]);
    let semantic = ["default top-k 50", "top-k then top-p", "repeat window"];
    let mut seen = 0;
    for row in &r.rows {
        assert!(
            row.fragile.is_empty(),
            "{} {} {}: {:?}",
            row.fixture,
            row.setting,
            row.right,
            row.fragile
        );
        if row
            .reason
            .as_deref()
            .is_some_and(|why| semantic.iter().any(|s| why.contains(s)))
        {
            assert!(!row.only_fragile);
            seen += 1;
        }
    }
    // At least t07_default's hf:candle row on each of the 6 fixtures (the
    // default top-k 50), besides k40p09 and the penalty windows.
    assert!(seen >= 6, "{seen}");
}

#[test]
fn ignore_fragile_passes_only_wholly_fragile_rows() {
    let ties = fixture("edge/ties_3221");
    let check = |extra: &[&str]| {
        let mut args = vec![
            "--settings",
            "top_k2",
            "--pairs",
            "hf:candle",
            "--fail-on",
            "differs",
            &ties,
        ];
        args.extend_from_slice(extra);
        json_report(&args).0
    };
    assert_eq!(check(&[]), Some(1));
    assert_eq!(check(&["--ignore-fragile"]), Some(0));
    // A difference from the rules still fails.
    let k60 = fixture("smollm2/write_k60");
    let (code, r) = json_report(&[
        "--settings",
        "t07_default",
        "--pairs",
        "hf:candle",
        "--max-tv",
        "1e-3",
        "--ignore-fragile",
        &k60,
    ]);
    assert_eq!((code, r.summary.over_threshold), (Some(1), 1));
}
