package handle

import (
	"context"
	"iter"
	"math"
	"time"

	"github.com/sessionlog/sessionlog/eventlog"
)

// End, as the upper bound of Read, means "to the last event".
const End int64 = math.MaxInt64

// Mode says how a session is opened: ReadOnly (any number of readers,
// each seeing what is on disk, a writer's new rows as they land) or
// ReadWrite (the session's one writer: it takes the writer lock across
// processes, ErrLocked for a second one, and recovers the log, cutting a
// torn tail before its first append; this is how a program reopens its
// session after a crash).
type Mode int

// ReadOnly handles read what is on disk; any number may be open. (Each
// mode is declared on its own so that go doc handle.Mode lists both.)
const ReadOnly Mode = 0

// ReadWrite handles hold the session's writer lock; one at a time.
const ReadWrite Mode = 1

// Store is the contract every session store implements: the file store
// here, the JetStream store in handle/jetstream, each the store core
// (NewStore) over its engine. Everything a caller may ask of a store is
// here, so that no caller asks which store it has. Implementations are
// safe for concurrent use.
type Store interface {
	// Create makes a new session, durable when Create returns, and
	// returns a write handle on it.
	Create(ctx context.Context, opts ...Option) (Handle, error)
	// CreateFrom makes a new session holding exactly events, all or
	// nothing: when it returns nil the session is durable and complete;
	// when it fails, or the process dies at any instant, the session is
	// absent or complete — never partial — and a retry succeeds. Each
	// event's Seq must be the seq it gets (the first is the header's first
	// seq: 0, or the fork point + 1); every event is checked as Append
	// checks it. The options say ID, labels, parent, encoding, createdAt.
	// What a killed CreateFrom leaves (a temp file, an incomplete
	// subject) is invisible to every reader and removed by the retry or
	// by GC. The events are stored exactly as given, unredacted
	// (docs/format.md §11): a copy or a fork with data keeps every byte
	// and digest of its source; a caller with new events (an import)
	// redacts them first.
	CreateFrom(ctx context.Context, events iter.Seq2[eventlog.Event, error], opts ...Option) (Info, error)
	// AppendAll appends events to session id as one batch, all or
	// nothing: when it returns nil every event is durable; when it fails,
	// or the process dies at any instant, the session holds all of them
	// or none — never a part. expected is the seq the first must have,
	// the log's next (a *ConflictError otherwise, nothing written); each
	// event's Seq must be the seq it gets, and each is checked as Append
	// checks it (a checkpoint's digest against the log before it). It
	// takes the session's writer lock or lease (ErrLocked while a writer
	// holds it). It is for batches that must not be torn (a re-import's)
	// and costs what the store's atomicity costs: a copy of the whole log
	// on files, one atomic batch on JetStream (a batch larger than one is
	// refused with ErrBatchTooLarge). The events are stored as given.
	AppendAll(ctx context.Context, id string, expected int64, events iter.Seq2[eventlog.Event, error]) (Info, error)
	// Open opens an existing session. A write handle takes the session's
	// writer lock (ErrLocked if another writer holds it) and recovers the
	// log: a torn tail is reported by Torn and cut before the first
	// new append; corruption fails the open with a *eventlog.CorruptError. The file
	// store reads the whole log to find it, except when its checked record
	// shows the file unchanged since it last did (docs/design.md, "Opening
	// without reading").
	// Unredacted turns redaction at write off for the handle.
	Open(ctx context.Context, id string, mode Mode, opts ...Option) (Handle, error)
	// Stat describes a session from its header and its tail; its cost
	// does not grow with the log's length (a zstd log whose writer did not
	// close — it is still writing, or crashed — has no tail frame: Stat then
	// walks its frame headers, reading a few bytes per 128 KiB block).
	Stat(ctx context.Context, id string) (Info, error)
	// OpenTail opens a Tail on session id: a read of its log that costs
	// what its reads cost where the store can (the file store's
	// TailReader: stop facts of a gigabyte log without reading it all),
	// else a read-only handle. It fails where Stat fails.
	OpenTail(ctx context.Context, id string) (Tail, error)
	// List describes the sessions of the store, newest first, filtered by
	// the options.
	List(ctx context.Context, opts ...Option) ([]Info, error)
	// Fork creates a session whose logical log is id's events 0..at
	// followed by its own; nothing is copied. It is durable on return.
	Fork(ctx context.Context, id string, at int64, opts ...Option) (Handle, error)
	// Delete removes a session. It fails with ErrLocked while a writer
	// holds it, and with a *DependentsError while forks depend on it,
	// unless Detach or Cascade says what to do with them.
	Delete(ctx context.Context, id string, opts ...Option) error
	// Detach makes the fork id stand alone: it is rewritten, atomically
	// and under its writer lock, to hold its whole logical log with no
	// parent. Its logical log, and so every digest, is unchanged. A
	// session that is not a fork is left as it is.
	Detach(ctx context.Context, id string) error
	// Rewrite replaces session id's own rows with the events rows yields,
	// in one atomic rewrite under the session's writer hold (ErrLocked
	// while a writer holds it), sealed as the log was, in its encoding,
	// under its header. rows gets a read-only handle on the session as it
	// is (its logical log, a fork's inherited events included) and must
	// yield events with the session's own seqs, from the header's first
	// on; every event is checked as CreateFrom checks it, checkpoints' log
	// digests included. The session's derived data is dropped. It is for
	// operations that change a log on purpose (a redaction of a stored
	// log: package scrub): what it writes breaks every digest a holder of
	// the old log has, unless the new events say how.
	Rewrite(ctx context.Context, id string, rows func(h Handle) iter.Seq2[eventlog.Event, error]) (Info, error)
	// Dependents returns the IDs of the forks whose parent is id (children
	// do not depend on their parent), sorted.
	Dependents(ctx context.Context, id string) ([]string, error)
	// WriterHeld reports whether a writer holds session id now, without
	// taking anything: asking never makes a writer fail. The answer may
	// be stale as soon as it is given.
	WriterHeld(ctx context.Context, id string) (bool, error)
	// GC deletes the sessions whose last activity is older than before,
	// except those a writer holds and those a session being kept forks
	// from (one decision for every store: the store core's), then removes what
	// interrupted operations left; with dryRun it only reports.
	GC(ctx context.Context, before time.Time, dryRun bool) (GCReport, error)
	// Tree returns the store's sessions as a forest, from their headers
	// alone, so that a session whose tail cannot be read still holds its
	// forks: roots (sessions without a parent, or whose parent is gone)
	// oldest first, each with its forks and children, oldest first.
	Tree(ctx context.Context) ([]*Node, error)
	// Children returns the headers of the sessions forked or spawned from
	// id, sorted by ID.
	Children(ctx context.Context, id string) ([]eventlog.Header, error)
	// Ancestors returns the headers of id's parent, its parent's parent,
	// and so on, nearest first. A parent that is gone ends the chain:
	// gone is its ID.
	Ancestors(ctx context.Context, id string) (chain []eventlog.Header, gone string, err error)
	// OpenOrCreate opens for writing the session that labels name (LabelID),
	// creating it, with those labels, when it does not exist; created says
	// which. opts are used only for a create (an encoding, say); the ID and
	// the labels are OpenOrCreate's.
	//
	// It is how a program finds its session again after a crash with nothing
	// but what it knew before it started: the labels are in the session's
	// header, written with it (Create is durable on return), and they name
	// its ID. So there is no moment when the session exists and nothing
	// records its ID — which is what a side file holding the ID leaves, when
	// the process dies between the create and the write of the file: an
	// orphan session, and a second one at the next start. A kill at any
	// instant leaves either no session (the next run creates it) or the
	// session (the next run opens it).
	//
	// Two processes that start at once both end up on the one session: the
	// one that creates it holds its writer lock, the other gets ErrLocked (one
	// writer at a time, docs/format.md §9). A session that has the ID but
	// other labels (created with WithID by hand) is refused with ErrExists.
	OpenOrCreate(ctx context.Context, labels map[string]string, opts ...Option) (h Handle, created bool, err error)
	// TreeOf returns the tree session id belongs to, from the headers alone:
	// its root (the farthest ancestor in the store) with every fork and
	// child below it, oldest first, as Tree has them; ParentGone is set on a
	// root whose parent is gone. On a store with an index (the file store)
	// its cost grows with the tree, not with the store. Paths are left empty.
	TreeOf(ctx context.Context, id string) (*Node, error)
	// OpenWhenFree opens session id for writing, waiting up to wait for
	// the writer lock while another writer holds it: what a supervisor needs
	// when it restarts an agent it killed. A file store's lock dies with its
	// process, so the first try succeeds; a JetStream lease outlives a killed
	// writer by up to its TTL, so pass the store's lease TTL as wait. waiting,
	// if not nil, is called once, when the first try finds the lock held.
	// After wait (or when ctx ends) it returns the last ErrLocked (or ctx's
	// error); any other error at once.
	OpenWhenFree(ctx context.Context, id string, wait time.Duration, waiting func()) (Handle, error)
	// Resolve returns the session that name names, as a person types it
	// (docs/cli.md, SESSION):
	//
	//   - a session ID, in either case: that session (one Stat, no listing);
	//   - a shorter prefix of one: the one session whose ID starts with it;
	//   - a label query (ParseName: agent=coder, or agent=coder,task=t1): the
	//     one session whose labels hold every pair.
	//
	// When several sessions fit it returns an *AmbiguousError listing them;
	// when none does, an error wrapping ErrNotFound that says what was looked
	// for; a name that is none of the three wraps ErrInvalidID. A prefix or a
	// query is a List of what it names: on a store with an index (the file
	// store) its cost grows with the sessions that fit, not with the store. A session whose tail cannot be read still counts as a
	// candidate of a prefix, so that a prefix never names another session
	// because one is damaged. When the one session named cannot be described,
	// the Info holds its ID and err is Stat's error (the session is corrupt,
	// stored twice, not a regular file…).
	Resolve(ctx context.Context, name string) (Info, error)
	// GetDerived, PutDerived and DeleteDerived keep derived data beside
	// session id (replay's stored states, digest states): a cache that
	// can always be rebuilt from the log, so callers check that what they
	// get matches the log before they trust it. GetDerived fails with an
	// error wrapping ErrNotFound when there is none.
	GetDerived(ctx context.Context, id, key string) ([]byte, error)
	PutDerived(ctx context.Context, id, key string, data []byte) error
	DeleteDerived(ctx context.Context, id, key string) error
}

// Handle is an open session. A write handle is the session's only writer;
// its methods are safe for concurrent use, and concurrent Append+Flush
// callers share writes and fsyncs (group commit). A read-only handle
// reads what is on disk.
type Handle interface {
	// ID returns the session ID.
	ID() string
	// Path returns where the log lives, for messages.
	Path() string
	// Header returns the log's header.
	Header() eventlog.Header
	// Writable reports whether the handle may append.
	Writable() bool
	// Append validates the whole batch (nothing is written if any event
	// is refused), assigns the next seqs, and returns the last one. The
	// reserved types of docs/format.md §7 are checked too: a checkpoint's log digest
	// must match the log before it, a rollback's "to" must be below its
	// own seq. The
	// events are durable once a later Flush returns nil (or at once,
	// under a flush policy that says so). Seq fields are ignored.
	Append(ctx context.Context, events ...eventlog.Event) (last int64, err error)
	// AppendAt is Append that first checks that the next seq is
	// expected; otherwise it writes nothing and returns a *ConflictError.
	AppendAt(ctx context.Context, expected int64, events ...eventlog.Event) (last int64, err error)
	// Flush is the durability barrier: once it returns nil, every event
	// appended before it — by any goroutine — survives a process kill or
	// power loss. So events once dropped make every later Flush fail: a
	// flush that meets another writer's appends (a store without writer
	// locks) stores nothing of its batch and drops everything queued, and
	// the handle is poisoned with a *ConflictError (in a *PoisonedError)
	// that says where the log now ends; reopen to go on from there.
	Flush(ctx context.Context) error
	// Read yields the events with from <= seq <= to in order (to may be
	// End). A write handle sees its own appends, flushed or not; a
	// read-only handle sees the complete rows on disk when the read
	// reaches them, so it can follow a writer.
	Read(ctx context.Context, from, to int64) iter.Seq2[eventlog.Event, error]
	// Seq returns the last seq assigned (write handle) or seen (read-only
	// handle), or FirstSeq-1 when there is none.
	Seq() int64
	// DurableSeq returns the last seq covered by a Flush that returned
	// nil (for a read-only handle: the last seq seen on disk).
	DurableSeq() int64
	// LogDigest returns the log digest (docs/format.md §6) of every event appended
	// so far and the seq of the next event: what a checkpoint appended
	// next must carry. The first call may read the log once (or resume a
	// saved state); after it, Append keeps the digest current. On a
	// read-only handle it covers the events seen by the first call.
	LogDigest(ctx context.Context) (digest string, next int64, err error)
	// Torn reports the torn tail opening found (docs/format.md §9), or
	// nil. A write handle cuts it (durably) before its first new append.
	Torn() *eventlog.TornTail
	// Close flushes a write handle, releases its lock and closes its file.
	// Later calls return ErrClosed.
	Close() error
}

// Info describes a session without reading its whole log.
type Info struct {
	ID        string
	Path      string
	Encoding  string // "raw"
	Header    eventlog.Header
	Events    int64  // events of the logical log
	LastSeq   int64  // -1 when the log is empty
	LastType  string // "" when the log has no event of its own
	LastTime  int64
	SizeBytes int64
	// Sealed is true for a sealed session (docs/format.md §11).
	Sealed bool
}
