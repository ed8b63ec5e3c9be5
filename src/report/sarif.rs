//! SARIF 2.1.0 output (DESIGN.md "Output contracts"; `notes/ecosystem.md` §2.1 lists what
//! GitHub code scanning reads). The types come from the `serde-sarif` crate.
//!
//! One result per race: `locations[0]` is the first access, `relatedLocations` hold the other
//! access (id 1, referenced from the message), the create statements of the two threads (ids 2
//! and 3) and the lock calls that took the locks held (ids 4 on); one code flow holds a thread flow per access, from the thread's creation
//! through the calls to the access. One result per deadlock (rule `racedar/deadlock`):
//! `locations[0]` is the first step's blocking lock call, `relatedLocations` every step's two
//! lock calls, one code flow with a thread flow per step. URIs are relative to the project root (`%SRCROOT%`) when
//! the file is under it. `partialFingerprints` carry a line-independent racedar fingerprint
//! (`racedar/v1`) and `primaryLocationLineHash` (a hash of the first access's source line and
//! its occurrence among the results).

use super::{AccessReport, DeadlockReport, RaceReport, Report, Site, StepReport};
use serde_sarif::sarif::{
    ArtifactLocation, CodeFlow, Invocation, Location, Message, MultiformatMessageString,
    Notification, PhysicalLocation, PropertyBag, Region, ReportingConfiguration,
    ReportingDescriptor, ReportingDescriptorReference, Result as SarifResult, ResultLevel, Run,
    Sarif, Suppression, ThreadFlow, ThreadFlowLocation, Tool, ToolComponent,
};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The rule id of data races (stable: never renamed).
pub const DATA_RACE_RULE: &str = "racedar/data-race";

/// The rule id of deadlocks: lock-order cycles and double locks (stable: never renamed).
pub const DEADLOCK_RULE: &str = "racedar/deadlock";

/// The URI base id of the project root.
const SRCROOT: &str = "%SRCROOT%";

/// FNV-1a, 64 bits: a stable hash for fingerprints (the same on every platform and run).
pub fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// The line-independent fingerprint of a race: rule, location (line numbers of heap allocation sites left out) and the (function, kind,
/// expression) of its two racing accesses, sorted. Moving code keeps it; renaming the
/// variable or a function changes it.
pub fn fingerprint(race: &RaceReport) -> String {
    let mut parts: Vec<String> = race
        .accesses
        .iter()
        .take(2)
        .map(|a| format!("{}|{}|{}", a.function, a.kind, a.expression))
        .collect();
    parts.sort();
    let text = format!(
        "{DATA_RACE_RULE}|{}|{}",
        without_line_numbers(&race.location),
        parts.join("|")
    );
    format!("{:016x}", fnv1a(text.as_bytes()))
}

/// `text` without the line numbers of `file:line` positions (`malloc at pool.c:22` becomes
/// `malloc at pool.c:`), so that a fingerprint survives lines added above the position.
fn without_line_numbers(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        out.push(c);
        if c == ':'
            && out.len() > 1
            && out[..out.len() - 1].ends_with(|p: char| p.is_ascii_alphanumeric())
        {
            while chars.peek().is_some_and(char::is_ascii_digit) {
                chars.next();
            }
        }
    }
    out
}

/// The line-independent fingerprint of a deadlock: rule, kind and the (function, lock, held
/// lock) of its steps, sorted.
pub fn deadlock_fingerprint(d: &DeadlockReport) -> String {
    let mut parts: Vec<String> = d
        .cycle
        .iter()
        .map(|s| {
            let func = s.call_chain.last().map_or("", String::as_str);
            format!("{func}|{}|{}", s.lock, s.held)
        })
        .collect();
    parts.sort();
    let text = format!("{DEADLOCK_RULE}|{}|{}", d.kind, parts.join("|"));
    format!("{:016x}", fnv1a(text.as_bytes()))
}

/// Source lines of files, read once.
#[derive(Default)]
struct Sources {
    files: BTreeMap<String, Option<Vec<String>>>,
}

impl Sources {
    fn line(&mut self, file: &str, line: u32) -> Option<String> {
        let lines = self.files.entry(file.to_string()).or_insert_with(|| {
            std::fs::read_to_string(file)
                .ok()
                .map(|t| t.lines().map(str::to_string).collect())
        });
        lines
            .as_ref()?
            .get((line as usize).checked_sub(1)?)
            .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
    }
}

/// Where files are: the project root, to which URIs are relative.
struct Uris {
    root: PathBuf,
}

impl Uris {
    fn artifact(&self, file: &str) -> ArtifactLocation {
        let path = Path::new(file);
        let abs = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        match abs.strip_prefix(&self.root) {
            Ok(rel) => ArtifactLocation::builder()
                .uri(uri_path(rel))
                .uri_base_id(SRCROOT)
                .build(),
            Err(_) => ArtifactLocation::builder()
                .uri(format!("file://{}", uri_path(&abs)))
                .build(),
        }
    }

    fn location(&self, site: &Site, id: Option<i64>, text: Option<String>) -> Location {
        let region = Region::builder()
            .start_line(i64::from(site.line.max(1)))
            .start_column(i64::from(site.column.max(1)))
            .build();
        let physical = PhysicalLocation::builder()
            .artifact_location(self.artifact(&site.file))
            .region(region)
            .build();
        let mut loc = Location::builder().physical_location(physical).build();
        loc.id = id;
        loc.message = text.map(|t| Message::builder().text(t).build());
        loc
    }
}

/// A path as URI text: `/` separators, spaces and `%` escaped.
fn uri_path(p: &Path) -> String {
    let s = p.to_string_lossy().replace('\\', "/");
    s.replace('%', "%25").replace(' ', "%20")
}

fn site_of(a: &AccessReport) -> Site {
    Site {
        file: a.file.clone(),
        line: a.line,
        column: a.column,
    }
}

fn locks_text(a: &AccessReport) -> String {
    if a.lockset.is_empty() {
        "no lock".to_string()
    } else {
        format!("locks {{{}}}", a.lockset.join(", "))
    }
}

/// The thread flow of one access: the thread's creation, the calls, the access.
fn thread_flow(uris: &Uris, a: &AccessReport) -> ThreadFlow {
    let mut locs = Vec::new();
    if let Some(c) = &a.created_at {
        let l = uris.location(c, None, Some(format!("thread {} created", a.thread)));
        locs.push(
            ThreadFlowLocation::builder()
                .location(l)
                .kinds(vec!["call".to_string()])
                .nesting_level(0)
                .build(),
        );
    }
    for (depth, f) in a.frames.iter().enumerate() {
        let l = uris.location(&f.site, None, Some(format!("{} calls", f.function)));
        locs.push(
            ThreadFlowLocation::builder()
                .location(l)
                .kinds(vec!["call".to_string()])
                .nesting_level(depth as i64)
                .build(),
        );
    }
    let l = uris.location(
        &site_of(a),
        None,
        Some(format!(
            "{} of '{}' holding {}",
            a.kind,
            a.expression,
            locks_text(a)
        )),
    );
    locs.push(
        ThreadFlowLocation::builder()
            .location(l)
            .kinds(vec!["memory".to_string()])
            .importance(serde_json::json!("essential"))
            .nesting_level(a.frames.len() as i64)
            .build(),
    );
    ThreadFlow::builder()
        .id(a.thread.clone())
        .message(
            Message::builder()
                .text(format!("thread {}", a.thread))
                .build(),
        )
        .locations(locs)
        .build()
}

/// One SARIF result for a race.
fn result(
    uris: &Uris,
    sources: &mut Sources,
    seen: &mut BTreeMap<String, u32>,
    race: &RaceReport,
) -> Option<SarifResult> {
    let first = race.accesses.first()?;
    let second = race.accesses.get(1).unwrap_or(first);
    let message = format!(
        "data race on '{}' ({}): {} in {} holding {} races with [{}](1) in {} holding {}{}",
        race.location,
        race.confidence,
        first.kind,
        first.thread,
        locks_text(first),
        second.kind,
        second.thread,
        locks_text(second),
        race.reason
            .as_ref()
            .map_or(String::new(), |r| format!("; only possible: {r}")),
    );
    let message = if race.other_locations.is_empty() {
        message
    } else {
        let others: Vec<String> = race
            .other_locations
            .iter()
            .map(|l| format!("'{l}'"))
            .collect();
        format!(
            "{message}; the same object also races on {}",
            others.join(", ")
        )
    };
    let mut related = vec![uris.location(
        &site_of(second),
        Some(1),
        Some(format!(
            "{} of '{}' in {}",
            second.kind, second.expression, second.thread
        )),
    )];
    for (id, a) in [(2, first), (3, second)] {
        if let Some(c) = &a.created_at {
            related.push(uris.location(c, Some(id), Some(format!("{} created here", a.thread))));
        }
    }
    let mut next = 4;
    for a in [first, second] {
        for (lock, site) in &a.lock_sites {
            related.push(uris.location(
                site,
                Some(next),
                Some(format!("{lock} taken here by {}", a.thread)),
            ));
            next += 1;
        }
    }
    let mut flows = vec![thread_flow(uris, first)];
    if race.accesses.len() > 1 {
        flows.push(thread_flow(uris, second));
    }
    let line_text = sources
        .line(&first.file, first.line)
        .unwrap_or_else(|| format!("{}:{}", first.file, first.line));
    let line_hash = format!("{:016x}", fnv1a(line_text.as_bytes()));
    let n = seen.entry(line_hash.clone()).or_insert(0);
    *n += 1;
    let mut fingerprints = BTreeMap::new();
    fingerprints.insert("racedar/v1".to_string(), fingerprint(race));
    fingerprints.insert(
        "primaryLocationLineHash".to_string(),
        format!("{line_hash}:{n}"),
    );
    let mut r = SarifResult::builder()
        .rule_id(DATA_RACE_RULE)
        .rule_index(0)
        .level(match race.evidence {
            "certain" => ResultLevel::Error,
            "likely" => ResultLevel::Warning,
            _ => ResultLevel::Note,
        })
        .message(Message::builder().text(message).build())
        .locations(vec![uris.location(&site_of(first), Some(0), None)])
        .related_locations(related)
        .code_flows(vec![CodeFlow::builder().thread_flows(flows).build()])
        .partial_fingerprints(fingerprints)
        .build();
    if let Some(why) = &race.suppressed {
        r.suppressions = Some(vec![
            Suppression::builder()
                .kind(serde_json::json!(why.kind))
                .justification(why.justification.clone())
                .build(),
        ]);
    }
    let mut props = BTreeMap::new();
    props.insert("confidence".to_string(), serde_json::json!(race.confidence));
    props.insert("evidence".to_string(), serde_json::json!(race.evidence));
    if let Some(p) = &race.program {
        props.insert("program".to_string(), serde_json::json!(p));
    }
    r.properties = Some(PropertyBag::builder().additional_properties(props).build());
    Some(r)
}

/// The thread flow of one deadlock step: the thread's creation, the calls, the lock taken, the
/// lock requested.
fn step_flow(uris: &Uris, s: &StepReport) -> ThreadFlow {
    let mut locs = Vec::new();
    if let Some(c) = &s.created_at {
        let l = uris.location(c, None, Some(format!("thread {} created", s.thread)));
        locs.push(
            ThreadFlowLocation::builder()
                .location(l)
                .kinds(vec!["call".to_string()])
                .nesting_level(0)
                .build(),
        );
    }
    let l = uris.location(&s.while_holding, None, Some(format!("takes '{}'", s.held)));
    locs.push(
        ThreadFlowLocation::builder()
            .location(l)
            .kinds(vec!["acquire".to_string()])
            .nesting_level(0)
            .build(),
    );
    for (depth, f) in s.frames.iter().enumerate() {
        let l = uris.location(&f.site, None, Some(format!("{} calls", f.function)));
        locs.push(
            ThreadFlowLocation::builder()
                .location(l)
                .kinds(vec!["call".to_string()])
                .nesting_level(depth as i64)
                .build(),
        );
    }
    let l = uris.location(
        &s.acquire,
        None,
        Some(format!("waits for '{}' holding '{}'", s.lock, s.held)),
    );
    locs.push(
        ThreadFlowLocation::builder()
            .location(l)
            .kinds(vec!["acquire".to_string()])
            .importance(serde_json::json!("essential"))
            .nesting_level(s.frames.len() as i64)
            .build(),
    );
    ThreadFlow::builder()
        .id(s.thread.clone())
        .message(
            Message::builder()
                .text(format!("thread {}", s.thread))
                .build(),
        )
        .locations(locs)
        .build()
}

/// The one-line description of a deadlock (text and SARIF messages).
pub fn deadlock_message(d: &DeadlockReport) -> String {
    let first = d.cycle.first();
    match (d.kind, first) {
        ("double-lock", Some(s)) => format!(
            "{}deadlock: '{}' locked again by thread {} while it holds it ({})",
            if d.confidence == "must" {
                ""
            } else {
                "possible "
            },
            s.lock,
            s.thread,
            d.confidence
        ),
        _ => {
            let mut locks: Vec<&str> = d.cycle.iter().map(|s| s.held.as_str()).collect();
            if let Some(s) = first {
                locks.push(&s.held);
            }
            format!(
                "{}deadlock: lock-order cycle {} between threads {} ({})",
                if d.confidence == "must" {
                    ""
                } else {
                    "possible "
                },
                locks.join(" -> "),
                d.cycle
                    .iter()
                    .map(|s| s.thread.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                d.confidence
            )
        }
    }
}

/// One SARIF result for a deadlock: the first step's blocking call, every other call in
/// `relatedLocations`, one thread flow per step.
fn deadlock_result(
    uris: &Uris,
    sources: &mut Sources,
    seen: &mut BTreeMap<String, u32>,
    d: &DeadlockReport,
) -> Option<SarifResult> {
    let first = d.cycle.first()?;
    let mut related = Vec::new();
    let mut next = 1;
    for s in &d.cycle {
        related.push(uris.location(
            &s.while_holding,
            Some(next),
            Some(format!("{} takes '{}'", s.thread, s.held)),
        ));
        related.push(uris.location(
            &s.acquire,
            Some(next + 1),
            Some(format!("{} waits for '{}'", s.thread, s.lock)),
        ));
        next += 2;
    }
    let flows: Vec<ThreadFlow> = d.cycle.iter().map(|s| step_flow(uris, s)).collect();
    let line_text = sources
        .line(&first.acquire.file, first.acquire.line)
        .unwrap_or_else(|| format!("{}:{}", first.acquire.file, first.acquire.line));
    let line_hash = format!("{:016x}", fnv1a(line_text.as_bytes()));
    let n = seen.entry(line_hash.clone()).or_insert(0);
    *n += 1;
    let mut fingerprints = BTreeMap::new();
    fingerprints.insert("racedar/v1".to_string(), d.fingerprint.clone());
    fingerprints.insert(
        "primaryLocationLineHash".to_string(),
        format!("{line_hash}:{n}"),
    );
    let mut message = deadlock_message(d);
    if let Some(r) = &d.reason {
        message.push_str(&format!("; only possible: {r}"));
    }
    let mut r = SarifResult::builder()
        .rule_id(DEADLOCK_RULE)
        .rule_index(1)
        .level(if d.confidence == "must" {
            ResultLevel::Error
        } else {
            ResultLevel::Warning
        })
        .message(Message::builder().text(message).build())
        .locations(vec![uris.location(&first.acquire, Some(0), None)])
        .related_locations(related)
        .code_flows(vec![CodeFlow::builder().thread_flows(flows).build()])
        .partial_fingerprints(fingerprints)
        .build();
    let mut props = BTreeMap::new();
    props.insert("confidence".to_string(), serde_json::json!(d.confidence));
    props.insert("kind".to_string(), serde_json::json!(d.kind));
    if let Some(p) = &d.program {
        props.insert("program".to_string(), serde_json::json!(p));
    }
    r.properties = Some(PropertyBag::builder().additional_properties(props).build());
    Some(r)
}

fn text(s: &str) -> MultiformatMessageString {
    MultiformatMessageString::builder().text(s).build()
}

/// The SARIF log of a report, as pretty JSON. `root` is the project root URIs are relative to.
pub fn render(report: &Report, root: &Path) -> String {
    let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    let uris = Uris { root: root.clone() };
    let mut sources = Sources::default();
    let mut seen = BTreeMap::new();
    let mut results: Vec<SarifResult> = report
        .races
        .iter()
        .filter_map(|r| result(&uris, &mut sources, &mut seen, r))
        .collect();
    for d in report.deadlocks.iter().flatten() {
        results.extend(deadlock_result(&uris, &mut sources, &mut seen, d));
    }
    let rule = ReportingDescriptor::builder()
        .id(DATA_RACE_RULE)
        .name("DataRace")
        .short_description(text("Data race between threads"))
        .full_description(text(
            "Two threads access the same memory location, at least one access writes, the \
             accesses are not both atomic, and no common lock or thread ordering separates them.",
        ))
        .help(text(
            "Protect both accesses with the same mutex, make the location atomic, or order the \
             threads (join before the access). A certain race (a must-race, level error) happens \
             in some execution; a likely race (level warning) is one the program's own locks \
             say is shared, or two unique writers; a possible race (level note) is one racedar \
             cannot rule out (property 'evidence'). Suppress a \
             reviewed race with `// racedar-ignore[data-race]: reason` on either access line.",
        ))
        .default_configuration(
            ReportingConfiguration::builder()
                .level(serde_json::json!("warning"))
                .build(),
        )
        .build();
    let deadlock_rule = ReportingDescriptor::builder()
        .id(DEADLOCK_RULE)
        .name("Deadlock")
        .short_description(text("Deadlock between threads, or a mutex locked twice"))
        .full_description(text(
            "Threads that may run in parallel take locks in an order that forms a cycle (each \
             holds a lock the next one waits for), or a thread locks a non-recursive mutex it \
             already holds.",
        ))
        .help(text(
            "Take the locks in one global order in every thread, release a lock before taking \
             one that is taken before it elsewhere, or guard the section with one common lock. \
             A 'must' deadlock (level error) happens in some execution; a 'may' deadlock (level \
             warning) is one racedar cannot rule out.",
        ))
        .default_configuration(
            ReportingConfiguration::builder()
                .level(serde_json::json!("warning"))
                .build(),
        )
        .build();
    let driver = ToolComponent::builder()
        .name("racedar")
        .version(env!("CARGO_PKG_VERSION"))
        .semantic_version(env!("CARGO_PKG_VERSION"))
        .rules(vec![rule, deadlock_rule])
        .build();
    let mut bases = BTreeMap::new();
    bases.insert(
        SRCROOT.to_string(),
        ArtifactLocation::builder()
            .uri(format!("file://{}/", uri_path(&root).trim_end_matches('/')))
            .build(),
    );
    let mut run = Run::builder()
        .tool(Tool::builder().driver(driver).build())
        .results(results)
        .original_uri_base_ids(bases)
        .column_kind(serde_json::json!("utf16CodeUnits"))
        .build();
    if let Some(stopped) = &report.stopped {
        // A run a resource limit stopped did not complete: say so where SARIF viewers look.
        let note = Notification::builder()
            .level(serde_json::json!("error"))
            .message(Message::builder().text(stopped.reason.clone()).build())
            .descriptor(
                ReportingDescriptorReference::builder()
                    .id(format!("racedar/{}", stopped.limit))
                    .build(),
            )
            .build();
        run.invocations = Some(vec![
            Invocation::builder()
                .execution_successful(false)
                .tool_execution_notifications(vec![note])
                .build(),
        ]);
    } else if !report.degraded.is_empty() {
        // A degraded run completed with less reliable results everywhere.
        let notes: Vec<Notification> = report
            .degraded
            .iter()
            .map(|d| {
                Notification::builder()
                    .level(serde_json::json!("warning"))
                    .message(
                        Message::builder()
                            .text(format!("results are less reliable: {d}"))
                            .build(),
                    )
                    .descriptor(
                        ReportingDescriptorReference::builder()
                            .id("racedar/degraded")
                            .build(),
                    )
                    .build()
            })
            .collect();
        run.invocations = Some(vec![
            Invocation::builder()
                .execution_successful(true)
                .tool_execution_notifications(notes)
                .build(),
        ]);
    }
    let log = Sarif::builder()
        .schema("https://json.schemastore.org/sarif-2.1.0.json")
        .version(serde_json::json!("2.1.0"))
        .runs(vec![run])
        .build();
    serde_json::to_string_pretty(&log).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
}

#[cfg(test)]
mod tests {
    use super::without_line_numbers;

    #[test]
    fn fingerprints_leave_out_allocation_lines() {
        assert_eq!(
            without_line_numbers("pool->done (heap object from malloc at pool.c:22, struct pool)"),
            "pool->done (heap object from malloc at pool.c:, struct pool)"
        );
        assert_eq!(without_line_numbers("a[2] ? b : 3"), "a[2] ? b : 3");
    }
}
