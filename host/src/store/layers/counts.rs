//! What a layer counts ([`layer_counts!`]): a public snapshot of `u64` counts with what was
//! counted between two of them, and the live atomic counters behind it.

/// Declares a layer's counts: `$counts`, the public snapshot (a `u64` per count, with its
/// doc, and `since`), and `$counters`, the live `AtomicU64`s it is read from (`snapshot`).
macro_rules! layer_counts {
    (
        $(#[$doc:meta])*
        pub struct $counts:ident, counted by $counters:ident {
            $( $(#[$field_doc:meta])* $field:ident, )*
        }
    ) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        pub struct $counts {
            $( $(#[$field_doc])* pub $field: u64, )*
        }

        impl $counts {
            /// What was counted between `before` and this.
            pub fn since(&self, before: &Self) -> Self {
                Self { $( $field: self.$field - before.$field, )* }
            }
        }

        /// The live counts.
        #[derive(Default)]
        struct $counters {
            $( $field: ::std::sync::atomic::AtomicU64, )*
        }

        impl $counters {
            /// The counts now.
            fn snapshot(&self) -> $counts {
                $counts {
                    $( $field: self.$field.load(::std::sync::atomic::Ordering::Relaxed), )*
                }
            }
        }
    };
}

pub(crate) use layer_counts;
