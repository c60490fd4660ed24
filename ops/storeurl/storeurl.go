package storeurl

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/spf13/afero"

	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/handle/jetstream"
)

type config struct {
	fs       afero.Fs
	leaseTTL time.Duration
	name     string
	existing bool
	readOnly bool
	shared   []handle.Option
}

// ErrNoStore: a store that Existing requires is not there.
var ErrNoStore = errors.New("storeurl: no store")

// Existing makes Open fail with ErrNoStore where no store is yet: a
// folder that does not exist (or is not a folder). It is for opening a
// store to read it, where a mistyped name must not look like an empty
// store. A JetStream store is there once its server answers (its stream
// is made on open).
func Existing() Option { return func(c *config) { c.existing = true } }

// Option configures Open.
type Option func(*config)

// WithFs sets the file system of a folder store (default: the OS's).
func WithFs(fs afero.Fs) Option { return func(c *config) { c.fs = fs } }

// With gives the store handle's options, the settings every store shares
// (a logger, identities to read sealed sessions with, redaction at write
// off…), whichever store the location names.
func With(opts ...handle.Option) Option {
	return func(c *config) { c.shared = append(c.shared, opts...) }
}

// WithLeaseTTL sets the writer lease of a JetStream store when its URL
// names none (lease=D); 0, the default, leaves the store's own default.
func WithLeaseTTL(d time.Duration) Option { return func(c *config) { c.leaseTTL = d } }

// WithClientName names the connection to a NATS server (default
// "sessionlog"), as the server's monitoring shows it.
func WithClientName(name string) Option { return func(c *config) { c.name = name } }

// IsURL reports whether where names a store by URL rather than a folder.
func IsURL(where string) bool {
	return len(where) >= len("nats://") && strings.EqualFold(where[:len("nats://")], "nats://")
}

// Open opens the store where names: a nats:// URL for JetStream
// (jetstream.OpenURL: seeds, prefix, replicas, sync, lease; a URL that does
// not parse wraps jetstream.ErrURL, no server answering
// handle.ErrUnavailable), anything else the folder of a file store (which
// need not exist yet: the first Create makes it). close releases what Open
// took (the connection) once nothing uses the store; it is never nil when
// err is nil.
func Open(ctx context.Context, where string, opts ...Option) (st handle.Store, close func(), err error) {
	c := config{fs: afero.NewOsFs(), name: "sessionlog"}
	for _, o := range opts {
		o(&c)
	}
	if !IsURL(where) {
		if c.existing {
			fi, err := c.fs.Stat(where)
			switch {
			case errors.Is(err, fs.ErrNotExist):
				return nil, nil, fmt.Errorf("%w at %q: no such folder", ErrNoStore, where)
			case err != nil:
				return nil, nil, fmt.Errorf("storeurl: %w", err)
			case !fi.IsDir():
				return nil, nil, fmt.Errorf("%w at %q: not a folder", ErrNoStore, where)
			}
		}
		fsys := c.fs
		if c.readOnly {
			fsys = afero.NewReadOnlyFs(fsys)
		}
		return file.New(fsys, where, c.shared...), func() {}, nil
	}
	jopts := []jetstream.Option{jetstream.WithClientName(c.name), jetstream.With(c.shared...)}
	if c.leaseTTL > 0 {
		jopts = append(jopts, jetstream.WithLeaseTTL(c.leaseTTL)) // the URL's lease= overrides it
	}
	if c.readOnly {
		jopts = append(jopts, jetstream.WithReadOnly())
	}
	js, err := jetstream.OpenURL(ctx, where, jopts...)
	if err != nil {
		return nil, nil, err // jetstream's errors name the URL and the package
	}
	if c.readOnly {
		return readOnlySealed{readOnlyStore{js}, js}, func() { js.Close() }, nil
	}
	return js, func() { js.Close() }, nil
}
