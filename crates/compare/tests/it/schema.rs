//! `--format json`'s schema (docs/schema/): generated from the output types
//! by `comparison::json_schema`, committed, and kept equal here; and real
//! output of the commands whose writers are not the types' own `Serialize`
//! (`dist`'s hand-written lines, the error lines) read back into the types
//! the schema was generated from; and docs/report-schema.md's prose held
//! to the same types (every field named, no table row the types lack).
//!
//! After an intended change of an output type: `UPDATE_SCHEMA=1 cargo test
//! --release -p compare --test it schema`, then read the diff of
//! `docs/schema/`. With `CI` set, nothing is written.

use std::path::PathBuf;

use comparison::json_schema::{self, ErrorLine, Line};

use crate::helpers::{compare, text};

/// The registry's engines, which name what the output names after them.
fn engines() -> comparison::Engines {
    compare::registry::engines(None, &compare::registry::Options::default()).expect("the registry")
}

/// `docs/schema/` in the repository.
fn schema_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/schema")
}

#[test]
fn committed_schemas_equal_the_output_types() {
    let dir = schema_dir();
    let update = std::env::var_os("UPDATE_SCHEMA").is_some() && std::env::var_os("CI").is_none();
    let documents = json_schema::documents();
    let engines = engines();
    let mut stale = Vec::new();
    for doc in &documents {
        let path = dir.join(doc.file);
        let want = doc.text(&engines).expect("a schema is JSON");
        if update {
            std::fs::create_dir_all(&dir).expect("docs/schema");
            std::fs::write(&path, &want).expect("write the schema");
            continue;
        }
        match std::fs::read_to_string(&path) {
            Ok(got) if got == want => {}
            Ok(_) => stale.push(format!("{} ({}) differs", path.display(), doc.command)),
            Err(e) => stale.push(format!("{}: {e}", path.display())),
        }
    }
    assert!(
        stale.is_empty(),
        "the committed JSON schemas disagree with the output types; after an intended \
         change run `UPDATE_SCHEMA=1 cargo test --release -p compare --test it schema`:\n{}",
        stale.join("\n")
    );
    // Every committed file is one of the documents (none left behind by a rename).
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .expect("docs/schema")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    let mut names: Vec<String> = documents.iter().map(|d| d.file.to_string()).collect();
    names.sort();
    assert_eq!(files, names, "docs/schema/ holds a file no document writes");
}

#[test]
fn every_json_command_has_a_schema() {
    let documents = json_schema::documents();
    let out = compare(&["help"], "");
    let help = text(&out.stdout);
    let commands: Vec<&str> = help
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.is_empty())
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .collect();
    assert!(commands.len() >= 13, "{commands:?}");
    for c in commands {
        let prefix = format!("compare {c} ");
        assert!(
            documents.iter().any(|d| d.command.starts_with(&prefix)),
            "`compare {c}` has no schema in comparison::json_schema::documents()"
        );
    }
}

/// `compare dist`'s lines are written by hand (for speed): each real line,
/// answers with scores, tokens and token texts and an error line among them,
/// reads back into the type its schema is generated from.
#[test]
fn dist_lines_read_back_into_their_schema_type() {
    let vocab = format!(
        "{}/../../fixtures/smollm2/vocab.json",
        env!("CARGO_MANIFEST_DIR")
    );
    // The spec draws a token (`u`), so its line has `tokens` and, with the
    // vocabulary, `token_text`; it needs a logit per vocabulary entry.
    let mut logits = vec!["0"; 49_152];
    logits[15_593] = "3";
    let spec = format!(
        r#"{{"logits": [{}], "params": {{"temperature": 0.7, "top_k": 40, "top_p": 0.9, "repetition_penalty": 1.0, "u": 0.5}}}}"#,
        logits.join(",")
    );
    let cases: [(&str, &str, bool); 3] = [
        (
            "hf",
            r#"{"logits": [3, 2, "-inf", 1], "params": {"do_sample": true, "top_k": 2}}"#,
            false,
        ),
        ("spec", &spec, true),
        (
            "hf",
            r#"{"logits": [1, 0], "params": {"do_sample": true, "temperature": 0}}"#,
            false,
        ),
    ];
    let mut answers = 0;
    let mut errors = 0;
    for (semantics, record, with_vocab) in cases {
        let mut args = vec!["dist", "--semantics", semantics];
        if with_vocab {
            args.extend(["--vocab", vocab.as_str()]);
        }
        let out = compare(&args, record);
        let stdout = text(&out.stdout);
        let line = stdout.lines().next().expect("one line per record");
        match serde_json::from_str::<Line<comparison::dist::Answer>>(line) {
            Ok(Line::Answer(a)) => {
                answers += 1;
                assert!(a.kept >= 1, "{line}");
                assert_eq!(with_vocab, a.token_text.is_some(), "{line}");
            }
            Ok(Line::Error(ErrorLine { error, .. })) => {
                errors += 1;
                assert!(!error.is_empty());
            }
            Err(e) => panic!("`compare dist` line does not fit its schema type: {e}: {line}"),
        }
    }
    assert_eq!((answers, errors), (2, 1));
}

/// `compare diff --format json`'s lines read back into their schema type.
#[test]
fn diff_lines_read_back_into_their_schema_type() {
    let input = concat!(
        r#"{"logits": [3, 2, 2, 1], "params": {"do_sample": true, "top_k": 2}}"#,
        "\n",
        r#"{"logits": [1, "x"]}"#,
        "\n",
    );
    let out = compare(&["diff", "--format", "json"], input);
    let stdout = text(&out.stdout);
    let lines: Vec<Line<comparison::diff::Answer>> = stdout
        .lines()
        .map(|l| {
            serde_json::from_str(l).unwrap_or_else(|e| {
                panic!("`compare diff` line does not fit its schema type: {e}: {l}")
            })
        })
        .collect();
    assert_eq!(lines.len(), 2, "{stdout}");
    assert!(matches!(&lines[0], Line::Answer(a) if a.record == 1 && !a.rows.is_empty()));
    assert!(matches!(&lines[1], Line::Error(_)));
}

/// Names in `text` written as `` `name` `` or `"name"` (identifiers only).
fn quoted_names(text: &str) -> std::collections::BTreeSet<&str> {
    let mut out = std::collections::BTreeSet::new();
    for quote in ['`', '"'] {
        for (i, piece) in text.split(quote).enumerate() {
            let ident = !piece.is_empty()
                && !piece.starts_with(|c: char| c.is_ascii_digit())
                && piece.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if i % 2 == 1 && ident {
                out.insert(piece);
            }
        }
    }
    out
}

/// The first cells of the tables whose first column is headed `field`.
fn table_fields(section: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut in_field_table = false;
    for line in section.lines() {
        let Some(row) = line.strip_prefix('|') else {
            in_field_table = false;
            continue;
        };
        let first = row.split('|').next().unwrap_or_default().trim();
        if first == "field" {
            in_field_table = true;
        } else if in_field_table && !first.starts_with("---") {
            out.extend(first.split(", ").filter_map(|f| {
                f.strip_prefix('`')
                    .and_then(|f| f.strip_suffix('`'))
                    .filter(|f| f.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
            }));
        }
    }
    out
}

/// Every property name anywhere in a schema.
fn property_names(v: &serde_json::Value, out: &mut std::collections::BTreeSet<String>) {
    match v {
        serde_json::Value::Object(m) => {
            if let Some(serde_json::Value::Object(props)) = m.get("properties") {
                out.extend(props.keys().cloned());
            }
            m.values().for_each(|v| property_names(v, out));
        }
        serde_json::Value::Array(a) => a.iter().for_each(|v| property_names(v, out)),
        _ => {}
    }
}

/// docs/report-schema.md keeps the prose beside the generated schemas; here
/// the two are held together: each document's section names every field its
/// schema has (as `` `name` `` or `"name"`, with the report's section for
/// sections that point to it), and every field its tables list is one the
/// schema has.
#[test]
fn the_prose_names_the_fields_the_types_have() {
    use std::collections::BTreeSet;
    let page = std::fs::read_to_string(schema_dir().join("../report-schema.md"))
        .expect("docs/report-schema.md");
    let sections: Vec<&str> = page.split("\n## ").collect();
    let section = |word: &str| -> Option<&str> {
        let title = if word == "report" {
            "The document".to_string()
        } else {
            format!("`compare {word} ")
        };
        sections.iter().copied().find(|s| s.starts_with(&title))
    };
    let word = |doc: &json_schema::Document| doc.command.split(' ').nth(1).unwrap_or_default();
    let engines = engines();
    let props = |doc: &json_schema::Document| {
        let mut props = BTreeSet::new();
        property_names(
            &serde_json::to_value(doc.generate(&engines)).expect("JSON"),
            &mut props,
        );
        props
    };
    let report = section("report").expect("the report's section");
    let documents = json_schema::documents();
    let mut problems = Vec::new();
    for doc in &documents {
        let w = word(doc);
        let Some(text) = section(w) else {
            problems.push(format!("{}: no section for `compare {w}`", doc.file));
            continue;
        };
        let mut named = quoted_names(text);
        if w != "report" && text.contains("report") {
            named.extend(quoted_names(report));
        }
        let unnamed: Vec<String> = props(doc)
            .into_iter()
            .filter(|p| !named.contains(p.as_str()))
            .collect();
        if !unnamed.is_empty() {
            problems.push(format!(
                "{} ({}): the prose never names {unnamed:?}",
                doc.file, doc.command
            ));
        }
        // A section may describe several documents (`probe`, `probe --repeat`).
        let mut section_props = BTreeSet::new();
        for other in documents.iter().filter(|d| word(d) == w) {
            section_props.extend(props(other));
        }
        let stale: Vec<&str> = table_fields(text)
            .into_iter()
            .filter(|f| !section_props.contains(*f))
            .collect();
        if !stale.is_empty() {
            problems.push(format!(
                "{} ({}): the tables list {stale:?}, which the types lack",
                doc.file, doc.command
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "docs/report-schema.md and the types disagree:\n{}",
        problems.join("\n")
    );
}
