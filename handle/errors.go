package handle

import (
	"errors"
	"fmt"
)

// Sentinel errors. Errors returned by stores and handles wrap one of these
// (with the session's path and, where it applies, a seq or offset); test
// them with errors.Is. The format errors are the eventlog package's own, so
// either name matches.
var (
	// ErrNotFound: no session with that ID in the store.
	ErrNotFound = errors.New("handle: session not found")
	// ErrExists: a session with that ID exists already.
	ErrExists = errors.New("handle: session exists")
	// ErrLocked: another writer (in this or another process) holds the
	// session.
	ErrLocked = errors.New("handle: session is locked by another writer")
	// ErrReadOnly: a write through a read-only handle.
	ErrReadOnly = errors.New("handle: handle is read-only")
	// ErrClosed: a call on a closed handle.
	ErrClosed = errors.New("handle: handle is closed")
	// ErrInvalidID: an ID that is not an upper-case ULID; refused before
	// any path is built.
	ErrInvalidID = errors.New("handle: invalid session ID")
	// ErrBatchTooLarge: a Store.AppendAll batch larger than the store can
	// write atomically (JetStream: one atomic batch); nothing is written.
	ErrBatchTooLarge = errors.New("handle: batch too large to write all or nothing")
)

// ConflictError reports a write that found the log's next seq other than
// expected: an AppendAt (or AppendAll) whose expected seq was not the
// log's next, or a flush that met another writer's appends (a store
// without writer locks; the handle is then poisoned with it). Nothing of
// the write was stored. Match it with errors.AsType[*ConflictError] (its
// only shape, so it has no sentinel).
type ConflictError struct {
	Path     string
	Expected int64 // the seq the caller expected to write next
	// Next is the seq the log would assign next; -1 when it could not be
	// learnt (Err says why).
	Next int64
	Err  error
}

// Error implements error.
func (e *ConflictError) Error() string {
	if e.Next < 0 {
		return fmt.Sprintf("handle: seq conflict in %q: another writer appended at seq %d (where the log now ends is unknown: %v)", e.Path, e.Expected, e.Err)
	}
	return fmt.Sprintf("handle: seq conflict in %q: expected next seq %d, log is at %d", e.Path, e.Expected, e.Next)
}

// Unwrap returns why Next is unknown, or nil.
func (e *ConflictError) Unwrap() error { return e.Err }

// EventError reports which event of a batch was refused. It wraps the
// reason (eventlog.ErrInvalidEvent or eventlog.ErrTooLarge).
type EventError struct {
	Path  string
	Index int   // position in the batch
	Seq   int64 // the seq it would have had, or -1 when unknown
	Err   error
}

// Error implements error.
func (e *EventError) Error() string {
	return fmt.Sprintf("handle: append to %q: event %d of the batch refused, nothing written: %v", e.Path, e.Index, e.Err)
}

// Unwrap returns the reason.
func (e *EventError) Unwrap() error { return e.Err }

// PoisonedError is returned by every call on a handle after a flush
// failed — a write or fsync error, a log file displaced (the file store's ErrDisplaced), a
// writer's lease lost: what the session holds is no longer known, so the
// handle refuses to go on. Reopening the session recovers from what is
// stored.
type PoisonedError struct {
	Path string
	Err  error // why the flush failed
}

// Error implements error.
func (e *PoisonedError) Error() string {
	return fmt.Sprintf("handle: %q: the handle is poisoned (reopen to recover): %v", e.Path, e.Err)
}

// Unwrap returns why the flush failed.
func (e *PoisonedError) Unwrap() error { return e.Err }
