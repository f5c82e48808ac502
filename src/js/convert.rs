//! The boundary's conversions: JavaScript numbers to the core's integers, times and
//! durations, and the last refusal to its code and message.

use core::time::Duration;

use crate::{Error, Instant, Number};

/// The largest integer a JS number holds exactly (`Number.MAX_SAFE_INTEGER`).
const MAX_SAFE: u64 = (1 << 53) - 1;

/// An argument that is not what the boundary accepts.
pub(super) fn invalid(what: &str, x: f64, range: &str) -> Error {
    Error::InvalidArgument(format!("{what} must be an integer in {range}, got {x}"))
}

/// `x` as a `u16`, if it is an integer in range.
#[inline]
pub(super) fn to_u16(what: &str, x: f64) -> Result<u16, Error> {
    let n = x as u16;
    if f64::from(n) == x {
        Ok(n)
    } else {
        Err(invalid(what, x, "0..=65535"))
    }
}

/// `x` as a `u64`, if it is a safe non-negative integer.
#[inline]
pub(super) fn to_u64(what: &str, x: f64) -> Result<u64, Error> {
    let n = x as u64;
    if n <= MAX_SAFE && n as f64 == x {
        Ok(n)
    } else {
        Err(invalid(what, x, "0..=Number.MAX_SAFE_INTEGER"))
    }
}

/// `n` as a JS number, if it is a safe integer.
#[inline]
pub(super) fn to_f64(n: Number) -> Result<f64, Error> {
    if n <= MAX_SAFE {
        Ok(n as f64)
    } else {
        Err(Error::UnsafeInteger(format!(
            "the transaction issued {n}, beyond Number.MAX_SAFE_INTEGER; actualize it"
        )))
    }
}

/// Milliseconds on the driver's clock as the core's instant (negative and NaN clamp to 0).
#[inline]
pub(super) fn instant(now_ms: f64) -> Instant {
    Instant::from_nanos((now_ms * 1e6) as u64)
}

/// A duration given in milliseconds (non-negative, finite).
pub(super) fn duration(what: &str, ms: f64) -> Result<Duration, Error> {
    if ms.is_finite() && ms >= 0.0 {
        Ok(Duration::from_secs_f64(ms / 1000.0))
    } else {
        Err(Error::InvalidArgument(format!(
            "{what} must be a finite number of milliseconds >= 0, got {ms}"
        )))
    }
}

/// The code of the refusal `e` (`""` if none).
pub(super) fn code(e: &Option<Error>) -> String {
    e.as_ref().map_or("", |e| e.kind().code()).to_owned()
}

/// The message of the refusal `e` (`""` if none).
pub(super) fn message(e: &Option<Error>) -> String {
    e.as_ref().map_or_else(String::new, Error::to_string)
}
