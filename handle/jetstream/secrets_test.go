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
			_, err := st.Create(ctx, handle.WithID(sid), handle.WithRecipients(id.Recipient()))
			return err
		}},
		{"CreateFrom for recipients", func() error {
			_, err := st.CreateFrom(ctx, storetest.Events([]eventlog.Event{ev(0, 0)}, nil), handle.WithID(sid), handle.WithRecipients(id.Recipient()))
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

// The JetStream store's redaction option (the rest of redaction at write
// is the contract's, storetest "RedactionAtWrite"): by default no message
// of the stream holds the secret; WithoutRedaction stores it as given.
func TestRedactionAtWrite(t *testing.T) {
	secret := "AKIA" + strings.Repeat("Q7", 8) // an AWS access key ID, built at run time
	s := runServer(t)
	for _, c := range []struct {
		name  string
		store []Option
		clear bool
	}{
		{"default", nil, false},
		{"store off", []Option{WithoutRedaction()}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := newStore(t, connect(t, s), c.store...)
			h, err := st.Create(ctx)
			require.NoError(t, err)
			_, err = h.Append(ctx, eventlog.Event{Type: "tool/result", Time: 1, Data: json.RawMessage(`{"output":"key ` + secret + ` end"}`)})
			require.NoError(t, err)
			require.NoError(t, h.Close())
			r, err := st.Open(ctx, h.ID(), handle.ReadOnly)
			require.NoError(t, err)
			defer r.Close()
			got := readAll(t, r)
			require.Len(t, got, 1)
			require.Equal(t, c.clear, strings.Contains(string(got[0].Data), secret), "the secret in the event")
			require.Equal(t, c.clear, strings.Contains(string(load(t, st, h.ID()).log), secret), "the secret in a message")
		})
	}
}
