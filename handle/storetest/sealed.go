package storetest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"filippo.io/age"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/secrets/seal"
)

// sealedMarker is in every sealed case's event data and labels: the
// stored bytes must not hold it.
const sealedMarker = "plaintext-marker"

func sealedEvents(from, n int) []eventlog.Event {
	evs := make([]eventlog.Event, n)
	for i := range evs {
		evs[i] = eventlog.Event{Type: []string{"user/message", "assistant/chunk", "tool/result"}[(from+i)%3],
			Time: int64(1764450000000 + from + i), Data: json.RawMessage(fmt.Sprintf(`{"text":"%s %d"}`, sealedMarker, from+i))}
	}
	return evs
}

// requireSealed checks that session id is stored sealed: its bytes start
// a sealed log and hold no plaintext.
func requireSealed(t *testing.T, hs Harness, id string) {
	t.Helper()
	raw := hs.Raw(t, id)
	_, ok := seal.IsSealed(raw)
	require.True(t, ok, "%s is stored sealed", id)
	require.False(t, bytes.Contains(raw, []byte(sealedMarker)), "no plaintext in the stored bytes of %s", id)
}

// clearDigest is the log digest of events in a clear session.
func clearDigest(t *testing.T, hs Harness, evs []eventlog.Event) string {
	t.Helper()
	h := create(t, hs)
	appendFlush(t, h, evs)
	d, _, err := h.LogDigest(ctx)
	require.NoError(t, err)
	return d
}

// testSealed: sealed sessions (docs/format.md §11) on any store that
// keeps them: created sealed (the store's recipients, WithRecipients on one create), they
// read back, stat, reopen and digest as a clear session of the same
// events, with no plaintext in what is stored; the creating store reads
// them without an identity, another needs one (seal.ErrNoKey naming the
// session without); forks are sealed; CreateFrom, AppendAll, a torn
// tail, Detach and derived data keep them sealed.
func testSealed(t *testing.T, hs Harness) {
	if hs.Sealing == nil {
		t.Skip("the store does not seal")
	}
	alice, err := age.GenerateX25519Identity()
	require.NoError(t, err)
	bob, err := age.GenerateX25519Identity()
	require.NoError(t, err)
	maker := hs.Sealing(t, []age.Recipient{alice.Recipient()}, nil) // no identity: keeps the keys it makes
	reader := hs.Sealing(t, nil, []age.Identity{alice})

	// newSealed makes a sealed session on maker holding evs.
	newSealed := func(t *testing.T, evs []eventlog.Event, opts ...handle.Option) string {
		t.Helper()
		h, err := maker.Create(ctx, opts...)
		require.NoError(t, err)
		defer h.Close()
		appendFlush(t, h, evs)
		return h.ID()
	}
	readBack := func(t *testing.T, st handle.Store, id string, from, to int64) []eventlog.Event {
		t.Helper()
		h, err := st.Open(ctx, id, handle.ReadOnly)
		require.NoError(t, err)
		defer h.Close()
		return readAll(t, h, from, to)
	}

	t.Run("RoundTrip", func(t *testing.T) {
		evs := withSeqs(sealedEvents(0, 40), 0)
		labels := map[string]string{"note": sealedMarker}
		h, err := maker.Create(ctx, handle.WithLabels(labels))
		require.NoError(t, err)
		for i := 0; i < 30; i += 7 {
			appendFlush(t, h, evs[i:min(i+7, 30)])
		}
		require.Equal(t, canon(evs[:30]), canon(readAll(t, h, 0, handle.End)), "the writer reads back")
		require.NoError(t, h.Close())
		id := h.ID()

		w, err := maker.Open(ctx, id, handle.ReadWrite) // the maker reopens without an identity
		require.NoError(t, err)
		appendFlush(t, w, evs[30:])
		dig, _, err := w.LogDigest(ctx)
		require.NoError(t, err)
		require.NoError(t, w.Close())

		requireSealed(t, hs, id)
		require.Equal(t, canon(evs), canon(readBack(t, reader, id, 0, handle.End)))
		require.Equal(t, canon(evs[17:23]), canon(readBack(t, reader, id, 17, 22)), "a read from a seq")
		info, err := reader.Stat(ctx, id)
		require.NoError(t, err)
		require.True(t, info.Sealed)
		require.Equal(t, int64(39), info.LastSeq)
		require.Equal(t, evs[39].Type, info.LastType)
		require.Equal(t, evs[39].Time, info.LastTime)
		require.Equal(t, labels, info.Header.Labels, "labels are in the sealed header row")
		require.Equal(t, clearDigest(t, hs, evs), dig, "the digest is over the plaintext")

		r, err := reader.Open(ctx, id, handle.ReadOnly)
		require.NoError(t, err)
		rd, _, err := r.LogDigest(ctx)
		require.NoError(t, err)
		require.NoError(t, r.Close())
		require.Equal(t, dig, rd)
	})

	t.Run("NoKey", func(t *testing.T) {
		id := newSealed(t, sealedEvents(0, 3))
		for name, st := range map[string]handle.Store{
			"no identity":    hs.Sealing(t, nil, nil),
			"wrong identity": hs.Sealing(t, nil, []age.Identity{bob}),
		} {
			t.Run(name, func(t *testing.T) {
				_, err := st.Open(ctx, id, handle.ReadOnly)
				require.ErrorIs(t, err, seal.ErrNoKey)
				require.ErrorContains(t, err, id)
				_, err = st.Open(ctx, id, handle.ReadWrite)
				require.ErrorIs(t, err, seal.ErrNoKey)
				_, err = st.Stat(ctx, id)
				require.ErrorIs(t, err, seal.ErrNoKey)
				require.ErrorContains(t, err, id)
				// What can be checked without the key: the framing.
				se, ok := st.(handle.SealedExporter)
				require.True(t, ok, "a store that seals tells how (handle.SealedExporter)")
				fr, err := se.Framing(ctx, id)
				require.NoError(t, err)
				require.NotNil(t, fr)
				require.Len(t, fr.Envelopes, 1, "one key record: alice's")
				require.Positive(t, fr.Records)
				require.Nil(t, fr.Torn)
			})
		}
		clear := create(t, hs)
		require.NoError(t, clear.Close())
		fr, err := hs.Sealing(t, nil, nil).(handle.SealedExporter).Framing(ctx, clear.ID())
		require.NoError(t, err)
		require.Nil(t, fr, "a clear session has no sealed framing")
	})

	t.Run("SealedFor", func(t *testing.T) {
		h := create(t, hs, handle.WithRecipients(alice.Recipient()))
		evs := withSeqs(sealedEvents(0, 5), 0)
		appendFlush(t, h, evs)
		require.NoError(t, h.Close())
		requireSealed(t, hs, h.ID())
		require.Equal(t, canon(evs), canon(readBack(t, reader, h.ID(), 0, handle.End)))
		_, err := hs.Store.Create(ctx, handle.WithRecipients())
		require.Error(t, err, "SealedFor without a recipient")
	})

	t.Run("ForkIsSealed", func(t *testing.T) {
		evs := withSeqs(sealedEvents(0, 20), 0)
		parent := newSealed(t, evs[:10])
		// reader has no recipients: the fork is sealed for its identity.
		f, err := reader.Fork(ctx, parent, 6)
		require.NoError(t, err)
		own := withSeqs(sealedEvents(100, 5), 7)
		appendFlush(t, f, own)
		require.NoError(t, f.Close())
		info, err := reader.Stat(ctx, f.ID())
		require.NoError(t, err)
		require.True(t, info.Sealed, "a fork of a sealed session is sealed")
		requireSealed(t, hs, f.ID())
		want := append(append([]eventlog.Event{}, evs[:7]...), own...)
		require.Equal(t, canon(want), canon(readBack(t, reader, f.ID(), 0, handle.End)))

		// Detach copies the inherited prefix in: sealed still.
		require.NoError(t, reader.Detach(ctx, f.ID()))
		requireSealed(t, hs, f.ID())
		require.Equal(t, canon(want), canon(readBack(t, reader, f.ID(), 0, handle.End)))
	})

	t.Run("CreateFromAppendAll", func(t *testing.T) {
		evs := withSeqs(sealedEvents(0, 30), 0)
		info, err := maker.CreateFrom(ctx, Events(evs[:20], nil))
		require.NoError(t, err)
		require.True(t, info.Sealed)
		_, err = maker.AppendAll(ctx, info.ID, 20, Events(evs[20:], nil))
		require.NoError(t, err)
		requireSealed(t, hs, info.ID)
		require.Equal(t, canon(evs), canon(readBack(t, reader, info.ID, 0, handle.End)))
		st, err := reader.Stat(ctx, info.ID)
		require.NoError(t, err)
		require.Equal(t, int64(29), st.LastSeq)

		got, err := hs.Store.CreateFrom(ctx, Events(evs, nil), handle.WithRecipients(alice.Recipient()))
		require.NoError(t, err)
		require.True(t, got.Sealed)
		requireSealed(t, hs, got.ID)
		require.Equal(t, canon(evs), canon(readBack(t, reader, got.ID, 0, handle.End)))
	})

	t.Run("TornTail", func(t *testing.T) {
		evs := withSeqs(sealedEvents(0, 13), 0)
		evs[10] = incompressible(600) // the write a power cut tears
		evs[10].Seq = 10
		id := newSealed(t, evs[:10])
		acked := hs.Size(t, id)
		w, err := maker.Open(ctx, id, handle.ReadWrite)
		require.NoError(t, err)
		appendFlush(t, w, evs[10:11])
		require.NoError(t, w.Close())
		hs.Tear(t, id, (hs.Size(t, id)-acked)/2)

		info, err := reader.Stat(ctx, id)
		require.NoError(t, err)
		require.Equal(t, int64(9), info.LastSeq, "Stat passes over the torn tail")
		h, err := reader.Open(ctx, id, handle.ReadWrite)
		require.NoError(t, err)
		require.Equal(t, acked, h.Torn().Offset)
		require.Equal(t, int64(9), h.Seq(), "the torn row is dropped")
		appendFlush(t, h, evs[10:])
		require.NoError(t, h.Close())
		requireSealed(t, hs, id)
		require.Equal(t, canon(evs), canon(readBack(t, reader, id, 0, handle.End)))
	})

	t.Run("Derived", func(t *testing.T) {
		id := newSealed(t, sealedEvents(0, 2))
		require.NoError(t, maker.PutDerived(ctx, id, "k", []byte(sealedMarker)))
		got, err := reader.GetDerived(ctx, id, "k")
		require.NoError(t, err)
		require.Equal(t, sealedMarker, string(got))
		_, err = hs.Sealing(t, nil, nil).GetDerived(ctx, id, "k")
		require.ErrorIs(t, err, handle.ErrNotFound, "without a key derived data is not there")
	})
}
