//! What the etcd store does when a request keeps failing: tell a lost majority from a passing
//! fault by asking every member directly, wait for the majority (saying so, rate-limited) up
//! to a deadline, and turn a fault that cannot clear by itself into the store's failure
//! ([`Storage::failure`](crate::Storage::failure)), so a run stops instead of retrying forever.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use etcd_client::{Client, ConnectOptions};

use crate::store::retry::WarnLimiter;

/// How long a request fails before the members are counted.
pub(crate) const COUNT_AFTER: Duration = Duration::from_secs(1);

/// How long a count of reachable members stays fresh (requests failing together share it).
const COUNT_FRESH: Duration = Duration::from_secs(1);

/// How long one member has to answer a status request.
const STATUS_TIMEOUT: Duration = Duration::from_millis(700);

/// The shortest time between two "no majority" lines.
const WARN_INTERVAL: Duration = Duration::from_secs(5);

/// What a request that keeps failing on the transport should do next. A cluster that no
/// request has reached yet is never waited for: its requests give up after their own retry
/// time, so a wrong address is reported at once.
pub(crate) enum Next {
    /// Retry as usual: a majority is reachable (or waiting for one is off).
    Retry,
    /// Keep retrying past the request's own deadline: the majority is lost, and the store
    /// waits for it.
    WaitForMajority,
    /// Give up: the majority has been lost for longer than the store waits; this is the
    /// store's failure now.
    GiveUp(String),
}

/// The members of one cluster, asked one by one, and the state of an outage.
pub(crate) struct Quorum {
    label: String,
    /// One client per member, each talking to that member only.
    members: Vec<Client>,
    /// How long a lost majority is waited for (`None`: not at all, requests give up after
    /// their own retry time).
    wait: Option<Duration>,
    state: Mutex<State>,
    warnings: WarnLimiter,
}

#[derive(Default)]
struct State {
    /// When the majority was first found lost, in the outage under way.
    lost_since: Option<Instant>,
    /// The last count: when, and how many members answered.
    counted: Option<(Instant, usize)>,
    /// The error that cannot clear by itself, once met.
    failure: Option<String>,
    /// Whether any request ever succeeded: a cluster never reached is not waited for (its
    /// address may be wrong); one that lost its majority is.
    reached: bool,
}

impl Quorum {
    /// Connects one client per endpoint (lazily, as the store's own client).
    pub(crate) async fn connect(
        label: String, endpoints: &[String], wait: Option<Duration>,
    ) -> Self {
        let mut members = Vec::new();
        for ep in endpoints {
            let options = ConnectOptions::new()
                .with_timeout(STATUS_TIMEOUT)
                .with_connect_timeout(STATUS_TIMEOUT);
            if let Ok(c) = Client::connect([ep.as_str()], Some(options)).await {
                members.push(c);
            }
        }
        Self {
            label,
            members,
            wait,
            state: Mutex::new(State::default()),
            warnings: WarnLimiter::new(WARN_INTERVAL),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The store's failure, if it met one that cannot clear by itself.
    pub(crate) fn failure(&self) -> Option<String> {
        self.state().failure.clone()
    }

    /// Records a failure that cannot clear by itself (the first one is kept).
    pub(crate) fn fail(&self, failure: String) {
        self.state().failure.get_or_insert(failure);
    }

    /// How many members answer a status request, counted at most once per `COUNT_FRESH`.
    pub(crate) async fn reachable(&self) -> usize {
        if let Some((at, n)) = self.state().counted
            && at.elapsed() < COUNT_FRESH
        {
            return n;
        }
        let asks = self.members.iter().map(|c| {
            let mut m = c.maintenance_client();
            async move {
                tokio::time::timeout(STATUS_TIMEOUT, m.status())
                    .await
                    .is_ok_and(|r| r.is_ok())
            }
        });
        let n = futures::future::join_all(asks)
            .await
            .into_iter()
            .filter(|ok| *ok)
            .count();
        self.state().counted = Some((Instant::now(), n));
        n
    }

    /// The number of members.
    pub(crate) fn members(&self) -> usize {
        self.members.len()
    }

    /// A request (`what`) has failed on the transport since `failing_since`: counts the
    /// members and says what to do next.
    pub(crate) async fn after_failing(&self, what: &str, failing_since: Instant) -> Next {
        if failing_since.elapsed() < COUNT_AFTER {
            return Next::Retry;
        }
        let Some(wait) = self.wait else {
            return Next::Retry;
        };
        if !self.state().reached {
            return Next::Retry;
        }
        let total = self.members();
        let reachable = self.reachable().await;
        if reachable * 2 > total {
            return Next::Retry;
        }
        let since = *self.state().lost_since.get_or_insert_with(Instant::now);
        let lost_for = since.elapsed();
        if lost_for > wait {
            let failure = format!(
                "{}: no majority ({reachable} of {total} members reachable) for {:.0} s, longer than the store waits ({} s); start the members that are down, then run again",
                self.label,
                lost_for.as_secs_f64(),
                wait.as_secs()
            );
            self.fail(failure.clone());
            return Next::GiveUp(failure);
        }
        self.warnings.warn("no majority", || {
            format!(
                "{}: no majority ({reachable} of {total} members reachable); waiting ({:.0} s of at most {} s; {what})",
                self.label,
                lost_for.as_secs_f64(),
                wait.as_secs()
            )
        });
        Next::WaitForMajority
    }

    /// A request succeeded: an outage under way is over.
    pub(crate) fn succeeded(&self) {
        let mut s = self.state();
        s.reached = true;
        if let Some(since) = s.lost_since.take() {
            s.counted = None;
            drop(s);
            tracing::info!(
                "{}: the majority is back after {:.1} s; going on",
                self.label,
                since.elapsed().as_secs_f64()
            );
        }
    }
}
