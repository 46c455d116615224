//! Declaring metrics once: `metric_families!` writes a struct whose metric fields are each
//! declared with their name, help, labels and buckets in one place, and the function that
//! builds and registers them all (the shape rust-lang/crates.io uses for its own metrics).

use prometheus::core::Collector;
use prometheus::{
    GaugeVec, Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge,
    IntGaugeVec, Opts, Registry,
};

/// What one family exports: everything but its kind, which is the field's type.
pub struct Spec {
    pub name: &'static str,
    pub help: &'static str,
    /// In the order callers pass their values to `with_label_values`.
    pub labels: &'static [&'static str],
    pub buckets: Option<&'static [f64]>,
}

/// A kind of metric built from a `Spec`. A spec that does not fit its kind (labels on a
/// single series, buckets on anything but a histogram) is an error, so it fails at start-up
/// rather than exporting something else than it says.
pub trait Family: Collector + Clone + 'static {
    fn build(spec: &Spec) -> prometheus::Result<Self>;
}

/// Builds the family `spec` declares and registers it in `registry`.
pub fn register<F: Family>(registry: &Registry, spec: &Spec) -> F {
    let family = F::build(spec).expect("a valid metric declaration");
    registry
        .register(Box::new(family.clone()))
        .expect("metric names are unique");
    family
}

impl Spec {
    /// Whether this spec fits a kind with (or without) labels, histogram or not.
    fn fits(&self, labelled: bool, histogram: bool) -> prometheus::Result<()> {
        let misfit = |why: &str| prometheus::Error::Msg(format!("metric {}: {why}", self.name));
        if self.labels.is_empty() == labelled {
            return Err(misfit("labels do not fit the metric's kind"));
        }
        if self.buckets.is_some() != histogram {
            return Err(misfit("only a histogram has buckets, and it names them"));
        }
        Ok(())
    }

    fn opts(&self, labelled: bool) -> prometheus::Result<Opts> {
        self.fits(labelled, false)?;
        Ok(Opts::new(self.name, self.help))
    }

    fn histogram_opts(&self, labelled: bool) -> prometheus::Result<HistogramOpts> {
        self.fits(labelled, true)?;
        let buckets = self.buckets.unwrap_or_default().to_vec();
        Ok(HistogramOpts::new(self.name, self.help).buckets(buckets))
    }
}

/// Kinds with a single series.
macro_rules! single_family {
    ($($kind:ty => $opts:ident),* $(,)?) => {$(
        impl Family for $kind {
            fn build(spec: &Spec) -> prometheus::Result<Self> {
                <$kind>::with_opts(spec.$opts(false)?)
            }
        }
    )*};
}

/// Kinds with a series per combination of label values.
macro_rules! labelled_family {
    ($($kind:ty => $opts:ident),* $(,)?) => {$(
        impl Family for $kind {
            fn build(spec: &Spec) -> prometheus::Result<Self> {
                <$kind>::new(spec.$opts(true)?, spec.labels)
            }
        }
    )*};
}

single_family!(IntCounter => opts, IntGauge => opts, Histogram => histogram_opts);
labelled_family!(
    IntCounterVec => opts,
    IntGaugeVec => opts,
    GaugeVec => opts,
    HistogramVec => histogram_opts,
);

/// Declares a struct of metrics. Its first block holds the fields that are not metrics (given
/// to `register`, in order); each field after `families` is one metric family:
///
/// ```text
/// pub cache_hits: IntCounter {
///     name: "seqvend_cache_hits_total",
///     help: "…",
///     // optional: labels: ["result"],
///     // optional (histograms only): buckets: SOME_BUCKETS,
/// },
/// ```
///
/// The help is also the field's documentation.
macro_rules! metric_families {
    (
        $(#[$attr:meta])*
        $vis:vis struct $name:ident {
            $( $(#[$other_attr:meta])* $other_vis:vis $other:ident: $other_ty:ty, )*
        }
        families {
            $(
                $family_vis:vis $family:ident: $kind:ty {
                    name: $metric:literal,
                    help: $help:expr,
                    $( labels: [$($label:literal),+ $(,)?], )?
                    $( buckets: $buckets:expr, )?
                },
            )+
        }
    ) => {
        $(#[$attr])*
        $vis struct $name {
            $( $(#[$other_attr])* $other_vis $other: $other_ty, )*
            $( #[doc = $help] $family_vis $family: $kind, )+
        }

        impl $name {
            /// Registers every family in `registry`, beside the fields that are not metrics.
            fn register(registry: &prometheus::Registry, $($other: $other_ty),*) -> Self {
                use $crate::metrics::declare::{register, Spec};
                Self {
                    $( $other, )*
                    $(
                        $family: register::<$kind>(registry, &Spec {
                            name: $metric,
                            help: $help,
                            labels: &[$($($label),+)?],
                            buckets: $crate::metrics::declare::optional!($($buckets)?),
                        }),
                    )+
                }
            }
        }
    };
}

/// `Some` of the buckets a family names, or `None`.
macro_rules! optional {
    () => {
        None
    };
    ($value:expr) => {
        Some($value)
    };
}

pub(crate) use metric_families;
pub(crate) use optional;
