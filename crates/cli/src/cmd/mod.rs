//! One module per subcommand.

pub mod compact;
pub mod demo;
pub mod dump;
pub mod info;
pub mod marker;
pub mod produce;
pub mod read;
pub mod recover;
pub mod recover_root;
pub mod retain;
pub mod tier;
pub mod truncate;
pub mod verify;

/// The open options of every command that opens an existing log directory: the high
/// watermark stays the checkpointed one ([`seglog::HighWatermarkPolicy::Manual`], not
/// seglog's `LogEnd` default), because the directory may be a broker's, whose high watermark
/// only its replication moves. A command that needs it at the log end (`retain`, `compact`,
/// `marker`) moves it explicitly.
pub(crate) fn open_options() -> seglog::LogOpenOptions {
    seglog::LogOpenOptions {
        high_watermark: seglog::HighWatermarkPolicy::Manual,
        ..seglog::LogOpenOptions::default()
    }
}
