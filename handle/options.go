package handle

import (
	"cmp"
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

// config is what a store passes to its handles.
type config struct {
	log            *slog.Logger
	policy         FlushPolicy
	packTypes      []string
	now            func() time.Time
	encoding       string
	zstdLevel      int
	compactOnClose bool
	redactor       *redact.Redactor // nil: no redaction
	recipients     []age.Recipient  // new sessions are sealed for them (sealed.go)
	identities     []age.Identity   // open sealed sessions
	// ticker drives FlushInterval; tests replace it.
	ticker func(time.Duration) (<-chan time.Time, func())
}

func realTicker(d time.Duration) (<-chan time.Time, func()) {
	t := time.NewTicker(d)
	return t.C, t.Stop
}

func defaultConfig() config {
	return config{
		log:      slog.New(slog.DiscardHandler),
		now:      time.Now,
		encoding: EncodingRaw,
		ticker:   realTicker,
		redactor: redact.New(),
	}
}

// Option configures a store.
type Option func(*config)

// WithLogger sets the logger; by default nothing is logged.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) {
		if l != nil {
			c.log = l
		}
	}
}

// WithFlushPolicy sets the flush policy of the store's write handles.
func WithFlushPolicy(p FlushPolicy) Option { return func(c *config) { c.policy = p } }

// WithPackTypes sets the event types packed into packed rows (default:
// eventlog.DefaultPackTypes). An empty list packs nothing.
func WithPackTypes(types ...string) Option {
	return func(c *config) { c.packTypes = append([]string{}, types...) }
}

// WithEncoding sets the encoding of the sessions the store creates:
// EncodingRaw (the default) or EncodingZstd. Existing sessions keep theirs.
func WithEncoding(encoding string) Option { return func(c *config) { c.encoding = encoding } }

// WithZstdLevel sets the zstd compression level (1 fastest … 22 best) of
// both the per-flush frames and whole-file rewrites (Compact, Convert,
// Detach). By default flushes use a fast level and rewrites level 7, which
// runs once, off the append path, and makes a session smaller than
// `zstd -3` makes its JSONL.
func WithZstdLevel(level int) Option { return func(c *config) { c.zstdLevel = level } }

// WithCompactOnClose makes a zstd write handle rewrite its session into
// large frames when it closes (see FileStore.Compact): small per-flush
// frames compress poorly.
func WithCompactOnClose(on bool) Option { return func(c *config) { c.compactOnClose = on } }

// WithRedactor sets the redactor the store's write handles apply to every
// event appended, before it is checked, digested and stored
// (docs/format.md §11): by default redact.New(), the built-in detectors;
// nil turns redaction off (WithoutRedaction). CreateFrom and AppendAll
// store the events they are given as they are (see CreateFrom).
func WithRedactor(r *redact.Redactor) Option { return func(c *config) { c.redactor = r } }

// WithoutRedaction turns redaction at write off for every handle of the
// store: events are stored exactly as appended.
func WithoutRedaction() Option { return WithRedactor(nil) }

// WithClock sets the clock used for IDs and createdAt (tests).
func WithClock(now func() time.Time) Option { return func(c *config) { c.now = now } }

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

// listConfig holds what ListOptions set.
type listConfig struct {
	labels map[string]string
	parent string
	prefix string
	broken func(id string, err error)
	// Paging (by last activity): at most limit (0: all), after before.
	limit      int
	before     *Cursor
	byActivity bool
}

// ListOption filters List.
type ListOption func(*listConfig)

// WithLabel keeps sessions whose label key equals value.
func WithLabel(key, value string) ListOption {
	return func(c *listConfig) {
		if c.labels == nil {
			c.labels = map[string]string{}
		}
		c.labels[key] = value
	}
}

// WithParentID keeps sessions whose parent is id.
func WithParentID(id string) ListOption { return func(c *listConfig) { c.parent = id } }

// SkipBroken makes List go on past a session it cannot describe (a
// corrupt header, say), calling report with its ID and the error, instead
// of failing.
func SkipBroken(report func(id string, err error)) ListOption {
	return func(c *listConfig) { c.broken = report }
}

// WithIDPrefix keeps sessions whose ID starts with prefix (upper case).
// On a store with an index (the file store) its cost grows with the
// sessions it keeps, not with the store.
func WithIDPrefix(prefix string) ListOption { return func(c *listConfig) { c.prefix = prefix } }

// ByActivity orders List as ls does: the last active first
// (Info.LastActive), then the greater ID first. Without it List orders by
// creation.
func ByActivity() ListOption { return func(c *listConfig) { c.byActivity = true } }

// Limit makes List return at most n sessions (n ≤ 0: all), the first of
// the order of ByActivity, which it implies: a page. On a store with an
// index its cost grows with n, not with the store.
func Limit(n int) ListOption {
	return func(c *listConfig) { c.limit, c.byActivity = max(n, 0), true }
}

// Before makes List start after the session c names in the order of
// ByActivity, which it implies: the next page after one that ended at c
// (CursorOf its last session).
func Before(c Cursor) ListOption {
	return func(lc *listConfig) { lc.before, lc.byActivity = &c, true }
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

// paged reports whether List orders by activity.
func (c listConfig) paged() bool { return c.byActivity }

// matchInfo reports whether List keeps info, cursor aside.
func (c listConfig) matchInfo(info Info) bool {
	return c.match(info.Header) && strings.HasPrefix(info.ID, c.prefix)
}

// finish orders the sessions List keeps and cuts the page: by creation,
// newest first; or by activity after the cursor, at most limit.
func (c listConfig) finish(out []Info) []Info {
	if !c.paged() {
		slices.SortFunc(out, func(a, b Info) int {
			return cmp.Or(cmp.Compare(b.Header.CreatedAt, a.Header.CreatedAt), strings.Compare(b.ID, a.ID))
		})
		return out
	}
	sortActive(out)
	if c.before != nil {
		after := activeKey(c.before.LastActive, c.before.ID)
		out = slices.DeleteFunc(out, func(i Info) bool { return activeKey(i.LastActive(), i.ID) <= after })
	}
	if c.limit > 0 && len(out) > c.limit {
		out = out[:c.limit]
	}
	return out
}

func (c listConfig) match(h eventlog.Header) bool {
	for k, v := range c.labels {
		if got, ok := h.Labels[k]; !ok || got != v {
			return false
		}
	}
	return c.parent == "" || (h.Parent != nil && h.Parent.ID == c.parent)
}
