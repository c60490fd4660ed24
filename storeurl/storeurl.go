package storeurl

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/afero"

	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/jetstream"
)

type config struct {
	fs       afero.Fs
	log      *slog.Logger
	leaseTTL time.Duration
	name     string
}

// Option configures Open.
type Option func(*config)

// WithFs sets the file system of a folder store (default: the OS's).
func WithFs(fs afero.Fs) Option { return func(c *config) { c.fs = fs } }

// WithLogger sets where a JetStream store logs (default: nowhere).
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.log = l } }

// WithLeaseTTL sets the writer lease of a JetStream store when its URL
// names none (lease=D); 0, the default, leaves the store's own default.
func WithLeaseTTL(d time.Duration) Option { return func(c *config) { c.leaseTTL = d } }

// WithClientName names the connection to a NATS server (default
// "sessionlog"), as the server's monitoring shows it.
func WithClientName(name string) Option { return func(c *config) { c.name = name } }

// IsURL reports whether where names a store by URL rather than a folder.
func IsURL(where string) bool { return strings.HasPrefix(where, "nats://") }

// Open opens the store where names: a nats:// URL for JetStream, anything
// else the folder of a file store (which need not exist yet: the first
// Create makes it). close releases what Open took (the connection) once
// nothing uses the store; it is never nil when err is nil.
func Open(ctx context.Context, where string, opts ...Option) (st handle.Store, close func(), err error) {
	c := config{fs: afero.NewOsFs(), name: "sessionlog"}
	for _, o := range opts {
		o(&c)
	}
	if !IsURL(where) {
		return handle.NewFileStore(c.fs, where), func() {}, nil
	}
	return openJetStream(ctx, where, c)
}

// openJetStream dials nats://host:port[/prefix][?sync=always&lease=D]
// (docs/distributed.md).
func openJetStream(ctx context.Context, raw string, c config) (handle.Store, func(), error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return nil, nil, fmt.Errorf("storeurl: %q: want nats://host:port[/prefix]", raw)
	}
	prefix := strings.Trim(u.Path, "/")
	if prefix == "" {
		prefix = jetstream.DefaultPrefix
	}
	jopts := []jetstream.Option{jetstream.WithPrefix(prefix)}
	if c.log != nil {
		jopts = append(jopts, jetstream.WithLogger(c.log))
	}
	if u.Query().Get("sync") == "always" {
		jopts = append(jopts, jetstream.WithSyncAlways())
	}
	ttl := c.leaseTTL
	if v := u.Query().Get("lease"); v != "" {
		if ttl, err = time.ParseDuration(v); err != nil || ttl <= 0 {
			return nil, nil, fmt.Errorf("storeurl: %q: lease=%q: want a duration such as 5s", raw, v)
		}
	}
	if ttl > 0 {
		jopts = append(jopts, jetstream.WithLeaseTTL(ttl))
	}
	nc, err := nats.Connect("nats://"+u.Host, nats.Name(c.name))
	if err != nil {
		return nil, nil, fmt.Errorf("storeurl: %q: %w", raw, err)
	}
	js, err := natsjs.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, fmt.Errorf("storeurl: %q: %w", raw, err)
	}
	st, err := jetstream.New(ctx, js, jopts...)
	if err != nil {
		nc.Close()
		return nil, nil, fmt.Errorf("storeurl: %q: %w", raw, err)
	}
	return st, func() { nc.Drain() }, nil
}
