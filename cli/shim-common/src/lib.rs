//! `p11-shim-common`: what the test-only PKCS#11 shims `p11-delay-shim` and
//! `p11-hostile-shim` share. Both wrap a real module and change some of its
//! calls; this crate holds the parts that do not depend on how:
//!
//! - [`names`]: the entries of a 2.40 `CK_FUNCTION_LIST` by name, and the
//!   index of a name in a list of names (at compile time where it is a
//!   constant);
//! - [`parse`]: the numbers and durations of the shims' environment
//!   variables;
//! - [`real`]: loading the real module and copying its function list, and
//!   reading a caller's length pointer that may be NULL.
//!
//! Test-only; never install it.

pub mod names;
pub mod parse;
pub mod real;
