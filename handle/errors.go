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
	// ErrConflict: AppendAt expected a next seq other than the log's; it
	// is wrapped by *ConflictError.
	ErrConflict = errors.New("handle: seq conflict")
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

// ConflictError reports an AppendAt whose expected seq was not the log's
// next seq. It wraps ErrConflict.
type ConflictError struct {
	Path     string
	Expected int64 // the seq the caller expected to write next
	Next     int64 // the seq the log would assign next
}

// Error implements error.
func (e *ConflictError) Error() string {
	return fmt.Sprintf("handle: seq conflict in %q: expected next seq %d, log is at %d", e.Path, e.Expected, e.Next)
}

// Unwrap returns ErrConflict.
func (e *ConflictError) Unwrap() error { return ErrConflict }

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
