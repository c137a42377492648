//! The pure core: every interop rule of @namzu/sandbox and every display rule of the inventory.
//! Nothing here does I/O or async; objects come in as `serde_json::Value` exactly as the API served them.

pub mod age;
pub mod annotations;
pub mod canonical;
pub mod capacity;
pub mod claim_lifecycle;
pub mod columns;
pub mod diagnosis;
pub mod diff;
pub mod drift;
pub mod egress;
pub mod epoch;
pub mod fence;
pub mod filter;
pub mod identity;
pub mod leaks;
pub mod mirror;
pub mod naming;
pub mod next_step;
pub mod object;
pub mod patch;
pub mod pod;
pub mod pools;
pub mod projection;
pub mod pulse;
pub mod quantities;
pub mod rbac;
pub mod refresh;
pub mod retry;
pub mod safety;
pub mod select;
mod shell;
pub mod state;
pub mod template_policies;
pub mod timefmt;
pub mod timeline;
pub mod triage;
pub mod workspace;
pub mod writers;

/// `n` and a noun whose plural takes an s: "1 object", "2 objects".
pub fn counted(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}
