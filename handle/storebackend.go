package handle

import (
	"context"
	"iter"
	"time"

	"github.com/sessionlog/sessionlog/eventlog"
)

// StoreBackend is a store's engine under the store core, as Backend is a
// session's under the write core (docs/design.md, "The store core"). The
// core keeps every decision a Store makes — the options, IDs and their
// checks, a new session's parent, Fork, Delete with its dependents
// (refused, detached or cascaded), Detach, the session tree, GC's choice
// of victims, List's filters and order, AppendAll — and asks the backend
// only for what its engine does: find, read, write and remove a session's
// log, hold its writer, keep derived data. A store implements Store by
// giving NewStore a StoreBackend: the file store and the JetStream store
// do, and so may a third party's.
//
// The core checks every ID (ErrInvalidID) and ctx before it calls a
// method with one. Methods are called concurrently.
//
// A backend may also have OpenTail(ctx, id string) (Tail, error): a Tail
// cheaper than a read-only handle (Store.OpenTail). Without it, the core's
// Tail is a read-only handle (Open) with Stat's Info, taken just before.
type StoreBackend interface {
	// Where names the store in errors ("<id> in <Where>"): a quoted
	// folder, a stream.
	Where() string
	// IDs returns the ID of every session the store holds, each once, in
	// any order, with those that cannot be read (List reports them).
	IDs(ctx context.Context) ([]string, error)
	// Headers returns the ID, Path and Header of every session whose
	// header can be read, from the headers alone (Tree, Children,
	// Ancestors, Dependents). A session whose header is broken is left out
	// (Stat and Open report it); an error that says nothing about a
	// header (I/O) fails it, for a fork hidden from Delete would lose its
	// parent.
	Headers(ctx context.Context) ([]Info, error)
	// Exists returns nil when the store holds session id, even one it
	// could not open, else an error wrapping ErrNotFound (Delete, Detach).
	Exists(ctx context.Context, id string) error
	// Stat, Open and WriterHeld are Store's, for a checked ID; op is
	// what Open's options said.
	Stat(ctx context.Context, id string) (Info, error)
	Open(ctx context.Context, id string, mode Mode, op OpenParams) (Handle, error)
	WriterHeld(ctx context.Context, id string) (bool, error)
	// Create makes the session s describes, durable on return, and
	// returns a write handle on it (NewHandle): ErrExists when its ID is
	// taken.
	Create(ctx context.Context, s NewSession) (Handle, error)
	// CreateFrom makes the session s describes holding exactly events,
	// all or nothing (Store.CreateFrom), and describes it.
	CreateFrom(ctx context.Context, s NewSession, events iter.Seq2[eventlog.Event, error]) (Info, error)
	// Hold takes session id's writer hold — the lock or lease a write
	// handle takes — failing with ErrLocked while another writer holds it;
	// release gives it back. The core holds it around Remove and Replace.
	Hold(ctx context.Context, id string) (release func(), err error)
	// Remove deletes session id's log, durably, and its derived data.
	Remove(ctx context.Context, id string) error
	// Replace replaces session id's whole log, atomically, by one under
	// hdr holding events (Detach), and drops its derived data.
	Replace(ctx context.Context, id string, hdr eventlog.Header, events iter.Seq2[eventlog.Event, error]) error
	// Leftovers removes what interrupted operations left (temp files, a
	// killed CreateFrom's session) and the derived data of sessions that
	// keep does not name; with dryRun it only lists them (GC). before is
	// GC's: a leftover no writer can be seen to hold is old before it.
	Leftovers(ctx context.Context, before time.Time, keep func(id string) bool, dryRun bool) ([]string, error)
	// GetDerived, PutDerived and DeleteDerived are Store's, for a checked
	// ID.
	GetDerived(ctx context.Context, id, key string) ([]byte, error)
	PutDerived(ctx context.Context, id, key string, data []byte) error
	DeleteDerived(ctx context.Context, id, key string) error
}

// NewSession is a session Create or CreateFrom is to make, as the store
// core resolved their options.
type NewSession struct {
	// Header is the new session's header: ID (given and checked, or new),
	// createdAt, labels, parent.
	Header eventlog.Header
	// Encoding is the one WithSessionEncoding asked for; "" for the
	// store's default.
	Encoding string
	// Unredacted: the write handle Create returns stores its appends as
	// given (Unredacted).
	Unredacted bool
	// Sealed: SealedFor or SealedAs asked for a sealed session; a store
	// that does not seal refuses it with ErrSealed.
	Sealed bool
	// Parent is what Stat said of the parent the header names (it holds
	// the fork or spawn point), or nil.
	Parent *Info

	opts createConfig // all the options: the file store seals by them
}

// NewStore returns the Store whose engine is b: every method's decisions
// are the store core's, its storage b's. Of the options only WithClock
// matters to the core (new IDs, createdAt). The Store is safe for
// concurrent use.
func NewStore(b StoreBackend, opts ...Option) Store {
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	return newStoreCore(b, cfg.now)
}
