//! A scripted day on the manual clock (issue 43): the clock moves in steps and, at each, a share
//! of the workspaces change as the scenario's `day: {churn: N}` says (N changes per workspace per
//! hour) — a mode flipped (Running ⇄ Suspended) with its stamp and a raised holder epoch, as
//! @namzu/sandbox writes them; the controller then moves pods and disks. Reproducible: which
//! workspaces change comes from the seed.

use crate::Sim;
use crate::resources::SANDBOXES;
use crate::scenario::Day;
use namzu_domain::annotations::CHANGED_AT;

/// The holder-epoch annotation (the library's; `namzu_domain::annotations` keeps its own private).
const HOLDER_EPOCH: &str = "sandbox.namzu.ai/holder-epoch";
use serde_json::Value;

/// A day under way: its knob, the fraction of a change carried to the next step, its random state.
#[derive(Debug, Clone)]
pub struct DayClock {
    day: Day,
    carry: f64,
    rng: u64,
}

impl DayClock {
    pub fn new(day: Day) -> DayClock {
        DayClock {
            day,
            carry: 0.0,
            rng: day
                .seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407)
                | 1,
        }
    }

    fn next(&mut self, below: usize) -> usize {
        // xorshift64*: reproducible, no dependency
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        (self.rng.wrapping_mul(0x2545F4914F6CDD1D) >> 33) as usize % below.max(1)
    }
}

impl Sim {
    /// Move the clock by `by` and make the step's share of the day's changes; how many were made.
    pub fn step_day(&self, day: &mut DayClock, by: chrono::Duration) -> usize {
        self.advance(by);
        let names: Vec<(String, String)> = self
            .list(&SANDBOXES, None)
            .iter()
            .map(|s| {
                let at = |k: &str| {
                    s.pointer(&format!("/metadata/{k}"))
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string()
                };
                (at("namespace"), at("name"))
            })
            .filter(|(_, n)| n.starts_with("namzu-ws-"))
            .collect();
        let hours = by.num_milliseconds() as f64 / 3_600_000.0;
        let due = day.day.churn * names.len() as f64 * hours + day.carry;
        let n = due.floor() as usize;
        day.carry = due - n as f64;
        let stamp = namzu_domain::timefmt::js_iso(self.now());
        for _ in 0..n {
            let (ns, name) = &names[day.next(names.len())];
            self.modify(&SANDBOXES, ns, name, |s| {
                let running = s.pointer("/spec/operatingMode").and_then(Value::as_str) != Some("Suspended");
                s["spec"]["operatingMode"] = if running { "Suspended" } else { "Running" }.into();
                let epoch = s
                    .pointer(&format!("/metadata/annotations/{}", HOLDER_EPOCH.replace('/', "~1")))
                    .and_then(Value::as_str)
                    .and_then(|e| e.parse::<u64>().ok())
                    .unwrap_or(0);
                if !s["metadata"]["annotations"].is_object() {
                    s["metadata"]["annotations"] = Value::Object(Default::default());
                }
                s["metadata"]["annotations"][HOLDER_EPOCH] = (epoch + 1).to_string().into();
                s["metadata"]["annotations"][CHANGED_AT] = stamp.clone().into();
            });
        }
        n
    }
}
