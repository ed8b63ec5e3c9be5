//! Reports: the JSON contract of DESIGN.md ("Output contracts"), gcc-style text, SARIF 2.1.0
//! and SV-COMP output, with suppressions and baselines.
//!
//! [`Report::build`] turns an [`Analysis`] into plain data (sorted, deterministic);
//! [`suppress`] marks suppressed races; [`Report::to_json`], [`text`], [`sarif`] and [`svcomp`]
//! render it.

pub mod sarif;
pub mod suppress;
pub mod svcomp;
pub mod text;

use crate::backend::{AccessKind, AccessSite, Base};
use crate::context::ThreadId;
use crate::ir::Program;
use crate::ir::pretty::{expr_to_source, lval_to_source};
use crate::lockset::{Held, LockKey, LockTable};
use crate::model::LockMode;
use crate::pipeline::Analysis;
use crate::races::evidence::Evidence;
use crate::races::{Access, Confidence, RaceObject};
use crate::stats::RunStats;
use racedar_domains::SmallSet;
use serde::Serialize;
use std::collections::BTreeMap;

/// The data-race verdict of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// A must-race was found.
    Race,
    /// The analysis found no may-race and nothing that could hide one.
    NoRace,
    /// Neither could be established (see `imprecision`).
    Unknown,
}

/// A source position of a report (file as given on the command line, line and column from 1).
#[derive(Clone, Debug, Serialize, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Site {
    /// Source file.
    pub file: String,
    /// Line, from 1.
    pub line: u32,
    /// Column, from 1.
    pub column: u32,
}

impl Site {
    /// The report position of a source location.
    pub fn at(p: &Program, loc: crate::ir::Loc) -> Site {
        Site {
            file: p.file_name(loc).to_string(),
            line: loc.line,
            column: loc.col,
        }
    }
}

/// One call on the way from a thread's entry to an access.
#[derive(Clone, Debug, Serialize, PartialEq, Eq, PartialOrd, Ord)]
pub struct Frame {
    /// The calling function.
    pub function: String,
    /// The call statement.
    pub site: Site,
}

/// One access of a reported race.
#[derive(Clone, Debug, Serialize, PartialEq, Eq, PartialOrd, Ord)]
pub struct AccessReport {
    /// Source file.
    pub file: String,
    /// Line, from 1.
    pub line: u32,
    /// Column, from 1.
    pub column: u32,
    /// `read` or `write`.
    pub kind: &'static str,
    /// The thread (`main`, or entry and create line).
    pub thread: String,
    /// Locks surely held (must-lockset).
    pub lockset: Vec<String>,
    /// Locks possibly held, when more than `lockset`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub may_lockset: Option<Vec<String>>,
    /// The accessed expression as C text.
    pub expression: String,
    /// The calls leading to the access (innermost last), as `function (file:line)`.
    pub call_chain: Vec<String>,
    /// Whether the access is atomic.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub atomic: bool,
    /// The function containing the access.
    #[serde(skip)]
    pub function: String,
    /// The calls from the thread's entry to the access, outermost first (SARIF thread flows).
    #[serde(skip)]
    pub frames: Vec<Frame>,
    /// Where the accessing thread is created (`None` for `main`).
    #[serde(skip)]
    pub created_at: Option<Site>,
    /// For locks of `lockset`, the lock call that took them, when found on the call chain
    /// (the closest one before the access or the call leading to it, matched by the lock's
    /// name).
    #[serde(skip)]
    pub lock_sites: Vec<(String, Site)>,
}

/// One reported race.
#[derive(Clone, Debug, Serialize)]
pub struct RaceReport {
    /// `must` or `may`.
    pub confidence: &'static str,
    /// The evidence tier: `certain`, `likely` or `possible` ([`crate::races::evidence`]).
    pub evidence: &'static str,
    /// The memory location, as C text.
    pub location: String,
    /// Further locations of the same object whose races this report stands for (fields,
    /// elements; [`Report::merge_objects`]), as C text, in report order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub other_locations: Vec<String>,
    /// The object the race is on ([`RaceObject`]; `None` for a witness no static race
    /// explains), for [`Report::merge_objects`]. Meaningful within one program only.
    #[serde(skip)]
    pub object: Option<RaceObject>,
    /// The accesses: the first two race with each other.
    pub accesses: Vec<AccessReport>,
    /// Why the race is only a may-race.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// How a concrete execution witnessed the race, when one did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub witness: Option<String>,
    /// How many further accesses of the race are not listed (see [`MAX_LISTED_ACCESSES`]).
    #[serde(skip_serializing_if = "is_zero")]
    pub more_accesses: usize,
    /// Why the race is suppressed, when it is (see [`suppress`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suppressed: Option<suppress::Suppressed>,
    /// The line-independent fingerprint (see [`sarif::fingerprint`]).
    pub fingerprint: String,
    /// The programs of a compilation database with several programs that have the race: the
    /// units defining their `main`, or `library` ([`crate::frontend::link`]), separated by
    /// `, `. Not part of the fingerprint.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub program: Option<String>,
}

/// Merges reported races that share a key, in the order of their first race. A group's lead
/// is its first must-race, else its first race (its first two accesses are its racing pair);
/// the other races' racing pairs follow (always listed), then their other accesses (each
/// once, within [`MAX_LISTED_ACCESSES`]). With `pairs_first` the lead's own further accesses
/// come after the other races' pairs (so the few notes of a text report show every merged
/// location's pair), else right after its pair. The other races' locations are listed in
/// `other_locations`, the strongest evidence tier counts, and the reasons of may-races are
/// joined without repetition.
fn merge_by<K: Ord>(
    races: Vec<RaceReport>,
    pairs_first: bool,
    mut key: impl FnMut(&RaceReport) -> K,
) -> Vec<RaceReport> {
    // Groups in the order of their first race.
    let mut index: BTreeMap<K, usize> = BTreeMap::new();
    let mut groups: Vec<Vec<RaceReport>> = Vec::new();
    for r in races {
        let k = *index.entry(key(&r)).or_insert_with(|| {
            groups.push(Vec::new());
            groups.len() - 1
        });
        groups[k].push(r);
    }
    let access_key = |a: &AccessReport| {
        (
            a.file.clone(),
            a.line,
            a.column,
            a.kind,
            a.thread.clone(),
            a.call_chain.clone(),
        )
    };
    let mut out = Vec::with_capacity(groups.len());
    for mut group in groups {
        // Stable: the first must-race, else the first race, leads.
        group.sort_by_key(|r| r.confidence != "must");
        let mut members = group.into_iter();
        let Some(mut lead) = members.next() else {
            continue;
        };
        // With `pairs_first`, the lead's further accesses wait behind the members' pairs.
        let lead_rest = if pairs_first && lead.accesses.len() > 2 {
            lead.accesses.split_off(2)
        } else {
            Vec::new()
        };
        let mut seen: std::collections::BTreeSet<_> =
            lead.accesses.iter().map(access_key).collect();
        let mut reasons: Vec<String> = lead
            .reason
            .iter()
            .flat_map(|r| r.split("; ").map(str::to_string))
            .collect();
        // Every member's racing pair is listed (whatever the limit), then their other
        // accesses within [`MAX_LISTED_ACCESSES`].
        let mut rest: Vec<AccessReport> = Vec::new();
        for r in members {
            if tier(r.evidence) < tier(lead.evidence) {
                lead.evidence = r.evidence;
            }
            for l in std::iter::once(r.location).chain(r.other_locations) {
                if l != lead.location && !lead.other_locations.contains(&l) {
                    lead.other_locations.push(l);
                }
            }
            lead.more_accesses += r.more_accesses;
            let mut accesses = r.accesses.into_iter();
            for a in accesses.by_ref().take(2) {
                if seen.insert(access_key(&a)) {
                    lead.accesses.push(a);
                }
            }
            rest.extend(accesses);
            if lead.confidence != "must" {
                for x in r.reason.iter().flat_map(|x| x.split("; ")) {
                    if !reasons.iter().any(|y| y == x) {
                        reasons.push(x.to_string());
                    }
                }
            }
            if lead.witness.is_none() {
                lead.witness = r.witness;
            }
        }
        for a in lead_rest.into_iter().chain(rest) {
            if !seen.insert(access_key(&a)) {
                continue;
            }
            if lead.accesses.len() < MAX_LISTED_ACCESSES {
                lead.accesses.push(a);
            } else {
                lead.more_accesses += 1;
            }
        }
        if lead.confidence != "must" && !reasons.is_empty() {
            lead.reason = Some(reasons.join("; "));
        }
        out.push(lead);
    }
    out
}

/// Races with one fingerprint are one race (issue "Reports people act on", item 1): the same
/// pair of accesses found on several abstract objects (one allocation site's objects told
/// apart by calling context, say) or in several pairs of thread contexts.
fn merge_same_fingerprint(races: Vec<RaceReport>) -> Vec<RaceReport> {
    merge_by(races, false, |r| r.fingerprint.clone())
}

/// The tier named `name` (`certain`, `likely`, `possible`; anything else counts as possible).
pub fn tier(name: &str) -> Evidence {
    match name {
        "certain" => Evidence::Certain,
        "likely" => Evidence::Likely,
        _ => Evidence::Possible,
    }
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// Accesses listed per race; the rest are counted in `more_accesses`.
pub const MAX_LISTED_ACCESSES: usize = 64;

/// One step of a reported deadlock: a thread requesting `lock` while holding `held`.
#[derive(Clone, Debug, Serialize)]
pub struct StepReport {
    /// The lock requested (where the thread waits), as C text.
    pub lock: String,
    /// The lock held, as C text (the same as `lock` for a double lock).
    pub held: String,
    /// The thread (`main`, or entry and create line).
    pub thread: String,
    /// The lock call that blocks.
    pub acquire: Site,
    /// The lock call that took `held`.
    pub while_holding: Site,
    /// The calls leading to the blocking lock call (innermost last), as `function
    /// (file:line)`.
    pub call_chain: Vec<String>,
    /// The calls from the thread's entry to the blocking call, outermost first (SARIF).
    #[serde(skip)]
    pub frames: Vec<Frame>,
    /// Where the thread is created (`None` for `main`).
    #[serde(skip)]
    pub created_at: Option<Site>,
}

/// One reported deadlock (DESIGN.md "Output contracts"; `score.py` reads `confidence` and
/// `cycle[].acquire` / `cycle[].while_holding`).
#[derive(Clone, Debug, Serialize)]
pub struct DeadlockReport {
    /// `must` or `may`.
    pub confidence: &'static str,
    /// `lock-order-cycle` or `double-lock`.
    pub kind: &'static str,
    /// The steps: each requests the lock the next one holds (a double lock has one step).
    pub cycle: Vec<StepReport>,
    /// Why the deadlock is only possible.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The line-independent fingerprint (see [`sarif::deadlock_fingerprint`]).
    pub fingerprint: String,
    /// The program that has the deadlock (as [`RaceReport::program`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub program: Option<String>,
}

/// The whole report (`--format json` prints it as one object).
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// Verdict.
    pub verdict: Verdict,
    /// Races, must-races first.
    pub races: Vec<RaceReport>,
    /// Deadlocks, must first (absent when deadlock detection is off).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deadlocks: Option<Vec<DeadlockReport>>,
    /// Whether a bound cut the deadlock search short.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub deadlocks_truncated: bool,
    /// Reasons the verdict is not definite, sorted.
    pub imprecision: Vec<String>,
    /// Parts of the analysis cut short or given up, which make every result less reliable
    /// (also in `imprecision`); absent when none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub degraded: Vec<String>,
    /// Set when a resource limit stopped the analysis (`--timeout`, `--max-memory`): the
    /// verdict is then `unknown` and nothing was searched for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stopped: Option<Stopped>,
    /// Set by `--diff-base`: only what is new since that revision is reported.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff_base: Option<DiffBase>,
    /// Timings and counts.
    pub stats: RunStats,
}

/// What a differential run (`--diff-base REV`, [`crate::changes`]) left out.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct DiffBase {
    /// The revision compared with.
    pub rev: String,
    /// Races the program already had at `rev` (same fingerprint), not reported.
    pub known_races: usize,
    /// Deadlocks the program already had at `rev`, not reported.
    pub known_deadlocks: usize,
}

/// Why a run was stopped before its end (README, "Resource limits").
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Stopped {
    /// The limit reached: `timeout` or `max-memory`.
    pub limit: &'static str,
    /// The limit's value, in its option's unit: seconds for `timeout`, MiB for `max-memory`.
    pub value: f64,
    /// The last phase that ended before the stop (`None`: in the front end's first phase).
    pub after_phase: Option<&'static str>,
    /// The whole reason as one sentence (also the first `imprecision` entry).
    pub reason: String,
}

impl Stopped {
    /// A stop by `limit` (`timeout` in seconds or `max-memory` in MiB, `value` in that unit)
    /// after the phase `after_phase`.
    pub fn new(limit: &'static str, value: f64, after_phase: Option<&'static str>) -> Stopped {
        let what = match limit {
            "timeout" => format!("the time limit of {value} s (--timeout) was reached"),
            _ => format!("the memory limit of {value} MiB (--max-memory) was reached"),
        };
        let when = match after_phase {
            Some(p) => format!("after phase '{p}'"),
            None => "during the front end".to_string(),
        };
        Stopped {
            limit,
            value,
            after_phase,
            reason: format!("analysis stopped: {what} {when}; races and deadlocks not searched"),
        }
    }
}

impl Report {
    /// Builds the report of an analysis.
    pub fn build(a: &Analysis<'_>, stats: RunStats) -> Report {
        let p = a.program;
        let races = a
            .races
            .races
            .iter()
            .map(|r| {
                let accesses: Vec<AccessReport> = r
                    .accesses
                    .iter()
                    .take(MAX_LISTED_ACCESSES)
                    .map(|&i| access_report(a, &a.races.accesses[i]))
                    .collect();
                let location = accesses
                    .first()
                    .map(|x| location_of(p, &a.races.accesses[r.accesses[0]], &x.expression))
                    .unwrap_or_default();
                let evidence = crate::races::evidence::classify(
                    r,
                    &a.races.accesses,
                    &a.locksets.table,
                    &a.graph,
                );
                let mut race = RaceReport {
                    confidence: match r.confidence {
                        Confidence::Must => "must",
                        Confidence::May => "may",
                    },
                    evidence: evidence.as_str(),
                    location,
                    other_locations: Vec::new(),
                    object: r
                        .accesses
                        .first()
                        .map(|&i| RaceObject::of(p, &a.races.accesses[i])),
                    accesses,
                    reason: (!r.reasons.is_empty()).then(|| r.reasons.join("; ")),
                    witness: r.witness.clone(),
                    more_accesses: r.accesses.len().saturating_sub(MAX_LISTED_ACCESSES),
                    suppressed: None,
                    fingerprint: String::new(),
                    program: None,
                };
                race.fingerprint = sarif::fingerprint(&race);
                race
            })
            .collect();
        let mut races: Vec<RaceReport> = merge_same_fingerprint(races);
        races.extend(a.unexplained.iter().map(|w| witness_report(p, w)));
        // Strongest evidence first; the analysis order within a tier.
        races.sort_by_key(|r| tier(r.evidence));
        let imprecision = a
            .imprecision
            .iter()
            .map(|i| match i.loc {
                Some(loc) if loc.line > 0 => {
                    format!("{}:{}: {}", p.file_name(loc), loc.line, i.reason)
                }
                _ => i.reason.clone(),
            })
            .collect();
        // One warning per deadlock: cycles with one fingerprint (the same locks taken in the
        // same functions, found in several thread pairs or contexts) are reported once, the
        // first (must-deadlocks come first) standing for all.
        let deadlocks = a.deadlocks.as_ref().map(|d| {
            let mut seen = std::collections::BTreeSet::new();
            d.deadlocks
                .iter()
                .map(|x| deadlock_report(a, x))
                .filter(|r| seen.insert(r.fingerprint.clone()))
                .collect()
        });
        Report {
            verdict: a.verdict,
            races,
            deadlocks,
            deadlocks_truncated: a.deadlocks.as_ref().is_some_and(|d| d.truncated),
            imprecision,
            degraded: a.degraded.clone(),
            stopped: None,
            diff_base: None,
            stats,
        }
    }

    /// The report of a database with several programs ([`crate::frontend::link`]): each
    /// program's report, `name` set when there are several. Races and deadlocks carry their
    /// program; one found in several programs (a linked library unit's) is reported once,
    /// naming them all (`a.c, b.c`); tier order kept across programs; imprecision
    /// and degradation notes are prefixed with `program NAME: `; the verdict is `race` when
    /// some program has a race, else `unknown` when some program is unknown, else `no-race`;
    /// counts add up, phase times add up per phase, memory is the peak.
    pub fn of_programs(reports: Vec<(Option<String>, Report)>) -> Report {
        let mut reports = reports.into_iter();
        let Some((first_name, first)) = reports.next() else {
            return Report {
                verdict: Verdict::NoRace,
                races: Vec::new(),
                deadlocks: Some(Vec::new()),
                deadlocks_truncated: false,
                imprecision: Vec::new(),
                degraded: Vec::new(),
                stopped: None,
                diff_base: None,
                stats: RunStats::default(),
            };
        };
        let mut out = first.named(first_name);
        for (name, r) in reports {
            let r = r.named(name);
            out.verdict = match (out.verdict, r.verdict) {
                (Verdict::Race, _) | (_, Verdict::Race) => Verdict::Race,
                (Verdict::Unknown, _) | (_, Verdict::Unknown) => Verdict::Unknown,
                _ => Verdict::NoRace,
            };
            out.races.extend(r.races);
            out.deadlocks = match (out.deadlocks.take(), r.deadlocks) {
                (Some(mut a), Some(b)) => {
                    a.extend(b);
                    Some(a)
                }
                (a, b) => a.or(b),
            };
            out.deadlocks_truncated |= r.deadlocks_truncated;
            out.imprecision.extend(r.imprecision);
            out.degraded.extend(r.degraded);
            out.stats.add(&r.stats);
        }
        // A race of a unit several programs link (the same pair, one fingerprint) is one
        // warning naming every program that has it.
        let mut first: BTreeMap<String, usize> = BTreeMap::new();
        let mut races: Vec<RaceReport> = Vec::with_capacity(out.races.len());
        for r in std::mem::take(&mut out.races) {
            match first.get(&r.fingerprint) {
                Some(&i) => {
                    let lead = &mut races[i];
                    if let (Some(a), Some(b)) = (&mut lead.program, &r.program) {
                        a.push_str(", ");
                        a.push_str(b);
                    }
                    if tier(r.evidence) < tier(lead.evidence) {
                        lead.evidence = r.evidence;
                        lead.confidence = r.confidence;
                    }
                }
                None => {
                    first.insert(r.fingerprint.clone(), races.len());
                    races.push(r);
                }
            }
        }
        races.sort_by_key(|r| tier(r.evidence));
        out.races = races;
        if let Some(ds) = &mut out.deadlocks {
            let mut seen = std::collections::BTreeSet::new();
            ds.retain(|d| seen.insert(d.fingerprint.clone()));
            ds.sort_by_key(|d| d.confidence != "must");
        }
        out
    }

    /// Races one developer fix addresses become one report (issue "Real programs", report
    /// volume): races of one program, one evidence tier and one suppression state on one
    /// object ([`RaceObject`]): the fields and elements of one global, local or allocation
    /// site, or the members of one struct type reached through unresolved pointers. A report
    /// per field of a struct of counters, or per field a whole-object `memset` overlaps,
    /// repeats one finding. The lead is the first race of the group (tier order kept); the
    /// others' locations go to `other_locations`, their racing pairs are listed after the
    /// lead's accesses ([`merge_by`]). Tiers stay apart, so a `likely` report never carries
    /// `possible` pairs and `--show`/`--fail-on` keep their meaning. Runs after suppressions,
    /// baselines and `--diff-base`, which judge each race on its own.
    pub fn merge_objects(&mut self) {
        let races = std::mem::take(&mut self.races);
        let mut unique = 0usize;
        self.races = merge_by(races, true, |r| {
            let own = r.object.is_none().then(|| {
                unique += 1;
                unique
            });
            (
                r.program.clone(),
                r.object,
                own,
                tier(r.evidence),
                r.suppressed
                    .as_ref()
                    .map(|s| (s.kind, s.justification.clone())),
            )
        });
    }

    /// Keeps only the races and deadlocks that are new since revision `rev`, whose report
    /// `base` summarises: a race is known when `base` covers it (its fingerprint, and no
    /// access the race had then: [`suppress::Baseline::covers`]), a deadlock when its
    /// fingerprint is listed. Records how many were left out.
    pub fn only_new(&mut self, rev: &str, base: &suppress::Baseline) {
        let before = self.races.len();
        self.races.retain(|r| !base.covers(r));
        let known_races = before - self.races.len();
        let mut known_deadlocks = 0;
        if let Some(ds) = &mut self.deadlocks {
            let before = ds.len();
            ds.retain(|d| !base.fingerprints.contains(&d.fingerprint));
            known_deadlocks = before - ds.len();
        }
        self.diff_base = Some(DiffBase {
            rev: rev.to_string(),
            known_races,
            known_deadlocks,
        });
    }

    /// This report as program `name`'s (nothing changes for `None`).
    fn named(mut self, name: Option<String>) -> Report {
        let Some(name) = name else {
            return self;
        };
        for r in &mut self.races {
            r.program = Some(name.clone());
        }
        for d in self.deadlocks.iter_mut().flatten() {
            d.program = Some(name.clone());
        }
        for i in self.imprecision.iter_mut().chain(self.degraded.iter_mut()) {
            *i = format!("program {name}: {i}");
        }
        self
    }

    /// The report of a run a resource limit stopped: verdict `unknown`, no race, no
    /// `deadlocks` key (deadlocks were not searched), the reason as the only imprecision.
    pub fn stopped(stopped: Stopped, stats: RunStats) -> Report {
        Report {
            verdict: Verdict::Unknown,
            races: Vec::new(),
            deadlocks: None,
            deadlocks_truncated: false,
            imprecision: vec![stopped.reason.clone()],
            degraded: vec![stopped.reason.clone()],
            stopped: Some(stopped),
            diff_base: None,
            stats,
        }
    }

    /// The report as one line of JSON.
    pub fn to_json(&self) -> String {
        // Serialising plain data cannot fail.
        serde_json::to_string(self).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
    }
}

/// The report of a race a concrete execution witnessed and no static race explains.
fn witness_report(p: &Program, w: &crate::concrete::Witness) -> RaceReport {
    use crate::concrete::memory::Origin;
    let location = match w.first.origin {
        Origin::Global(g) => p.global(g).name.clone(),
        Origin::Local { func, local } => p.function(func).local(local).name.clone(),
        Origin::Heap { func, edge } => {
            let loc = p.function(func).edge_loc(edge);
            let file = p.file_name(loc);
            format!(
                "heap object allocated at {}:{}",
                crate::threads::short_file(file),
                loc.line
            )
        }
        Origin::Str(_) => "<string>".to_string(),
        Origin::Opaque => "<library object>".to_string(),
    };
    let side = |x: &crate::concrete::WitnessAccess| {
        let loc = p.function(x.func).edge_loc(x.edge);
        let f = p.function(x.func).name.clone();
        AccessReport {
            file: p.file_name(loc).to_string(),
            line: loc.line,
            column: loc.col,
            kind: if x.write { "write" } else { "read" },
            thread: p.function(x.entry).name.clone(),
            lockset: Vec::new(),
            may_lockset: None,
            expression: location.clone(),
            call_chain: vec![f.clone()],
            atomic: x.atomic,
            function: f,
            frames: Vec::new(),
            created_at: None,
            lock_sites: Vec::new(),
        }
    };
    let mut race = RaceReport {
        confidence: "must",
        evidence: Evidence::Certain.as_str(),
        location: location.clone(),
        other_locations: Vec::new(),
        object: None,
        accesses: vec![side(&w.first), side(&w.second)],
        reason: None,
        witness: Some(crate::concrete::upgrade::describe(p, w)),
        more_accesses: 0,
        suppressed: None,
        fingerprint: String::new(),
        program: None,
    };
    race.fingerprint = sarif::fingerprint(&race);
    race
}

/// The location of a race: the base variable's name when the access names it, else the
/// accessed expression.
fn location_of(p: &Program, a: &Access<'_>, expression: &str) -> String {
    match a.mem.target {
        crate::backend::Target::Addr(addr) => match addr.base {
            Base::Heap { func, edge, .. } => {
                let loc = p.function(func).edge_loc(edge);
                let file = crate::threads::short_file(p.file_name(loc));
                // The allocating function and the type the access sees the object as.
                let alloc = p
                    .function(func)
                    .body
                    .as_ref()
                    .and_then(|c| c.edges.get(edge.0 as usize))
                    .and_then(|e| match &e.op {
                        crate::ir::Op::Call {
                            callee: crate::ir::Callee::Direct(g),
                            ..
                        } => Some(p.function(*g).name.clone()),
                        _ => None,
                    })
                    .unwrap_or_else(|| "an allocation".to_string());
                let ty = match a.mem.site {
                    AccessSite::Lval(lv) => match &lv.host {
                        crate::ir::Host::Deref(e) => {
                            p.types.pointee(crate::ir::visit::strip_casts(e).ty)
                        }
                        _ => None,
                    },
                    _ => None,
                }
                .filter(|t| matches!(p.types.kind(*t), crate::ir::types::TypeKind::Comp(_)))
                .map(|t| format!(", {}", p.types.display(t)))
                .unwrap_or_default();
                format!(
                    "{expression} (heap object from {alloc} at {file}:{}{ty})",
                    loc.line
                )
            }
            _ => expression.to_string(),
        },
        crate::backend::Target::Typed(_) => expression.to_string(),
    }
}

fn access_report(a: &Analysis<'_>, x: &Access<'_>) -> AccessReport {
    let p = a.program;
    let func = p.function(x.func);
    let expression = match x.mem.site {
        AccessSite::Lval(lv) => lval_to_source(p, lv, func),
        AccessSite::Pointee(e) => format!("*{}", expression_text(p, e, func)),
        AccessSite::Hidden(f) => format!("<state of {}()>", p.function(f).name),
    };
    let tc = a.graph.contexts(x.thread);
    let site_of = |func: crate::ir::FuncId, edge: crate::ir::EdgeId| {
        Site::at(p, p.function(func).edge_loc(edge))
    };
    let frames: Vec<Frame> = tc
        .ctx(x.ctx)
        .calls
        .iter()
        .map(|site| Frame {
            function: p.function(site.func).name.clone(),
            site: site_of(site.func, site.edge),
        })
        .collect();
    let call_chain = frames
        .iter()
        .map(|f| format!("{} ({}:{})", f.function, f.site.file, f.site.line))
        .chain(std::iter::once(func.name.clone()))
        .collect();
    let created_at = a
        .graph
        .threads
        .get(x.thread.0 as usize)
        .and_then(|t| t.site)
        .map(|s| site_of(s.func, s.edge));
    let lockset = lock_names(p, &a.locksets.table, &x.locks.must);
    let may = lock_names(p, &a.locksets.table, &x.locks.may);
    // Each function on the chain, with the line up to which its lock calls count.
    let mut chain: Vec<(crate::ir::FuncId, u32)> = tc
        .ctx(x.ctx)
        .calls
        .iter()
        .map(|site| (site.func, site_of(site.func, site.edge).line))
        .collect();
    chain.push((x.func, x.loc.line));
    let lock_sites = lockset
        .iter()
        .filter_map(|name| {
            let bare = name.trim_end_matches(" (read)");
            chain.iter().rev().find_map(|(f, upto)| {
                let cfg = p.function(*f).body.as_ref()?;
                cfg.edges
                    .iter()
                    .filter(|e| e.loc.line <= *upto)
                    .filter(|e| match &e.op {
                        crate::ir::Op::Call {
                            callee: crate::ir::Callee::Direct(g),
                            args,
                            ..
                        } => match a.roles.get(*g) {
                            Some(crate::model::Role::Lock { lock, .. }) => {
                                args.get(*lock).is_some_and(|arg| {
                                    let t = expression_text(p, arg, p.function(*f));
                                    t.trim_start_matches('&') == bare
                                })
                            }
                            _ => false,
                        },
                        _ => false,
                    })
                    .max_by_key(|e| (e.loc.line, e.loc.col))
                    .map(|e| (name.clone(), Site::at(p, e.loc)))
            })
        })
        .collect();
    AccessReport {
        file: p.file_name(x.loc).to_string(),
        line: x.loc.line,
        column: x.loc.col,
        kind: match x.mem.kind {
            AccessKind::Read => "read",
            AccessKind::Write => "write",
        },
        thread: thread_name(a, x.thread),
        may_lockset: (may != lockset).then_some(may),
        lockset,
        expression,
        call_chain,
        atomic: x.mem.atomic,
        function: func.name.clone(),
        frames,
        created_at,
        lock_sites,
    }
}

/// The calls from a thread's entry to function context `ctx`, outermost first.
fn frames_of(a: &Analysis<'_>, t: ThreadId, ctx: crate::context::FnCtxId) -> Vec<Frame> {
    let p = a.program;
    a.graph
        .contexts(t)
        .ctx(ctx)
        .calls
        .iter()
        .map(|site| Frame {
            function: p.function(site.func).name.clone(),
            site: Site::at(p, p.function(site.func).edge_loc(site.edge)),
        })
        .collect()
}

fn deadlock_report(a: &Analysis<'_>, d: &crate::deadlocks::Deadlock) -> DeadlockReport {
    let p = a.program;
    let table = &a.locksets.table;
    let cycle = d
        .steps
        .iter()
        .map(|s| {
            let size = lock_size(a, &s.acquire);
            let frames = frames_of(a, s.thread, s.acquire.ctx);
            let call_chain = frames
                .iter()
                .map(|f| format!("{} ({}:{})", f.function, f.site.file, f.site.line))
                .chain(std::iter::once(p.function(s.acquire.func).name.clone()))
                .collect();
            StepReport {
                lock: lock_name(p, table, s.lock, size),
                held: lock_name(p, table, s.held, size),
                thread: thread_name(a, s.thread),
                acquire: Site::at(p, crate::deadlocks::call_loc(p, &s.acquire)),
                while_holding: Site::at(p, crate::deadlocks::call_loc(p, &s.while_holding)),
                call_chain,
                frames,
                created_at: a
                    .graph
                    .threads
                    .get(s.thread.0 as usize)
                    .and_then(|t| t.site)
                    .map(|c| Site::at(p, p.function(c.func).edge_loc(c.edge))),
            }
        })
        .collect();
    let mut r = DeadlockReport {
        confidence: match d.confidence {
            Confidence::Must => "must",
            Confidence::May => "may",
        },
        kind: match d.kind {
            crate::deadlocks::Kind::Cycle => "lock-order-cycle",
            crate::deadlocks::Kind::DoubleLock => "double-lock",
        },
        cycle,
        reason: (!d.reasons.is_empty()).then(|| d.reasons.join("; ")),
        fingerprint: String::new(),
        program: None,
    };
    r.fingerprint = sarif::deadlock_fingerprint(&r);
    r
}

/// The size of the object a lock call's lock argument points to.
fn lock_size(a: &Analysis<'_>, c: &crate::deadlocks::CallAt) -> Option<u64> {
    let p = a.program;
    let edge = p
        .function(c.func)
        .body
        .as_ref()?
        .edges
        .get(c.edge.0 as usize)?;
    let crate::ir::Op::Call { args, .. } = &edge.op else {
        return None;
    };
    let Some(crate::model::Role::Lock { lock, .. }) = a.roles.of_call(&edge.op) else {
        return None;
    };
    let ty = p.types.pointee(args.get(*lock)?.ty)?;
    p.types.size_of(ty)
}

/// A lock named by its path ([`crate::lockset::paths`]) as C text (`compress_have->mutex`).
fn path_lock_name(table: &LockTable, i: u32) -> String {
    table
        .path(i)
        .map_or_else(|| "<unknown lock>".to_string(), |p| p.display())
}

/// A lock as C text: its object with the fields and elements down to the lock (`A.mutex`,
/// `locks[1]`), stopping at a union or at an object of the lock's `size`.
pub fn lock_name(
    p: &Program,
    table: &LockTable,
    l: crate::lockset::LockId,
    size: Option<u64>,
) -> String {
    let (b, mut off) = match table.key(l) {
        LockKey::Addr(b, off) => (b, off),
        LockKey::Unknown => return "<unknown lock>".to_string(),
        LockKey::Atomic => return "<atomic section>".to_string(),
        LockKey::Once(b, off) => return format!("<once {}>", base_name(p, &b, off)),
        LockKey::Barrier(b, off) => return format!("<passed {}>", base_name(p, &b, off)),
        LockKey::FlagSet(g) => return format!("<set {}>", p.global(g).name),
        LockKey::FlagSeen(g) => return format!("<seen {}>", p.global(g).name),
        LockKey::SemPassed(b, off) => return format!("<waited {}>", base_name(p, &b, off)),
        LockKey::SemPosted(b, off) => return format!("<posted {}>", base_name(p, &b, off)),
        LockKey::Path(i) => return path_lock_name(table, i),
        _ => return "<counter>".to_string(),
    };
    let (mut name, ty) = match b {
        Base::Global(g) => (p.global(g).name.clone(), Some(p.global(g).ty)),
        Base::Local { func, local, .. } => match p.function(func).locals.get(local.0 as usize) {
            Some(l) => (l.name.clone(), Some(l.ty)),
            None => ("<local>".to_string(), None),
        },
        // A heap lock as the source names it where it is taken (`pool->lock`).
        Base::Heap { .. } if table.source_name(l).is_some() => {
            return table.source_name(l).unwrap_or_default().to_string();
        }
        Base::Heap { func, edge, .. } => (
            format!(
                "<heap object allocated at line {}>",
                p.function(func).edge_loc(edge).line
            ),
            None,
        ),
        _ => return base_name(p, &b, off),
    };
    let Some(mut ty) = ty else {
        return if off == 0 {
            name
        } else {
            format!("{name}+{off}")
        };
    };
    use crate::ir::types::{CompKind, TypeKind};
    for _ in 0..16 {
        if off == 0 && size.is_some() && p.types.size_of(ty) == size {
            break;
        }
        match p.types.kind(ty) {
            TypeKind::Array { elem, .. } => {
                let Some(s) = p.types.size_of(*elem).filter(|s| *s > 0) else {
                    break;
                };
                name = format!("{name}[{}]", off / s);
                off %= s;
                ty = *elem;
            }
            TypeKind::Comp(c) if p.types.comp(*c).kind == CompKind::Struct => {
                let field = p.types.comp(*c).fields.iter().rev().find(|f| {
                    f.offset <= off
                        && f.bit_field.is_none()
                        && p.types
                            .size_of(f.ty)
                            .is_some_and(|s| off < f.offset + s.max(1))
                });
                let Some(f) = field else { break };
                if let Some(n) = &f.name {
                    name = format!("{name}.{n}");
                }
                off -= f.offset;
                ty = f.ty;
            }
            _ => break,
        }
    }
    if off == 0 {
        name
    } else {
        format!("{name}+{off}")
    }
}

fn expression_text(p: &Program, e: &crate::ir::Expr, func: &crate::ir::Function) -> String {
    let s = expr_to_source(p, crate::ir::visit::strip_casts(e), func);
    if s.contains(' ') { format!("({s})") } else { s }
}

/// The name of a thread for reports.
pub fn thread_name(a: &Analysis<'_>, t: ThreadId) -> String {
    a.graph
        .threads
        .get(t.0 as usize)
        .map_or_else(|| format!("thread#{}", t.0), |th| th.name(a.program))
}

/// Names of the locks of a lockset, sorted.
pub fn lock_names(p: &Program, table: &LockTable, set: &SmallSet<Held>) -> Vec<String> {
    let mut v: Vec<String> = set
        .iter()
        .filter(|h| !table.key(h.lock).is_counter())
        .map(|h| {
            let name = match table.key(h.lock) {
                LockKey::Unknown => "<unknown lock>".to_string(),
                LockKey::Atomic => "<atomic section>".to_string(),
                LockKey::Addr(..) => lock_name(p, table, h.lock, None),
                LockKey::Once(b, off) => format!("<once {}>", base_name(p, &b, off)),
                LockKey::Barrier(b, off) => format!("<passed {}>", base_name(p, &b, off)),
                LockKey::FlagSet(g) => format!("<set {}>", p.global(g).name),
                LockKey::FlagSeen(g) => format!("<seen {}>", p.global(g).name),
                LockKey::SemPassed(..) | LockKey::SemPosted(..) => {
                    lock_name(p, table, h.lock, None)
                }
                LockKey::Path(i) => path_lock_name(table, i),
                _ => "<counter>".to_string(),
            };
            match h.mode {
                LockMode::Write => name,
                LockMode::Read => format!("{name} (read)"),
            }
        })
        .collect();
    v.sort();
    v.dedup();
    v
}

/// A base and byte offset as C-like text.
pub fn base_name(p: &Program, b: &Base, off: u64) -> String {
    let name = match b {
        Base::Global(g) => p.global(*g).name.clone(),
        Base::Local { func, local, .. } => p
            .function(*func)
            .locals
            .get(local.0 as usize)
            .map_or_else(|| "<local>".to_string(), |l| l.name.clone()),
        Base::Heap { .. } => "<heap>".to_string(),
        Base::Str(_) => "<string>".to_string(),
        Base::Hidden(f) => format!("<state of {}()>", p.function(*f).name),
        Base::Func(f) => p.function(*f).name.clone(),
        Base::Specific { key, .. } => format!("<thread-specific value of {}>", p.global(*key).name),
    };
    if off == 0 {
        name
    } else {
        format!("{name}+{off}")
    }
}
