//! The committed recording (fixtures/server-probe/llama-server.json, made
//! by the live test with SERVER_PROBE_WRITE_RECORDING set) replayed offline:
//! runs everywhere, CI included, without a server.

use std::path::Path;

use server_probe::Recording;

use crate::{check_post_sampling, registry};

pub(crate) fn the_committed_recording_replays_with_the_same_verdicts() {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/server-probe/llama-server.json");
    let text = std::fs::read_to_string(&path).expect("the committed recording");
    let recording: Recording = serde_json::from_str(&text).expect("a recording");
    let report = server_probe::replay(&recording, &registry()).expect("replay");
    assert!(report.replayed);
    assert!(report.probes.len() >= 3, "{} probes", report.probes.len());
    check_post_sampling(&report);
}
