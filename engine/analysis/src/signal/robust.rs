//! The robust z-score (Iglewicz and Hoaglin's modified z-score).
//!
//! `z = 0.6745 · (x − median) / MAD`, where MAD is the median of the
//! absolute deviations from the median. When more than half of the values
//! are equal the MAD is 0; then the mean absolute deviation from the median
//! stands in: `z = (x − median) / (1.253314 · MeanAD)`. When both are 0
//! every value is the median and every z is 0.
//!
//! Cost changes are mostly zero (most resources cost what they cost last
//! scan), so the zeros are passed as a count, never materialised: a pass
//! over a million nodes sorts only the few thousand that changed.

/// `Φ⁻¹(0.75)`: makes the MAD a consistent estimator of σ for normal data.
pub const MAD_SCALE: f64 = 0.6745;
/// `√(π/2)`: makes the mean absolute deviation one of σ for normal data.
pub const MEAN_AD_SCALE: f64 = 1.253314;

/// Location and spread of one sample.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Robust {
    pub n: u64,
    pub median: f64,
    /// Median absolute deviation from the median.
    pub mad: f64,
    /// Mean absolute deviation from the median.
    pub mean_ad: f64,
}

/// A sorted list merged with `block_n` copies of `block`, read by rank
/// without building it.
struct Multiset<'a> {
    sorted: &'a [f64],
    block: f64,
    block_n: u64,
    /// Elements of `sorted` below `block`.
    below: usize,
}

impl<'a> Multiset<'a> {
    fn new(sorted: &'a [f64], block: f64, block_n: u64) -> Multiset<'a> {
        let below = sorted.partition_point(|v| *v < block);
        Multiset {
            sorted,
            block,
            block_n,
            below,
        }
    }

    fn len(&self) -> u64 {
        self.sorted.len() as u64 + self.block_n
    }

    /// The `k`-th smallest element (0-based); `k < len`.
    fn kth(&self, k: u64) -> f64 {
        let below = self.below as u64;
        if k < below {
            self.sorted[k as usize]
        } else if k < below + self.block_n {
            self.block
        } else {
            self.sorted[(k - self.block_n) as usize]
        }
    }

    fn median(&self) -> f64 {
        let n = self.len();
        if n % 2 == 1 {
            self.kth(n / 2)
        } else {
            (self.kth(n / 2 - 1) + self.kth(n / 2)) / 2.0
        }
    }
}

impl Robust {
    /// The statistics of `values` (non-finite values are skipped); `None`
    /// for an empty sample.
    pub fn of(values: &[f64]) -> Option<Robust> {
        let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
        Robust::with_zeros(&mut v, 0)
    }

    /// The statistics of `values` plus `zeros` more values equal to 0.
    /// `values` is reordered; non-finite values in it are ignored.
    pub fn with_zeros(values: &mut Vec<f64>, zeros: u64) -> Option<Robust> {
        values.retain(|x| x.is_finite());
        values.sort_unstable_by(f64::total_cmp);
        let all = Multiset::new(values, 0.0, zeros);
        let n = all.len();
        if n == 0 {
            return None;
        }
        let median = all.median();
        let mut dev: Vec<f64> = values.iter().map(|x| (x - median).abs()).collect();
        dev.sort_unstable_by(f64::total_cmp);
        let zero_dev = median.abs();
        let devs = Multiset::new(&dev, zero_dev, zeros);
        let mad = devs.median();
        let mean_ad = (dev.iter().sum::<f64>() + zero_dev * zeros as f64) / n as f64;
        Some(Robust {
            n,
            median,
            mad,
            mean_ad,
        })
    }

    /// The robust z-score of `x` against this sample.
    pub fn z(&self, x: f64) -> f64 {
        if self.mad > 0.0 {
            MAD_SCALE * (x - self.median) / self.mad
        } else if self.mean_ad > 0.0 {
            (x - self.median) / (MEAN_AD_SCALE * self.mean_ad)
        } else {
            0.0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9 * b.abs().max(1.0)
    }

    /// Median by sorting the whole sample: the textbook definition.
    fn naive_median(v: &[f64]) -> f64 {
        let mut v = v.to_vec();
        v.sort_by(f64::total_cmp);
        let n = v.len();
        if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        }
    }

    fn naive(v: &[f64]) -> Robust {
        let median = naive_median(v);
        let dev: Vec<f64> = v.iter().map(|x| (x - median).abs()).collect();
        Robust {
            n: v.len() as u64,
            median,
            mad: naive_median(&dev),
            mean_ad: dev.iter().sum::<f64>() / v.len() as f64,
        }
    }

    #[test]
    fn known_answer_with_mad() {
        // median 3; deviations 2,1,0,1,97 -> MAD 1.
        let r = Robust::of(&[1.0, 2.0, 3.0, 4.0, 100.0]).unwrap();
        assert_eq!((r.n, r.median, r.mad), (5, 3.0, 1.0));
        assert!(close(r.mean_ad, 101.0 / 5.0), "{r:?}");
        assert!(close(r.z(100.0), 0.6745 * 97.0), "{}", r.z(100.0));
        assert!(close(r.z(1.0), -0.6745 * 2.0));
        assert_eq!(r.z(3.0), 0.0);
    }

    #[test]
    fn even_sample_takes_the_mean_of_the_middle_pair() {
        // sorted 1,2,4,10: median 3; deviations 1,1,2,7 -> MAD (1+2)/2 = 1.5.
        let r = Robust::of(&[4.0, 1.0, 10.0, 2.0]).unwrap();
        assert_eq!((r.median, r.mad), (3.0, 1.5));
        assert!(close(r.z(10.0), 0.6745 * 7.0 / 1.5));
    }

    #[test]
    fn mad_zero_falls_back_to_the_mean_absolute_deviation() {
        // Four of five equal: MAD 0; MeanAD = 10 / 5 = 2.
        let r = Robust::of(&[0.0, 0.0, 10.0, 0.0, 0.0]).unwrap();
        assert_eq!((r.median, r.mad, r.mean_ad), (0.0, 0.0, 2.0));
        assert!(close(r.z(10.0), 10.0 / (1.253314 * 2.0)), "{}", r.z(10.0));
        assert!(r.z(10.0) > 3.5);
        // With one fewer zero the same jump is within 3.5.
        let r = Robust::of(&[0.0, 0.0, 10.0, 0.0]).unwrap();
        assert!(close(r.z(10.0), 10.0 / (1.253314 * 2.5)));
        assert!(r.z(10.0) < 3.5);
    }

    #[test]
    fn flat_sample_scores_zero() {
        let r = Robust::of(&[5.0; 100]).unwrap();
        assert_eq!((r.median, r.mad, r.mean_ad), (5.0, 0.0, 0.0));
        assert_eq!(r.z(5.0), 0.0);
        let mut none = Vec::new();
        let r = Robust::with_zeros(&mut none, 1_000_000).unwrap();
        assert_eq!(r.z(0.0), 0.0);
        assert!(Robust::of(&[]).is_none());
    }

    #[test]
    fn implicit_zeros_give_the_same_answer_as_explicit_ones() {
        let cases: [(&[f64], u64); 6] = [
            (&[-3.0, 7.5, 12.0], 4),
            (&[-3.0, -2.0, -1.0, 5.0, 6.0, 7.0, 8.0], 1),
            (&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0], 3),
            (&[-1.0, -1.0, -1.0], 2),
            (&[40.0], 0),
            (&[], 3),
        ];
        for (values, zeros) in cases {
            let mut explicit: Vec<f64> = values.to_vec();
            explicit.extend(std::iter::repeat_n(0.0, zeros as usize));
            let want = naive(&explicit);
            let got = Robust::with_zeros(&mut values.to_vec(), zeros).unwrap();
            assert_eq!(got.n, want.n, "{values:?} + {zeros} zeros");
            assert!(close(got.median, want.median), "{values:?}: {got:?} vs {want:?}");
            assert!(close(got.mad, want.mad), "{values:?}: {got:?} vs {want:?}");
            assert!(close(got.mean_ad, want.mean_ad), "{values:?}: {got:?} vs {want:?}");
        }
    }

    #[test]
    fn non_finite_values_are_ignored() {
        let r = Robust::of(&[1.0, f64::NAN, 2.0, f64::INFINITY, 3.0]).unwrap();
        assert_eq!((r.n, r.median), (3, 2.0));
    }
}
