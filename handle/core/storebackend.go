package core

import (
	"github.com/sessionlog/sessionlog/handle"

	"context"
	"iter"
	"time"

	"filippo.io/age"
	"github.com/sessionlog/sessionlog/eventlog"
)

// StoreBackend is a store's engine under the store core, as Backend is a
// session's under the write core (docs/design.md, "The store core"). The
// core keeps every decision a Store makes — the options, IDs and their
// checks, a new session's parent, CreateFrom's checks, Fork, Delete with
// its dependents (refused, detached or cascaded), Detach, the session
// tree, GC's choice of victims, List's filters and order, AppendAll — and
// asks the backend only for what its engine does, in four parts: find
// sessions (Catalog), read, write and remove their logs (Logs), hold
// their writers (Writers), keep derived data (Derived). A store
// implements Store by giving NewStore a StoreBackend: the file store and
// the JetStream store do, and so may a third party's.
//
// The core checks every ID (ErrInvalidID) and ctx before it calls a
// method with one. Methods are called concurrently.
type StoreBackend interface {
	Catalog
	Logs
	Writers
	Derived
}

// Catalog finds a store's sessions.
type Catalog interface {
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
	Headers(ctx context.Context) ([]handle.Info, error)
	// Exists returns nil when the store holds session id, even one it
	// could not open, else an error wrapping ErrNotFound (Delete, Detach).
	Exists(ctx context.Context, id string) error
	// Stat is Store's, for a checked ID.
	Stat(ctx context.Context, id string) (handle.Info, error)
	// Index returns the store's index of sessions, or nil for a store
	// without one: the core then answers List, Children, Ancestors,
	// Dependents and GC from IDs, Stat and Headers.
	Index() Index
}

// Index answers the questions that look across sessions from an index a
// store keeps (the file store's, JetStream's; docs/design.md, "The
// session index"), at a cost that grows with the answer, not with the
// store.
type Index interface {
	// List is Store.List for q.
	List(ctx context.Context, q handle.ListQuery) ([]handle.Info, error)
	// Children returns the ID and header of every session whose header
	// names id as its parent, sorted by ID.
	Children(ctx context.Context, id string) ([]handle.Info, error)
	// Header returns session id's header; ok is false when it is absent
	// or unreadable.
	Header(ctx context.Context, id string) (hdr eventlog.Header, ok bool, err error)
	// Older returns the sessions last active before cutoff (ms), leaving
	// out those that cannot be described, and the forks of each (sorted
	// IDs), at a cost that grows with them (GC).
	Older(ctx context.Context, cutoff int64) ([]handle.Info, map[string][]string, error)
}

// Logs reads, writes and removes sessions' logs.
type Logs interface {
	// Open returns the backend of a handle on session id and what
	// NewHandle needs of it: the core makes the handle, with the
	// settings of the call (flush policy, redactor, logger).
	Open(ctx context.Context, id string, mode handle.Mode) (Backend, HandleConfig, error)
	// OpenTail returns a Tail on session id cheaper than a read-only
	// handle (Store.OpenTail), or an error wrapping
	// errors.ErrUnsupported: the core then uses a read-only handle with
	// Stat's Info, taken just before.
	OpenTail(ctx context.Context, id string) (handle.Tail, error)
	// Create makes the session s describes, durable on return, and
	// returns its writer's backend: ErrExists when its ID is taken.
	Create(ctx context.Context, s NewSession) (Backend, HandleConfig, error)
	// CreateFrom makes the session s describes holding exactly events,
	// all or nothing (Store.CreateFrom), and describes it: where it is,
	// its encoding, size and sealing (the core adds what the events
	// say). The core has checked every event, and saves the digest's
	// states; an error events yields ends it with nothing stored.
	CreateFrom(ctx context.Context, s NewSession, events iter.Seq2[eventlog.Event, error]) (handle.Info, error)
	// Replace replaces session id's whole log, atomically, by one under
	// hdr holding events (Detach, Rewrite), keeping its sealing, and
	// drops its derived data.
	Replace(ctx context.Context, id string, hdr eventlog.Header, events iter.Seq2[eventlog.Event, error]) error
	// Remove deletes session id's log, durably, and its derived data.
	Remove(ctx context.Context, id string) error
}

// Writers holds sessions' writers.
type Writers interface {
	// WriterHeld is Store's, for a checked ID.
	WriterHeld(ctx context.Context, id string) (bool, error)
	// Hold takes session id's writer hold — the lock or lease a write
	// handle takes — failing with ErrLocked while another writer holds it;
	// release gives it back. The core holds it around Remove and Replace.
	Hold(ctx context.Context, id string) (release func(), err error)
	// Leftovers removes what interrupted operations left (temp files, a
	// killed CreateFrom's session) and the derived data of sessions that
	// keep does not name; with dryRun it only lists them (GC). before is
	// GC's: a leftover no writer can be seen to hold is old before it.
	Leftovers(ctx context.Context, before time.Time, keep func(id string) bool, dryRun bool) ([]string, error)
}

// Derived keeps data derived from sessions' logs: GetDerived, PutDerived
// and DeleteDerived are Store's, for a checked ID.
type Derived interface {
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
	// Encoding is the session's (WithEncoding, the store's or the
	// call's).
	Encoding string
	// Sealed: sealing (WithRecipients) or Config.SealAs asked for a sealed session, SealFor
	// being WithRecipients' recipients (the call's or the store's) and SealAs the sealing asked; a store
	// that does not seal refuses it with ErrSealed.
	Sealed  bool
	SealFor []age.Recipient
	SealAs  *handle.Sealing
	// Parent is what Stat said of the parent the header names (it holds
	// the fork or spawn point), or nil.
	Parent *handle.Info
}

// NewStore returns the Store whose engine is b: every method's decisions
// are the store core's, its storage b's. The options are the store's
// settings (NewConfig); the core reads the clock (new IDs, createdAt) and
// gives the rest to every handle it wraps. The Store is safe for
// concurrent use.
func NewStore(b StoreBackend, opts ...handle.Option) *Store {
	return newStoreCore(b, NewConfig(opts...))
}
