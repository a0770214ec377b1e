//! A test `ObjectStore` wrapper that injects the faults of a real remote store: errors (a
//! failed request), lost responses (the request took effect, the caller got an error),
//! delays, partial listings, and a crash (from one request on, nothing reaches the store: the
//! process died). Only in tests: shipped code has no hooks (STYLE.md, "Test seams are not
//! features").

use std::fmt;
use std::ops::Range;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use futures_util::stream::{BoxStream, StreamExt};
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    ObjectStoreExt, PutMultipartOptions, PutOptions, PutPayload, PutResult, UploadPart,
};

/// When the crash hits the chosen mutation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CrashMode {
    /// The request never reaches the store.
    Before,
    /// The request takes effect, its response is lost (the caller sees an error).
    LostResponse,
}

/// A fault on the Nth mutating request (puts, multipart parts and completions, deletes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Crash at that request: it and every later request fail.
    Crash(CrashMode),
    /// That one request fails (a 5xx), later ones succeed.
    Fail,
    /// That one request takes effect but answers with an error.
    LoseResponse,
    /// That one request is refused as S3 throttles (503 SlowDown: object_store's `Generic`
    /// once its own retries are spent), later ones succeed.
    Throttle,
    /// That one request is refused as not permitted (403: `PermissionDenied`, not retriable).
    Deny,
}

#[derive(Debug, Default)]
struct State {
    mutations: usize,
    faults: Vec<(usize, Fault)>,
    crashed: bool,
    partial_listings: bool,
    delay: Duration,
    in_flight: usize,
    max_in_flight: usize,
    /// Requests under way per remote segment (by its `<start>-<id>` stem).
    segments_in_flight: std::collections::BTreeMap<String, usize>,
    max_segments_in_flight: usize,
}

/// The wrapper.
#[derive(Debug, Clone)]
pub struct FaultyStore {
    inner: Arc<dyn ObjectStore>,
    state: Arc<Mutex<State>>,
}

impl fmt::Display for FaultyStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "FaultyStore({})", self.inner)
    }
}

/// The `<20-digit start>-<id>` stem a data or metadata key names, if any.
fn segment_stem(location: &Path) -> Option<String> {
    location.parts().find_map(|part| {
        let part = part.as_ref();
        let digits = part.get(..20)?;
        if !digits.bytes().all(|b| b.is_ascii_digit()) || part.as_bytes().get(20) != Some(&b'-') {
            return None;
        }
        Some(part.split('.').next().unwrap_or(part).to_owned())
    })
}

fn injected(what: &str) -> object_store::Error {
    object_store::Error::Generic {
        store: "FaultyStore",
        source: what.to_owned().into(),
    }
}

impl FaultyStore {
    pub fn new(inner: Arc<dyn ObjectStore>) -> FaultyStore {
        FaultyStore {
            inner,
            state: Arc::default(),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Injects `fault` at mutating request number `n` (0-based, counted from now on).
    pub fn fault_at(&self, n: usize, fault: Fault) {
        let mut state = self.state();
        let at = state.mutations + n;
        state.faults.push((at, fault));
    }

    /// Every listing from now on returns only every other object.
    pub fn partial_listings(&self, on: bool) {
        self.state().partial_listings = on;
    }

    /// Every request from now on waits this long first.
    pub fn delay(&self, delay: Duration) {
        self.state().delay = delay;
    }

    /// Mutating requests so far.
    pub fn mutations(&self) -> usize {
        self.state().mutations
    }

    /// Whether a crash fault fired.
    pub fn crashed(&self) -> bool {
        self.state().crashed
    }

    /// The most requests that were under way at once (each counted through its delay).
    pub fn max_in_flight(&self) -> usize {
        self.state().max_in_flight
    }

    /// The most remote segments that had requests under way at once (each request counted
    /// through its delay, by the `<start>-<id>` stem its key names): how many copies or
    /// deletions ran at once, whatever each did in parallel itself.
    pub fn max_segments_in_flight(&self) -> usize {
        self.state().max_segments_in_flight
    }

    /// Starts counting [`FaultyStore::max_in_flight`] and
    /// [`FaultyStore::max_segments_in_flight`] afresh.
    pub fn reset_max_in_flight(&self) {
        let mut state = self.state();
        state.max_in_flight = state.in_flight;
        state.max_segments_in_flight = state.segments_in_flight.len();
    }

    /// Waits the configured delay, counted as a request in flight (for `location`'s segment).
    async fn pause(&self, location: &Path) {
        let segment = segment_stem(location);
        let delay = {
            let mut state = self.state();
            state.in_flight += 1;
            state.max_in_flight = state.max_in_flight.max(state.in_flight);
            if let Some(stem) = &segment {
                *state.segments_in_flight.entry(stem.clone()).or_default() += 1;
                state.max_segments_in_flight = state
                    .max_segments_in_flight
                    .max(state.segments_in_flight.len());
            }
            state.delay
        };
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        let mut state = self.state();
        state.in_flight -= 1;
        if let Some(stem) = segment
            && let Some(n) = state.segments_in_flight.get_mut(&stem)
        {
            *n -= 1;
            if *n == 0 {
                state.segments_in_flight.remove(&stem);
            }
        }
    }

    fn check_read(&self) -> object_store::Result<()> {
        if self.state().crashed {
            return Err(injected("crashed: the process is gone"));
        }
        Ok(())
    }

    /// Counts one mutation and says what to do with it: `Ok(true)` apply and answer,
    /// `Ok(false)` apply and lose the answer, `Err` do not apply.
    fn mutation(&self, what: String) -> object_store::Result<bool> {
        let mut state = self.state();
        if state.crashed {
            return Err(injected("crashed: the process is gone"));
        }
        let n = state.mutations;
        state.mutations += 1;
        tracing::trace!(request = %what, n, "faulty store");
        let fault = state
            .faults
            .iter()
            .find(|(at, _)| *at == n)
            .map(|&(_, f)| f);
        match fault {
            None => Ok(true),
            Some(Fault::Fail) => Err(injected("injected 503")),
            Some(Fault::Throttle) => Err(injected("503 SlowDown: please reduce your request rate")),
            Some(Fault::Deny) => Err(object_store::Error::PermissionDenied {
                path: what,
                source: "injected 403".into(),
            }),
            Some(Fault::LoseResponse) => Ok(false),
            Some(Fault::Crash(CrashMode::Before)) => {
                state.crashed = true;
                Err(injected("crashed before the request"))
            }
            Some(Fault::Crash(CrashMode::LostResponse)) => {
                state.crashed = true;
                Ok(false)
            }
        }
    }

    fn answer<T>(answered: bool, result: object_store::Result<T>) -> object_store::Result<T> {
        match (answered, result) {
            (true, result) => result,
            (false, _) => Err(injected("response lost")),
        }
    }
}

#[async_trait]
impl ObjectStore for FaultyStore {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> object_store::Result<PutResult> {
        self.pause(location).await;
        let answered = self.mutation(format!("put {location}"))?;
        let result = self.inner.put_opts(location, payload, opts).await;
        Self::answer(answered, result)
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> object_store::Result<Box<dyn MultipartUpload>> {
        self.pause(location).await;
        let answered = self.mutation(format!("put_multipart {location}"))?;
        let result = self.inner.put_multipart_opts(location, opts).await;
        let upload = Self::answer(answered, result)?;
        Ok(Box::new(FaultyUpload {
            store: self.clone(),
            location: location.clone(),
            inner: upload,
        }))
    }

    async fn get_opts(
        &self,
        location: &Path,
        options: GetOptions,
    ) -> object_store::Result<GetResult> {
        self.pause(location).await;
        self.check_read()?;
        self.inner.get_opts(location, options).await
    }

    async fn get_ranges(
        &self,
        location: &Path,
        ranges: &[Range<u64>],
    ) -> object_store::Result<Vec<Bytes>> {
        self.pause(location).await;
        self.check_read()?;
        self.inner.get_ranges(location, ranges).await
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, object_store::Result<Path>>,
    ) -> BoxStream<'static, object_store::Result<Path>> {
        let this = self.clone();
        locations
            .then(move |location| {
                let this = this.clone();
                async move {
                    let location = location?;
                    this.pause(&location).await;
                    let answered = this.mutation(format!("delete {location}"))?;
                    let result = this.inner.delete(&location).await.map(|()| location);
                    Self::answer(answered, result)
                }
            })
            .boxed()
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        if let Err(e) = self.check_read() {
            return futures_util::stream::once(async move { Err(e) }).boxed();
        }
        let partial = self.state().partial_listings;
        let listing = self.inner.list(prefix);
        if !partial {
            return listing;
        }
        listing
            .enumerate()
            .filter(|(i, _)| std::future::ready(i % 2 == 0))
            .map(|(_, item)| item)
            .boxed()
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> object_store::Result<ListResult> {
        self.check_read()?;
        let mut result = self.inner.list_with_delimiter(prefix).await?;
        if self.state().partial_listings {
            let mut i = 0;
            result.objects.retain(|_| {
                i += 1;
                i % 2 == 1
            });
        }
        Ok(result)
    }

    async fn copy_opts(
        &self,
        from: &Path,
        to: &Path,
        options: CopyOptions,
    ) -> object_store::Result<()> {
        self.pause(to).await;
        let answered = self.mutation(format!("copy {from} {to}"))?;
        let result = self.inner.copy_opts(from, to, options).await;
        Self::answer(answered, result)
    }
}

#[derive(Debug)]
struct FaultyUpload {
    store: FaultyStore,
    location: Path,
    inner: Box<dyn MultipartUpload>,
}

#[async_trait]
impl MultipartUpload for FaultyUpload {
    fn put_part(&mut self, data: PutPayload) -> UploadPart {
        match self.store.mutation(format!("put_part {}", self.location)) {
            Err(e) => Box::pin(async move { Err(e) }),
            Ok(answered) => {
                let part = self.inner.put_part(data);
                Box::pin(async move { FaultyStore::answer(answered, part.await) })
            }
        }
    }

    async fn complete(&mut self) -> object_store::Result<PutResult> {
        let answered = self
            .store
            .mutation(format!("complete_multipart {}", self.location))?;
        let result = self.inner.complete().await;
        FaultyStore::answer(answered, result)
    }

    async fn abort(&mut self) -> object_store::Result<()> {
        self.store.check_read()?;
        self.inner.abort().await
    }
}
