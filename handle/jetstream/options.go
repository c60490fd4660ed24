package jetstream

import (
	"log/slog"
	"time"

	"github.com/sessionlog/sessionlog/handle"
)

// Defaults.
const (
	// DefaultPrefix names the stream, its subjects and the lease bucket.
	DefaultPrefix = "sessionlog"
	// DefaultLeaseTTL is how long a writer's lease lasts unless renewed.
	DefaultLeaseTTL = 30 * time.Second
	// DefaultMaxBatch is the server's default limit of messages in one
	// atomic batch (jetstream.limits.max_batch_size).
	DefaultMaxBatch = 1000
)

type config struct {
	prefix     string
	log        *slog.Logger
	now        func() time.Time
	leaseTTL   time.Duration
	noLease    bool
	replicas   int
	syncAlways bool
	strict     bool
	maxMsg     int // payload bytes per message; 0: from the connection
	maxBatch   int
	packTypes  []string
	policy     handle.FlushPolicy
	retries    int
	// ticker drives lease renewal and FlushInterval; tests replace it.
	ticker func(time.Duration) (<-chan time.Time, func())
}

func defaultConfig() config {
	return config{
		prefix:   DefaultPrefix,
		log:      slog.New(slog.DiscardHandler),
		now:      time.Now,
		leaseTTL: DefaultLeaseTTL,
		replicas: 1,
		maxBatch: DefaultMaxBatch,
		retries:  8,
		ticker: func(d time.Duration) (<-chan time.Time, func()) {
			t := time.NewTicker(d)
			return t.C, t.Stop
		},
	}
}

// Option configures a Store.
type Option func(*config)

// WithPrefix sets the store's name: the stream <prefix>, its subjects
// <prefix>.s.<ID>, the lease bucket <prefix>_leases. Letters, digits, '_'
// and '-' only. The default is DefaultPrefix.
func WithPrefix(prefix string) Option { return func(c *config) { c.prefix = prefix } }

// WithLogger sets the logger; by default nothing is logged.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) {
		if l != nil {
			c.log = l
		}
	}
}

// WithClock sets the clock used for IDs, createdAt and lease expiry.
func WithClock(now func() time.Time) Option { return func(c *config) { c.now = now } }

// WithLeaseTTL sets how long a writer's lease lasts unless renewed; the
// handle renews it every third of that. It must exceed the clock skew
// between the machines sharing the store.
func WithLeaseTTL(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.leaseTTL = d
		}
	}
}

// WithoutLease makes write handles take no lease: any number may be open
// on one session, and only the expected-sequence check on every publish
// keeps the log whole (the loser of a race gets a *handle.ConflictError).
func WithoutLease() Option { return func(c *config) { c.noLease = true } }

// WithReplicas sets the replicas of the stream and bucket New creates (1,
// 3 or 5); an existing stream keeps its own.
func WithReplicas(n int) Option { return func(c *config) { c.replicas = n } }

// WithSyncAlways states that the server fsyncs every write
// (jetstream.sync_interval: always), which a client cannot see: a stream
// of one replica is then durable and New does not warn about it.
func WithSyncAlways() Option { return func(c *config) { c.syncAlways = true } }

// WithStrictDurability makes New refuse (ErrNotDurable) a stream it would
// otherwise only warn about.
func WithStrictDurability() Option { return func(c *config) { c.strict = true } }

// WithMaxMessageBytes caps the payload of one message (by default the
// server's max_payload less room for headers).
func WithMaxMessageBytes(n int) Option { return func(c *config) { c.maxMsg = n } }

// WithMaxBatch sets the most messages one atomic batch may hold; it must
// not exceed the server's jetstream.limits.max_batch_size (default
// DefaultMaxBatch).
func WithMaxBatch(n int) Option {
	return func(c *config) {
		if n > 0 {
			c.maxBatch = n
		}
	}
}

// WithPackTypes sets the event types packed into packed rows (default:
// eventlog.DefaultPackTypes), as handle.WithPackTypes does for files.
func WithPackTypes(types ...string) Option {
	return func(c *config) { c.packTypes = append([]string{}, types...) }
}

// WithFlushPolicy sets the flush policy of the store's write handles
// (handle.FlushEvery, handle.FlushInterval), as handle.WithFlushPolicy
// does for files. By default they flush only when asked.
func WithFlushPolicy(p handle.FlushPolicy) Option { return func(c *config) { c.policy = p } }
