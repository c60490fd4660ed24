// Package replay rebuilds state by replaying a session's logical log into
// projections, up to any seq: state is never stored as truth.
//
// Rollback events (docs/format.md §7) are applied as they come: from a rollback on,
// every projection's state equals its state right after the rollback's
// target event, whether that target lies on the live branch, in an
// abandoned branch, or behind other rollbacks. The engine keeps states in
// memory (at checkpoints and every so many events: marshalled, or as a
// copy for a projection.Snapshotter, such as the transcript) so a rollback
// costs the events since the nearest kept state, not the log; with a Cache
// it also keeps states at checkpoints on disk, keyed by session, seq and
// log digest, so that a later replay starts from the nearest one that still
// matches the log.
//
// When every projection is a projection.Borrower and the Source a
// BorrowingSource, events are read with their data lent, not copied. With
// LocateData and a LocatingSource (a raw log), a projection.Locator keeps
// where large values lie in the log instead of copies, and reads them back
// when its state is written.
//
// With CheckDigests the engine recomputes every checkpoint's log digest
// and every state digest of a projection it was given, and stops at the
// first mismatch with a *DigestError.
//
// The package knows the reserved event types and projections; it knows
// nothing of files or stores: it reads a Source (a handle.Handle is one)
// and keeps snapshots in a Cache (a file.Store is one).
package replay
