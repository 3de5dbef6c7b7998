//! The styles of the terminal UI: colours where the terminal has them,
//! bold and reverse video where it does not.

use ratatui::style::{Color, Modifier, Style};

/// The styles of one run: with colour, or attributes only.
#[derive(Clone, Copy)]
pub struct Theme {
    pub color: bool,
}

impl Theme {
    fn pick(self, colored: Style, plain: Style) -> Style {
        if self.color { colored } else { plain }
    }
    pub fn title(self) -> Style {
        self.pick(
            Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD),
            Style::new().add_modifier(Modifier::BOLD),
        )
    }
    pub fn selected(self) -> Style {
        self.pick(
            Style::new().bg(Color::Blue).fg(Color::White),
            Style::new().add_modifier(Modifier::REVERSED),
        )
    }
    pub fn bad(self) -> Style {
        self.pick(
            Style::new().fg(Color::Red).add_modifier(Modifier::BOLD),
            Style::new().add_modifier(Modifier::BOLD),
        )
    }
    pub fn good(self) -> Style {
        self.pick(Style::new().fg(Color::Green), Style::new())
    }
    pub fn warn(self) -> Style {
        self.pick(Style::new().fg(Color::Yellow), Style::new())
    }
    pub fn dim(self) -> Style {
        self.pick(Style::new().fg(Color::DarkGray), Style::new())
    }
    pub fn banner(self) -> Style {
        self.pick(
            Style::new()
                .bg(Color::Red)
                .fg(Color::White)
                .add_modifier(Modifier::BOLD),
            Style::new().add_modifier(Modifier::REVERSED | Modifier::BOLD),
        )
    }
}
