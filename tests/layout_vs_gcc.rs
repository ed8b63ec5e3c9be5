//! Differential test of struct layouts: racedar's `sizeof`, `_Alignof` and member offsets for
//! every struct and union of `tests/fixtures/layout/structs.c` must be what gcc computes for the
//! same data model (`-m32` for ILP32, `-m64` for LP64). The test writes them as
//! `_Static_assert`s appended to the fixture and has `gcc -fsyntax-only` check them. Skipped
//! (with a message) when gcc cannot compile for the data model.

use racedar::frontend::{self, FrontendOptions};
use racedar::ir::types::{CompKind, TypeKind};
use racedar::ir::{DataModel, Program};
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

const FIXTURE: &str = "tests/fixtures/layout/structs.c";

/// `_Static_assert`s stating racedar's layout of every tagged struct/union of the input file.
fn assertions(p: &Program) -> (String, usize) {
    let t = &p.types;
    let mut out = String::new();
    let mut n = 0;
    for c in &t.comps {
        let (Some(tag), Some(layout)) = (&c.tag, c.layout) else {
            continue;
        };
        if c.loc.line == 0 || !p.inputs.contains(&c.loc.file) {
            continue;
        }
        let kw = match c.kind {
            CompKind::Struct => "struct",
            CompKind::Union => "union",
        };
        let ty = format!("{kw} {tag}");
        out.push_str(&format!(
            "_Static_assert(sizeof({ty}) == {}, \"sizeof {ty}\");\n",
            layout.size
        ));
        out.push_str(&format!(
            "_Static_assert(_Alignof({ty}) == {}, \"_Alignof {ty}\");\n",
            layout.align
        ));
        n += 2;
        for f in &c.fields {
            match (&f.name, f.bit_field) {
                (Some(name), None) => {
                    out.push_str(&format!(
                        "_Static_assert(__builtin_offsetof({ty}, {name}) == {}, \"offsetof {ty}.{name}\");\n",
                        f.offset
                    ));
                    n += 1;
                }
                (None, None) => {
                    // Anonymous member: check the offsets of its named members through it.
                    if let TypeKind::Comp(inner) = t.kind(f.ty) {
                        for g in &t.comp(*inner).fields {
                            if let (Some(name), None) = (&g.name, g.bit_field) {
                                out.push_str(&format!(
                                    "_Static_assert(__builtin_offsetof({ty}, {name}) == {}, \"offsetof {ty}.{name}\");\n",
                                    f.offset + g.offset
                                ));
                                n += 1;
                            }
                        }
                    }
                }
                _ => {}
            }
        }
    }
    (out, n)
}

fn check(data_model: DataModel, flag: &str) {
    // Can gcc compile for this data model here?
    let probe = Command::new("gcc")
        .args([flag, "-fsyntax-only", "-x", "c", "-"])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .status();
    if !probe.is_ok_and(|s| s.success()) {
        eprintln!("skipped: gcc {flag} is not available");
        return;
    }
    let opts = FrontendOptions {
        data_model,
        ..Default::default()
    };
    let (program, _) = frontend::load(&[PathBuf::from(FIXTURE)], &opts).expect("fixture lowers");
    let (asserts, n) = assertions(&program);
    assert!(n > 100, "too few layout facts checked: {n}");
    let source = std::fs::read_to_string(FIXTURE).expect("fixture readable") + &asserts;
    let mut child = Command::new("gcc")
        .args([flag, "-fsyntax-only", "-x", "c", "-"])
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("gcc runs");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(source.as_bytes())
        .expect("write");
    let out = child.wait_with_output().expect("gcc finishes");
    let errors = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "racedar's {} layouts differ from gcc {flag}:\n{errors}",
        data_model.name()
    );
}

#[test]
fn lp64_layouts_match_gcc() {
    check(DataModel::Lp64, "-m64");
}

#[test]
fn ilp32_layouts_match_gcc() {
    check(DataModel::Ilp32, "-m32");
}
