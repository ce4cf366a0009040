// Package txn is Kafka's transaction coordinator as a pure state machine:
// the metadata Kafka keeps per transactional id (producer id, epoch,
// timeout, state, partitions, timestamps) and its transitions under
// InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, the
// coordinator's own aborts of timed-out transactions and the expiry of
// idle transactional ids, with Kafka's rules and error codes.
//
// It does no I/O, reads no clock and starts no goroutine. Time enters as
// milliseconds; effects leave as data in an Output.
//
// # The runtime's contract
//
// One Coordinator serves one __transaction_state partition (PartitionFor
// maps a transactional id to its partition). The runtime calls it under
// one serialisation and:
//
//  1. Appends Output.Writes' records to the partition (one batch, acks=all)
//     and sends the answers of the call only once they are committed. A
//     transition takes effect in memory only when its write is reported
//     committed (Written), as in Kafka (completeTransitionTo): until then
//     the transactional id has a transition in flight and other requests
//     for it get CONCURRENT_TRANSACTIONS.
//  2. Reports every write's outcome with Written, in the order the writes
//     were handed out, and carries out that call's Output. A failed write
//     may still reach the log (a timeout), so the runtime unloads the
//     coordinator and loads the partition again.
//  3. Delivers every Output.Markers (WriteTxnMarkers to the leaders of the
//     transaction's partitions), retrying until each partition has it or
//     no longer exists, then calls MarkersWritten, whose Output writes the
//     CompleteCommit or CompleteAbort state.
//  4. Calls AbortTimedOut every
//     transaction.abort.timed.out.transaction.cleanup.interval.ms and
//     ExpireTransactionalIDs every
//     transaction.remove.expired.transaction.cleanup.interval.ms.
//
// A new coordinator rebuilds by replaying the partition's records (Apply,
// Kafka's TransactionLogKey/TransactionLogValue formats) and then sends
// the markers of every transaction left prepared (Loaded).
package txn
