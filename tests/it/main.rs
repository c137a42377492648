//! One integration-test binary (fast to link on a small machine); each module a capability.

// tests stop at the first thing that is not as set up, and say SKIPPED on stderr
#![allow(clippy::unwrap_used, clippy::print_stdout, clippy::print_stderr)]
// a test is one scenario read top to bottom: the lines-per-function rule is for the product
#![allow(clippy::too_many_lines)]

mod agent_sandbox_interop;
mod audit_log;
mod cleanup;
mod cli_doctor;
mod cli_fleet;
mod cli_inspect;
mod cli_list;
mod cli_reconcile;
mod cli_write;
mod connection;
mod context_rules;
mod demo_scenario;
mod egress;
mod fence;
mod flight_recorder;
mod history_truth;
mod hostile;
mod inventory_packed;
mod krew;
mod layers;
mod leaks;
mod live;
mod logs_many;
mod next_steps;
mod one_door;
mod output_safety;
mod paged_reads;
mod pools_claims;
mod port_forward;
mod properties;
mod pulse;
mod readme;
mod realserver;
mod refresh;
mod refusals;
mod roundtrips;
mod sim_api;
mod sim_disks;
mod sim_kubectl;
mod sim_parallel;
mod sim_triage;
mod sim_truth;
mod states_and_diagnoses;
mod support;
mod template_hash_cli;
mod triage;
mod triage_habits;
mod tui;
mod tui_fleet;
mod tui_habits;
mod tui_tmux;
mod typed_confirmation;
mod vectors;
mod verdicts;
mod waits;
