//! One integration-test binary (fast to link on a small machine); each module a capability.

mod derive;
mod properties;
mod support;
mod template_hash_cli;
mod vectors;
