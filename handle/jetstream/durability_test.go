package jetstream

import (
	"bytes"
	"log/slog"
	"testing"

	natsjs "github.com/nats-io/nats.go/jetstream"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/stretchr/testify/require"
)

// New says what an acknowledgement is worth: it refuses streams that lose
// acknowledged writes, warns about one replica unless the server is
// declared to sync every write, and refuses that too when strict.
func TestNewChecksDurability(t *testing.T) {
	s := runServer(t)
	js := connect(t, s)
	good := func(name string) natsjs.StreamConfig {
		return natsjs.StreamConfig{Name: name, Subjects: []string{name + ".s.*"}, Storage: natsjs.FileStorage,
			AllowAtomicPublish: true, AllowDirect: true, AllowRollup: true}
	}
	for _, tc := range []struct {
		name    string
		stream  func(c *natsjs.StreamConfig)
		opts    []Option
		wantErr error
		warns   bool
	}{
		{"declared sync always", nil, []Option{WithSyncAlways()}, nil, false},
		{"one replica warns", nil, nil, nil, true},
		{"one replica strict", nil, []Option{WithStrictDurability()}, ErrNotDurable, false},
		{"memory storage", func(c *natsjs.StreamConfig) { c.Storage = natsjs.MemoryStorage }, []Option{WithSyncAlways()}, ErrNotDurable, false},
		{"no atomic publish", func(c *natsjs.StreamConfig) { c.AllowAtomicPublish = false }, []Option{WithSyncAlways()}, ErrStream, false},
		{"no direct get", func(c *natsjs.StreamConfig) { c.AllowDirect = false }, []Option{WithSyncAlways()}, ErrStream, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := slug(tc.name)
			c := good(name)
			if tc.stream != nil {
				tc.stream(&c)
			}
			_, err := js.CreateStream(ctx, c)
			require.NoError(t, err)
			var logs bytes.Buffer
			log := slog.New(slog.NewTextHandler(&logs, nil))
			_, err = New(ctx, js, append(tc.opts, WithPrefix(name), With(handle.WithLogger(log)))...)
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			if tc.warns {
				require.Contains(t, logs.String(), "level=WARN")
				require.Contains(t, logs.String(), "NOT durable")
			} else {
				require.NotContains(t, logs.String(), "level=WARN")
			}
		})
	}
}

func slug(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c == ' ' {
			b[i] = '_'
		}
	}
	return string(b)
}
