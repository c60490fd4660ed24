package projection

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"

	"github.com/sessionlog/sessionlog/eventlog"
)

// Projection is a deterministic fold of events into a state. The replay
// engine feeds it every event of the live branch in seq order except the
// two reserved types (checkpoint changes no state; rollback is applied by
// the engine, which restores an earlier state with UnmarshalState).
//
// Apply must be deterministic (the same events give the same state, byte
// for byte once marshalled), must never panic whatever the data, and must
// carry unknown event types past untouched. Data is valid JSON, as a log's
// reader and Append guarantee, so the built-in projections do not validate
// it again: given bytes that are not JSON, they do not panic, but what they
// make of them is unspecified and MarshalState may return an error.
//
// The caller hands e.Data over: it must not change those bytes once Apply
// has them, and Apply may keep slices of them in its state, unless the
// projection is a Borrower (the built-in ones are), whose Apply copies
// what it keeps. Apply never changes e.Data.
//
// A known type whose data has the wrong shape is recorded as degraded,
// with its seq.
//
// A Projection is not safe for concurrent use.
type Projection interface {
	// Name is the projection's name ("agent", "transcript").
	Name() string
	// Version is the version of its state's shape and of its rules; a
	// state digest names it, and verify compares only what it knows.
	Version() int
	// Apply folds one event into the state.
	Apply(e eventlog.Event)
	// Reset returns to the empty state, before any event.
	Reset()
	// MarshalState returns the state as JSON, deterministically.
	MarshalState() ([]byte, error)
	// UnmarshalState replaces the state with one MarshalState returned.
	UnmarshalState(data []byte) error
}

// Borrower is a Projection whose Apply keeps no byte of e.Data once it
// returns: it copies what it keeps. A replay may then lend it data that
// the log's reader reuses for the next event (replay.BorrowingSource),
// which saves a copy of every event's data. The built-in projections are
// Borrowers; any other Projection is handed data of its own.
type Borrower interface {
	Projection
	// BorrowsData does nothing: it says that Apply copies what it keeps.
	BorrowsData()
}

// Locator is a Borrower that may keep, instead of a copy of a large value
// of an event's data, where that value lies in the log: ApplyAt is Apply
// of an event whose data are the bytes of log from offset at on. It reads
// them again when it needs them (MarshalState, WriteState; State and
// PrefixHashes copy them in first), so log must stay readable, those
// bytes unchanged, until then. Its states are the same as Apply's, byte for
// byte once marshalled; a value log cannot give back when State copies it
// in is recorded in Degraded. The transcript is one: it keeps where large
// tool outputs and message texts lie. A replay of a log whose source says
// where each event's data lies calls ApplyAt when asked to
// (replay.LocateData).
type Locator interface {
	Borrower
	ApplyAt(e eventlog.Event, log io.ReaderAt, at int64)
}

// ID names a projection and its version: "agent/v1".
func ID(p Projection) string { return fmt.Sprintf("%s/v%d", p.Name(), p.Version()) }

// StateDigest is "sha256:" + hex(sha256(MarshalState())): what a
// checkpoint's state digest holds.
func StateDigest(p Projection) (string, error) {
	b, err := p.MarshalState()
	if err != nil {
		return "", fmt.Errorf("projection %s: marshal state: %w", ID(p), err)
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// StateWriter is an optional interface for projections with a large state:
// WriteState writes to w the bytes MarshalState returns, as it makes them,
// so that the state is never held whole as JSON (logtool replay prints a
// transcript this way).
type StateWriter interface {
	WriteState(w io.Writer) error
}

// WriteState writes p's state to w as MarshalState returns it: streamed
// when p is a StateWriter, else marshalled whole first.
func WriteState(w io.Writer, p Projection) error {
	if sw, ok := p.(StateWriter); ok {
		return sw.WriteState(w)
	}
	b, err := p.MarshalState()
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// Snapshotter is an optional interface for projections with a large state:
// a copy of the state in memory, far cheaper than a MarshalState and
// UnmarshalState round trip. The replay engine keeps such copies for
// rollbacks instead of marshalled states.
type Snapshotter interface {
	// Snapshot returns a copy of the state that later calls of Apply,
	// Reset, UnmarshalState or Restore do not change, and about how many
	// bytes it keeps alive: the parts it shares with the live state
	// (immutable strings, say) included, since the live state may drop
	// them while the snapshot is kept. The replay engine bounds its kept
	// states by these sizes and spaces them by it.
	Snapshot() (snap any, size int)
	// Restore sets the state to the one snap holds, a value Snapshot of a
	// projection of the same type returned. snap itself is not changed,
	// and may be restored again.
	Restore(snap any) error
}
