//! Where the store's table reads come from: a database, each read in a read transaction of
//! its own, or one read transaction, every read from the same snapshot
//! ([`RedbSnapshot`](crate::store::redb::RedbSnapshot)).

use std::ops::Deref;

use redb::{Database, ReadOnlyDatabase, ReadTransaction, ReadableDatabase, TransactionError};

/// Something the store's read functions can begin a read on.
pub(crate) trait ReadSource {
    /// A read transaction: a new one for a database, the same one for a transaction.
    fn begin_read(&self) -> Result<Reading<'_>, TransactionError>;
}

/// A read transaction begun for one read, or the one a snapshot keeps.
pub(crate) enum Reading<'a> {
    /// Begun for this read.
    Own(ReadTransaction),
    /// A snapshot's.
    Kept(&'a ReadTransaction),
}

impl Deref for Reading<'_> {
    type Target = ReadTransaction;

    fn deref(&self) -> &ReadTransaction {
        match self {
            Self::Own(rx) => rx,
            Self::Kept(rx) => rx,
        }
    }
}

impl ReadSource for Database {
    fn begin_read(&self) -> Result<Reading<'_>, TransactionError> {
        ReadableDatabase::begin_read(self).map(Reading::Own)
    }
}

impl ReadSource for ReadOnlyDatabase {
    fn begin_read(&self) -> Result<Reading<'_>, TransactionError> {
        ReadableDatabase::begin_read(self).map(Reading::Own)
    }
}

impl ReadSource for ReadTransaction {
    fn begin_read(&self) -> Result<Reading<'_>, TransactionError> {
        Ok(Reading::Kept(self))
    }
}
