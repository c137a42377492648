//! `kubectl namzu record`: the flight recorder, headless until stopped (Ctrl-C, SIGTERM: the
//! session ends with its stop record, exit 0). Renders what `ops::record` reports.

use super::exit::Failure;
use super::globals::Globals;
use super::output;
use namzu_engine::cluster::live::LiveEvent;
use namzu_engine::ops::fleet::Fleet;
use namzu_engine::ops::follow::Followed;

#[derive(Debug, clap::Args)]
#[command(after_help = EXAMPLES)]
pub struct Args {}

pub(crate) const EXAMPLES: &str = "Examples:
  # Record every namespace of the current context until Ctrl-C (into recordings/ beside the audit log)
  kubectl namzu record -A

  # Every context of the kubeconfig, into a directory of your own
  kubectl namzu record -A --all-contexts --recording /var/lib/namzu-recordings

  # What the fleet looked like two hours ago, from the recording
  kubectl namzu list -A --at -2h";

pub(crate) async fn run(globals: &Globals) -> Result<(), Failure> {
    let rules = crate::cli::config::load(globals)?;
    let fleet = Fleet::open(crate::cli::config::fleet_request(globals, false)?).await?;
    let root = globals.recording_root()?;
    let recording = namzu_engine::ops::record::Recording {
        root,
        limits: namzu_engine::ops::record::limits(&rules.recording),
        audit: globals.audit().path,
        all_namespaces: globals.all_namespaces,
    };
    let mut following = namzu_engine::ops::record::record(&fleet, recording);
    let termination = namzu_engine::signals::Termination::listen().received();
    tokio::pin!(termination);
    let line = |context: &Option<String>, text: &str| match context {
        Some(c) => namzu_engine::errln!("context \"{}\": {}", output::printable(c), output::printable(text)),
        None => namzu_engine::errln!("{}", output::printable(text)),
    };
    loop {
        let Followed { context, event } = tokio::select! {
            _ = &mut termination => break,
            e = following.next() => match e {
                Some(e) => e,
                None => return Err(Failure::error("every recording ended")),
            },
        };
        match event {
            LiveEvent::Warning(w) => line(&context, &w),
            LiveEvent::Failed(why) => match &context {
                Some(c) => fleet.fail(c, &why),
                None => return Err(Failure::error(why)),
            },
            _ => {}
        }
    }
    following.finish().await;
    Ok(())
}
