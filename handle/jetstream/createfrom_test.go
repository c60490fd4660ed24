package jetstream

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/storetest"
	"github.com/sessionlog/sessionlog/internal/format/logfile"
)

// TestCreateFromKilled builds, on a stream, each state a CreateFrom killed
// at some instant leaves (its lease then expires): only the mark; the mark
// and the header; the mark, the header and part of the events. In each no
// reader finds the session, a Create of its ID is refused, GC removes it
// (its dry run lists it and removes nothing) unless a builder holds its
// lease, then the next answer drops its index entry, and the retry
// succeeds with the whole log.
func TestCreateFromKilled(t *testing.T) {
	st := newStore(t, connect(t, runServer(t)))
	evs := make([]eventlog.Event, 40)
	for i := range evs {
		evs[i] = ev(0, i)
		evs[i].Seq = int64(i)
	}
	for i, tc := range []struct {
		name   string
		header bool
		events int
	}{
		{"mark only", false, 0},
		{"mark and header", true, 0},
		{"part of the events", true, 25},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := fmt.Sprintf("01JDX3N0Q3Z8Y6W2D1V5K7M9P%d", i)
			l, err := st.acquire(ctx, id)
			require.NoError(t, err)
			require.NoError(t, st.ixCreating(ctx, logfile.NewHeader(id, 1), false)) // as CreateFrom does
			if tc.header {
				_, h, err := st.startBuild(ctx, logfile.NewHeader(id, 1), nil, l)
				require.NoError(t, err)
				err = appendAll(ctx, h, storetest.Events(evs[:tc.events], nil))
				require.NoError(t, err)
				require.NoError(t, h.Close()) // killed: its lease expires
			} else {
				mark := &nats.Msg{Subject: st.Subject(id), Header: nats.Header{}}
				mark.Header.Set(hdrBuilding, nuid.Next())
				_, err := st.js.PublishMsg(ctx, mark)
				require.NoError(t, err)
				l.release()
			}

			_, err = st.Stat(ctx, id)
			require.ErrorIs(t, err, handle.ErrNotFound)
			for _, mode := range []handle.Mode{handle.ReadOnly, handle.ReadWrite} {
				_, err = st.Open(ctx, id, mode)
				require.ErrorIs(t, err, handle.ErrNotFound)
			}
			infos, err := st.List(ctx)
			require.NoError(t, err)
			require.Empty(t, infos)
			roots, err := st.Tree(ctx)
			require.NoError(t, err)
			require.Empty(t, roots)
			_, err = st.Create(ctx, handle.WithID(id))
			require.ErrorIs(t, err, handle.ErrExists, "the retry is CreateFrom's")

			// A builder at work (its lease held) is left alone.
			busy, err := st.acquire(ctx, id)
			require.NoError(t, err)
			rep, err := st.GC(ctx, time.Now(), false)
			require.NoError(t, err)
			require.Empty(t, rep.Leftovers)
			busy.release()
			dry, err := st.GC(ctx, time.Now(), true)
			require.NoError(t, err)
			require.Equal(t, []string{st.path(id)}, dry.Leftovers)
			if i%2 == 0 {
				rep, err = st.GC(ctx, time.Now(), false)
				require.NoError(t, err)
				require.Equal(t, dry.Leftovers, rep.Leftovers)
				_, err = st.stream.GetMsg(ctx, 1, natsjs.WithGetMsgSubject(st.Subject(id)))
				require.ErrorIs(t, err, natsjs.ErrMsgNotFound, "GC purged it")
				infos, err := st.List(ctx)
				require.NoError(t, err)
				require.Empty(t, infos)
				_, err = st.ixKV.Get(ctx, ixKey(id))
				require.ErrorIs(t, err, natsjs.ErrKeyNotFound, "the answer after GC dropped the entry")
			}

			info, err := st.CreateFrom(ctx, storetest.Events(evs, nil), handle.WithID(id))
			require.NoError(t, err, "the retry succeeds")
			require.Equal(t, int64(39), info.LastSeq)
			r, err := st.Open(ctx, id, handle.ReadOnly)
			require.NoError(t, err)
			require.Len(t, readAll(t, r), 40)
			require.NoError(t, r.Close())
			require.NoError(t, st.Delete(ctx, id))
			_, err = st.ixKV.Get(ctx, ixKey(id))
			require.ErrorIs(t, err, natsjs.ErrKeyNotFound, "Delete removes the entry")
		})
	}
}

// TestCreateFromLeavesNoMark: a session CreateFrom made starts with its
// header, as one Create made: the payloads concatenate to the raw log.
func TestCreateFromLeavesNoMark(t *testing.T) {
	st := newStore(t, connect(t, runServer(t)))
	info, err := st.CreateFrom(ctx, storetest.Events([]eventlog.Event{{Seq: 0, Type: "x", Data: json.RawMessage(`1`)}}, nil))
	require.NoError(t, err)
	s := load(t, st, info.ID)
	require.Empty(t, s.msgs[0].Header.Get(hdrBuilding))
	hdr, _, err := logfile.ReadHeader(bytes.NewReader(s.log), "")
	require.NoError(t, err)
	require.Equal(t, info.ID, hdr.ID)
	require.Equal(t, info.SizeBytes, int64(len(s.log)))
}

// A CreateFrom killed mid-way keeps its lease until the lease expires: a
// retry at once waits for it (at most the lease's TTL) and succeeds with
// the whole log. A builder that is alive renews its lease: the retry then
// ends with ErrLocked once the lease outlived its first deadline, and the
// builder finishes undisturbed.
func TestCreateFromRetryAfterKill(t *testing.T) {
	s := runServer(t)
	const ttl = time.Second
	evs := make([]eventlog.Event, 40)
	for i := range evs {
		evs[i] = ev(0, i)
		evs[i].Seq = int64(i)
	}
	building := func(t *testing.T, st *Store, id string) handle.Handle {
		t.Helper()
		l, err := st.acquire(ctx, id)
		require.NoError(t, err)
		_, h, err := st.startBuild(ctx, logfile.NewHeader(id, 1), nil, l)
		require.NoError(t, err)
		err = appendAll(ctx, h, storetest.Events(evs[:25], nil))
		require.NoError(t, err)
		return h
	}
	retry := newStore(t, connect(t, s), WithLeaseTTL(ttl))

	t.Run("killed", func(t *testing.T) {
		const id = "01JDX3N0Q3Z8Y6W2D1V5K7M9PA"
		dead := newStore(t, connect(t, s), WithLeaseTTL(ttl), func(c *config) { c.ticker = noTicks })
		h := building(t, dead, id) // killed: no renewal, no Close
		t.Cleanup(func() { h.Close() })
		info, err := retry.CreateFrom(ctx, storetest.Events(evs, nil), handle.WithID(id))
		require.NoError(t, err, "the retry succeeds")
		require.Equal(t, int64(39), info.LastSeq)
		r, err := retry.Open(ctx, id, handle.ReadOnly)
		require.NoError(t, err)
		require.Equal(t, len(evs), len(readAll(t, r)))
		require.NoError(t, r.Close())
	})
	t.Run("alive", func(t *testing.T) {
		const id = "01JDX3N0Q3Z8Y6W2D1V5K7M9PB"
		live := newStore(t, connect(t, s), WithLeaseTTL(ttl))
		h := building(t, live, id) // renews its lease every ttl/3
		_, err := retry.CreateFrom(ctx, storetest.Events(evs, nil), handle.WithID(id))
		require.ErrorIs(t, err, handle.ErrLocked)
		err = appendAll(ctx, h, storetest.Events(evs[25:], nil))
		require.NoError(t, err, "the builder was not disturbed")
		require.NoError(t, h.Close())
	})
}
