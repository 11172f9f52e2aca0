//! `P11_HOSTILE`: the misbehaviours, parsed once (the grammar is in the
//! crate's documentation). Nothing here touches the real module.

use std::time::Duration;

use p11_shim_common::parse::{parse_duration, parse_number};

use crate::names::{FUNCTIONS, OUTPUT_FUNCTIONS, find, index};

/// A misbehaviour that starts after the first `after` calls of its function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct After<T> {
    /// What the function does once it misbehaves.
    pub value: T,
    /// Calls of the function that behave first (`@N`, default 0).
    pub after: u64,
}

/// How `crash=C_Fn:KIND` ends the process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CrashKind {
    /// A write to the null page: SIGSEGV.
    Segv,
    /// `std::process::abort`: SIGABRT.
    Abort,
    /// `_exit(3)`: the process ends with status 3, no destructors, no atexit.
    Exit,
}

/// What the shim does to one function (index of `names::FUNCTIONS`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FnConf {
    /// The count or length it reports (`slot_count`, `mech_count`,
    /// `object_count`, `attr_len`).
    pub count: Option<After<u64>>,
    /// Claims its output is 4096 bytes longer than the caller's buffer.
    pub overlong: Option<After<()>>,
    /// Ends the process.
    pub crash: Option<After<CrashKind>>,
    /// Sleeps before forwarding.
    pub hang: Option<After<Duration>>,
    /// Allocates until the allocator fails.
    pub oom: Option<After<()>>,
}

impl FnConf {
    /// Whether the function needs the shim's wrapper.
    pub fn active(&self) -> bool {
        *self != FnConf::default()
    }
}

/// Replacement text of the info fields (already unescaped).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Texts {
    /// `CK_TOKEN_INFO.label`.
    pub token_label: Option<Vec<u8>>,
    /// `manufacturerID` of `CK_TOKEN_INFO`, `CK_SLOT_INFO` and `CK_INFO`.
    pub manufacturer: Option<Vec<u8>>,
    /// `CK_TOKEN_INFO.model`.
    pub model: Option<Vec<u8>>,
    /// `CK_SLOT_INFO.slotDescription`.
    pub slot_description: Option<Vec<u8>>,
}

/// Everything `P11_HOSTILE` asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// Per function, by index of `names::FUNCTIONS`.
    pub fns: Vec<FnConf>,
    /// `C_GetFunctionList` returns CKR_OK and a NULL list.
    pub null_function_list: bool,
    /// `C_GetInterface` / `C_GetInterfaceList` hand out a NULL function list.
    pub null_interface: bool,
    /// Entries of the function list set to NULL.
    pub null_fns: Vec<usize>,
    /// Info text fields to replace.
    pub texts: Texts,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            fns: vec![FnConf::default(); FUNCTIONS.len()],
            null_function_list: false,
            null_interface: false,
            null_fns: Vec::new(),
            texts: Texts::default(),
        }
    }
}

/// The longest `hang=C_Fn:DURATION`: a day.
pub const MAX_HANG: Duration = Duration::from_secs(86_400);

/// TEXT with the escapes `\e` (ESC), `\a` (BEL), `\n`, `\r`, `\t`, `\\` and
/// `\xHH` (any byte, also one that makes the text invalid UTF-8).
pub fn unescape(s: &str) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(s.len());
    let mut bytes = s.bytes();
    while let Some(b) = bytes.next() {
        if b != b'\\' {
            out.push(b);
            continue;
        }
        out.push(match bytes.next() {
            Some(b'e') => 0x1b,
            Some(b'a') => 0x07,
            Some(b'n') => b'\n',
            Some(b'r') => b'\r',
            Some(b't') => b'\t',
            Some(b'\\') => b'\\',
            Some(b'x') => {
                let hex: Vec<u8> = bytes.by_ref().take(2).collect();
                std::str::from_utf8(&hex)
                    .ok()
                    .filter(|h| h.len() == 2)
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                    .ok_or_else(|| format!("'\\x' needs two hex digits in '{s}'"))?
            }
            Some(c) => return Err(format!("unknown escape '\\{}' in '{s}'", c as char)),
            None => return Err(format!("'{s}' ends in a lone backslash")),
        });
    }
    Ok(out)
}

/// `VALUE@N` into (VALUE, N); N is 0 without `@`.
fn split_after(v: &str) -> Result<(&str, u64), String> {
    match v.rsplit_once('@') {
        Some((value, n)) => Ok((value, parse_number(n)?)),
        None => Ok((v, 0)),
    }
}

/// A function name of the 2.40 list.
fn function(name: &str) -> Result<usize, String> {
    let name = name.trim();
    find(name).ok_or_else(|| format!("'{name}' is not a PKCS#11 2.40 function"))
}

/// Set `slot` once; a second entry for the same thing is an error.
fn once<T>(slot: &mut Option<T>, value: T, entry: &str) -> Result<(), String> {
    if slot.is_some() {
        return Err(format!("'{entry}' repeats an earlier entry"));
    }
    *slot = Some(value);
    Ok(())
}

/// Parse `P11_HOSTILE` (comma-separated entries; empty entries are ignored).
/// An error names the entry.
pub fn parse(spec: &str) -> Result<Config, String> {
    let mut c = Config::default();
    for entry in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        parse_entry(&mut c, entry).map_err(|e| format!("P11_HOSTILE entry '{entry}': {e}"))?;
    }
    Ok(c)
}

fn parse_entry(c: &mut Config, entry: &str) -> Result<(), String> {
    let (key, value) = match entry.split_once('=') {
        Some((k, v)) => (k.trim(), Some(v)),
        None => (entry, None),
    };
    let value = || value.ok_or_else(|| format!("'{key}' needs a value ({key}=...)"));
    let count = |c: &mut Config, f: &str, v: &str| -> Result<(), String> {
        let (n, after) = split_after(v)?;
        let value = parse_number(n)?;
        once(&mut c.fns[index(f)].count, After { value, after }, entry)
    };
    match key {
        "slot_count" => count(c, "C_GetSlotList", value()?)?,
        "mech_count" => count(c, "C_GetMechanismList", value()?)?,
        "object_count" => count(c, "C_FindObjects", value()?)?,
        "attr_len" => count(c, "C_GetAttributeValue", value()?)?,
        "overlong" => {
            let (f, after) = split_after(value()?)?;
            let i = function(f)?;
            if !OUTPUT_FUNCTIONS.contains(&FUNCTIONS[i]) {
                return Err(format!(
                    "{} writes no output length (overlong takes: {})",
                    FUNCTIONS[i],
                    OUTPUT_FUNCTIONS.join(", ")
                ));
            }
            once(&mut c.fns[i].overlong, After { value: (), after }, entry)?;
        }
        "null_function_list" | "null_interface" if value().is_ok() => {
            return Err(format!("'{key}' takes no value"));
        }
        "null_function_list" => c.null_function_list = true,
        "null_interface" => c.null_interface = true,
        "null_fn" => {
            let i = function(value()?)?;
            if c.null_fns.contains(&i) {
                return Err(format!("'{entry}' repeats an earlier entry"));
            }
            c.null_fns.push(i);
        }
        "token_label" => once(&mut c.texts.token_label, unescape(value()?)?, entry)?,
        "manufacturer" => once(&mut c.texts.manufacturer, unescape(value()?)?, entry)?,
        "model" => once(&mut c.texts.model, unescape(value()?)?, entry)?,
        "slot_description" => once(&mut c.texts.slot_description, unescape(value()?)?, entry)?,
        "crash" => {
            let (v, after) = split_after(value()?)?;
            let (f, kind) = v.split_once(':').ok_or("crash takes C_Fn:KIND")?;
            let kind = match kind.trim() {
                "segv" => CrashKind::Segv,
                "abort" => CrashKind::Abort,
                "exit" => CrashKind::Exit,
                k => return Err(format!("unknown crash kind '{k}' (segv, abort, exit)")),
            };
            let i = function(f)?;
            once(&mut c.fns[i].crash, After { value: kind, after }, entry)?;
        }
        "hang" => {
            let (v, after) = split_after(value()?)?;
            let (f, d) = v.split_once(':').ok_or("hang takes C_Fn:DURATION")?;
            let i = function(f)?;
            let value = parse_duration(d, MAX_HANG)?;
            once(&mut c.fns[i].hang, After { value, after }, entry)?;
        }
        "oom" => {
            let (f, after) = split_after(value()?)?;
            let i = function(f)?;
            once(&mut c.fns[i].oom, After { value: (), after }, entry)?;
        }
        _ => {
            return Err(format!(
                "unknown misbehaviour '{key}' (slot_count, mech_count, object_count, attr_len, \
                 overlong, null_function_list, null_interface, null_fn, token_label, \
                 manufacturer, model, slot_description, crash, hang, oom)"
            ));
        }
    }
    Ok(())
}

/// `text` padded with spaces and cut to `field`'s size, written into it.
pub fn fill(field: &mut [u8], text: &[u8]) {
    field.fill(b' ');
    let n = text.len().min(field.len());
    field[..n].copy_from_slice(&text[..n]);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fns(c: &Config, f: &str) -> FnConf {
        c.fns[find(f).unwrap()].clone()
    }

    #[test]
    fn counts_parse_in_decimal_and_hex_with_an_after() {
        let c = parse("slot_count=0x10000000000, mech_count=70000@2,object_count=3,attr_len=1")
            .unwrap();
        let at = |value, after| Some(After { value, after });
        assert_eq!(fns(&c, "C_GetSlotList").count, at(1 << 40, 0));
        assert_eq!(fns(&c, "C_GetMechanismList").count, at(70000, 2));
        assert_eq!(fns(&c, "C_FindObjects").count, at(3, 0));
        assert_eq!(fns(&c, "C_GetAttributeValue").count, at(1, 0));
        assert!(fns(&c, "C_Sign") == FnConf::default());
        assert!(parse("slot_count=lots").is_err());
        assert!(parse("slot_count").is_err());
        assert!(parse("slot_count=1,slot_count=2").is_err());
    }

    #[test]
    fn overlong_takes_output_functions_only() {
        let c = parse("overlong=C_Digest,overlong=C_Sign@1").unwrap();
        assert_eq!(
            fns(&c, "C_Sign").overlong,
            Some(After {
                value: (),
                after: 1
            })
        );
        assert!(fns(&c, "C_Digest").overlong.is_some());
        let e = parse("overlong=C_GenerateRandom").unwrap_err();
        assert!(
            e.contains("C_GenerateRandom") && e.contains("no output length"),
            "{e}"
        );
        assert!(parse("overlong=C_Nope").unwrap_err().contains("C_Nope"));
    }

    #[test]
    fn null_entries_parse() {
        let c = parse("null_function_list,null_interface,null_fn=C_Sign,null_fn=C_Login").unwrap();
        assert!(c.null_function_list && c.null_interface);
        assert_eq!(c.null_fns, [index("C_Sign"), index("C_Login")]);
        assert!(parse("null_fn=C_Sign,null_fn=C_Sign").is_err());
        assert!(parse("null_interface=1").is_err());
        assert!(parse("null_fn=Sign").is_err());
    }

    #[test]
    fn crash_hang_and_oom_parse() {
        let c = parse("crash=C_Sign:segv@3,crash=C_Digest:abort,crash=C_Login:exit").unwrap();
        assert_eq!(
            fns(&c, "C_Sign").crash,
            Some(After {
                value: CrashKind::Segv,
                after: 3
            })
        );
        assert_eq!(fns(&c, "C_Digest").crash.unwrap().value, CrashKind::Abort);
        assert_eq!(fns(&c, "C_Login").crash.unwrap().value, CrashKind::Exit);
        let c = parse("hang=C_Sign:1.5s@2,oom=C_Encrypt@0x10,oom=C_Digest").unwrap();
        assert_eq!(
            fns(&c, "C_Sign").hang,
            Some(After {
                value: Duration::from_millis(1500),
                after: 2
            })
        );
        assert_eq!(fns(&c, "C_Encrypt").oom.unwrap().after, 16);
        assert_eq!(fns(&c, "C_Digest").oom.unwrap().after, 0);
        // Up to a day (longer than the delay shim's 60 s).
        let c = parse("hang=C_Sign:86400s").unwrap();
        assert_eq!(fns(&c, "C_Sign").hang.unwrap().value, MAX_HANG);
        for bad in [
            "crash=C_Sign",
            "crash=C_Sign:boom",
            "crash=C_Nope:segv",
            "hang=C_Sign",
            "hang=C_Sign:5h",
            "hang=C_Sign:10",
            "hang=C_Sign:86401s",
            "oom=C_Sign@x",
            "oom",
        ] {
            let e = parse(bad).unwrap_err();
            assert!(e.contains(bad), "{bad}: {e}");
        }
    }

    #[test]
    fn texts_unescape_and_fill_their_field() {
        let c =
            parse(r"token_label=a\eb\a\x00\xff\n\r\\,model=m,manufacturer=x,slot_description=d")
                .unwrap();
        assert_eq!(
            c.texts.token_label.as_deref(),
            Some(&b"a\x1bb\x07\x00\xff\n\r\\"[..])
        );
        assert_eq!(c.texts.model.as_deref(), Some(&b"m"[..]));
        assert!(c.texts.manufacturer.is_some() && c.texts.slot_description.is_some());
        assert!(parse(r"model=\q").is_err());
        assert!(parse(r"model=\x4").is_err());
        assert!(parse(r"model=a\").is_err());
        let mut field = [0u8; 4];
        fill(&mut field, b"ab");
        assert_eq!(&field, b"ab  ");
        fill(&mut field, b"abcdef");
        assert_eq!(&field, b"abcd");
    }

    #[test]
    fn unknown_entries_are_named() {
        let e = parse("slot_count=1, colour=red").unwrap_err();
        assert!(e.contains("'colour=red'") && e.contains("unknown"), "{e}");
        assert_eq!(parse("").unwrap(), Config::default());
        assert!(!FnConf::default().active());
    }
}
