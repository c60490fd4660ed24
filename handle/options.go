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
	"github.com/sessionlog/sessionlog/redact"
	"github.com/sessionlog/sessionlog/seal"
)

// FlushPolicy says when a write handle flushes on its own. Whatever the
// policy, Flush and Close flush.
type FlushPolicy struct {
	everyN   int
	interval time.Duration
}

// FlushExplicit flushes only when asked (Flush, Close). The default.
func FlushExplicit() FlushPolicy { return FlushPolicy{} }

// FlushEvery makes an Append that leaves n or more unflushed events flush
// before it returns, so that Append returns only once they are durable.
// If that flush fails (a cancelled context, a poisoned handle), Append
// returns the seq it assigned together with the error: the events are
// queued, not durable, and a later Flush may still write them — retrying
// the Append would append them twice.
func FlushEvery(n int) FlushPolicy { return FlushPolicy{everyN: max(n, 1)} }

// FlushInterval flushes every d from a background goroutine. Appends are
// then durable within about d, but nothing tells the appender when: use it
// only where losing the last d of events in a crash is acceptable.
func FlushInterval(d time.Duration) FlushPolicy { return FlushPolicy{interval: d} }

// Config is a store's settings, as its Options set them (NewConfig):
// the store core's, the write core's and the backend's own reading of
// them. Every store takes the same Options.
type Config struct {
	Logger         *slog.Logger
	Policy         FlushPolicy
	PackTypes      []string
	Now            func() time.Time
	Encoding       string
	ZstdLevel      int
	CompactOnClose bool
	Redactor       *redact.Redactor // nil: no redaction
	Recipients     []age.Recipient  // new sessions are sealed for them (sealed.go)
	Identities     []age.Identity   // open sealed sessions
	// ticker drives FlushInterval; tests replace it.
	Ticker func(time.Duration) (<-chan time.Time, func())
}

func realTicker(d time.Duration) (<-chan time.Time, func()) {
	t := time.NewTicker(d)
	return t.C, t.Stop
}

func defaultConfig() Config {
	return Config{
		Logger:   slog.New(slog.DiscardHandler),
		Now:      time.Now,
		Encoding: EncodingRaw,
		Ticker:   realTicker,
		Redactor: redact.New(),
	}
}

// Option configures a store.
type Option func(*Config)

// WithLogger sets the logger; by default nothing is logged.
func WithLogger(l *slog.Logger) Option {
	return func(c *Config) {
		if l != nil {
			c.Logger = l
		}
	}
}

// WithFlushPolicy sets the flush policy of the store's write handles.
func WithFlushPolicy(p FlushPolicy) Option { return func(c *Config) { c.Policy = p } }

// WithPackTypes sets the event types packed into packed rows (default:
// eventlog.DefaultPackTypes). An empty list packs nothing.
func WithPackTypes(types ...string) Option {
	return func(c *Config) { c.PackTypes = append([]string{}, types...) }
}

// WithEncoding sets the encoding of the sessions the store creates:
// EncodingRaw (the default) or EncodingZstd. Existing sessions keep theirs.
func WithEncoding(encoding string) Option { return func(c *Config) { c.Encoding = encoding } }

// WithZstdLevel sets the zstd compression level (1 fastest … 22 best) of
// both the per-flush frames and whole-file rewrites (Compact, Convert,
// Detach). By default flushes use a fast level and rewrites level 7, which
// runs once, off the append path, and makes a session smaller than
// `zstd -3` makes its JSONL.
func WithZstdLevel(level int) Option { return func(c *Config) { c.ZstdLevel = level } }

// WithCompactOnClose makes a zstd write handle rewrite its session into
// large frames when it closes (see FileStore.Compact): small per-flush
// frames compress poorly.
func WithCompactOnClose(on bool) Option { return func(c *Config) { c.CompactOnClose = on } }

// WithRedactor sets the redactor the store's write handles apply to every
// event appended, before it is checked, digested and stored
// (docs/format.md §11): by default redact.New(), the built-in detectors;
// nil turns redaction off (WithoutRedaction). CreateFrom and AppendAll
// store the events they are given as they are (see CreateFrom).
func WithRedactor(r *redact.Redactor) Option { return func(c *Config) { c.Redactor = r } }

// WithoutRedaction turns redaction at write off for every handle of the
// store: events are stored exactly as appended.
func WithoutRedaction() Option { return WithRedactor(nil) }

// WithClock sets the clock used for IDs and createdAt (tests).
func WithClock(now func() time.Time) Option { return func(c *Config) { c.Now = now } }

// createConfig holds what CreateOptions set.
type createConfig struct {
	createdAt *int64
	id        string
	idSet     bool
	labels    map[string]string
	parent    *eventlog.Parent
	encoding  string
	// unredacted turns redaction off for the handle Create or Fork
	// returns.
	unredacted bool
	// sealFor, when sealSet, are the recipients the session is sealed
	// for (SealedFor).
	sealFor []age.Recipient
	sealSet bool
	sealAs  *Sealing // SealedAs
}

// CreateOption configures Create.
type CreateOption func(*createConfig)

// WithLabels sets the session's labels.
func WithLabels(labels map[string]string) CreateOption {
	return func(c *createConfig) { c.labels = maps.Clone(labels) }
}

// WithParent links the new session to a parent (eventlog.ModeFork or
// eventlog.ModeChild).
func WithParent(p eventlog.Parent) CreateOption {
	return func(c *createConfig) { c.parent = &p }
}

// WithCreatedAt sets the header's createdAt (Unix milliseconds) instead of
// now: an import keeps the original's.
func WithCreatedAt(ms int64) CreateOption { return func(c *createConfig) { c.createdAt = &ms } }

// WithSessionEncoding creates the session in the given encoding instead of
// the store's default.
func WithSessionEncoding(encoding string) CreateOption {
	return func(c *createConfig) { c.encoding = encoding }
}

// WithID creates the session under a given ID instead of a new one
// (importing, say); Create fails with ErrExists if it is taken.
func WithID(id string) CreateOption {
	return func(c *createConfig) { c.id, c.idSet = id, true }
}

// Unredacted turns redaction at write (docs/format.md §11) off for the
// write handle Create or Fork returns: its appends are stored exactly as
// given. The store's other handles are not affected.
func Unredacted() CreateOption { return func(c *createConfig) { c.unredacted = true } }

// OpenOption configures the handle Open returns.
type OpenOption func(*OpenParams)

// OpenParams is what a list of OpenOptions says: what a StoreBackend's
// Open is given.
type OpenParams struct {
	// Unredacted: the handle's appends are not redacted.
	Unredacted bool
}

// OpenUnredacted turns redaction at write off for the write handle Open
// returns (see Unredacted).
func OpenUnredacted() OpenOption { return func(p *OpenParams) { p.Unredacted = true } }

// ListQuery is what List's options ask, as a store's index reads it
// (Index): the filters, the order and the page.
type ListQuery struct {
	// Labels the sessions have (WithLabel), Parent their parent's ID
	// (WithParentID), Prefix the start of their ID (WithIDPrefix).
	Labels map[string]string
	Parent string
	Prefix string
	// Broken is told of a session List cannot describe (SkipBroken);
	// nil fails List instead.
	Broken func(id string, err error)
	// ByActivity orders by last activity (ByActivity); Limit (0: all)
	// and Before make a page of that order.
	ByActivity bool
	Limit      int
	Before     *Cursor
}

// ListOption filters List.
type ListOption func(*ListQuery)

// WithLabel keeps sessions whose label key equals value.
func WithLabel(key, value string) ListOption {
	return func(c *ListQuery) {
		if c.Labels == nil {
			c.Labels = map[string]string{}
		}
		c.Labels[key] = value
	}
}

// WithParentID keeps sessions whose parent is id.
func WithParentID(id string) ListOption { return func(c *ListQuery) { c.Parent = id } }

// SkipBroken makes List go on past a session it cannot describe (a
// corrupt header, say), calling report with its ID and the error, instead
// of failing.
func SkipBroken(report func(id string, err error)) ListOption {
	return func(c *ListQuery) { c.Broken = report }
}

// WithIDPrefix keeps sessions whose ID starts with prefix (upper case).
// On a store with an index (the file store) its cost grows with the
// sessions it keeps, not with the store.
func WithIDPrefix(prefix string) ListOption { return func(c *ListQuery) { c.Prefix = prefix } }

// ByActivity orders List as ls does: the last active first
// (Info.LastActive), then the greater ID first. Without it List orders by
// creation.
func ByActivity() ListOption { return func(c *ListQuery) { c.ByActivity = true } }

// Limit makes List return at most n sessions (n ≤ 0: all), the first of
// the order of ByActivity, which it implies: a page. On a store with an
// index its cost grows with n, not with the store.
func Limit(n int) ListOption {
	return func(c *ListQuery) { c.Limit, c.ByActivity = max(n, 0), true }
}

// Before makes List start after the session c names in the order of
// ByActivity, which it implies: the next page after one that ended at c
// (CursorOf its last session).
func Before(c Cursor) ListOption {
	return func(lc *ListQuery) { lc.Before, lc.ByActivity = &c, true }
}

// Cursor is where a page of List ends: its last session's activity and
// ID. Its text form, "<last activity ms>.<ID>", is what ls --before takes.
type Cursor struct {
	LastActive int64
	ID         string
}

// CursorOf returns the cursor of a page that ends at session i.
func CursorOf(i Info) Cursor { return Cursor{LastActive: i.LastActive(), ID: i.ID} }

// String returns the cursor's text form.
func (c Cursor) String() string { return strconv.FormatInt(c.LastActive, 10) + "." + c.ID }

// ParseCursor parses a cursor's text form (Cursor.String); the error wraps
// ErrInvalidID.
func ParseCursor(s string) (Cursor, error) {
	ms, id, ok := strings.Cut(s, ".")
	n, err := strconv.ParseInt(ms, 10, 64)
	if !ok || err != nil || checkID(id) != nil {
		return Cursor{}, fmt.Errorf("%w: %q is not a cursor <ms>.<ID>", ErrInvalidID, s)
	}
	return Cursor{LastActive: n, ID: id}, nil
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
// the data key its rows are sealed with. SealingOf gives it; SealedAs
// seals another file of the session as it is.
type Sealing struct {
	// ID is the session's: a key record is bound to it.
	ID string
	// Envelopes are the session's key records.
	Envelopes []seal.Envelope
	// Key is the data key its newest rows are sealed with.
	Key *seal.DataKey
}

// NewConfig returns the settings opts make, over the defaults: a silent
// logger, the real clock, raw logs, redaction at write on, explicit
// flushes.
func NewConfig(opts ...Option) Config {
	c := defaultConfig()
	for _, o := range opts {
		o(&c)
	}
	return c
}

// ErrSealed is wrapped by the errors of operations a sealed session does
// not support on a store (a JetStream store refuses to create one).
var ErrSealed = errors.New("handle: sealed session")

// WithRecipients seals every session the store creates for the given age
// recipients (X25519 public keys, passphrases): the store's default;
// SealedFor chooses other recipients for one session.
func WithRecipients(rs ...age.Recipient) Option {
	return func(c *Config) { c.Recipients = slices.Clone(rs) }
}

// WithIdentities gives the store the age identities (X25519 keys,
// passphrases) it opens sealed sessions with. Without one that opens a
// session's envelopes, reading it fails with an error wrapping
// seal.ErrNoKey, which says what is missing.
func WithIdentities(ids ...age.Identity) Option {
	return func(c *Config) { c.Identities = slices.Clone(ids) }
}

// SealedFor seals the new session for the given age recipients (at least
// one), whatever the store's default.
func SealedFor(rs ...age.Recipient) CreateOption {
	return func(c *createConfig) { c.sealFor, c.sealSet = slices.Clone(rs), true }
}

// SealedAs seals the new session as sl says: the same key records and
// data key, so that the same identities read it (a copy of a sealed
// session keeps it sealed: transfer.Copy). Its ID must be the one sl was
// taken of (an envelope names its session).
func SealedAs(sl *Sealing) CreateOption {
	return func(c *createConfig) { c.sealAs = sl }
}
