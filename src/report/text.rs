//! Human-readable report: gcc-style lines (`file:line:col: warning: ... [racedar/data-race]`,
//! `[racedar/deadlock]`) followed by `note:` lines, which editors' problem matchers parse, and
//! for races a source snippet rendered by codespan-reporting with a label on every access.

use super::{AccessReport, DeadlockReport, RaceReport, Report, Site, Verdict};
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
        if let Some(w) = &race.witness {
            let _ = writeln!(
                out,
                "{}:{}:{}: note: {w}",
                first.file, first.line, first.column
            );
        }
        let _ = writeln!(
            out,
            "{}:{}:{}: note: details: racedar check --explain {} ...",
            first.file,
            first.line,
            first.column,
            race.fingerprint.get(..8).unwrap_or(&race.fingerprint)
        );
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
    for d in report.deadlocks.iter().flatten() {
        render_deadlock(&mut out, d);
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
    if let Some(stopped) = &report.stopped {
        let _ = writeln!(out, "racedar: unknown: {}", stopped.reason);
        return out;
    }
    let _ = writeln!(
        out,
        "racedar: {verdict}: {must} must-race(s), {may} may-race(s){hidden}"
    );
    if let Some(ds) = report.deadlocks.as_ref().filter(|d| !d.is_empty()) {
        let must = ds.iter().filter(|d| d.confidence == "must").count();
        let _ = writeln!(
            out,
            "racedar: {} deadlock(s): {must} must, {} may",
            ds.len(),
            ds.len() - must
        );
    }
    if report.deadlocks_truncated {
        let _ = writeln!(
            out,
            "racedar: note: the deadlock search was cut short (bounds reached)"
        );
    }
    for i in &report.imprecision {
        let _ = writeln!(out, "racedar: note: {i}");
    }
    out
}

/// One deadlock: the warning on the first step's blocking lock call, then a note per step
/// (gcc style, so problem matchers pick every location up).
fn render_deadlock(out: &mut String, d: &DeadlockReport) {
    let Some(first) = d.cycle.first() else {
        return;
    };
    let at = |s: &Site| format!("{}:{}:{}", s.file, s.line, s.column);
    let _ = writeln!(
        out,
        "{}: warning: {} [racedar/deadlock]",
        at(&first.acquire),
        super::sarif::deadlock_message(d)
    );
    for s in &d.cycle {
        let chain = if s.call_chain.len() > 1 {
            format!(", via {}", s.call_chain.join(" -> "))
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "{}: note: thread {} takes '{}' here",
            at(&s.while_holding),
            s.thread,
            s.held
        );
        let _ = writeln!(
            out,
            "{}: note: thread {} waits for '{}' here while holding '{}'{chain}",
            at(&s.acquire),
            s.thread,
            s.lock,
            s.held
        );
    }
    if let Some(reason) = &d.reason {
        let _ = writeln!(
            out,
            "{}: note: only a possible deadlock: {reason}",
            at(&first.acquire)
        );
    }
    out.push('\n');
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

/// The races `id` names: a 1-based position in the report's race list, or a prefix (at
/// least 4 hex digits) of a fingerprint.
pub fn find_races<'r>(report: &'r Report, id: &str) -> Vec<&'r RaceReport> {
    if let Ok(n) = id.parse::<usize>()
        && n >= 1
        && id.len() < 4
    {
        return report.races.get(n - 1).into_iter().collect();
    }
    if id.len() < 4 {
        return Vec::new();
    }
    report
        .races
        .iter()
        .filter(|r| r.fingerprint.starts_with(id))
        .collect()
}

/// The explanation of one race (`--explain`): for each racing access, the thread, where it is
/// created, the calls from the thread's entry, the locks held; then why the race is only
/// possible, when it is.
pub fn explain(race: &RaceReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "data race on '{}' ({}) [racedar/data-race] fingerprint {}",
        race.location, race.confidence, race.fingerprint
    );
    for (i, a) in race.accesses.iter().take(2).enumerate() {
        let _ = writeln!(out, "\naccess {}: {} of '{}'", i + 1, a.kind, a.expression);
        let _ = writeln!(out, "  at {}:{}:{}", a.file, a.line, a.column);
        match &a.created_at {
            Some(c) => {
                let _ = writeln!(
                    out,
                    "  thread {} (created at {}:{}:{})",
                    a.thread, c.file, c.line, c.column
                );
            }
            None => {
                let _ = writeln!(out, "  thread {} (the program's main thread)", a.thread);
            }
        }
        let entry = a
            .frames
            .first()
            .map_or(a.function.as_str(), |f| f.function.as_str());
        let _ = writeln!(out, "  call chain from the thread's entry {entry}:");
        for f in &a.frames {
            let _ = writeln!(
                out,
                "    {} calls at {}:{}:{}",
                f.function, f.site.file, f.site.line, f.site.column
            );
        }
        let _ = writeln!(out, "    {} accesses '{}'", a.function, a.expression);
        let held = if a.lockset.is_empty() {
            "none".to_string()
        } else {
            a.lockset
                .iter()
                .map(|l| match a.lock_sites.iter().find(|(n, _)| n == l) {
                    Some((_, s)) => format!("{l} (taken at {}:{}:{})", s.file, s.line, s.column),
                    None => l.clone(),
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        let _ = writeln!(out, "  locks surely held: {held}");
        if let Some(m) = &a.may_lockset {
            let _ = writeln!(out, "  locks possibly held: {}", m.join(", "));
        }
    }
    match (&race.reason, &race.witness) {
        (Some(r), _) => {
            let _ = writeln!(out, "\nonly a possible race: {r}");
        }
        (None, Some(w)) => {
            let _ = writeln!(out, "\na certain race, {w}");
        }
        (None, None) => {
            let _ = writeln!(
                out,
                "\na certain race: both accesses run on certainly feasible paths of threads that \
                 certainly run in parallel, with no common lock"
            );
        }
    }
    if let Some(s) = &race.suppressed {
        let _ = writeln!(out, "suppressed ({}): {}", s.kind, s.justification);
    }
    out
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
