//! An object store that makes the faults an object PLog must survive, over any other
//! ([`FaultyObjects`]): a put that never lands, one that lands but whose answer is lost, one that
//! waits until its name is free; slow puts, refused bundles, and what other hosts do while a
//! HEAD request is on its way. The fence's simulation, the format-2 tests and the S3 tests use
//! it.

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::stream::BoxStream;
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    ObjectStoreExt, PutMultipartOptions, PutOptions, PutPayload, PutResult,
};

/// What happens to a put.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PutFault {
    /// It never lands (the writer crashed, or the connection failed, before it).
    NeverLands,
    /// It lands, and its answer is lost.
    AnswerLost,
    /// It is on its way until the name is free (a request slower than the delete delay: a
    /// slow network, or a retry after a timeout), then lands.
    LandsOnceFree,
}

/// Which put a fault waits for.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Target {
    /// The next put of this name.
    Name(String),
    /// The next put of any event object (`events/...`).
    AnyEventObject,
}

impl Target {
    fn matches(&self, location: &Path) -> bool {
        match self {
            Self::Name(name) => name == location.as_ref(),
            Self::AnyEventObject => location.as_ref().starts_with("events/"),
        }
    }
}

/// An object store with a fault waiting for one put, and switches for the others.
#[derive(Debug)]
pub struct FaultyObjects {
    inner: Arc<dyn ObjectStore>,
    next: Mutex<Option<(Target, PutFault)>>,
    /// HEAD requests answered (an append's look for a bundle).
    pub heads: AtomicU64,
    /// Every put takes 100 ms (its caller's thread waits, as for an answer over a network).
    pub slow: AtomicBool,
    /// Every put of a bundle fails (the store refuses them for a while).
    pub refuse_bundles: AtomicBool,
    /// Runs before the next HEAD request is answered (what other hosts do meanwhile).
    before_head: Mutex<Meanwhile>,
    /// An object the next listings of its folder leave out, and how many more will (a
    /// listing that raced with a writer: it saw a later object and missed this one).
    hidden: Mutex<Option<(String, u32)>>,
}

/// What other hosts do while a request is on its way.
#[derive(Default)]
struct Meanwhile(Option<Box<dyn FnOnce() + Send>>);

impl fmt::Debug for Meanwhile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_some() { "set" } else { "none" })
    }
}

impl Default for FaultyObjects {
    /// Over a new in-memory store (create-if-absent atomic, as on S3 or a local directory).
    fn default() -> Self {
        Self::over(Arc::new(InMemory::new()))
    }
}

impl FaultyObjects {
    /// Over `inner`, with no fault waiting.
    pub fn over(inner: Arc<dyn ObjectStore>) -> Self {
        Self {
            inner,
            next: Mutex::new(None),
            heads: AtomicU64::new(0),
            slow: AtomicBool::new(false),
            refuse_bundles: AtomicBool::new(false),
            before_head: Mutex::new(Meanwhile::default()),
            hidden: Mutex::new(None),
        }
    }

    /// The next `listings` listings of `name`'s folder that would show `name` leave it out.
    pub fn hide_in_listings(&self, name: impl Into<String>, listings: u32) {
        *self.hidden.lock().expect("lock") = Some((name.into(), listings));
    }

    /// The store under the faults, to look at or change without them.
    pub fn inner(&self) -> &Arc<dyn ObjectStore> {
        &self.inner
    }

    /// The next put of `name` meets `fault`.
    pub fn on_put(&self, name: impl Into<String>, fault: PutFault) {
        *self.next.lock().expect("lock") = Some((Target::Name(name.into()), fault));
    }

    /// The next put of any event object meets `fault` (`None`: no fault waits any more).
    pub fn on_next_event_object(&self, fault: Option<PutFault>) {
        *self.next.lock().expect("lock") = fault.map(|f| (Target::AnyEventObject, f));
    }

    /// `meanwhile` runs before the next HEAD request is answered.
    pub fn on_head(&self, meanwhile: impl FnOnce() + Send + 'static) {
        *self.before_head.lock().expect("lock") = Meanwhile(Some(Box::new(meanwhile)));
    }

    /// The fault waiting for a put of `location`, taken.
    fn fault_for(&self, location: &Path) -> Option<PutFault> {
        let mut next = self.next.lock().expect("lock");
        match next.as_ref() {
            Some((target, _)) if target.matches(location) => next.take().map(|(_, f)| f),
            _ => None,
        }
    }
}

impl fmt::Display for FaultyObjects {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "FaultyObjects({})", self.inner)
    }
}

fn failed(what: &str) -> object_store::Error {
    object_store::Error::Generic {
        store: "test",
        source: what.to_string().into(),
    }
}

#[async_trait::async_trait]
impl ObjectStore for FaultyObjects {
    async fn put_opts(
        &self, location: &Path, payload: PutPayload, opts: PutOptions,
    ) -> object_store::Result<PutResult> {
        let fault = self.fault_for(location);
        if self.slow.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(100));
        }
        if self.refuse_bundles.load(Ordering::SeqCst) && location.as_ref().starts_with("bundles/") {
            return Err(failed("the store refuses bundles for now"));
        }
        match fault {
            Some(PutFault::NeverLands) => Err(failed("the put never reached the store")),
            Some(PutFault::AnswerLost) => {
                let _ = self.inner.put_opts(location, payload, opts).await;
                Err(failed("the connection closed before the answer"))
            }
            Some(PutFault::LandsOnceFree) => {
                let waited = std::time::Instant::now();
                while self.inner.head(location).await.is_ok() {
                    assert!(waited.elapsed() < Duration::from_secs(20), "never freed");
                    std::thread::sleep(Duration::from_millis(10));
                }
                self.inner.put_opts(location, payload, opts).await
            }
            None => self.inner.put_opts(location, payload, opts).await,
        }
    }

    async fn put_multipart_opts(
        &self, location: &Path, opts: PutMultipartOptions,
    ) -> object_store::Result<Box<dyn MultipartUpload>> {
        self.inner.put_multipart_opts(location, opts).await
    }

    async fn get_opts(
        &self, location: &Path, options: GetOptions,
    ) -> object_store::Result<GetResult> {
        if options.head {
            self.heads.fetch_add(1, Ordering::SeqCst);
            let meanwhile = self.before_head.lock().expect("lock").0.take();
            if let Some(f) = meanwhile {
                // On a thread of its own: the other host's requests block on their own.
                std::thread::spawn(f)
                    .join()
                    .expect("what the other host did");
            }
        }
        self.inner.get_opts(location, options).await
    }

    fn delete_stream(
        &self, locations: BoxStream<'static, object_store::Result<Path>>,
    ) -> BoxStream<'static, object_store::Result<Path>> {
        self.inner.delete_stream(locations)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        self.inner.list(prefix)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> object_store::Result<ListResult> {
        let mut listed = self.inner.list_with_delimiter(prefix).await?;
        let mut hidden = self.hidden.lock().expect("lock");
        if let Some((name, left)) = hidden.as_mut()
            && listed.objects.iter().any(|m| m.location.as_ref() == name)
        {
            listed.objects.retain(|m| m.location.as_ref() != name);
            *left -= 1;
            if *left == 0 {
                *hidden = None;
            }
        }
        Ok(listed)
    }

    async fn copy_opts(
        &self, from: &Path, to: &Path, options: CopyOptions,
    ) -> object_store::Result<()> {
        self.inner.copy_opts(from, to, options).await
    }
}
