package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"slices"
	"sort"
	"strings"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/projection"
)

// Source is a session's logical log. handle.Handle is one.
type Source interface {
	// ID names the session (for snapshot keys).
	ID() string
	// Read yields the events with from <= seq <= to in order, each with
	// data of its own that nothing changes later (a handle's Read does):
	// the projections may keep it (projection.Projection).
	Read(ctx context.Context, from, to int64) iter.Seq2[eventlog.Event, error]
	// Seq returns the last seq of the log.
	Seq() int64
}

// BorrowingSource is a Source that can also lend its events' data (a
// handle.Handle a store opens is one): ReadBorrowed is Read whose events'
// Data may point into the reader's buffers, valid only until the next
// event and never to be changed. Replay reads through it when every
// projection is a projection.Borrower, which copies what it keeps, and
// saves a copy of every event's data.
type BorrowingSource interface {
	Source
	ReadBorrowed(ctx context.Context, from, to int64) iter.Seq2[eventlog.Event, error]
}

// LocatingSource is a BorrowingSource that can also say where each
// event's data lies in the bytes of its log (a handle.Handle of a raw log
// a store opens is one): ReadLocated is ReadBorrowed through yield, which
// is also given the offset in LogBytes of the event's data, -1 when the
// log does not hold them as they are. It returns the error that ended
// the read. LogBytes is nil when no offset will be given; its bytes stay
// readable and unchanged until the source is closed. Replay reads
// through it with LocateData.
type LocatingSource interface {
	BorrowingSource
	ReadLocated(ctx context.Context, from, to int64, yield func(e eventlog.Event, at int64) bool) error
	LogBytes() io.ReaderAt
}

// Cache keeps derived data beside sessions. file.Store is one.
// Replay trusts a stored state whose session, seq and log digest match a
// checkpoint of the log, so GetDerived must return the data PutDerived
// kept, or an error (a FileStore's derived files carry a sum: a damaged
// one reads as not found).
type Cache interface {
	GetDerived(ctx context.Context, id, key string) ([]byte, error)
	PutDerived(ctx context.Context, id, key string, data []byte) error
	DeleteDerived(ctx context.Context, id, key string) error
}

// ErrReplayTooLarge is returned, together with the state rebuilt so far,
// when a replay reaches its budget (WithBudget).
var ErrReplayTooLarge = errors.New("replay: over budget")

// Budget bounds a replay; zero fields are no bound.
type Budget struct {
	Events int64 // events applied
	Bytes  int64 // canonical bytes of the events applied
	Tokens int64 // an estimate: canonical bytes / 4
}

// Degradation is one way a restoration is incomplete.
type Degradation struct {
	// Kind is "data" (an event a projection could not fully understand)
	// or "budget" (the replay stopped at its budget).
	Kind       string `json:"kind"`
	Seq        int64  `json:"seq"`
	Projection string `json:"projection,omitempty"`
	Reason     string `json:"reason"`
}

// Degrader is implemented by projections that record the events they could
// not fully understand (the built-in ones do).
type Degrader interface {
	DegradedEvents() []projection.Degraded
}

// ErrDigest is wrapped by *DigestError.
var ErrDigest = errors.New("replay: digest mismatch")

// DigestError reports a checkpoint whose digest does not match what
// precedes it.
type DigestError struct {
	Seq        int64  // the checkpoint's seq
	Projection string // "" for the log digest, else the projection's ID
	Want, Got  string // the checkpoint's digest, the recomputed one
}

// Error implements error.
func (e *DigestError) Error() string {
	what := "log digest"
	if e.Projection != "" {
		what = "state digest of " + e.Projection
	}
	return fmt.Sprintf("replay: checkpoint at seq %d: %s is %s, recomputed %s", e.Seq, what, e.Want, e.Got)
}

// Unwrap returns ErrDigest.
func (e *DigestError) Unwrap() error { return ErrDigest }

// Result says what a replay did.
type Result struct {
	// Seq is the last seq applied: the projections hold the state right
	// after it (-1: no event).
	Seq int64
	// Events is how many events were read from the source, rollbacks'
	// re-reads included.
	Events int64
	// Rollbacks is how many rollback events were applied.
	Rollbacks int
	// FromSnapshot is the seq of the stored snapshot the replay started
	// from, or -1.
	FromSnapshot int64
	// Checkpoints is how many checkpoint events were met; with
	// CheckDigests, Verified of them had every digest checked and
	// Unchecked named a state of a projection the replay did not have.
	Checkpoints, Verified, Unchecked int
	// Degraded lists every way the rebuilt state is incomplete: events
	// of the projections' Degraded lists, a budget cut.
	Degraded []Degradation
}

type config struct {
	budget       Budget
	upTo         int64
	cache        Cache
	snapEvery    int
	memLimit     int
	checkDigests bool
	locate       bool
	log          *slog.Logger
}

// Option configures Replay.
type Option func(*config)

// UpTo replays up to seq (inclusive); by default to the source's last seq.
func UpTo(seq int64) Option { return func(c *config) { c.upTo = seq } }

// WithCache keeps states at checkpoints in c and starts from the latest
// one that matches the log.
func WithCache(c Cache) Option { return func(cfg *config) { cfg.cache = c } }

// defaultMemLimit is WithMemoryLimit's default.
const defaultMemLimit = 8 << 20

// WithSnapshotEvery keeps a state in memory every n events (default 1024),
// besides one at every checkpoint.
func WithSnapshotEvery(n int) Option { return func(c *config) { c.snapEvery = max(n, 1) } }

// WithMemoryLimit bounds the bytes of states kept in memory (default 8
// MiB); past it every other kept state is dropped. The default keeps a
// replay's memory at what its projections hold plus a few tens of MB
// however long the log (docs/performance.md, the 1 GiB session); a larger
// limit keeps more states, so a rollback far back re-applies fewer events.
func WithMemoryLimit(n int) Option { return func(c *config) { c.memLimit = n } }

// CheckDigests recomputes the log digest of every checkpoint, and the
// state digest of those naming a projection given to Replay, from the
// first event; it turns off starting from a stored snapshot.
func CheckDigests() Option { return func(c *config) { c.checkDigests = true } }

// LocateData lets the projections that are projection.Locators (the
// transcript) keep, instead of copies of large values of the events'
// data, where they lie in the source's log, when the source is a
// LocatingSource and every projection a projection.Borrower: a replay of a
// large session then holds its tool outputs in the log, not in memory.
// Their states read them back when marshalled or written, so the source
// must stay open until the projections' states have been read.
func LocateData() Option { return func(c *config) { c.locate = true } }

// WithBudget stops the replay before the event that would pass the budget
// and returns ErrReplayTooLarge together with the state rebuilt so far
// (Result.Seq says how far) and a "budget" Degradation.
func WithBudget(b Budget) Option { return func(c *config) { c.budget = b } }

// WithLogger sets the logger; by default nothing is logged.
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.log = l } }

// Replay resets the projections and replays src into them up to UpTo (or
// the last seq), applying rollbacks. On a nil error the projections hold
// the state right after Result.Seq. Replay is streaming: it holds one
// event, plus the kept states.
func Replay(ctx context.Context, src Source, ps []projection.Projection, opts ...Option) (Result, error) {
	cfg := config{upTo: -2, snapEvery: 1024, memLimit: defaultMemLimit, log: slog.New(slog.DiscardHandler)}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.upTo == -2 {
		cfg.upTo = src.Seq()
	}
	e := &engine{ctx: ctx, src: src, ps: ps, cfg: cfg, res: Result{Seq: -1, FromSnapshot: -1}}
	e.borrowed, e.read = borrowing(src, ps)
	if ls, ok := src.(LocatingSource); ok && e.borrowed && cfg.locate {
		e.locate(ls)
	}
	if cfg.checkDigests {
		e.dig = eventlog.NewDigest()
	}
	return e.run()
}

// located is an event read, and the offset of its data in the log the
// engine's locators are given (-1: none).
type located struct {
	eventlog.Event
	at int64
}

// readFunc is how the engine reads its source.
type readFunc func(ctx context.Context, from, to int64) iter.Seq2[located, error]

// borrowing returns how the engine reads src: with ReadBorrowed when src
// is a BorrowingSource and every projection a projection.Borrower (the
// engine itself keeps no event's data past the next event), else with
// Read. Its events are not located.
func borrowing(src Source, ps []projection.Projection) (bool, readFunc) {
	read := src.Read
	bs, ok := src.(BorrowingSource)
	for _, p := range ps {
		if _, b := p.(projection.Borrower); !b {
			ok = false
		}
	}
	if ok {
		read = bs.ReadBorrowed
	}
	return ok, func(ctx context.Context, from, to int64) iter.Seq2[located, error] {
		return func(yield func(located, error) bool) {
			for ev, err := range read(ctx, from, to) {
				if !yield(located{ev, -1}, err) {
					return
				}
			}
		}
	}
}

// locate makes the engine read src through ReadLocated, and apply the
// events whose data it locates to the projections that are Locators with
// ApplyAt (LocateData).
func (e *engine) locate(src LocatingSource) {
	e.log = src.LogBytes()
	if e.log == nil {
		return
	}
	e.locators = make([]projection.Locator, len(e.ps))
	for i, p := range e.ps {
		e.locators[i], _ = p.(projection.Locator)
	}
	e.read = func(ctx context.Context, from, to int64) iter.Seq2[located, error] {
		return func(yield func(located, error) bool) {
			stopped := false
			err := src.ReadLocated(ctx, from, to, func(ev eventlog.Event, at int64) bool {
				stopped = !yield(located{ev, at}, nil)
				return !stopped
			})
			if err != nil && !stopped {
				yield(located{at: -1}, err)
			}
		}
	}
}

// snap is a kept state: every projection's state right after event seq.
type snap struct {
	seq   int64
	parts []part
	size  int
}

// part is one projection's kept state: a Snapshot when the projection is a
// projection.Snapshotter, else its marshalled state.
type part struct {
	b    []byte
	snap any
	size int // bytes in memory
}

type engine struct {
	ctx context.Context
	src Source
	// read reads src, through ReadBorrowed when borrowed (see
	// borrowing): an event's data is then valid until the next one.
	read     readFunc
	borrowed bool
	// log holds the data of located events (LocateData), and locators
	// are the projections that may keep where it lies: nil for the
	// others.
	log      io.ReaderAt
	locators []projection.Locator
	ps       []projection.Projection
	cfg      config
	res      Result
	dig      *eventlog.Digest
	mem      []snap // by seq
	used     int    // bytes in mem
	disk     []storedRef
	// since counts events applied since the last kept state, whose
	// marshalled size was lastSize; sinceStored and storedSize the same
	// for the last state stored in the cache.
	since, lastSize         int
	sinceStored, storedSize int
	// unworthAt is lastSize when a state was last found not worth storing
	// (0: never): see stillUnworthy.
	unworthAt int
}

func (e *engine) run() (Result, error) {
	e.reset()
	start := int64(-1)
	if e.cfg.cache != nil && !e.cfg.checkDigests {
		e.disk = e.loadIndex()
		if s, ok := e.restoreStored(e.cfg.upTo, -1); ok {
			start = s
			e.res.FromSnapshot = s
		}
	}
	e.res.Seq = start
	var spent Budget
	sized := e.cfg.budget.Bytes > 0 || e.cfg.budget.Tokens > 0 // else no row is sized
	for ev, err := range e.events(start+1, e.cfg.upTo) {
		if err != nil {
			return e.finish(), err
		}
		spent.Events++
		if sized {
			spent.Bytes += int64(eventlog.RowSize(ev.Event))
			spent.Tokens = spent.Bytes / 4
		}
		if b := e.cfg.budget; over(spent.Events, b.Events) || over(spent.Bytes, b.Bytes) || over(spent.Tokens, b.Tokens) {
			e.res.Degraded = append(e.res.Degraded, Degradation{Kind: "budget", Seq: ev.Seq,
				Reason: fmt.Sprintf("replay stopped before seq %d: budget of %+v reached", ev.Seq, b)})
			return e.finish(), fmt.Errorf("%w: stopped before seq %d", ErrReplayTooLarge, ev.Seq)
		}
		if err := e.forward(ev); err != nil {
			return e.finish(), err
		}
		e.res.Seq = ev.Seq
	}
	if err := e.ctx.Err(); err != nil {
		return e.finish(), err
	}
	return e.finish(), nil
}

func over(spent, limit int64) bool { return limit > 0 && spent > limit }

// finish adds the projections' degraded events to the result.
func (e *engine) finish() Result {
	var data []Degradation
	for _, p := range e.ps {
		if d, ok := p.(Degrader); ok {
			for _, x := range d.DegradedEvents() {
				data = append(data, Degradation{Kind: "data", Seq: x.Seq, Projection: projection.ID(p), Reason: x.Type + ": " + x.Reason})
			}
		}
	}
	e.res.Degraded = append(data, e.res.Degraded...)
	return e.res
}

func (e *engine) reset() {
	for _, p := range e.ps {
		p.Reset()
	}
}

// forward applies one event of the main pass: digests are checked, states
// kept.
func (e *engine) forward(ev located) error {
	var cpLog string // the log digest of a checkpoint
	if ev.Type == eventlog.TypeCheckpoint {
		e.res.Checkpoints++
		var err error
		if cpLog, err = e.checkpoint(ev.Event); err != nil {
			return err
		}
	}
	if e.dig != nil {
		e.dig.Add(ev.Event)
	}
	if err := e.apply(ev); err != nil {
		return err
	}
	e.since++
	e.sinceStored++
	var states [][]byte // marshalled by keep, when it marshalled them all
	if e.since >= e.spacing(e.lastSize) {
		states = e.keep(ev.Seq)
	}
	if ev.Type == eventlog.TypeCheckpoint && e.cfg.cache != nil && len(e.ps) > 0 && e.sinceStored >= e.spacing(e.storedSize) &&
		!e.stillUnworthy(ev.Seq) {
		if states == nil {
			var err error
			if states, _, err = e.marshal(); err != nil {
				return nil // not stored: a later replay costs some events
			}
		}
		e.store(ev.Seq, cpLog, states)
	}
	return nil
}

// stillUnworthy reports whether the state at seq is, by the last attempt,
// still not worth storing, so that it is not marshalled (and, for a
// transcript, hashed) only to be dropped. Its stored size is estimated
// from the last attempt's, scaled by how the kept states' size changed
// since: a state that grows with the log (a transcript) is not tried
// again, one that shrank (a compaction) or stopped growing is, once the
// log is long enough for it.
func (e *engine) stillUnworthy(seq int64) bool {
	if e.unworthAt == 0 {
		return false
	}
	est := int64(e.storedSize) * int64(e.lastSize) / int64(e.unworthAt)
	return est/loadBytesPerEvent >= seq+1
}

// spacing is how many events must pass before a state of size bytes is
// marshalled again: at least snapEvery, and more for a large state, so
// that marshalling never costs more than about as much as applying the
// events in between (a large transcript takes ~4 ns a byte to marshal and
// ~0.5 µs an event to apply). States are then kept at growing intervals,
// and replay stays linear in the log.
func (e *engine) spacing(size int) int { return max(e.cfg.snapEvery, size/256) }

// apply folds one event into the projections; a rollback restores the
// state after its target.
func (e *engine) apply(ev located) error {
	e.res.Events++
	switch ev.Type {
	case eventlog.TypeCheckpoint:
		return nil
	case eventlog.TypeRollback:
		r, cerr := eventlog.ParseReserved(ev.Event)
		if cerr != nil {
			return cerr
		}
		e.res.Rollbacks++
		if err := e.restoreTo(r.Rollback.To); err != nil {
			return err
		}
		// Keep the state after every rollback: a later rollback to this
		// seq or after it starts here instead of applying this rollback
		// again. Without it, chained rollbacks (a retry loop rolling back
		// to the previous rollback) cost twice as much for each one more.
		if !e.kept(ev.Seq) {
			e.keep(ev.Seq)
		}
		return nil
	}
	for i, p := range e.ps {
		if ev.at >= 0 && e.locators[i] != nil {
			e.locators[i].ApplyAt(ev.Event, e.log, ev.at)
		} else {
			p.Apply(ev.Event)
		}
	}
	return nil
}

// kept reports whether a state after seq is kept in memory.
func (e *engine) kept(seq int64) bool {
	i := sort.Search(len(e.mem), func(i int) bool { return e.mem[i].seq >= seq })
	return i < len(e.mem) && e.mem[i].seq == seq
}

// restoreTo sets every projection to its state right after event t: from
// the nearest kept state at or before t, then the events after it.
func (e *engine) restoreTo(t int64) error {
	from := int64(-1)
	i := sort.Search(len(e.mem), func(i int) bool { return e.mem[i].seq > t }) - 1
	if i >= 0 {
		from = e.mem[i].seq
	}
	restored := false
	if d, ok := e.nearestStored(t); ok && d > from {
		if s, ok := e.restoreStored(t, from); ok {
			from, restored = s, true
		}
	}
	switch {
	case restored:
	case i >= 0:
		if err := e.restore(e.mem[i].parts); err != nil {
			return err
		}
	default:
		e.reset()
	}
	for ev, err := range e.read(e.ctx, from+1, t) {
		if err != nil {
			return err
		}
		if err := e.apply(ev); err != nil {
			return err
		}
	}
	return nil
}

func (e *engine) marshal() ([][]byte, int, error) {
	states := make([][]byte, len(e.ps))
	size := 0
	for i, p := range e.ps {
		b, err := p.MarshalState()
		if err != nil {
			return nil, 0, fmt.Errorf("replay: marshal %s: %w", projection.ID(p), err)
		}
		states[i] = b
		size += len(b)
	}
	return states, size, nil
}

func (e *engine) unmarshal(states [][]byte) error {
	for i, p := range e.ps {
		if err := p.UnmarshalState(states[i]); err != nil {
			return fmt.Errorf("replay: restore %s: %w", projection.ID(p), err)
		}
	}
	return nil
}

// restore sets every projection to a kept state.
func (e *engine) restore(parts []part) error {
	for i, p := range e.ps {
		var err error
		if parts[i].snap != nil {
			err = p.(projection.Snapshotter).Restore(parts[i].snap)
		} else {
			err = p.UnmarshalState(parts[i].b)
		}
		if err != nil {
			return fmt.Errorf("replay: restore %s: %w", projection.ID(p), err)
		}
	}
	return nil
}

// keep saves the state after seq in memory, thinning the kept states when
// they pass the memory limit. It returns the marshalled states when it
// marshalled every projection's (none is a Snapshotter), else nil.
func (e *engine) keep(seq int64) [][]byte {
	e.since = 0
	if len(e.ps) == 0 {
		return nil
	}
	parts := make([]part, len(e.ps))
	marshalled := make([][]byte, 0, len(e.ps))
	for i, p := range e.ps {
		if sn, ok := p.(projection.Snapshotter); ok {
			parts[i].snap, parts[i].size = sn.Snapshot()
			marshalled = nil
			continue
		}
		b, err := p.MarshalState()
		if err != nil {
			return nil // a state that cannot be kept is rebuilt from further back
		}
		parts[i].b, parts[i].size = b, len(b)
		if marshalled != nil {
			marshalled = append(marshalled, b)
		}
	}
	e.keepParts(seq, parts)
	return marshalled
}

// keepStates keeps the state after seq in memory, given its marshalled
// states (a Snapshotter's is kept as a Snapshot of its current state,
// which must be that one).
func (e *engine) keepStates(seq int64, states [][]byte) {
	parts := make([]part, len(states))
	for i, b := range states {
		if sn, ok := e.ps[i].(projection.Snapshotter); ok {
			parts[i].snap, parts[i].size = sn.Snapshot()
		} else {
			parts[i].b, parts[i].size = b, len(b)
		}
	}
	e.keepParts(seq, parts)
}

// keepParts keeps the kept states of the state after seq in memory.
func (e *engine) keepParts(seq int64, parts []part) {
	e.since = 0
	size := 0
	for _, pt := range parts {
		size += pt.size
	}
	e.lastSize = size
	i := sort.Search(len(e.mem), func(i int) bool { return e.mem[i].seq >= seq })
	if i < len(e.mem) && e.mem[i].seq == seq {
		return
	}
	e.mem = slices.Insert(e.mem, i, snap{seq: seq, parts: parts, size: size})
	e.used += size
	for e.used > e.cfg.memLimit && len(e.mem) > 1 {
		kept := e.mem[:0]
		e.used = 0
		for i, s := range e.mem {
			if i%2 == 1 || i == len(e.mem)-1 {
				kept = append(kept, s)
				e.used += s.size
			}
		}
		e.mem = kept
	}
}

// checkpoint checks a checkpoint's data and digests (CheckDigests) and
// returns its log digest.
func (e *engine) checkpoint(ev eventlog.Event) (log string, err error) {
	r, cerr := eventlog.ParseReserved(ev)
	if cerr != nil {
		return "", cerr
	}
	cp := r.Checkpoint
	if e.dig != nil {
		if err := e.dig.CheckCheckpoint(ev.Seq, cp); err != nil {
			var le *eventlog.LogDigestError
			if errors.As(err, &le) {
				return "", &DigestError{Seq: le.Seq, Want: le.Want, Got: le.Got}
			}
			return "", err
		}
		checked := true
		if cp.State != nil {
			checked = false
			for _, p := range e.ps {
				if projection.ID(p) != cp.State.Projection {
					continue
				}
				got, err := projection.StateDigest(p)
				if err != nil {
					return "", err
				}
				if got != cp.State.Digest {
					return "", &DigestError{Seq: ev.Seq, Projection: cp.State.Projection, Want: cp.State.Digest, Got: got}
				}
				checked = true
			}
		}
		if checked {
			e.res.Verified++
		} else {
			e.res.Unchecked++
		}
	}
	return cp.Log, nil
}

// projectionsKey names the set of projections in cache keys.
func (e *engine) projectionsKey() string {
	ids := make([]string, len(e.ps))
	for i, p := range e.ps {
		ids[i] = strings.ReplaceAll(projection.ID(p), "/", "-")
	}
	return strings.Join(ids, "_")
}

// storedState is a snapshot kept in the cache.
type storedState struct {
	Session     string            `json:"session"`
	Seq         int64             `json:"seq"`
	Log         string            `json:"log"`
	Projections []string          `json:"projections"`
	States      []json.RawMessage `json:"states"`
}

// storedRef indexes stored states: a checkpoint's seq and log digest, and
// the stored file's size (0 when unknown: an index of an older version).
type storedRef struct {
	Seq  int64  `json:"seq"`
	Log  string `json:"log"`
	Size int64  `json:"size,omitempty"`
}

// loadBytesPerEvent weighs loading a stored state against applying events:
// decoding a stored state costs about as much per this many bytes as
// applying one event (a large transcript decodes at ~7 ns a byte and
// applies at ~1 µs an event). A stored state is loaded only when it saves
// more events than its size in these units.
const loadBytesPerEvent = 128

// worthLoading reports whether loading ref beats applying the events from
// the one after seq from up to it.
func worthLoading(ref storedRef, from int64) bool {
	return ref.Size/loadBytesPerEvent < ref.Seq-from
}

func (e *engine) indexKey() string { return "snaps-" + e.projectionsKey() }

func (e *engine) stateKey(seq int64) string {
	return fmt.Sprintf("snap-%s-%d", e.projectionsKey(), seq)
}

// maxStored bounds the states kept on disk per session and set of
// projections: the latest ones are kept.
const maxStored = 16

func (e *engine) loadIndex() []storedRef {
	b, err := e.cfg.cache.GetDerived(e.ctx, e.src.ID(), e.indexKey())
	if err != nil {
		return nil
	}
	var refs []storedRef
	if json.Unmarshal(b, &refs) != nil {
		return nil
	}
	sort.Slice(refs, func(i, j int) bool { return refs[i].Seq < refs[j].Seq })
	return refs
}

// nearestStored returns the seq of the latest stored state at or before t.
func (e *engine) nearestStored(t int64) (int64, bool) {
	i := sort.Search(len(e.disk), func(i int) bool { return e.disk[i].Seq > t }) - 1
	if i < 0 {
		return 0, false
	}
	return e.disk[i].Seq, true
}

// restoreStored restores the latest stored state at or before t that still
// matches the log (the checkpoint it was taken at is in the log with the
// same log digest, so every event before it is the same) and is worth
// loading rather than applying the events after seq from (-1: all). Stale
// entries are passed over.
func (e *engine) restoreStored(t, from int64) (int64, bool) {
	for i := sort.Search(len(e.disk), func(i int) bool { return e.disk[i].Seq > t }) - 1; i >= 0; i-- {
		ref := e.disk[i]
		if ref.Seq <= from {
			return 0, false
		}
		if !worthLoading(ref, from) || !e.checkpointAt(ref) {
			continue
		}
		b, err := e.cfg.cache.GetDerived(e.ctx, e.src.ID(), e.stateKey(ref.Seq))
		if err != nil {
			continue
		}
		var st storedState
		if json.Unmarshal(b, &st) != nil || st.Seq != ref.Seq || st.Log != ref.Log || st.Session != e.src.ID() ||
			len(st.States) != len(e.ps) || len(st.Projections) != len(e.ps) {
			continue
		}
		states := make([][]byte, len(st.States))
		for k, raw := range st.States {
			if st.Projections[k] != projection.ID(e.ps[k]) {
				states = nil
				break
			}
			states[k] = raw
		}
		if states == nil || e.unmarshal(states) != nil {
			e.reset()
			continue
		}
		e.cfg.log.Debug("replay starts from a stored state", "session", e.src.ID(), "seq", ref.Seq)
		// Keep it in memory too: a rollback to after it needs no second
		// read of the cache, and the next state is kept only once as many
		// events as its size warrants have passed.
		e.keepStates(ref.Seq, states)
		return ref.Seq, true
	}
	return 0, false
}

// checkpointAt reports whether the log holds, at ref.Seq, a checkpoint
// with ref's log digest.
func (e *engine) checkpointAt(ref storedRef) bool {
	for ev, err := range e.read(e.ctx, ref.Seq, ref.Seq) {
		if err != nil || ev.Type != eventlog.TypeCheckpoint {
			return false
		}
		cp, err := eventlog.ParseCheckpoint(ev.Data)
		return err == nil && cp.Log == ref.Log
	}
	return false
}

// store keeps the state at a checkpoint in the cache, and forgets the
// oldest stored states past maxStored. Failures only cost a later replay
// some events.
func (e *engine) store(seq int64, log string, states [][]byte) {
	for _, r := range e.disk {
		if r.Seq == seq && r.Log == log {
			return
		}
	}
	st := storedState{Session: e.src.ID(), Seq: seq, Log: log, States: make([]json.RawMessage, len(states))}
	size := 0
	for i, p := range e.ps {
		st.Projections = append(st.Projections, projection.ID(p))
		st.States[i] = states[i]
		size += len(states[i])
	}
	e.sinceStored, e.storedSize = 0, size // a failure backs off too
	if !worthLoading(storedRef{Seq: seq, Size: int64(size)}, -1) {
		e.unworthAt = e.lastSize // 0 before any state was kept: no estimate
		return                   // a replay from zero would be cheaper than loading it
	}
	e.unworthAt = 0
	b, err := json.Marshal(st)
	if err != nil || e.cfg.cache.PutDerived(e.ctx, e.src.ID(), e.stateKey(seq), b) != nil {
		return
	}
	refs := append([]storedRef(nil), e.disk...)
	refs = slices.DeleteFunc(refs, func(r storedRef) bool { return r.Seq == seq })
	refs = append(refs, storedRef{Seq: seq, Log: log, Size: int64(len(b))})
	sort.Slice(refs, func(i, j int) bool { return refs[i].Seq < refs[j].Seq })
	var dropped []storedRef
	if len(refs) > maxStored {
		dropped, refs = refs[:len(refs)-maxStored], refs[len(refs)-maxStored:]
	}
	if b, err := json.Marshal(refs); err == nil && e.cfg.cache.PutDerived(e.ctx, e.src.ID(), e.indexKey(), b) == nil {
		e.disk = refs
		for _, r := range dropped {
			e.cfg.cache.DeleteDerived(e.ctx, e.src.ID(), e.stateKey(r.Seq))
		}
	}
}
