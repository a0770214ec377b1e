//! [`SegmentPin`]: keeps retention from deleting a segment a copier is uploading.

use crate::sync::{Arc, Mutex, lock};
use std::collections::BTreeMap;

/// The pinned segments of one log: base offset -> how many pins hold it.
#[derive(Debug, Default, Clone)]
pub(crate) struct Pins(Arc<Mutex<BTreeMap<i64, usize>>>);

impl Pins {
    /// Pins the segment based at `base_offset` until the returned pin is dropped.
    pub(crate) fn pin(&self, base_offset: i64) -> SegmentPin {
        *lock(&self.0).entry(base_offset).or_insert(0) += 1;
        SegmentPin {
            pins: self.clone(),
            base_offset,
        }
    }

    /// The lowest pinned base offset, if any: retention deletes no segment at or above it.
    pub(crate) fn lowest(&self) -> Option<i64> {
        lock(&self.0).keys().next().copied()
    }
}

/// Keeps retention from deleting one segment (and so every later one: retention deletes a
/// prefix) until dropped. Held by [`super::SealedSegmentFiles`] while a copier uploads it.
#[derive(Debug)]
pub struct SegmentPin {
    pins: Pins,
    base_offset: i64,
}

impl SegmentPin {
    /// The pinned segment's base offset.
    pub fn base_offset(&self) -> i64 {
        self.base_offset
    }
}

impl Drop for SegmentPin {
    fn drop(&mut self) {
        let mut pins = lock(&self.pins.0);
        if let Some(count) = pins.get_mut(&self.base_offset) {
            *count -= 1;
            if *count == 0 {
                pins.remove(&self.base_offset);
            }
        }
    }
}

#[cfg(test)]
#[cfg(not(loom))]
mod tests {
    use super::*;

    #[test]
    fn the_lowest_pin_holds_until_its_last_holder_drops() {
        let pins = Pins::default();
        assert_eq!(pins.lowest(), None);
        let a = pins.pin(10);
        let b = pins.pin(10);
        let c = pins.pin(30);
        assert_eq!((pins.lowest(), a.base_offset()), (Some(10), 10));
        drop(a);
        assert_eq!(pins.lowest(), Some(10));
        drop(b);
        assert_eq!(pins.lowest(), Some(30));
        drop(c);
        assert_eq!(pins.lowest(), None);
    }
}
