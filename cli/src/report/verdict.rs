//! The page a judgement prints — `compare` against a baseline, `check-floors`
//! against portable floors: a heading, a table of verdicts, a summary line and
//! notes, as text, markdown (for a pull-request comment) or JSON.

use std::fmt::Write;

use serde::Serialize;

use crate::report::text::table;
use crate::safe_text::escape;

/// Output formats of `compare`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompareFormat {
    /// Table.
    Text,
    /// hsm-bench-compare/1 JSON.
    Json,
    /// Markdown table (e.g. for a pull-request comment).
    Markdown,
}

/// A judgement that renders as a verdict page.
pub trait VerdictPage: Serialize {
    /// What it is (`comparison`, `floors`) and the line that says of what.
    fn heading(&self) -> (&'static str, String);
    /// Table headers and rows.
    fn rows(&self) -> (Vec<String>, Vec<Vec<String>>);
    /// One line of counts.
    fn summary_line(&self) -> String;
    /// Lines under the summary (missing results, warnings, what was not judged).
    fn notes(&self) -> Vec<String>;

    /// Render in `format`.
    fn render(&self, format: CompareFormat) -> String {
        match format {
            CompareFormat::Text => self.render_text(),
            CompareFormat::Json => self.render_json(),
            CompareFormat::Markdown => self.render_markdown(),
        }
    }

    /// Text: `title: subtitle`, the table, the summary, the notes; module
    /// names and descriptions come from result files and are escaped.
    fn render_text(&self) -> String {
        let (title, subtitle) = self.heading();
        let mut out = format!("{title}: {}\n", escape(&subtitle));
        let (h, r) = self.rows();
        out.push_str(&table(&h, &r, 2));
        let _ = writeln!(out, "{}", escape(&self.summary_line()));
        for n in self.notes() {
            let _ = writeln!(out, "{}", escape(&n));
        }
        out
    }

    /// Markdown: a level-3 heading, a table, the summary and the notes as a
    /// list; text escaped as in [`render_text`](Self::render_text), and `|`
    /// in a cell as `\|`.
    fn render_markdown(&self) -> String {
        let (title, subtitle) = self.heading();
        let mut out = format!("### hsm-bench {title}\n\n{}\n\n", escape(&subtitle));
        let (h, rows) = self.rows();
        let row = |cells: &[String]| {
            cells
                .iter()
                .map(|c| escape(c).replace('|', "\\|"))
                .collect::<Vec<_>>()
                .join(" | ")
        };
        let _ = writeln!(out, "| {} |", row(&h));
        let _ = writeln!(out, "|{}", h.iter().map(|_| "---|").collect::<String>());
        for r in rows {
            let _ = writeln!(out, "| {} |", row(&r));
        }
        let _ = writeln!(out, "\n{}\n", escape(&self.summary_line()));
        for n in self.notes() {
            let _ = writeln!(out, "- {}", escape(&n));
        }
        out
    }

    /// JSON: the judgement itself (controls serde_json leaves raw as `\u`
    /// escapes, [`crate::safe_text::json`]).
    fn render_json(&self) -> String {
        crate::safe_text::json(serde_json::to_string_pretty(self).expect("a judgement serialises"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixtures::{HOSTILE, HOSTILE_SHOWN};

    /// A page whose every text is [`HOSTILE`] (module names and descriptions
    /// come from result files).
    #[derive(Serialize)]
    struct Page(String);

    impl VerdictPage for Page {
        fn heading(&self) -> (&'static str, String) {
            ("comparison", format!("of {}", self.0))
        }
        fn rows(&self) -> (Vec<String>, Vec<Vec<String>>) {
            (
                vec!["module".into(), "op".into()],
                vec![vec![self.0.clone(), "a|b".into()]],
            )
        }
        fn summary_line(&self) -> String {
            format!("1 compared: {}", self.0)
        }
        fn notes(&self) -> Vec<String> {
            vec![format!("warning: {}", self.0)]
        }
    }

    #[test]
    fn text_and_markdown_show_file_text_escaped_and_json_keeps_it() {
        let page = Page(HOSTILE.into());
        for format in [
            CompareFormat::Text,
            CompareFormat::Markdown,
            CompareFormat::Json,
        ] {
            let out = page.render(format);
            let bad: Vec<char> = out
                .chars()
                .filter(|&c| c != '\n' && crate::safe_text::is_unsafe(c))
                .collect();
            assert!(bad.is_empty(), "{format:?}: raw {bad:?} in {out:?}");
        }
        let text = page.render(CompareFormat::Text);
        assert_eq!(text.lines().count(), 6, "{text}");
        assert!(
            text.contains(&format!("warning: {HOSTILE_SHOWN}\n")),
            "{text}"
        );
        let md = page.render(CompareFormat::Markdown);
        assert!(md.contains(&format!("| {HOSTILE_SHOWN} | a\\|b |")), "{md}");
        assert!(
            md.contains(&format!("- warning: {HOSTILE_SHOWN}\n")),
            "{md}"
        );
        let v: serde_json::Value = serde_json::from_str(&page.render(CompareFormat::Json)).unwrap();
        assert_eq!(v, HOSTILE);
    }
}
