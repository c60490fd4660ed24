package jetstream

import (
	"time"

	"github.com/nats-io/nats.go"

	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/core"
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
	// DefaultRequestTimeout bounds one request to the servers; one that
	// gets no answer in time is retried (see WithRetryWindow).
	DefaultRequestTimeout = 2 * time.Second
	// DefaultRetryWindow is how long transient failures are retried.
	DefaultRetryWindow = 30 * time.Second
	// DefaultPingInterval and DefaultMaxPingsOut are how OpenURL's
	// connection finds a server that stopped answering (paused, its host
	// gone without closing the socket): it pings every interval and moves
	// to another server when more pings than that are unanswered, within
	// (DefaultMaxPingsOut+1) × DefaultPingInterval = 900 ms.
	DefaultPingInterval = 300 * time.Millisecond
	DefaultMaxPingsOut  = 2
	// DefaultConnectTimeout bounds dialling one server and its handshake:
	// a paused server accepts the TCP connection and says nothing.
	DefaultConnectTimeout = time.Second
	// DefaultReconnectWait is the pause, plus up to DefaultReconnectJitter,
	// after every server was tried in vain; the next server is tried at
	// once.
	DefaultReconnectWait   = 250 * time.Millisecond
	DefaultReconnectJitter = 250 * time.Millisecond
	// DefaultWriteTimeout bounds one write to the socket: a paused
	// server's receive buffer fills and the write blocks.
	DefaultWriteTimeout = time.Second
	// MinReplicatedLeaseTTL is the shortest lease on a replicated stream:
	// a renewal must be able to wait out an election of the lease bucket's
	// leader (4 to 9 s in nats-server) and still be within the lease.
	MinReplicatedLeaseTTL = 15 * time.Second
)

type config struct {
	prefix string
	// hc is the settings every store shares (With): the logger, the
	// clock (IDs, createdAt, lease expiry), the flush policy, redaction,
	// packed types, sealing.
	hc         handle.Config
	leaseTTL   time.Duration
	noLease    bool
	replicas   int
	replicaSet bool // replicas was asked for, not defaulted
	syncAlways bool
	strict     bool
	maxMsg     int // payload bytes per message; 0: from the connection
	maxBatch   int
	readOnly   bool
	// shared are handle's options (With), read into hc by newConfig.
	shared     []handle.Option
	clientName string // OpenURL's connection, and its options
	connOpts   []nats.Option
	// OpenURL's connection: how it finds a server gone silent and leaves
	// it (see OpenURL and docs/distributed.md).
	pingInterval    time.Duration
	maxPingsOut     int
	connectTimeout  time.Duration
	reconnectWait   time.Duration
	reconnectJitter time.Duration
	writeTimeout    time.Duration
	// reqTimeout bounds one try of a request; retryWindow how long
	// transient failures are retried; probeTimeout the ping that tells a
	// paused server from a slow answer (see Store.heal).
	reqTimeout   time.Duration
	retryWindow  time.Duration
	probeTimeout time.Duration
	// ticker drives lease renewal and FlushInterval; tests replace it.
	ticker func(time.Duration) (<-chan time.Time, func())
}

// newConfig returns the settings opts make over the defaults, handle's
// (With) read into them.
func newConfig(opts []Option) config {
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	cfg.hc = core.NewConfig(cfg.shared...)
	if cfg.hc.Ticker != nil {
		cfg.ticker = cfg.hc.Ticker
	}
	cfg.hc.Ticker = cfg.ticker
	return cfg
}

func defaultConfig() config {
	return config{
		prefix:     DefaultPrefix,
		clientName: "sessionlog",
		leaseTTL:   DefaultLeaseTTL,
		replicas:   1,
		maxBatch:   DefaultMaxBatch,

		pingInterval:    DefaultPingInterval,
		maxPingsOut:     DefaultMaxPingsOut,
		connectTimeout:  DefaultConnectTimeout,
		reconnectWait:   DefaultReconnectWait,
		reconnectJitter: DefaultReconnectJitter,
		writeTimeout:    DefaultWriteTimeout,

		reqTimeout:   DefaultRequestTimeout,
		retryWindow:  DefaultRetryWindow,
		probeTimeout: 500 * time.Millisecond,
		ticker: func(d time.Duration) (<-chan time.Time, func()) {
			t := time.NewTicker(d)
			return t.C, t.Stop
		},
	}
}

// Option configures a Store.
type Option func(*config)

// With gives the store the settings every store shares, as handle's
// options: the logger, the clock (IDs, createdAt and lease expiry), the
// flush policy, redaction at write, packed types, and sealing (its
// recipients and identities, docs/format.md §11).
func With(opts ...handle.Option) Option {
	return func(c *config) { c.shared = append(c.shared, opts...) }
}

// WithPrefix sets the store's name: the stream <prefix>, its subjects
// <prefix>.s.<ID>, the lease bucket <prefix>_leases. Letters, digits, '_'
// and '-' only. The default is DefaultPrefix.
func WithPrefix(prefix string) Option { return func(c *config) { c.prefix = prefix } }

// WithLeaseTTL sets how long a writer's lease lasts unless renewed; the
// handle renews it every third of that, retrying a renewal that fails
// transiently until the lease would expire. It must exceed the clock skew
// between the machines sharing the store; on a replicated stream it is
// raised to MinReplicatedLeaseTTL if shorter.
func WithLeaseTTL(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.leaseTTL = d
		}
	}
}

// WithoutLease makes write handles take no lease: any number may be open
// on one session, and only the expected-sequence check on every publish
// keeps the log whole (the loser of a race gets a *handle.ConflictError,
// its queued events are dropped and its handle poisoned: it reopens).
func WithoutLease() Option { return func(c *config) { c.noLease = true } }

// WithReplicas sets the replicas of the stream and the buckets New creates
// (1 to 5; 3 rides out the loss of one node). New fails with ErrReplicas
// when the cluster cannot place them, or when the store's stream exists
// with another count. Without it, an existing stream keeps its own and a
// new one gets 1; the buckets follow the stream.
func WithReplicas(n int) Option { return func(c *config) { c.replicas, c.replicaSet = n, true } }

// WithReadOnly makes a store that writes nothing: New creates no stream
// or bucket, queries neither build nor repair the session index (if New
// finds none whole, or one of an older layout, they read every session's
// messages, as a store without an index does; if it goes later, they fail
// wrapping ErrNoIndex), and every write — a create, a write handle, a
// delete, a detach or rewrite, derived data, key changes, GC's leftovers,
// RebuildIndex — fails wrapping handle.ErrReadOnly.
func WithReadOnly() Option { return func(c *config) { c.readOnly = true } }

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

// WithRequestTimeout bounds one request to the servers (default
// DefaultRequestTimeout). A request that got no answer in time is retried;
// if the server the connection is on does not answer a ping either, the
// connection moves to another server first.
func WithRequestTimeout(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.reqTimeout = d
		}
	}
}

// WithRetryWindow sets how long a failure that ends on its own (no
// answer, no leader during an election, a connection being re-established)
// is retried before the call fails with an error wrapping
// handle.ErrUnavailable (default DefaultRetryWindow). It should exceed the
// cluster's election time; a context's deadline still ends a call sooner.
func WithRetryWindow(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.retryWindow = d
		}
	}
}

// WithPing sets how OpenURL's connection finds a server that stopped
// answering: a ping every interval, and a move to another server once more
// than outstanding pings are unanswered (defaults DefaultPingInterval,
// DefaultMaxPingsOut: within 900 ms). Writers on that server wait that
// long; a shorter interval costs a ping each.
func WithPing(interval time.Duration, outstanding int) Option {
	return func(c *config) {
		if interval > 0 && outstanding > 0 {
			c.pingInterval, c.maxPingsOut = interval, outstanding
		}
	}
}

// WithConnectTimeout bounds dialling one server and its handshake, for
// OpenURL's connection (default DefaultConnectTimeout).
func WithConnectTimeout(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.connectTimeout = d
		}
	}
}

// WithReconnectWait sets how long OpenURL's connection waits, plus a
// random part up to jitter, once every server was tried in vain (defaults
// DefaultReconnectWait, DefaultReconnectJitter).
func WithReconnectWait(wait, jitter time.Duration) Option {
	return func(c *config) {
		if wait > 0 && jitter >= 0 {
			c.reconnectWait, c.reconnectJitter = wait, jitter
		}
	}
}

// WithWriteTimeout bounds one write to the socket of OpenURL's connection
// (default DefaultWriteTimeout); a write that blocks longer makes it move
// to another server.
func WithWriteTimeout(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.writeTimeout = d
		}
	}
}
