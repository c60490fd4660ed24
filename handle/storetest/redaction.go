package storetest

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
)

// testRedaction: redaction at write is on by default on every store (the
// write core's prepare step; docs/format.md §11). What a write handle
// stores, reads back and digests is the redacted form, and the caller's
// events are left as they were; Create with Unredacted and Open with
// Open with Unredacted store the event as given, and a writer reopened without
// them redacts again. CreateFrom and AppendAll store what they are given.
func testRedaction(t *testing.T, hs Harness) {
	secret := "AKIA" + strings.Repeat("Q7", 8) // an AWS access key ID, built at run time
	plain := `{"id":"c1","output":"key ` + secret + ` end"}`
	redacted := `{"id":"c1","output":"key [REDACTED:aws-access-key-id] end","$redacted":[{"path":["output"],"kinds":["aws-access-key-id"]}]}`
	secretEvent := func(seq int64) eventlog.Event {
		return eventlog.Event{Seq: seq, Type: "tool/result", Time: 1, Data: json.RawMessage(plain)}
	}
	reopen := func(t *testing.T, h handle.Handle, opts ...handle.Option) handle.Handle {
		require.NoError(t, h.Close())
		w, err := hs.Store.Open(ctx, h.ID(), handle.ReadWrite, opts...)
		require.NoError(t, err)
		return w
	}
	for _, c := range []struct {
		name string
		open func(t *testing.T) handle.Handle
		want string
	}{
		{"default", func(t *testing.T) handle.Handle { return create(t, hs) }, redacted},
		{"create off", func(t *testing.T) handle.Handle { return create(t, hs, handle.Unredacted()) }, plain},
		{"open off", func(t *testing.T) handle.Handle { return reopen(t, create(t, hs), handle.Unredacted()) }, plain},
		{"reopened writer redacts", func(t *testing.T) handle.Handle { return reopen(t, create(t, hs, handle.Unredacted())) }, redacted},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := c.open(t)
			in := []eventlog.Event{secretEvent(0)}
			_, err := h.Append(ctx, in...)
			require.NoError(t, err)
			require.Equal(t, plain, string(in[0].Data), "the caller's event is not changed")
			got := readAll(t, h, 0, handle.End)
			require.Len(t, got, 1)
			require.Equal(t, c.want, string(got[0].Data), "read back from the writer")
			dig, _, err := h.LogDigest(ctx)
			require.NoError(t, err)
			require.NoError(t, h.Close())

			r := open(t, hs, h.ID(), handle.ReadOnly)
			defer r.Close()
			got = readAll(t, r, 0, handle.End)
			require.Equal(t, c.want, string(got[0].Data), "read back from the store")
			want := eventlog.NewDigest()
			want.Add(got[0])
			require.Equal(t, want.String(), dig, "the digest is of what is stored")
		})
	}

	t.Run("CreateFrom and AppendAll store as given", func(t *testing.T) {
		info, err := hs.Store.CreateFrom(ctx, Events([]eventlog.Event{secretEvent(0)}, nil))
		require.NoError(t, err)
		_, err = hs.Store.AppendAll(ctx, info.ID, 1, Events([]eventlog.Event{secretEvent(1)}, nil))
		require.NoError(t, err)
		r := open(t, hs, info.ID, handle.ReadOnly)
		defer r.Close()
		for _, e := range readAll(t, r, 0, handle.End) {
			require.Equal(t, plain, string(e.Data), "seq %d", e.Seq)
		}
	})
}
