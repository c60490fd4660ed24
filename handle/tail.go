package handle

import (
	"context"
	"iter"

	"github.com/sessionlog/sessionlog/eventlog"
)

// A Tail reads a session's log without writing it, as cheaply as its
// store can: the file store's is a TailReader, which reads only what is
// asked for (the last turn, for stop facts) and does not check the rest
// of the log; a store without such a way (JetStream, whose messages are
// found through the index a full read builds) gives a read-only handle,
// which reads and checks the whole log when it opens. Either
// way, every event it yields is checked as a full read checks it, and a
// fork's inherited events come first. A Tail is what replay.Source and
// recorder.Source ask for; it is safe for concurrent use.
type Tail interface {
	// ID returns the session's ID; Path its log's location, as Info.Path.
	ID() string
	Path() string
	// Header returns the log's header.
	Header() eventlog.Header
	// Seq returns the last seq as Stat found it when the Tail was opened
	// (FirstSeq-1 when the log has none).
	Seq() int64
	// Info describes the session as Stat did when the Tail was opened.
	Info() Info
	// Read yields the events with from <= seq <= to (to may be End) of
	// the log as it was when the Tail opened, at least; an error is
	// yielded last.
	Read(ctx context.Context, from, to int64) iter.Seq2[eventlog.Event, error]
	// Close releases what the Tail holds.
	Close() error
}
