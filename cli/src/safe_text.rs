//! Text a module (or a result file) supplied, made safe to show on a terminal
//! and in the text and markdown reports.
//!
//! A token label, manufacturer ID, model or description is whatever bytes the
//! module wrote into a blank-padded `CK_UTF8CHAR` field (PKCS#11 3.0 §3.2,
//! `CK_INFO`, `CK_SLOT_INFO`, `CK_TOKEN_INFO`), and a key's `CKA_LABEL` is
//! whatever the token stores. Printed as they are, an ESC sequence moves the
//! cursor or rewrites the screen, an OSC sequence retitles the window or plants
//! a link, BEL rings, a newline forges a line of the report, and a bidi override
//! (U+202E) shows text in another order than it is (CVE-2021-42574). So:
//!
//! - [`decode`] turns a `CK_UTF8CHAR` field into text, each byte of invalid
//!   UTF-8 as the four characters `\xHH` (lossy, but the byte stays visible);
//! - [`escape`] shows each character that could act on a terminal as a visible
//!   escape (`\e`, `\n`, `\x07`, `\u{9b}`, `\u{202e}`) and leaves all other
//!   text, non-ASCII letters included, as it is. Its output holds no such
//!   character and no other backslash escape than its own, so escaping twice
//!   changes nothing (a message built from escaped parts may be escaped again);
//! - [`json`] writes the characters serde_json leaves raw (DEL, the C1 controls,
//!   the bidi controls) as JSON `\uXXXX` escapes: the parsed text is unchanged.
//!
//! The result model and the JSON keep the text itself; the escaping happens
//! where text meets a terminal or a report meant to be read as text.

use std::borrow::Cow;
use std::fmt::Write as _;

/// Whether `c` may act on a terminal or reorder what is shown: the C0
/// controls (ESC, BEL, newline, tab …), DEL, the C1 controls (U+0080–U+009F,
/// U+009B being CSI), the line and paragraph separators and the Unicode bidi
/// controls (ALM, LRM, RLM, LRE … RLO, LRI … PDI).
pub fn is_unsafe(c: char) -> bool {
    matches!(
        c,
        '\u{0}'..='\u{1f}'
            | '\u{7f}'..='\u{9f}'
            | '\u{61c}'
            | '\u{200e}'
            | '\u{200f}'
            | '\u{2028}'..='\u{202e}'
            | '\u{2066}'..='\u{2069}'
    )
}

/// `s` with every [`is_unsafe`] character written as a visible escape: `\t`,
/// `\n`, `\r`, `\e` (ESC), `\xHH` for the other C0 controls and DEL, `\u{HEX}`
/// for the rest. Borrows `s` when there is nothing to escape.
pub fn escape(s: &str) -> Cow<'_, str> {
    if !s.chars().any(is_unsafe) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        match c {
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\u{1b}' => out.push_str("\\e"),
            c if is_unsafe(c) && (c as u32) < 0x80 => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if is_unsafe(c) => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// A `CK_UTF8CHAR` field (or any byte string a module returned) as text: valid
/// UTF-8 as it is, each byte of invalid UTF-8 as `\xHH`.
pub fn decode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        out.push_str(chunk.valid());
        for b in chunk.invalid() {
            let _ = write!(out, "\\x{b:02x}");
        }
    }
    out
}

/// JSON text (as serde_json writes it) with DEL, the C1 controls and the bidi
/// controls as `\uXXXX`: serde_json escapes only the C0 controls, and these
/// characters can only stand inside JSON strings, where the escape reads back
/// as the same character.
pub fn json(text: String) -> String {
    if !text.chars().any(is_unsafe) {
        return text;
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        // The C0 controls are already escaped in valid JSON; a raw newline
        // is pretty-printing between tokens and stays.
        if is_unsafe(c) && c as u32 >= 0x20 {
            let _ = write!(out, "\\u{:04x}", c as u32);
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_are_shown_as_escapes() {
        assert_eq!(escape("plain token"), "plain token");
        assert!(matches!(escape("plain"), Cow::Borrowed(_)));
        assert_eq!(escape("a\u{1b}]0;pwned\u{7}b"), "a\\e]0;pwned\\x07b");
        assert_eq!(escape("line\nforged\r\tx"), "line\\nforged\\r\\tx");
        assert_eq!(escape("\0\u{7f}"), "\\x00\\x7f");
        assert_eq!(escape("\u{9b}31m"), "\\u{9b}31m");
        assert_eq!(escape("\u{85}"), "\\u{85}");
        assert_eq!(escape("abc\u{202e}fed\u{202c}"), "abc\\u{202e}fed\\u{202c}");
        for c in ['\u{202a}', '\u{2066}', '\u{2069}', '\u{200f}', '\u{2028}'] {
            assert_eq!(escape(&c.to_string()), format!("\\u{{{:x}}}", c as u32));
        }
        // Letters, symbols and the other format characters are text.
        assert_eq!(
            escape("µs ± 5% — ÷ █ 日本 \u{200b}"),
            "µs ± 5% — ÷ █ 日本 \u{200b}"
        );
    }

    #[test]
    fn escaped_text_holds_no_unsafe_character_and_escaping_twice_changes_nothing() {
        let all: String = (0u32..=0x2100)
            .chain(0x2000..0x2070)
            .filter_map(char::from_u32)
            .collect();
        let once = escape(&all).into_owned();
        assert!(!once.chars().any(is_unsafe), "{once:?}");
        assert_eq!(escape(&once), once);
    }

    #[test]
    fn invalid_utf8_is_decoded_visibly() {
        assert_eq!(decode(b"token"), "token");
        assert_eq!(decode(b"t\xffk"), "t\\xffk");
        assert_eq!(decode("é€".as_bytes()), "é€");
        // A truncated sequence is one invalid run, shown byte by byte.
        assert_eq!(decode(b"a\xe2\x82"), "a\\xe2\\x82");
        assert_eq!(decode(b"\xc3\x28"), "\\xc3(");
        // Decoding keeps controls; escaping shows them.
        assert_eq!(escape(&decode(b"\x1b[2J\xff")), "\\e[2J\\xff");
    }

    #[test]
    fn json_escapes_keep_the_text() {
        let label = "a\u{1b}]0;x\u{7}\n\u{7f}\u{9b}\u{202e}é";
        let text = serde_json::to_string_pretty(&serde_json::json!({ "label": label })).unwrap();
        assert!(text.contains('\u{9b}'), "serde_json leaves C1 raw");
        let safe = json(text);
        assert!(!safe.chars().any(|c| is_unsafe(c) && c != '\n'), "{safe:?}");
        assert!(
            safe.contains("\\u009b") && safe.contains("\\u202e"),
            "{safe}"
        );
        let back: serde_json::Value = serde_json::from_str(&safe).unwrap();
        assert_eq!(back["label"], label);
    }
}
