//! The one error type of the safe layers: a PKCS#11 return value.
//!
//! Every function below the FFI layer returns [`Result`]; the FFI layer turns
//! the error into the `CK_RV` the caller sees (PKCS#11 3.0 base spec §5.1).
//! `CKR_BUFFER_TOO_SMALL` carries the length the caller must supply, because
//! the spec requires `*pulLen` to be set to it (§5.2, "Conventions for
//! functions returning output in a variable-length buffer").

use cryptoki_sys::*;
use std::fmt;

/// A PKCS#11 error: the `CK_RV` to return, plus the required length for
/// `CKR_BUFFER_TOO_SMALL`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Error {
    rv: CK_RV,
    required_len: usize,
}

/// Result of every safe-layer function.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// An error with the given return value.
    pub const fn new(rv: CK_RV) -> Self {
        Error {
            rv,
            required_len: 0,
        }
    }

    /// `CKR_BUFFER_TOO_SMALL`, telling the caller how many bytes it needs.
    pub const fn buffer_too_small(required_len: usize) -> Self {
        Error {
            rv: CKR_BUFFER_TOO_SMALL,
            required_len,
        }
    }

    /// The `CK_RV` value.
    pub const fn rv(&self) -> CK_RV {
        self.rv
    }

    /// For `CKR_BUFFER_TOO_SMALL`: the length the output needs.
    pub const fn required_len(&self) -> usize {
        self.required_len
    }
}

/// Shorthand: `Err(err(CKR_ARGUMENTS_BAD))`.
pub const fn err(rv: CK_RV) -> Error {
    Error::new(rv)
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", rv_name(self.rv))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// What the last SQLite error of this thread was (see [`take_sqlite_fault`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SqliteFault {
    /// No SQLite error since the last look.
    #[default]
    None,
    /// SQLite found the file damaged (`SQLITE_CORRUPT`, `SQLITE_NOTADB`).
    Damage,
    /// Any other SQLite error (busy, I/O, full disk, ...).
    Other,
}

thread_local! {
    static LAST_SQLITE_FAULT: std::cell::Cell<SqliteFault> =
        const { std::cell::Cell::new(SqliteFault::None) };
}

/// The kind of the last SQLite error this thread turned into an [`Error`]
/// since the last call (which forgets it): the storage layer tells a
/// damaged file from a passing failure with it after a call failed.
pub fn take_sqlite_fault() -> SqliteFault {
    LAST_SQLITE_FAULT.with(|f| f.replace(SqliteFault::None))
}

/// True for the SQLite errors that mean the file itself is damaged.
pub fn is_sqlite_damage(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseCorrupt | rusqlite::ErrorCode::NotADatabase)
    )
}

impl From<rusqlite::Error> for Error {
    fn from(e: rusqlite::Error) -> Self {
        let fault = if is_sqlite_damage(&e) {
            crate::log::error(format_args!(
                "storage: {e}: the token file is damaged (`dalek-pkcs11-util verify` names the damage)"
            ));
            SqliteFault::Damage
        } else {
            crate::log::error(format_args!("storage: {e}"));
            SqliteFault::Other
        };
        LAST_SQLITE_FAULT.with(|f| f.set(fault));
        match e {
            rusqlite::Error::SqliteFailure(f, _) if f.code == rusqlite::ErrorCode::DiskFull => {
                err(CKR_DEVICE_MEMORY)
            }
            _ => err(CKR_DEVICE_ERROR),
        }
    }
}

/// The symbolic name of a return value, for logs and messages.
pub fn rv_name(rv: CK_RV) -> &'static str {
    macro_rules! names {
        ($($c:ident),* $(,)?) => {
            match rv {
                $($c => stringify!($c),)*
                _ => "CKR_VENDOR_DEFINED_OR_UNKNOWN",
            }
        };
    }
    names!(
        CKR_OK,
        CKR_CANCEL,
        CKR_HOST_MEMORY,
        CKR_SLOT_ID_INVALID,
        CKR_GENERAL_ERROR,
        CKR_FUNCTION_FAILED,
        CKR_ARGUMENTS_BAD,
        CKR_NO_EVENT,
        CKR_NEED_TO_CREATE_THREADS,
        CKR_CANT_LOCK,
        CKR_ATTRIBUTE_READ_ONLY,
        CKR_ATTRIBUTE_SENSITIVE,
        CKR_ATTRIBUTE_TYPE_INVALID,
        CKR_ATTRIBUTE_VALUE_INVALID,
        CKR_ACTION_PROHIBITED,
        CKR_DATA_INVALID,
        CKR_DATA_LEN_RANGE,
        CKR_DEVICE_ERROR,
        CKR_DEVICE_MEMORY,
        CKR_DEVICE_REMOVED,
        CKR_ENCRYPTED_DATA_INVALID,
        CKR_ENCRYPTED_DATA_LEN_RANGE,
        CKR_FUNCTION_CANCELED,
        CKR_FUNCTION_NOT_PARALLEL,
        CKR_FUNCTION_NOT_SUPPORTED,
        CKR_KEY_HANDLE_INVALID,
        CKR_KEY_SIZE_RANGE,
        CKR_KEY_TYPE_INCONSISTENT,
        CKR_KEY_NOT_NEEDED,
        CKR_KEY_CHANGED,
        CKR_KEY_NEEDED,
        CKR_KEY_INDIGESTIBLE,
        CKR_KEY_FUNCTION_NOT_PERMITTED,
        CKR_KEY_NOT_WRAPPABLE,
        CKR_KEY_UNEXTRACTABLE,
        CKR_MECHANISM_INVALID,
        CKR_MECHANISM_PARAM_INVALID,
        CKR_OBJECT_HANDLE_INVALID,
        CKR_OPERATION_ACTIVE,
        CKR_OPERATION_NOT_INITIALIZED,
        CKR_PIN_INCORRECT,
        CKR_PIN_INVALID,
        CKR_PIN_LEN_RANGE,
        CKR_PIN_EXPIRED,
        CKR_PIN_LOCKED,
        CKR_SESSION_CLOSED,
        CKR_SESSION_COUNT,
        CKR_SESSION_HANDLE_INVALID,
        CKR_SESSION_PARALLEL_NOT_SUPPORTED,
        CKR_SESSION_READ_ONLY,
        CKR_SESSION_EXISTS,
        CKR_SESSION_READ_ONLY_EXISTS,
        CKR_SESSION_READ_WRITE_SO_EXISTS,
        CKR_SIGNATURE_INVALID,
        CKR_SIGNATURE_LEN_RANGE,
        CKR_PARAMETER_SET_NOT_SUPPORTED,
        CKR_PENDING,
        CKR_TEMPLATE_INCOMPLETE,
        CKR_TEMPLATE_INCONSISTENT,
        CKR_TOKEN_NOT_PRESENT,
        CKR_TOKEN_NOT_RECOGNIZED,
        CKR_TOKEN_WRITE_PROTECTED,
        CKR_UNWRAPPING_KEY_HANDLE_INVALID,
        CKR_UNWRAPPING_KEY_SIZE_RANGE,
        CKR_UNWRAPPING_KEY_TYPE_INCONSISTENT,
        CKR_USER_ALREADY_LOGGED_IN,
        CKR_USER_NOT_LOGGED_IN,
        CKR_USER_PIN_NOT_INITIALIZED,
        CKR_USER_TYPE_INVALID,
        CKR_USER_ANOTHER_ALREADY_LOGGED_IN,
        CKR_USER_TOO_MANY_TYPES,
        CKR_WRAPPED_KEY_INVALID,
        CKR_WRAPPED_KEY_LEN_RANGE,
        CKR_WRAPPING_KEY_HANDLE_INVALID,
        CKR_WRAPPING_KEY_SIZE_RANGE,
        CKR_WRAPPING_KEY_TYPE_INCONSISTENT,
        CKR_RANDOM_SEED_NOT_SUPPORTED,
        CKR_RANDOM_NO_RNG,
        CKR_DOMAIN_PARAMS_INVALID,
        CKR_CURVE_NOT_SUPPORTED,
        CKR_BUFFER_TOO_SMALL,
        CKR_SAVED_STATE_INVALID,
        CKR_INFORMATION_SENSITIVE,
        CKR_STATE_UNSAVEABLE,
        CKR_CRYPTOKI_NOT_INITIALIZED,
        CKR_CRYPTOKI_ALREADY_INITIALIZED,
        CKR_MUTEX_BAD,
        CKR_MUTEX_NOT_LOCKED,
        CKR_NEW_PIN_MODE,
        CKR_NEXT_OTP,
        CKR_EXCEEDED_MAX_ITERATIONS,
        CKR_FIPS_SELF_TEST_FAILED,
        CKR_LIBRARY_LOAD_FAILED,
        CKR_PIN_TOO_WEAK,
        CKR_PUBLIC_KEY_INVALID,
        CKR_FUNCTION_REJECTED,
        CKR_TOKEN_RESOURCE_EXCEEDED,
        CKR_OPERATION_CANCEL_FAILED,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffer_too_small_carries_length() {
        let e = Error::buffer_too_small(64);
        assert_eq!(e.rv(), CKR_BUFFER_TOO_SMALL);
        assert_eq!(e.required_len(), 64);
    }

    #[test]
    fn names_known_codes() {
        assert_eq!(rv_name(CKR_PIN_INCORRECT), "CKR_PIN_INCORRECT");
        assert_eq!(format!("{:?}", err(CKR_OK)), "CKR_OK");
        assert_eq!(rv_name(0x8000_1234), "CKR_VENDOR_DEFINED_OR_UNKNOWN");
    }
}
