//! [`SegmentSealed`]: the event a roll sends to its subscribers, for a copier that uploads
//! segments as they seal instead of polling [`crate::Log::tier_candidates`].

use std::sync::mpsc::{Receiver, Sender, channel};

use crate::sync::{Mutex, lock};

/// A segment was sealed by a roll: it is no longer the active segment. It becomes a copy
/// candidate once the last stable offset reaches `next_base_offset`
/// ([`crate::Log::tier_candidates`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegmentSealed {
    /// The sealed segment's base offset.
    pub base_offset: i64,
    /// The new active segment's base offset: every offset of the sealed one is below it.
    pub next_base_offset: i64,
}

/// The subscribers of a log's seal events. Sending never blocks and never runs a
/// subscriber's code under the log's locks (a channel, not a callback: a callback that
/// called back into the log from inside a roll would deadlock on the writer lock).
#[derive(Debug, Default)]
pub(crate) struct SealSubscribers(Mutex<Vec<Sender<SegmentSealed>>>);

impl SealSubscribers {
    /// A new subscriber's receiving end.
    pub(crate) fn subscribe(&self) -> Receiver<SegmentSealed> {
        let (sender, receiver) = channel();
        lock(&self.0).push(sender);
        receiver
    }

    /// Sends `event` to every subscriber, dropping those whose receiver is gone.
    pub(crate) fn notify(&self, event: SegmentSealed) {
        lock(&self.0).retain(|sender| sender.send(event).is_ok());
    }
}

#[cfg(test)]
#[cfg(not(loom))]
mod tests {
    use super::*;

    #[test]
    fn every_live_subscriber_gets_every_event_and_dropped_ones_are_forgotten() {
        let subscribers = SealSubscribers::default();
        let a = subscribers.subscribe();
        let b = subscribers.subscribe();
        let event = SegmentSealed {
            base_offset: 0,
            next_base_offset: 10,
        };
        subscribers.notify(event);
        assert_eq!((a.try_recv(), b.try_recv()), (Ok(event), Ok(event)));
        drop(b);
        subscribers.notify(event);
        assert_eq!(lock(&subscribers.0).len(), 1);
        assert_eq!(a.try_recv(), Ok(event));
    }
}
