package sealing_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"filippo.io/age"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle/internal/sealing"
	"github.com/sessionlog/sessionlog/secrets/seal"
)

func rows(t *testing.T, from, n int) []byte {
	t.Helper()
	evs := make([]eventlog.Event, n)
	for i := range evs {
		evs[i] = eventlog.Event{Seq: int64(from + i), Type: "user/message", Time: 1, Data: json.RawMessage(`{"i":1}`)}
	}
	return eventlog.NewEncoder(nil).AppendRows(nil, evs)
}

// TestPlanSealRowsRead: a planned log, its rows sealed one record a row,
// reads back through seal.Reader whole and from any record SealRows
// names, with the seq it says.
func TestPlanSealRowsRead(t *testing.T) {
	id, err := age.GenerateX25519Identity()
	require.NoError(t, err)
	hdr := eventlog.NewHeader("01JX0000000000000000000000", 5)
	p, err := sealing.NewPlan(hdr, seal.Raw, []age.Recipient{id.Recipient()})
	require.NoError(t, err)
	line, err := eventlog.EncodeHeader(hdr)
	require.NoError(t, err)
	log, err := p.Start(append(line, '\n'))
	require.NoError(t, err)
	base := len(log)
	log, recs, err := sealing.SealRows(p.Sealer, log, rows(t, 0, 10), nil)
	require.NoError(t, err)
	require.Len(t, recs, 10)
	require.Equal(t, base, recs[0].Off)
	require.NotContains(t, string(log), `"user/message"`, "no plaintext")

	keys := sealing.NewKeys([]age.Identity{id})
	r := seal.NewReader(bytes.NewReader(log), seal.Raw, keys.For(p.Head))
	got, err := r.Header()
	require.NoError(t, err)
	require.Equal(t, hdr.ID, got.ID)
	n := 0
	for r.Next() {
		require.Equal(t, int64(n), r.Event().Seq)
		n++
	}
	require.NoError(t, r.Err())
	require.Equal(t, 10, n)

	for _, rec := range recs {
		r := seal.NewReader(bytes.NewReader(log[rec.Off:]), seal.Raw, keys.For(p.Head), seal.WithStart(int64(rec.Off), rec.Seq))
		require.True(t, r.Next())
		require.Equal(t, rec.Seq, r.Event().Seq)
	}

	// A store without the identity: no key, named.
	_, err = sealing.NewKeys(nil).For(p.Head).Key(0)
	require.ErrorIs(t, err, seal.ErrNoKey)
	// The creator keeps its key without an identity.
	require.NotNil(t, sealing.NewKeys(nil).Remember(p))
}

func TestRecipients(t *testing.T) {
	id, err := age.GenerateX25519Identity()
	require.NoError(t, err)
	other, err := age.GenerateX25519Identity()
	require.NoError(t, err)
	for _, tc := range []struct {
		name         string
		ask          sealing.Ask
		parentSealed bool
		store        []age.Recipient
		ids          []age.Identity
		want         []age.Recipient
		err          bool
	}{
		{name: "clear"},
		{name: "store's", store: []age.Recipient{other.Recipient()}, want: []age.Recipient{other.Recipient()}},
		{name: "SealedFor over store's", ask: sealing.Ask{Sealed: true, SealFor: []age.Recipient{id.Recipient()}},
			store: []age.Recipient{other.Recipient()}, want: []age.Recipient{id.Recipient()}},
		{name: "SealedFor empty", ask: sealing.Ask{Sealed: true}, err: true},
		{name: "fork by identity", parentSealed: true, ids: []age.Identity{id}, want: []age.Recipient{id.Recipient()}},
		{name: "fork without anyone", parentSealed: true, err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := sealing.Recipients(tc.ask, tc.parentSealed, tc.store, tc.ids)
			if tc.err {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}
