//! Human-readable report: gcc-style lines (`file:line:col: warning: ... [racedar/data-race]`,
//! `[racedar/deadlock]`) followed by `note:` lines, which editors' problem matchers parse, and
//! for races a source snippet rendered by codespan-reporting with a label on every access.

use super::{AccessReport, DeadlockReport, RaceReport, Report, Site, Verdict};
use crate::races::evidence::Evidence;
use codespan_reporting::diagnostic::{Diagnostic, Label};
use codespan_reporting::files::SimpleFiles;
use codespan_reporting::term::{self, Config};
use rustc_hash::FxHashMap;
use std::fmt::Write as _;

/// What the text report shows (issue "Reports people act on", items 2 and 4).
#[derive(Clone, Copy, Debug)]
pub struct TextOptions {
    /// The weakest evidence tier shown (`--show`); weaker races are counted, not printed.
    pub show: Evidence,
    /// Accesses listed per race besides the racing pair (`--max-notes`); the rest are counted.
    pub max_notes: usize,
}

impl Default for TextOptions {
    /// Certain and likely races, four further accesses each.
    fn default() -> Self {
        TextOptions {
            show: Evidence::Likely,
            max_notes: 4,
        }
    }
}

/// Renders the report as text: a warning first when the analysis was degraded, then each shown
/// race (strongest evidence first) with its racing pair and at most `opts.max_notes` further
/// accesses, the deadlocks, a summary (races per tier, per file, the locations with most
/// races), the verdict line and the imprecision notes (one per reason, with its places).
pub fn render(report: &Report, opts: &TextOptions) -> String {
    let mut out = String::new();
    if report.stopped.is_none() {
        for d in &report.degraded {
            let _ = writeln!(out, "racedar: warning: results are less reliable: {d}");
        }
    }
    let mut files = SimpleFiles::new();
    let mut file_ids: FxHashMap<String, Option<usize>> = FxHashMap::default();
    let unsuppressed: Vec<&RaceReport> = report
        .races
        .iter()
        .filter(|r| r.suppressed.is_none())
        .collect();
    let shown: Vec<&RaceReport> = unsuppressed
        .iter()
        .copied()
        .filter(|r| super::tier(r.evidence) <= opts.show)
        .collect();
    for race in &shown {
        render_race(&mut out, race, opts, &mut files, &mut file_ids);
    }
    for d in report.deadlocks.iter().flatten() {
        render_deadlock(&mut out, d);
    }
    if let Some(stopped) = &report.stopped {
        let _ = writeln!(out, "racedar: unknown: {}", stopped.reason);
        return out;
    }
    render_summary(&mut out, &unsuppressed);
    let count = |t: Evidence| {
        unsuppressed
            .iter()
            .filter(|r| super::tier(r.evidence) == t)
            .count()
    };
    let suppressed = report.races.len() - unsuppressed.len();
    // A differential run reports what is new, not the program's verdict.
    let new_since = report
        .diff_base
        .as_ref()
        .map(|d| format!("new since {}", d.rev));
    let verdict = match (&new_since, report.verdict) {
        (Some(n), _) => n.as_str(),
        (None, Verdict::Race) => "data race found",
        (None, Verdict::NoRace) => "no data race",
        (None, Verdict::Unknown) => "unknown",
    };
    let mut extra = Vec::new();
    let hidden = unsuppressed.len() - shown.len();
    if hidden > 0 {
        extra.push(format!(
            "{hidden} not shown: --show {}",
            if count(Evidence::Possible) > 0 {
                "possible"
            } else {
                "likely"
            }
        ));
    }
    if suppressed > 0 {
        extra.push(format!("{suppressed} suppressed"));
    }
    let extra = if extra.is_empty() {
        String::new()
    } else {
        format!(" ({})", extra.join("; "))
    };
    let _ = writeln!(
        out,
        "racedar: {verdict}: {} certain, {} likely, {} possible race(s){extra}",
        count(Evidence::Certain),
        count(Evidence::Likely),
        count(Evidence::Possible)
    );
    if let Some(d) = &report.diff_base
        && d.known_races + d.known_deadlocks > 0
    {
        let _ = writeln!(
            out,
            "racedar: not shown: {} race(s) and {} deadlock(s) the program already had at {}",
            d.known_races, d.known_deadlocks, d.rev
        );
    }
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
    render_imprecision(&mut out, report);
    out
}

/// One race: the warning on its first access, the racing pair and at most `opts.max_notes`
/// further accesses as notes, why it is only possible, how it was witnessed, and a snippet
/// labelling the listed accesses.
fn render_race(
    out: &mut String,
    race: &RaceReport,
    opts: &TextOptions,
    files: &mut SimpleFiles<String, String>,
    file_ids: &mut FxHashMap<String, Option<usize>>,
) {
    let Some(first) = race.accesses.first() else {
        return;
    };
    let at = format!("{}:{}:{}", first.file, first.line, first.column);
    let _ = writeln!(
        out,
        "{at}: warning: data race on '{}' ({}, {}) [racedar/data-race]",
        race.location, race.evidence, race.confidence
    );
    if let Some(p) = &race.program {
        let _ = writeln!(out, "{at}: note: in program {p}");
    }
    if !race.other_locations.is_empty() {
        const NAMED: usize = 4;
        let named: Vec<String> = race
            .other_locations
            .iter()
            .take(NAMED)
            .map(|l| format!("'{l}'"))
            .collect();
        let more = race.other_locations.len().saturating_sub(NAMED);
        let more = if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "{at}: note: this object also races on {}{more} (merged into this report)",
            named.join(", ")
        );
    }
    let listed = race.accesses.len().min(2 + opts.max_notes);
    for a in &race.accesses[..listed] {
        let _ = writeln!(
            out,
            "{}:{}:{}: note: {}",
            a.file,
            a.line,
            a.column,
            describe(a)
        );
    }
    let more = race.accesses.len() - listed + race.more_accesses;
    if more > 0 {
        let _ = writeln!(out, "{at}: note: and {more} more access(es)");
    }
    if let Some(reason) = &race.reason {
        let _ = writeln!(out, "{at}: note: not certain: {reason}");
    }
    if let Some(w) = &race.witness {
        let _ = writeln!(out, "{at}: note: {w}");
    }
    let _ = writeln!(
        out,
        "{at}: note: details: racedar check --explain {} ...",
        race.fingerprint.get(..8).unwrap_or(&race.fingerprint)
    );
    // Snippet.
    let mut labels = Vec::new();
    for (i, a) in race.accesses[..listed].iter().enumerate() {
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
        if term::emit_to_string(&mut buf, &Config::default(), files, &diag).is_ok() {
            out.push_str(&buf);
        }
    }
    out.push('\n');
}

/// Locations listed in the summary.
const SUMMARY_LOCATIONS: usize = 5;

/// The summary of a report with more than one race: races per tier and per file (of the
/// first access), and the locations with most races.
fn render_summary(out: &mut String, races: &[&RaceReport]) {
    if races.len() < 2 {
        return;
    }
    let mut per_file: std::collections::BTreeMap<&str, [usize; 3]> = Default::default();
    let mut per_location: std::collections::BTreeMap<&str, usize> = Default::default();
    for r in races {
        let t = super::tier(r.evidence) as usize;
        if let Some(a) = r.accesses.first() {
            per_file.entry(a.file.as_str()).or_default()[t] += 1;
        }
        *per_location.entry(r.location.as_str()).or_default() += 1;
    }
    let _ = writeln!(
        out,
        "racedar: summary: races per file (certain/likely/possible):"
    );
    for (file, [c, l, p]) in &per_file {
        let _ = writeln!(out, "racedar:   {file}: {c}/{l}/{p}");
    }
    let mut top: Vec<(&str, usize)> = per_location.into_iter().collect();
    top.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let top: Vec<String> = top
        .iter()
        .take(SUMMARY_LOCATIONS)
        .filter(|(_, n)| *n > 1)
        .map(|(l, n)| format!("'{l}' ({n})"))
        .collect();
    if !top.is_empty() {
        let _ = writeln!(
            out,
            "racedar: summary: locations with most races: {}",
            top.join(", ")
        );
    }
}

/// Places listed per imprecision reason.
const IMPRECISION_PLACES: usize = 3;

/// The imprecision notes, one per reason: `file:line: reason` entries of one reason are
/// gathered into one note with its first places and how many more.
fn render_imprecision(out: &mut String, report: &Report) {
    let mut order: Vec<&str> = Vec::new();
    let mut places: FxHashMap<&str, Vec<&str>> = FxHashMap::default();
    for i in &report.imprecision {
        if report.degraded.iter().any(|d| d == i) {
            continue; // said at the top
        }
        let (place, reason) = split_place(i);
        let e = places.entry(reason).or_insert_with(|| {
            order.push(reason);
            Vec::new()
        });
        if let Some(p) = place {
            e.push(p);
        }
    }
    for reason in order {
        let ps = &places[reason];
        if ps.is_empty() {
            let _ = writeln!(out, "racedar: note: {reason}");
        } else if ps.len() == 1 {
            let _ = writeln!(out, "racedar: note: {}: {reason}", ps[0]);
        } else {
            let listed: Vec<&str> = ps.iter().take(IMPRECISION_PLACES).copied().collect();
            let rest = ps.len() - listed.len();
            let more = if rest > 0 {
                format!(" and {rest} more")
            } else {
                String::new()
            };
            let _ = writeln!(
                out,
                "racedar: note: {reason} ({} places: {}{more})",
                ps.len(),
                listed.join(", ")
            );
        }
    }
}

/// Splits an imprecision entry `file:line: reason` into its place and reason.
fn split_place(entry: &str) -> (Option<&str>, &str) {
    match entry.split_once(": ") {
        Some((place, reason)) if is_place(place) => (Some(place), reason),
        _ => (None, entry),
    }
}

/// Whether `s` looks like `file:line`.
fn is_place(s: &str) -> bool {
    s.rsplit_once(':').is_some_and(|(f, l)| {
        !f.is_empty() && !l.is_empty() && l.bytes().all(|b| b.is_ascii_digit())
    })
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
    if let Some(p) = &d.program {
        let _ = writeln!(out, "{}: note: in program {p}", at(&first.acquire));
    }
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
        "data race on '{}' ({}, {}) [racedar/data-race] fingerprint {}",
        race.location, race.evidence, race.confidence, race.fingerprint
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
            let _ = writeln!(out, "\nnot certain: {r}");
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
