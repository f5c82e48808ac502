//! How a store over another store passes on the [`Storage`](crate::Storage) calls it does not
//! change ([`forward_storage!`]): the one way the wrapper stores of this crate (the read-ahead,
//! the own tail, the archive under a hot store, the object store's view) forward a call, so a
//! method the trait gains is passed on by all of them alike.

/// Writes, inside an `impl Storage for …` block, each named [`Storage`](crate::Storage) method
/// as a call of the same method on the field `$under` (a store, or a pointer to one), with the
/// same arguments: `forward_storage!(inner: append_events, append_limits, failure);`.
macro_rules! forward_storage {
    ($under:ident: $($method:ident),+ $(,)?) => {
        $( $crate::store::forward::forward_storage!(@method $under $method); )+
    };
    // Each method's signature, once.
    (@method $u:ident read_numbers) => {
        $crate::store::forward::forward_storage!(@fn $u read_numbers(
            partition: $crate::store::storage::PartitionId,
            ws: ::sequencer::WsId, seqs: &[::sequencer::SeqId]
        ) -> Result<Vec<::sequencer::Number>, $crate::store::storage::StorageError>);
    };
    (@method $u:ident read_numbers_many) => {
        $crate::store::forward::forward_storage!(@fn $u read_numbers_many(
            partition: $crate::store::storage::PartitionId,
            ws: &[::sequencer::WsId], seqs: &[::sequencer::SeqId]
        ) -> Result<Vec<::sequencer::Number>, $crate::store::storage::StorageError>);
    };
    (@method $u:ident read_next_offset) => {
        $crate::store::forward::forward_storage!(@fn $u read_next_offset(
            partition: $crate::store::storage::PartitionId
        ) -> ::futures::future::BoxFuture<'static,
            Result<::sequencer::PLogOffset, $crate::store::storage::StorageError>>);
    };
    (@method $u:ident write) => {
        $crate::store::forward::forward_storage!(@fn $u write(
            partition: $crate::store::storage::PartitionId,
            values: Vec<::sequencer::SeqValue>, next_offset: ::sequencer::PLogOffset
        ) -> ::futures::future::BoxFuture<'static,
            Result<(), $crate::store::storage::StorageError>>);
    };
    (@method $u:ident read_plog) => {
        $crate::store::forward::forward_storage!(@fn $u read_plog(
            partition: $crate::store::storage::PartitionId,
            from: ::sequencer::PLogOffset, max_events: usize
        ) -> ::futures::future::BoxFuture<'static,
            Result<$crate::store::storage::PlogPage, $crate::store::storage::StorageError>>);
    };
    (@method $u:ident append_events) => {
        $crate::store::forward::forward_storage!(@fn $u append_events(
            partition: $crate::store::storage::PartitionId,
            batch: &$crate::store::storage::EventBatch
        ) -> Result<(), $crate::store::storage::AppendError>);
    };
    (@method $u:ident append_limits) => {
        $crate::store::forward::forward_storage!(@fn $u append_limits()
            -> $crate::store::storage::AppendLimits);
    };
    (@method $u:ident view_write_interval) => {
        $crate::store::forward::forward_storage!(@fn $u view_write_interval()
            -> ::core::time::Duration);
    };
    (@method $u:ident failure) => {
        $crate::store::forward::forward_storage!(@fn $u failure() -> Option<String>);
    };
    (@method $u:ident damaged) => {
        $crate::store::forward::forward_storage!(@fn $u damaged()
            -> Option<$crate::store::storage::DamagedEvent>);
    };
    // The method itself: the same call on `self.$u`.
    (@fn $u:ident $name:ident($($arg:ident: $ty:ty),* $(,)?) -> $ret:ty) => {
        fn $name(&self, $($arg: $ty),*) -> $ret {
            self.$u.$name($($arg),*)
        }
    };
}

pub(crate) use forward_storage;
