package core

import (
	"github.com/sessionlog/sessionlog/handle"
	"io"

	"context"
	"iter"
	"log/slog"
	"time"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/secrets/redact"
)

// Backend is one open session's storage under the write core, the state
// machine every store's handles share (docs/design.md, "The write core").
// The core keeps all that a Handle promises — seqs, the queue and group
// commit, FlushPolicy.Every and .Interval, poisoning, Close, the running
// digest and the reserved-event checks, lineage reads — and asks the
// backend only to store rows at the next seq, read them back, answer the
// tail, and renew and release its hold on the writer (taken before the
// backend is made: a lock, a lease). A store implements Handle by giving
// NewHandle a Backend: the file store and the JetStream store do.
//
// The core calls Write and Tail from one goroutine at a time, never while
// another Write runs; Read may run concurrently with them and with other
// Reads; Close is called once, last.
type Backend interface {
	// Write stores rows — complete rows, each ending in '\n', holding the
	// events first..last, first being the next seq — after the rows the
	// previous Writes stored (the first Write of a writer whose open found
	// a torn tail cuts it first) and returns once they are durable. An
	// error poisons the handle. A *handle.ConflictError (Next -1 if not
	// known) says that another writer appended (a store without writer locks) and nothing
	// of rows was stored: the core drops what it had queued and poisons
	// the handle with a *ConflictError naming Tail. after, when not nil,
	// runs once the flush's callers are woken, outside the core's lock:
	// bookkeeping that must not delay them.
	Write(ctx context.Context, rows []byte, first, last int64) (after func(), err error)
	// WriteAll stores the rows that rows yields after the rows stored, all
	// or nothing (Store.AppendAll): once it returns nil every one is
	// durable; when it fails, or the process dies at any instant, the
	// store holds all of them or none — never a part. Each Rows is
	// complete rows, the first holding the next seq, and is valid only
	// until the next is asked for. An error rows yields (a refused event,
	// the events' own) ends it with nothing stored, and is returned as
	// it is. Any other error poisons the handle; a *handle.ConflictError,
	// as for Write, says that nothing was stored. The core calls it only on a
	// write handle opened for it alone, with nothing queued.
	WriteAll(ctx context.Context, rows iter.Seq2[Rows, error]) (after func(), err error)
	// Read calls use with a reader of the session's own rows, from the row
	// holding seq from or one before it, then releases the reader. A
	// writer's reader ends where the rows its Writes stored end; a
	// read-only handle's where the stored rows end when it gets there, so
	// that it follows a writer.
	Read(ctx context.Context, from int64, use func(RowReader)) error
	// Tail returns the seq that follows the last event stored, as the
	// store holds it now (after a conflict: where the other writer left
	// it).
	Tail(ctx context.Context) (next int64, err error)
	// RenewEvery says how often the writer's hold must be renewed (a
	// lease); 0 for a hold that lasts (a lock). The core then calls Renew
	// that often from a goroutine of its own while the write handle is
	// open, with a context Close cancels. An error poisons the handle, so
	// Renew returns one only once the hold is lost, not while a renewal
	// may still be retried.
	RenewEvery() time.Duration
	Renew(ctx context.Context) error
	// Close releases what the backend holds, the writer's lock or lease
	// last. flushed is true for a writer whose last flush succeeded: the
	// backend may then finish the log (a zstd tail frame, say) and keep
	// derived records of it.
	Close(ctx context.Context, flushed bool) error
}

// Locating is a Backend that stores its rows as they are (a raw, clear log
// file): the offsets its readers' DataOffset gives index LogBytes, which
// the write core's ReadLocated lends.
type Locating interface {
	// LogBytes returns the bytes of the log, unchanged where rows were
	// read and readable until Close; nil when its rows are not stored as
	// they are (compressed, sealed).
	LogBytes() io.ReaderAt
}

// RowReader reads a session's rows, checking each: an *eventlog.Reader,
// or a sealed log's *seal.Reader. Next advances to the next event; a read
// that ends in an error (or a torn tail, for a writer) says so in Err.
type RowReader interface {
	Next() bool
	Event() eventlog.Event
	Err() error
	NextSeq() int64
}

var _ RowReader = (*eventlog.Reader)(nil)

// Rows are complete rows, each ending in '\n', holding the events
// First..Last: what Backend.WriteAll stores.
type Rows struct {
	Bytes       []byte
	First, Last int64
}

// HandleConfig describes the session NewHandle opens a handle on.
type HandleConfig struct {
	// Store is the session's store core: it opens a fork's parent (read
	// only) and keeps the running digest's saved state (derived data).
	// The core sets it on the handles it opens.
	Store *Store
	// Header is the session's header.
	Header eventlog.Header
	// Path names the session in errors and messages.
	Path string
	// Writer makes a write handle: the backend holds the writer's lock or
	// lease.
	Writer bool
	// Next is the seq that follows the last event stored.
	Next int64
	// Torn is the torn tail the open found, or nil.
	Torn *eventlog.TornTail
	// Encoder encodes rows; it says which types are packed.
	Encoder *eventlog.Encoder
	// Policy is the write handle's flush policy.
	Policy handle.FlushPolicy
	// Redactor redacts every event a write handle appends before it is
	// checked, digested and stored (docs/format.md §11); nil stores
	// events as given. A store passes its own (on by default) unless the
	// handle was opened without (Unredacted).
	Redactor *redact.Redactor
	// Logger gets the handle's messages; nil is silent.
	Logger *slog.Logger
	// Ticker drives FlushPolicy.Interval and renewals; nil is a time.Ticker.
	// Tests replace it.
	Ticker func(time.Duration) (<-chan time.Time, func())
}

// NewHandle returns the handle on the session b stores, as c describes it.
// A write handle starts its FlushPolicy.Interval flusher and its renewals; Close
// stops them and closes b.
func NewHandle(b Backend, c HandleConfig) handle.Handle { return newCore(b, c) }
