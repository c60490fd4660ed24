// Package transfer copies sessions between stores — a folder and
// JetStream, two folders, two prefixes of one stream — keeping what makes
// them the same sessions: ID, header (createdAt, labels, parent) and every
// event, so that every digest is kept, which each copy checks. Parents are
// copied before their forks and children. A copy is created all or
// nothing: after a failure, or a kill at any instant, the session is
// absent from the destination or complete. A copy is idempotent: a
// session the destination holds with the same lineage and logical log is
// unchanged, so the same copy run again goes on where it stopped; another
// log under that ID is a *ConflictError naming both.
//
// It knows stores only through handle.Store; it knows no command line
// (logtool copy is flags and output over Copy).
package transfer
