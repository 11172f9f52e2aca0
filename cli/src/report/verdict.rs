//! The page a judgement prints — `compare` against a baseline, `check-floors`
//! against portable floors: a heading, a table of verdicts, a summary line and
//! notes, as text, markdown (for a pull-request comment) or JSON.

use std::fmt::Write;

use serde::Serialize;

use crate::report::text::table;

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

    /// Text: `title: subtitle`, the table, the summary, the notes.
    fn render_text(&self) -> String {
        let (title, subtitle) = self.heading();
        let mut out = format!("{title}: {subtitle}\n");
        let (h, r) = self.rows();
        out.push_str(&table(&h, &r, 2));
        out.push_str(&self.summary_line());
        out.push('\n');
        for n in self.notes() {
            let _ = writeln!(out, "{n}");
        }
        out
    }

    /// Markdown: a level-3 heading, a table, the summary and the notes as a list.
    fn render_markdown(&self) -> String {
        let (title, subtitle) = self.heading();
        let mut out = format!("### hsm-bench {title}\n\n{subtitle}\n\n");
        let (h, rows) = self.rows();
        let _ = writeln!(out, "| {} |", h.join(" | "));
        let _ = writeln!(out, "|{}", h.iter().map(|_| "---|").collect::<String>());
        for r in rows {
            let _ = writeln!(out, "| {} |", r.join(" | "));
        }
        let _ = writeln!(out, "\n{}\n", self.summary_line());
        for n in self.notes() {
            let _ = writeln!(out, "- {n}");
        }
        out
    }

    /// JSON: the judgement itself.
    fn render_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a judgement serialises")
    }
}
