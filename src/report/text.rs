//! Human-readable report: gcc-style lines (`file:line:col: warning: ... [racedar/data-race]`
//! followed by `note:` lines, which editors' problem matchers parse) and a source snippet
//! rendered by codespan-reporting with a label on every access.

use super::{AccessReport, Report, Verdict};
use codespan_reporting::diagnostic::{Diagnostic, Label};
use codespan_reporting::files::SimpleFiles;
use codespan_reporting::term::{self, Config};
use rustc_hash::FxHashMap;
use std::fmt::Write as _;

/// Renders the report as text.
pub fn render(report: &Report) -> String {
    let mut out = String::new();
    let mut files = SimpleFiles::new();
    let mut file_ids: FxHashMap<String, Option<usize>> = FxHashMap::default();
    for race in report.races.iter().filter(|r| r.suppressed.is_none()) {
        let Some(first) = race.accesses.first() else {
            continue;
        };
        let _ = writeln!(
            out,
            "{}:{}:{}: warning: data race on '{}' ({}) [racedar/data-race]",
            first.file, first.line, first.column, race.location, race.confidence
        );
        for a in &race.accesses {
            let _ = writeln!(
                out,
                "{}:{}:{}: note: {}",
                a.file,
                a.line,
                a.column,
                describe(a)
            );
        }
        if race.more_accesses > 0 {
            let _ = writeln!(
                out,
                "{}:{}:{}: note: and {} more access(es)",
                first.file, first.line, first.column, race.more_accesses
            );
        }
        if let Some(reason) = &race.reason {
            let _ = writeln!(
                out,
                "{}:{}:{}: note: only a possible race: {reason}",
                first.file, first.line, first.column
            );
        }
        // Snippet.
        let mut labels = Vec::new();
        for (i, a) in race.accesses.iter().enumerate() {
            let id = *file_ids.entry(a.file.clone()).or_insert_with(|| {
                std::fs::read_to_string(&a.file)
                    .ok()
                    .map(|src| files.add(a.file.clone(), src))
            });
            let Some(id) = id else { continue };
            let Ok(src) = files.get(id).map(|f| f.source().clone()) else {
                continue;
            };
            let Some(span) = span_at(&src, a.line, a.column) else {
                continue;
            };
            let label = if i == 0 {
                Label::primary(id, span)
            } else {
                Label::secondary(id, span)
            };
            labels.push(label.with_message(format!("{} in {}", a.kind, a.thread)));
        }
        if !labels.is_empty() {
            let diag = Diagnostic::note()
                .with_message(format!("the racing accesses to '{}'", race.location))
                .with_labels(labels);
            let mut buf = String::new();
            if term::emit_to_string(&mut buf, &Config::default(), &files, &diag).is_ok() {
                out.push_str(&buf);
            }
        }
        out.push('\n');
    }
    let shown: Vec<_> = report
        .races
        .iter()
        .filter(|r| r.suppressed.is_none())
        .collect();
    let must = shown.iter().filter(|r| r.confidence == "must").count();
    let may = shown.len() - must;
    let suppressed = report.races.len() - shown.len();
    let verdict = match report.verdict {
        Verdict::Race => "data race found",
        Verdict::NoRace => "no data race",
        Verdict::Unknown => "unknown",
    };
    let hidden = if suppressed > 0 {
        format!(" ({suppressed} suppressed)")
    } else {
        String::new()
    };
    let _ = writeln!(
        out,
        "racedar: {verdict}: {must} must-race(s), {may} may-race(s){hidden}"
    );
    for i in &report.imprecision {
        let _ = writeln!(out, "racedar: note: {i}");
    }
    out
}

fn describe(a: &AccessReport) -> String {
    let locks = if a.lockset.is_empty() {
        "no lock".to_string()
    } else {
        format!("locks {{{}}}", a.lockset.join(", "))
    };
    let may = a
        .may_lockset
        .as_ref()
        .map(|m| format!(" (possibly {{{}}})", m.join(", ")))
        .unwrap_or_default();
    let atomic = if a.atomic { "atomic " } else { "" };
    let chain = if a.call_chain.len() > 1 {
        format!(", via {}", a.call_chain.join(" -> "))
    } else {
        String::new()
    };
    format!(
        "{atomic}{} of '{}' in thread {} holding {locks}{may}{chain}",
        a.kind, a.expression, a.thread
    )
}

/// The byte span of the token at (line, column) of `src` (both from 1).
fn span_at(src: &str, line: u32, column: u32) -> Option<std::ops::Range<usize>> {
    let start_of_line = if line <= 1 {
        0
    } else {
        src.match_indices('\n').nth(line as usize - 2)?.0 + 1
    };
    let start = start_of_line + column.saturating_sub(1) as usize;
    let rest = src.get(start..)?;
    let len = rest
        .char_indices()
        .find(|(_, c)| !(c.is_alphanumeric() || *c == '_'))
        .map_or(rest.len(), |(i, _)| i)
        .max(1)
        .min(rest.len());
    Some(start..start + len)
}

#[cfg(test)]
mod tests {
    use super::span_at;

    #[test]
    fn spans_cover_the_token() {
        let src = "int x;\n  glob++;\n";
        assert_eq!(span_at(src, 2, 3), Some(9..13));
        assert_eq!(&src[9..13], "glob");
        assert_eq!(span_at(src, 1, 1), Some(0..3));
    }
}
