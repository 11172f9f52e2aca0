//! The safe Rust model of the token: module state, slots and tokens,
//! sessions, objects and their attribute policy, and the operations of the
//! PKCS#11 API in safe form. No raw pointers here; the FFI layer calls in.

pub mod crypto;
pub mod dual;
pub mod events;
pub mod fork_gate;
pub mod handles;
pub mod ivcounter;
pub mod key_policy;
pub mod message;
pub mod module;
pub mod object;
pub mod objects;
pub mod operations;
pub mod opstate;
pub mod policy;
pub mod session;
pub mod template;
pub mod tls_binding;
pub mod token;
