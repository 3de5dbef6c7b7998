//! Money, sizes and durations as a finding's reason writes them, formatted
//! where the reason is (no allocation).

use std::fmt::{self, Write as _};

/// `$1,234.50/mo`, written where it is formatted (no allocation).
pub fn usd(v: f64) -> impl fmt::Display {
    fmt::from_fn(move |f| {
        let cents = (v * 100.0).round() as i64;
        let (whole, frac) = (cents / 100, (cents % 100).abs());
        if whole < 0 {
            f.write_str("-")?;
        }
        f.write_str("$")?;
        let mut digits = [0u8; 20];
        let mut n = whole.unsigned_abs();
        let mut len = 0;
        loop {
            digits[len] = b'0' + (n % 10) as u8;
            len += 1;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        for i in (0..len).rev() {
            f.write_char(char::from(digits[i]))?;
            if i > 0 && i % 3 == 0 {
                f.write_char(',')?;
            }
        }
        write!(f, ".{frac:02}/mo")
    })
}

/// `1.5 GiB`, `820 MiB`, `12 KiB` from bytes.
pub fn bytes(v: f64) -> impl fmt::Display {
    fmt::from_fn(move |f| {
        const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
        let mut v = v.max(0.0);
        let mut u = 0;
        while v >= 1024.0 && u < UNITS.len() - 1 {
            v /= 1024.0;
            u += 1;
        }
        if v >= 10.0 || u == 0 {
            write!(f, "{v:.0} {}", UNITS[u])
        } else {
            write!(f, "{v:.1} {}", UNITS[u])
        }
    })
}

/// "43 days", "1 day".
pub fn days(d: impl Into<u64>) -> impl fmt::Display {
    let d: u64 = d.into();
    fmt::from_fn(move |f| {
        if d == 1 {
            f.write_str("1 day")
        } else {
            write!(f, "{d} days")
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn money_and_sizes_read_well() {
        assert_eq!(usd(40.0).to_string(), "$40.00/mo");
        assert_eq!(usd(1234.5).to_string(), "$1,234.50/mo");
        assert_eq!(usd(1_234_567.891).to_string(), "$1,234,567.89/mo");
        assert_eq!(usd(999.999).to_string(), "$1,000.00/mo");
        assert_eq!(usd(-1234.5).to_string(), "-$1,234.50/mo");
        assert_eq!(usd(0.004).to_string(), "$0.00/mo");
        assert_eq!(bytes(20.0 * 1024.0 * 1024.0).to_string(), "20 MiB");
        assert_eq!(bytes(1.5 * 1024.0 * 1024.0 * 1024.0).to_string(), "1.5 GiB");
        assert_eq!(bytes(0.0).to_string(), "0 B");
        assert_eq!(days(1_u64).to_string(), "1 day");
        assert_eq!(days(43_u64).to_string(), "43 days");
    }
}
