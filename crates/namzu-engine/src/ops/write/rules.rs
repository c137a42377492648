//! The rules of a write that every front-end asks here, so none has its own: whether a context
//! takes a write at all (its connection's refusal, read-only, maxBulk), whether the verb asks for
//! a typed confirmation there, and the binding of a confirmed write to exactly what was shown.
//! The rules themselves are the domain's (`domain/safety.rs`, `domain/fence.rs`); this is the one
//! place they are applied to a write.

use crate::cluster::write::{Outcome, Plan, WritePolicy};
use namzu_domain::fence::{EpochChoice, Verb};
use namzu_domain::naming::WorkspaceId;
use namzu_domain::safety::ContextRules;
use serde_json::Value;

/// The write policy of one context: `base` (the audit log, the per-sandbox label key) under the
/// context's read-only rule, with a throttle of its own.
pub fn policy(base: &WritePolicy, rules: &ContextRules) -> WritePolicy {
    WritePolicy {
        read_only: rules.read_only,
        throttle: Default::default(),
        ..base.clone()
    }
}

/// Why a context takes no write of the workspaces selected there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// Every write is refused, dry runs too: the context's read-only rule (or `--read-only`),
    /// or rules that cannot be applied to its connection (`--cluster`/`--user`). The reason.
    ReadOnly(String),
    /// More workspaces selected than its maxBulk: the sentence.
    Bulk(String),
}

/// Why a context refuses every write whatever the flags say, if it does: rules that cannot be
/// applied to its connection (`SafetyConfig::for_connection`).
pub(crate) fn unrulable(rules: &ContextRules) -> Option<&str> {
    rules.refusal.as_deref()
}

/// Whether a context takes a write of `selected` workspaces: `read_only_flag` is `--read-only`
/// (named as the reason when it is one). Named ids count as a bulk write too: `list -o name |
/// xargs suspend` meets the limit.
pub fn check(rules: &ContextRules, context: &str, read_only_flag: bool, selected: usize) -> Result<(), Refusal> {
    check_of(rules, context, read_only_flag, selected, "workspace")
}

/// [`check`] of `selected` objects of another kind (`noun`: a leaked object).
pub(crate) fn check_of(
    rules: &ContextRules,
    context: &str,
    read_only_flag: bool,
    selected: usize,
    noun: &str,
) -> Result<(), Refusal> {
    if let Some(why) = read_only(rules, context, read_only_flag) {
        return Err(Refusal::ReadOnly(why));
    }
    match rules.refuse_bulk(context, selected, noun) {
        Some(why) => Err(Refusal::Bulk(why)),
        None => Ok(()),
    }
}

/// Why a context refuses every write, dry runs too, if it does: its read-only rule, `--read-only`
/// (`read_only_flag`, named as the reason when it is one), or rules its connection cannot be
/// written under.
pub fn read_only(rules: &ContextRules, context: &str, read_only_flag: bool) -> Option<String> {
    (read_only_flag || rules.read_only).then(|| rules.why_read_only(context, read_only_flag))
}

/// Why `--yes` may not answer here, if it may not: it lifts a typed confirmation, so — as every
/// flag that loosens a context's rules (`domain::safety::Loosens`) — across several contexts it
/// may not answer one that a context's `confirm: typed` rule asks for (name that context alone).
pub(crate) fn yes_across<'a>(
    several: bool,
    yes: bool,
    mut members: impl Iterator<Item = (&'a str, &'a ContextRules)>,
) -> Option<String> {
    if !several || !yes {
        return None;
    }
    members.find(|(_, r)| r.typed_by_rule()).map(|(context, _)| {
        format!(
            "--yes would answer context \"{context}\"'s typed confirmation (confirm: typed): across several contexts it may not; run it with --context {context}"
        )
    })
}

/// Whether a `verb` in a context with these rules asks for the typed id; `None` for a context
/// whose rules are not known (it asks). A write the user said yes to up front (`--yes`), a dry
/// run and a read-only context ask nothing.
pub fn asks_typed(rules: Option<&ContextRules>, verb: Verb, yes: bool, dry_run: bool) -> bool {
    match rules {
        None => true,
        Some(r) => asks_typed_when(r, verb.destroys_data(), yes, dry_run),
    }
}

/// Whether a write that destroys data (`destroys_data`: a delete of a workspace or of a leaked
/// disk) or not asks for a typed confirmation in a context with these rules: the domain's rule
/// (`ContextRules::asks_typed_when`), unless the user said yes up front (`--yes`), it is a dry
/// run, or the context is read-only (it sends nothing).
pub(crate) fn asks_typed_when(rules: &ContextRules, destroys_data: bool, yes: bool, dry_run: bool) -> bool {
    !yes && !dry_run && !rules.read_only && rules.asks_typed_when(destroys_data)
}

/// How a context takes a command run in a workspace's pod (`exec`, the TUI's shell).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExecGate {
    /// Run it.
    Go,
    /// Ask for the workspace id typed first: the context's `confirm: typed` rule.
    AskTyped,
    /// Refused, with the reason: the context is read-only.
    Refused(String),
}

/// Whether a command may run in a workspace's pod in a context with these rules. A command in a
/// pod can change anything the pod can, so for the rules it is a write: read-only refuses it
/// (`read_only_flag` is `--read-only`), and `confirm: typed` asks for the id unless the user
/// said yes up front (`--yes`) or already typed it (`confirmed`).
pub fn exec_gate(rules: &ContextRules, context: &str, read_only_flag: bool, confirmed: bool) -> ExecGate {
    if let Some(why) = read_only(rules, context, read_only_flag) {
        return ExecGate::Refused(format!(
            "{why}: a command in a workspace's pod can change anything the pod can, so no command runs there"
        ));
    }
    if asks_typed_when(rules, false, confirmed, false) {
        ExecGate::AskTyped
    } else {
        ExecGate::Go
    }
}

/// Whether a port may be forwarded into a workspace's pod: a forwarded port reaches whatever the
/// pod serves, so the rules treat it as they treat a command there ([`exec_gate`]).
pub fn port_forward_gate(rules: &ContextRules, context: &str, read_only_flag: bool, confirmed: bool) -> ExecGate {
    if let Some(why) = read_only(rules, context, read_only_flag) {
        return ExecGate::Refused(format!(
            "{why}: a forwarded port reaches into a workspace's pod as a command there does, so no port is forwarded"
        ));
    }
    exec_gate(rules, context, false, confirmed)
}

/// The read-only plan a confirmation shows (what the write would do, as read now); `None` for a
/// row whose id cannot name a Sandbox (listed, never written).
pub fn preview(
    verb: Verb,
    namespace: &str,
    id: &str,
    take_over: bool,
    refresh: Option<namzu_domain::refresh::Ask>,
) -> Option<Plan> {
    Some(Plan {
        verb,
        namespace: namespace.to_string(),
        id: WorkspaceId::parse(id).ok()?,
        epoch: if take_over {
            EpochChoice::TakeOver
        } else {
            EpochChoice::Stored
        },
        dry_run: true,
        server_dry_run: false,
        expected_uid: None,
        refresh,
    })
}

/// A write that could not be bound to what was confirmed: nothing is sent.
#[derive(Debug)]
pub enum Unbound<'a> {
    /// The preview has not arrived.
    NotShown,
    /// The preview was not a write that would go through: its outcome says why.
    Shown(&'a Outcome),
}

/// The confirmed write, bound to what the confirmation showed: exactly the epoch and uid shown,
/// so a holder that took over (or a Sandbox replaced) since then is refused, not followed; a
/// refresh carries the hash shown, so one that would now write another template is refused.
/// `plan` is the write to send (its epoch choice is replaced by the epoch shown).
pub fn bind(mut plan: Plan, shown: Option<&Outcome>) -> Result<Plan, Unbound<'_>> {
    match shown {
        Some(Outcome::DryRun {
            epoch, uid, refresh, ..
        }) => {
            plan.expected_uid = uid.clone().or(plan.expected_uid);
            plan.epoch = EpochChoice::Explicit(epoch.carried);
            if let Some(ask) = plan.refresh.as_mut() {
                ask.expected_hash = refresh.as_ref().map(|r| r.hash.clone());
            }
            Ok(plan)
        }
        Some(other) => Err(Unbound::Shown(other)),
        None => Err(Unbound::NotShown),
    }
}

/// A write bound to the object the user typed its id for: one replaced or taken over while the
/// user typed is refused, not written.
pub(crate) fn bind_to_object(plan: &mut Plan, shown: &Value) {
    plan.expected_uid = namzu_domain::object::uid(shown).map(str::to_string);
    if let Ok(epoch) = namzu_domain::fence::resolve(shown, plan.epoch) {
        plan.epoch = EpochChoice::Explicit(epoch);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::write::Request;
    use namzu_domain::fence::{Change, EpochUse};
    use namzu_domain::patch::Mode;
    use namzu_domain::safety::ConfirmRule;
    use serde_json::json;

    fn shown(carried: u64, uid: &str) -> Outcome {
        Outcome::DryRun {
            request: Request {
                method: "PATCH",
                path: "/x/namzu-ws-alpha".into(),
                content_type: "application/json-patch+json",
                body: json!([]),
            },
            epoch: EpochUse {
                carried,
                stored: Some(carried),
                raw: Some(carried.to_string()),
                unfenced: false,
            },
            change: Change::ModeChange,
            mode: Mode::Running,
            uid: Some(uid.into()),
            per_sandbox_egress: false,
            refresh: None,
        }
    }

    #[test]
    fn a_command_in_a_pod_is_a_write_for_the_rules() {
        let open = ContextRules::default();
        assert_eq!(exec_gate(&open, "dev", false, false), ExecGate::Go);
        assert!(matches!(exec_gate(&open, "dev", true, true), ExecGate::Refused(w) if w.contains("--read-only")));
        let read_only = ContextRules {
            read_only: true,
            matched: vec!["prod-*".into()],
            ..Default::default()
        };
        assert!(matches!(exec_gate(&read_only, "prod", false, true), ExecGate::Refused(w) if w.contains("prod-*")));
        let typed = ContextRules {
            confirm: ConfirmRule::Typed,
            ..Default::default()
        };
        assert_eq!(exec_gate(&typed, "prod", false, false), ExecGate::AskTyped);
        assert_eq!(exec_gate(&typed, "prod", false, true), ExecGate::Go);
        assert!(
            matches!(port_forward_gate(&read_only, "prod", false, true), ExecGate::Refused(w) if w.contains("no port is forwarded"))
        );
        assert_eq!(port_forward_gate(&typed, "prod", false, false), ExecGate::AskTyped);
        assert_eq!(port_forward_gate(&open, "dev", false, false), ExecGate::Go);
    }

    #[test]
    fn a_confirmed_write_carries_the_epoch_and_uid_shown_and_nothing_unshown() {
        let write = Plan {
            dry_run: false,
            ..preview(Verb::Suspend, "agents", "alpha", true, None).expect("a workspace id")
        };
        let bound = bind(write.clone(), Some(&shown(7, "uid-1"))).expect("a dry run binds");
        assert_eq!(bound.epoch, EpochChoice::Explicit(7));
        assert_eq!(bound.expected_uid.as_deref(), Some("uid-1"));
        assert!(!bound.dry_run);
        let refused = Outcome::Refused { message: "no".into() };
        assert!(matches!(bind(write.clone(), Some(&refused)), Err(Unbound::Shown(_))));
        assert!(matches!(bind(write, None), Err(Unbound::NotShown)));
        assert!(preview(Verb::Suspend, "agents", "not an id!", false, None).is_none());
    }

    #[test]
    fn read_only_is_said_before_max_bulk_and_the_flag_names_itself() {
        let rules = ContextRules {
            max_bulk: Some(2),
            ..Default::default()
        };
        assert_eq!(check(&rules, "prod", false, 2), Ok(()));
        assert!(matches!(check(&rules, "prod", false, 3), Err(Refusal::Bulk(_))));
        assert_eq!(
            check(&rules, "prod", true, 3),
            Err(Refusal::ReadOnly(
                "read-only mode (--read-only or KUBECTL_NAMZU_READ_ONLY)".into()
            ))
        );
    }

    #[test]
    fn who_asks_typed() {
        let plain = ContextRules::default();
        let typed = ContextRules {
            confirm: ConfirmRule::Typed,
            ..Default::default()
        };
        assert!(asks_typed(Some(&plain), Verb::Delete, false, false));
        assert!(!asks_typed(Some(&plain), Verb::Suspend, false, false));
        assert!(asks_typed(Some(&typed), Verb::Suspend, false, false));
        assert!(!asks_typed(Some(&typed), Verb::Suspend, true, false));
        assert!(!asks_typed(Some(&typed), Verb::Suspend, false, true));
        // a context whose rules are not known asks
        assert!(asks_typed(None, Verb::Resume, false, false));
        // a leaked disk's delete asks as a workspace's does; a policy's only by the rule
        assert!(asks_typed_when(&plain, true, false, false));
        assert!(!asks_typed_when(&plain, false, false, false));
        assert!(asks_typed_when(&typed, false, false, false));
        assert!(!asks_typed_when(&typed, true, true, false));
    }
}
