//! Byte offsets to 1-based line numbers and back, the way `git blame`
//! counts lines: a line ends after each `\n`, and a last line without one
//! still counts.

/// Where each line of a text starts.
pub(super) struct Lines<'a> {
    text: &'a str,
    /// Byte offset of the first byte of each line; `starts[0] == 0`.
    starts: Vec<usize>,
}

impl<'a> Lines<'a> {
    /// Indexes the line starts of `text`.
    pub(super) fn new(text: &'a str) -> Self {
        let starts = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(at, _)| at + 1))
            .collect();
        Lines { text, starts }
    }

    /// The 1-based line holding byte `offset`.
    pub(super) fn line_of(&self, offset: usize) -> u32 {
        // The number of line starts at or before `offset` is the line number.
        let line = self.starts.partition_point(|&start| start <= offset);
        u32::try_from(line).unwrap_or(u32::MAX)
    }

    /// Lines `first..=last` (1-based), without the last one's line ending;
    /// `None` when the range is empty or outside the text.
    pub(super) fn text_of(&self, first: u32, last: u32) -> Option<&'a str> {
        let first = usize::try_from(first).ok()?.checked_sub(1)?;
        let last = usize::try_from(last).ok()?.checked_sub(1)?;
        if first > last {
            return None;
        }
        let start = *self.starts.get(first)?;
        let end = match self.starts.get(last.saturating_add(1)) {
            Some(&next) => next,
            None if last < self.starts.len() => self.text.len(),
            None => return None,
        };
        let lines = self.text.get(start..end)?;
        let lines = lines.strip_suffix('\n').unwrap_or(lines);
        Some(lines.strip_suffix('\r').unwrap_or(lines))
    }
}
