package jetstream

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/sessionlog/sessionlog/handle"
)

// ErrURL: a store URL that does not parse (see ParseURL).
var ErrURL = errors.New("jetstream: bad store URL")

// DefaultPort is the port of a seed given without one.
const DefaultPort = 4222

// URL is a JetStream store's address:
//
//	nats://[user[:password]@]host[:port][,host[:port]…][/prefix][?replicas=N&sync=always&lease=D]
//
// Every host is a seed: the client connects to one that answers and
// learns the rest of the cluster from it, so one seed up is enough.
type URL struct {
	Servers  []string // seeds, each nats://host:port
	User     string   // with Password; or a token when Password is empty
	Password string
	Prefix   string // the store's name (WithPrefix); DefaultPrefix when the path is empty
	// Replicas is the replica count asked for (WithReplicas); 0 when the
	// URL names none.
	Replicas int
	// SyncAlways declares that every server fsyncs each write
	// (WithSyncAlways).
	SyncAlways bool
	// LeaseTTL is the writer lease (WithLeaseTTL); 0 when the URL names
	// none.
	LeaseTTL time.Duration
}

// ParseURL parses a store URL. Unknown parameters, repeated ones and
// values out of range are refused (ErrURL), never ignored.
func ParseURL(raw string) (URL, error) {
	bad := func(format string, a ...any) (URL, error) {
		return URL{}, fmt.Errorf("%w %s: %s (want nats://host:port[,host:port…][/prefix][?replicas=N&sync=always&lease=D])",
			ErrURL, redact(raw), fmt.Sprintf(format, a...))
	}
	rest, ok := cutPrefixFold(raw, "nats://")
	if !ok {
		return bad("not a nats:// URL")
	}
	var u URL
	hosts, tail := rest, ""
	if i := strings.IndexAny(rest, "/?"); i >= 0 {
		hosts, tail = rest[:i], rest[i:]
	}
	if at := strings.LastIndexByte(hosts, '@'); at >= 0 {
		info, err := url.PathUnescape(hosts[:at])
		if err != nil {
			return bad("user: %v", err)
		}
		u.User, u.Password, _ = strings.Cut(info, ":")
		hosts = hosts[at+1:]
	}
	for h := range strings.SplitSeq(hosts, ",") {
		if h == "" {
			return bad("an empty host")
		}
		if _, _, err := net.SplitHostPort(h); err != nil {
			h = net.JoinHostPort(strings.Trim(h, "[]"), strconv.Itoa(DefaultPort))
		}
		host, port, err := net.SplitHostPort(h)
		if n, perr := strconv.Atoi(port); err != nil || host == "" || perr != nil || n < 1 || n > 65535 {
			return bad("host %q", h)
		}
		u.Servers = append(u.Servers, "nats://"+h)
	}
	path, query, _ := strings.Cut(tail, "?")
	u.Prefix = strings.Trim(path, "/")
	switch {
	case u.Prefix == "":
		u.Prefix = DefaultPrefix
	case !prefixRE.MatchString(u.Prefix):
		return bad("prefix %q: want letters, digits, '_' or '-'", u.Prefix)
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		return bad("%v", err)
	}
	for k, vs := range q {
		if len(vs) != 1 {
			return bad("%s given %d times", k, len(vs))
		}
		v := vs[0]
		switch k {
		case "replicas":
			if u.Replicas, err = strconv.Atoi(v); err != nil || u.Replicas < 1 || u.Replicas > 5 {
				return bad("replicas=%q: want 1 to 5", v)
			}
		case "sync":
			if v != "always" {
				return bad("sync=%q: only sync=always can be declared", v)
			}
			u.SyncAlways = true
		case "lease":
			if u.LeaseTTL, err = time.ParseDuration(v); err != nil || u.LeaseTTL <= 0 {
				return bad("lease=%q: want a duration such as 30s", v)
			}
		default:
			return bad("unknown parameter %q", k)
		}
	}
	return u, nil
}

func cutPrefixFold(s, prefix string) (string, bool) {
	if len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix) {
		return s[len(prefix):], true
	}
	return s, false
}

// redact hides a password in a URL that is quoted in an error.
func redact(raw string) string {
	rest, ok := cutPrefixFold(raw, "nats://")
	end := strings.IndexAny(rest, "/?")
	if end < 0 {
		end = len(rest)
	}
	at := strings.LastIndexByte(rest[:end], '@')
	if !ok || at < 0 {
		return raw
	}
	user, _, hasPass := strings.Cut(rest[:at], ":")
	if !hasPass {
		user = "***" // a token
	} else {
		user += ":***"
	}
	return raw[:len(raw)-len(rest)] + user + rest[at:]
}

// String returns the URL, password hidden.
func (u URL) String() string {
	var b strings.Builder
	b.WriteString("nats://")
	switch {
	case u.Password != "":
		b.WriteString(url.PathEscape(u.User) + ":***@")
	case u.User != "":
		b.WriteString("***@")
	}
	for i, s := range u.Servers {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strings.TrimPrefix(s, "nats://"))
	}
	b.WriteString("/" + u.Prefix)
	var q []string
	if u.Replicas > 0 {
		q = append(q, "replicas="+strconv.Itoa(u.Replicas))
	}
	if u.SyncAlways {
		q = append(q, "sync=always")
	}
	if u.LeaseTTL > 0 {
		q = append(q, "lease="+u.LeaseTTL.String())
	}
	if len(q) > 0 {
		b.WriteString("?" + strings.Join(q, "&"))
	}
	return b.String()
}

// Options are the store options the URL names.
func (u URL) Options() []Option {
	opts := []Option{WithPrefix(u.Prefix)}
	if u.Replicas > 0 {
		opts = append(opts, WithReplicas(u.Replicas))
	}
	if u.SyncAlways {
		opts = append(opts, WithSyncAlways())
	}
	if u.LeaseTTL > 0 {
		opts = append(opts, WithLeaseTTL(u.LeaseTTL))
	}
	return opts
}

// WithClientName names the connection OpenURL dials, as the servers'
// monitoring shows it (default "sessionlog").
func WithClientName(name string) Option { return func(c *config) { c.clientName = name } }

// WithConnOptions adds options to the connection OpenURL dials (TLS,
// credentials files, …), after its own.
func WithConnOptions(opts ...nats.Option) Option {
	return func(c *config) { c.connOpts = append(c.connOpts, opts...) }
}

// OpenURL dials the URL's servers and returns the store it names, created
// if missing (see New). opts apply first; what the URL says overrides
// them. Close the store to close the connection.
//
// The connection reconnects for ever, to any server of the cluster, and
// leaves a server that stops answering within a second (WithPing,
// WithConnectTimeout, WithReconnectWait, WithWriteTimeout); a request
// without an answer is retried (WithRequestTimeout, WithRetryWindow). No server answering at all is an error wrapping
// handle.ErrUnavailable; a URL that does not parse, one wrapping ErrURL.
func OpenURL(ctx context.Context, raw string, opts ...Option) (*Store, error) {
	u, err := ParseURL(raw)
	if err != nil {
		return nil, err
	}
	opts = append(opts, u.Options()...)
	cfg := newConfig(opts)
	nopts := connOptions(cfg)
	switch {
	case u.Password != "":
		nopts = append(nopts, nats.UserInfo(u.User, u.Password))
	case u.User != "":
		nopts = append(nopts, nats.Token(u.User))
	}
	nc, err := nats.Connect(strings.Join(u.Servers, ","), append(nopts, cfg.connOpts...)...)
	var ne net.Error
	if errors.Is(err, nats.ErrNoServers) || errors.As(err, &ne) || errors.Is(err, nats.ErrTimeout) {
		return nil, &urlError{u.String(), fmt.Errorf("no server answers: %w: %w", handle.ErrUnavailable, err)}
	}
	if err != nil {
		return nil, &urlError{u.String(), err}
	}
	js, err := natsjs.New(nc, natsjs.WithDefaultTimeout(cfg.reqTimeout))
	if err != nil {
		nc.Close()
		return nil, &urlError{u.String(), err}
	}
	st, err := New(ctx, js, opts...)
	if err != nil {
		nc.Close()
		return nil, &urlError{u.String(), err}
	}
	st.closeFn = sync.OnceFunc(func() { nc.Drain() })
	return st, nil
}

// connOptions are the options of the connection OpenURL dials, set so
// that a server that stops answering is noticed and left within a second
// (docs/distributed.md, "Leaving a silent server"); WithConnOptions' come
// after them.
func connOptions(cfg config) []nats.Option {
	return []nats.Option{nats.Name(cfg.clientName),
		nats.MaxReconnects(-1), // the retry window decides when to give up, not the connection
		nats.PingInterval(cfg.pingInterval), nats.MaxPingsOutstanding(cfg.maxPingsOut),
		nats.Timeout(cfg.connectTimeout),
		nats.ReconnectWait(cfg.reconnectWait), nats.ReconnectJitter(cfg.reconnectJitter, cfg.reconnectJitter),
		nats.FlusherTimeout(cfg.writeTimeout),
		// Through the store's logger, never printed (nats.go's default
		// prints asynchronous errors to stderr).
		nats.ErrorHandler(func(nc *nats.Conn, sub *nats.Subscription, err error) {
			cfg.hc.Logger.Warn("connection error", "server", nc.ConnectedUrlRedacted(), "err", err)
		}),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			cfg.hc.Logger.Info("the connection left its server", "err", err)
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			cfg.hc.Logger.Info("the connection moved", "server", nc.ConnectedUrlRedacted())
		})}
}

// urlError is why the store a URL names cannot be opened: "jetstream:
// URL: what is wrong", naming the package once (New's errors name it too:
// regression, "jetstream: URL: jetstream: the replicas asked for…").
type urlError struct {
	url string
	err error
}

func (e *urlError) Error() string {
	return "jetstream: " + e.url + ": " + strings.TrimPrefix(e.err.Error(), "jetstream: ")
}

func (e *urlError) Unwrap() error { return e.err }

// Close closes the connection OpenURL dialled; handles on the store stop
// working. For a store made with New it only stops watching the
// connection, which is the caller's.
func (s *Store) Close() error {
	s.watch.close()
	if s.closeFn != nil {
		s.closeFn()
	}
	return nil
}
