package jetstream

import (
	"encoding/json"
	"strings"
	"testing"

	"filippo.io/age"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/storetest"
)

// A JetStream store does not seal (docs/distributed.md): a Create or a
// CreateFrom asked to seal, for recipients or as a copy of a sealed
// session, fails with an error wrapping handle.ErrSealed and leaves
// nothing behind — no session, no lease: the same ID is then created in
// clear. It never makes a clear session in its place.
func TestSealedRefused(t *testing.T) {
	st := newStore(t, connect(t, runServer(t)))
	id, err := age.GenerateX25519Identity()
	require.NoError(t, err)
	const sid = "01JDX3N0Q3Z8Y6W2D1V5K7M9PA"
	for _, c := range []struct {
		name   string
		create func() error
	}{
		{"Create for recipients", func() error {
			_, err := st.Create(ctx, handle.WithID(sid), handle.SealedFor(id.Recipient()))
			return err
		}},
		{"CreateFrom for recipients", func() error {
			_, err := st.CreateFrom(ctx, storetest.Events([]eventlog.Event{ev(0, 0)}, nil), handle.WithID(sid), handle.SealedFor(id.Recipient()))
			return err
		}},
		{"CreateFrom as a sealed copy", func() error {
			_, err := st.CreateFrom(ctx, storetest.Events([]eventlog.Event{ev(0, 0)}, nil), handle.WithID(sid), handle.SealedAs(&handle.Sealing{}))
			return err
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.create()
			require.ErrorIs(t, err, handle.ErrSealed)
			require.Contains(t, err.Error(), "does not keep sealed sessions")
			_, err = st.Stat(ctx, sid)
			require.ErrorIs(t, err, handle.ErrNotFound, "no session, clear or sealed")
		})
	}
	h, err := st.Create(ctx, handle.WithID(sid))
	require.NoError(t, err, "no lease was left behind")
	require.NoError(t, h.Close())
}

// Redaction at write is on by default on JetStream too (the write core's
// prepare step): what a write handle stores, reads back and digests is the
// redacted form, and no message of the stream holds the secret. Each way
// of turning it off (the store, Create, Open) stores the event as given.
func TestRedactionAtWrite(t *testing.T) {
	secret := "AKIA" + strings.Repeat("Q7", 8) // an AWS access key ID, built at run time
	plain := `{"id":"c1","output":"key ` + secret + ` end"}`
	redacted := `{"id":"c1","output":"key [REDACTED:aws-access-key-id] end","$redacted":[{"path":["output"],"kinds":["aws-access-key-id"]}]}`
	s := runServer(t)
	for _, c := range []struct {
		name  string
		store []Option
		open  func(st *Store) handle.Handle
		want  string
	}{
		{"default", nil, func(st *Store) handle.Handle {
			h, err := st.Create(ctx)
			require.NoError(t, err)
			return h
		}, redacted},
		{"store off", []Option{WithoutRedaction()}, func(st *Store) handle.Handle {
			h, err := st.Create(ctx)
			require.NoError(t, err)
			return h
		}, plain},
		{"create off", nil, func(st *Store) handle.Handle {
			h, err := st.Create(ctx, handle.Unredacted())
			require.NoError(t, err)
			return h
		}, plain},
		{"open off", nil, func(st *Store) handle.Handle {
			h, err := st.Create(ctx)
			require.NoError(t, err)
			require.NoError(t, h.Close())
			h, err = st.Open(ctx, h.ID(), handle.ReadWrite, handle.OpenUnredacted())
			require.NoError(t, err)
			return h
		}, plain},
		{"reopened writer redacts", nil, func(st *Store) handle.Handle {
			h, err := st.Create(ctx, handle.Unredacted())
			require.NoError(t, err)
			require.NoError(t, h.Close())
			h, err = st.Open(ctx, h.ID(), handle.ReadWrite)
			require.NoError(t, err)
			return h
		}, redacted},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := newStore(t, connect(t, s), c.store...)
			h := c.open(st)
			in := []eventlog.Event{{Type: "tool/result", Time: 1, Data: json.RawMessage(plain)}}
			_, err := h.Append(ctx, in...)
			require.NoError(t, err)
			require.Equal(t, plain, string(in[0].Data), "the caller's event is not changed")
			got := readAll(t, h)
			require.Len(t, got, 1)
			require.Equal(t, c.want, string(got[0].Data), "read back from the writer")
			dig, _, err := h.LogDigest(ctx)
			require.NoError(t, err)
			require.NoError(t, h.Close())

			r, err := st.Open(ctx, h.ID(), handle.ReadOnly)
			require.NoError(t, err)
			defer r.Close()
			got = readAll(t, r)
			require.Equal(t, c.want, string(got[0].Data), "read back from the stream")
			want := eventlog.NewDigest()
			want.Add(got[0])
			require.Equal(t, want.String(), dig, "the digest is of what is stored")
			require.Equal(t, c.want == plain, strings.Contains(string(load(t, st, h.ID()).log), secret), "the secret in a message")
		})
	}
}
