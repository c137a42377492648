//! One integration-test binary (fast to link on a small machine); each module a capability.

// tests stop at the first thing that is not as set up, and say SKIPPED on stderr
#![allow(clippy::unwrap_used, clippy::print_stdout, clippy::print_stderr)]

mod cleanup;
mod cli_doctor;
mod cli_fleet;
mod cli_inspect;
mod cli_list;
mod cli_reconcile;
mod cli_write;
mod demo_scenario;
mod derive;
mod egress;
mod hardening3;
mod history_truth;
mod hostile;
mod interop27;
mod inventory_packed;
mod krew;
mod layers;
mod leaks;
mod live;
mod lows;
mod next_steps;
mod one_door;
mod pools_claims;
mod port_forward;
mod properties;
mod race;
mod readme;
mod realserver;
mod refresh;
mod roundtrips;
mod safety_r4;
mod safety_r4_a;
mod safety_r4_b;
mod sim_api;
mod sim_disks;
mod sim_kubectl;
mod sim_parallel;
mod sim_triage;
mod sim_truth;
mod support;
mod template_hash_cli;
mod triage;
mod triage_habits;
mod tui;
mod tui_tmux;
mod vectors;
mod verdicts;
