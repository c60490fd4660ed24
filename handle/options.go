package handle

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"filippo.io/age"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/secrets/redact"
	"github.com/sessionlog/sessionlog/secrets/seal"
)

// FlushPolicy says when a write handle flushes on its own. Whatever the
// policy, Flush and Close flush; the zero policy flushes only then (the
// default).
type FlushPolicy struct {
	// Every makes an Append that leaves Every or more unflushed events
	// flush before it returns, so that Append returns only once they are
	// durable. If that flush fails (a cancelled context, a poisoned
	// handle), Append returns the seq it assigned together with the
	// error: the events are queued, not durable, and a later Flush may
	// still write them — retrying the Append would append them twice.
	Every int
	// Interval flushes every Interval from a background goroutine.
	// Appends are then durable within about Interval, but nothing tells
	// the appender when: use it only where losing the last Interval of
	// events in a crash is acceptable.
	Interval time.Duration
}

// Config is what Options set: a store's settings, as the store core, the
// write core and a backend read them (core.NewConfig), and what one call
// was asked (the options a Create, Open, List or Delete is given apply to
// that call only, over the store's). Every store and every call takes the
// same Options; each says what it changes and where it matters.
//
// The settings most programs change have a constructor (WithLogger,
// WithFlushPolicy, WithEncoding, Unredacted, WithRecipients, ...). The
// rest — tuning and test hooks — are set by an Option literal, as
//
//	file.New(fsys, dir, func(c *handle.Config) { c.ZstdLevel = 19 })
type Config struct {
	Logger *slog.Logger
	Policy FlushPolicy
	// PackTypes are the event types packed into packed rows (default:
	// eventlog.DefaultPackTypes); an empty, non-nil list packs nothing.
	PackTypes []string
	// Now is the clock of IDs and createdAt (tests set it).
	Now      func() time.Time
	Encoding string
	// ZstdLevel is the zstd level (1 fastest … 22 best) of both the
	// per-flush frames and whole-file rewrites (Compact, Convert,
	// Detach). Zero: flushes use a fast level and rewrites level 7, which
	// runs once, off the append path, and makes a session smaller than
	// `zstd -3` makes its JSONL.
	ZstdLevel int
	// CompactOnClose makes a zstd write handle rewrite its session into
	// large frames when it closes (see Converter): small per-flush frames
	// compress poorly.
	CompactOnClose bool
	// Redactor is applied by write handles to every event appended,
	// before it is checked, digested and stored (docs/format.md §11): by
	// default redact.New(), the built-in detectors; nil turns redaction
	// off (Unredacted). CreateFrom and AppendAll store the events they are
	// given as they are (see CreateFrom).
	Redactor   *redact.Redactor
	Recipients []age.Recipient // new sessions are sealed for them; not nil: sealing asked
	Identities []age.Identity  // open sealed sessions
	// Ticker drives FlushPolicy.Interval; tests replace it.
	Ticker func(time.Duration) (<-chan time.Time, func())

	// What one call was asked, over the store's settings (Config.With):
	// a new session's labels, parent, createdAt, ID and sealing (Create,
	// CreateFrom, Fork), List's query, Delete's way with forks.
	Labels    map[string]string
	Parent    *eventlog.Parent
	CreatedAt *int64
	ID        *string
	// SealAs seals the new session as it says: the same key records and
	// data key, so that the same identities read it (a copy of a sealed
	// session keeps it sealed: transfer.Copy). The session's ID must be
	// the one it was taken of (an envelope names its session).
	SealAs  *Sealing
	List    ListQuery
	Detach  bool
	Cascade bool
}

// Option configures a store, or one call of it.
type Option func(*Config)

// With returns c with opts applied over the store's settings, and what
// they ask of one call (what an earlier call asked is not kept).
func (c Config) With(opts ...Option) Config {
	c.Labels, c.Parent, c.CreatedAt, c.ID, c.SealAs = nil, nil, nil, nil, nil
	c.List, c.Detach, c.Cascade = ListQuery{}, false, false
	for _, o := range opts {
		o(&c)
	}
	c.List.Labels, c.List.Parent, c.List.Prefix = c.Labels, "", ""
	if c.Parent != nil {
		c.List.Parent = c.Parent.ID
	}
	if c.ID != nil {
		c.List.Prefix = *c.ID
	}
	return c
}

// WithLogger sets the logger; by default nothing is logged.
func WithLogger(l *slog.Logger) Option {
	return func(c *Config) {
		if l != nil {
			c.Logger = l
		}
	}
}

// WithFlushPolicy sets the flush policy of write handles.
func WithFlushPolicy(p FlushPolicy) Option { return func(c *Config) { c.Policy = p } }

// WithEncoding sets the encoding of the sessions the store creates —
// given to Create, of that session: EncodingRaw (the default) or
// EncodingZstd. Existing sessions keep theirs.
func WithEncoding(encoding string) Option { return func(c *Config) { c.Encoding = encoding } }

// Unredacted turns redaction at write (docs/format.md §11) off: for every
// handle of a store, or given to Create, Fork or Open for the handle it
// returns. Events are then stored exactly as appended.
func Unredacted() Option { return func(c *Config) { c.Redactor = nil } }

// WithLabels sets a new session's labels (Create); given to List, it keeps
// the sessions that have them.
func WithLabels(labels map[string]string) Option {
	return func(c *Config) {
		if c.Labels == nil {
			c.Labels = map[string]string{}
		}
		maps.Copy(c.Labels, labels)
	}
}

// WithParent links a new session to a parent (eventlog.ModeFork or
// eventlog.ModeChild); given to List, it keeps the sessions whose parent
// is p.ID.
func WithParent(p eventlog.Parent) Option { return func(c *Config) { c.Parent = &p } }

// WithCreatedAt sets a new session's createdAt (Unix milliseconds) instead
// of now: an import keeps the original's.
func WithCreatedAt(ms int64) Option { return func(c *Config) { c.CreatedAt = &ms } }

// WithID creates the session under a given ID instead of a new one
// (importing, say); Create fails with ErrExists if it is taken. Given to
// List, it keeps the sessions whose ID starts with id, a prefix in upper
// case: on a store with an index (the file store) its cost grows with the
// sessions it keeps, not with the store.
func WithID(id string) Option { return func(c *Config) { c.ID = &id } }

// SkipBroken makes List go on past a session it cannot describe (a
// corrupt header, say), calling report with its ID and the error, instead
// of failing.
func SkipBroken(report func(id string, err error)) Option {
	return func(c *Config) { c.List.Broken = report }
}

// Page orders List as ls does — the last active first (Info.LastActive),
// then the greater ID first — and makes it return a page: at most n
// sessions (n ≤ 0: all), from the one after the session before names (the
// last of the page before: its Info.Cursor; the zero Cursor: from the
// first). Without it List orders by creation, newest first. On a store
// with an index its cost grows with n, not with the store.
func Page(n int, before Cursor) Option {
	return func(c *Config) {
		c.List.Limit, c.List.ByActivity, c.List.Before = max(n, 0), true, nil
		if before != (Cursor{}) {
			c.List.Before = &before
		}
	}
}

// Detach makes Delete write the inherited prefix into every fork that
// depends on the session (atomically, each under its writer lock), so that
// they stand alone, before deleting it.
func Detach() Option { return func(c *Config) { c.Detach = true } }

// Cascade makes Delete delete the forks that depend on the session (and
// theirs), before deleting it.
func Cascade() Option { return func(c *Config) { c.Cascade = true } }

// ListQuery is what List's options ask, as a store's index reads it
// (Index): the filters, the order and the page.
type ListQuery struct {
	// Labels the sessions have (WithLabels), Parent their parent's ID
	// (WithParent), Prefix the start of their ID (WithID).
	Labels map[string]string
	Parent string
	Prefix string
	// Broken is told of a session List cannot describe (SkipBroken);
	// nil fails List instead.
	Broken func(id string, err error)
	// ByActivity orders by last activity; Limit (0: all) and Before make
	// a page of that order (Page).
	ByActivity bool
	Limit      int
	Before     *Cursor
}

// Cursor is where a page of List ends: its last session's activity and
// ID. Its text form (String, MarshalText), "<last activity ms>.<ID>", is
// what ls --before takes.
type Cursor struct {
	LastActive int64
	ID         string
}

// Cursor returns the cursor of a page that ends at session i.
func (i Info) Cursor() Cursor { return Cursor{LastActive: i.LastActive(), ID: i.ID} }

// String returns the cursor's text form.
func (c Cursor) String() string { return strconv.FormatInt(c.LastActive, 10) + "." + c.ID }

// MarshalText returns the cursor's text form.
func (c Cursor) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// UnmarshalText parses a cursor's text form into c; the error wraps
// ErrInvalidID.
func (c *Cursor) UnmarshalText(text []byte) error {
	ms, id, ok := strings.Cut(string(text), ".")
	n, err := strconv.ParseInt(ms, 10, 64)
	if !ok || err != nil || !eventlog.ValidID(id) {
		return fmt.Errorf("%w: %q is not a cursor <ms>.<ID>", ErrInvalidID, text)
	}
	*c = Cursor{LastActive: n, ID: id}
	return nil
}

// Keeps reports whether List keeps info, cursor aside.
func (c ListQuery) Keeps(info Info) bool {
	return c.Matches(info.Header) && strings.HasPrefix(info.ID, c.Prefix)
}

// Page orders the sessions List keeps and cuts the page: by creation,
// newest first; or by activity after the cursor, at most Limit.
func (c ListQuery) Page(out []Info) []Info {
	if !c.ByActivity {
		slices.SortFunc(out, func(a, b Info) int {
			return cmp.Or(cmp.Compare(b.Header.CreatedAt, a.Header.CreatedAt), strings.Compare(b.ID, a.ID))
		})
		return out
	}
	sortActive(out)
	if b := c.Before; b != nil {
		// Newest activity first, then the greater ID: the cursor's
		// session and every one before it are on earlier pages.
		out = slices.DeleteFunc(out, func(i Info) bool {
			return cmp.Or(cmp.Compare(i.LastActive(), b.LastActive), strings.Compare(i.ID, b.ID)) >= 0
		})
	}
	if c.Limit > 0 && len(out) > c.Limit {
		out = out[:c.Limit]
	}
	return out
}

// Matches reports whether a session under header h has the labels and
// parent asked.
func (c ListQuery) Matches(h eventlog.Header) bool {
	for k, v := range c.Labels {
		if got, ok := h.Labels[k]; !ok || got != v {
			return false
		}
	}
	return c.Parent == "" || (h.Parent != nil && h.Parent.ID == c.Parent)
}

// Encodings a session may be stored in (docs/format.md §5).
const (
	// EncodingRaw: <ID>.jsonl, the header row then rows.
	EncodingRaw = "raw"
	// EncodingZstd: <ID>.jsonl.zst, zstd frames whose content is a raw log;
	// one frame per flush, the header alone in the first.
	EncodingZstd = "zstd"
)

// sortActive orders infos by last activity, newest first, then by ID,
// greatest first: List's pages.
func sortActive(infos []Info) {
	slices.SortFunc(infos, func(a, b Info) int {
		return cmp.Or(cmp.Compare(b.LastActive(), a.LastActive()), strings.Compare(b.ID, a.ID))
	})
}

// Sealing is how a sealed session's file is sealed: its key records and
// the data key its rows are sealed with. SealingOf gives it; Config.SealAs
// seals another file of the session as it is.
type Sealing struct {
	// ID is the session's: a key record is bound to it.
	ID string
	// Envelopes are the session's key records.
	Envelopes []seal.Envelope
	// Key is the data key its newest rows are sealed with.
	Key *seal.DataKey
}

// ErrNotSealed is wrapped by the errors of the sealed-session
// capabilities (Shredder, Rekeyer, SealedExporter) on a session that is
// not sealed.
var ErrNotSealed = errors.New("handle: the session is not sealed")

// ErrSealed is wrapped by the errors of sealing a store cannot do (a
// fork of a sealed session with no one to seal it for, say).
var ErrSealed = errors.New("handle: sealed session")

// WithRecipients seals every session the store creates for the given age
// recipients (X25519 public keys, passphrases); given to Create, Fork or
// CreateFrom, it seals that session for them, whatever the store's.
func WithRecipients(rs ...age.Recipient) Option {
	// Not nil even when empty: sealing was asked, and a create with no
	// recipient is refused rather than made clear (given to a store, an
	// empty list sets no default: NewConfig).
	return func(c *Config) { c.Recipients = append([]age.Recipient{}, rs...) }
}

// WithIdentities gives the store the age identities (X25519 keys,
// passphrases) it opens sealed sessions with. Without one that opens a
// session's envelopes, reading it fails with an error wrapping
// seal.ErrNoKey, which says what is missing.
func WithIdentities(ids ...age.Identity) Option {
	return func(c *Config) { c.Identities = slices.Clone(ids) }
}
