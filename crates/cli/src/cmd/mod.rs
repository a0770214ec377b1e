//! One module per subcommand.

pub mod compact;
pub mod demo;
pub mod dump;
pub mod info;
pub mod marker;
pub mod produce;
pub mod read;
pub mod recover;
pub mod retain;
pub mod truncate;
pub mod verify;
