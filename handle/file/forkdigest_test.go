package file_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/handle/storetest"
	"github.com/sessionlog/sessionlog/internal/testkit/countfs"
)

// writeWithCheckpoints appends n events to h, a checkpoint after every 99,
// flushing each.
func writeWithCheckpoints(t *testing.T, h handle.Handle, n int) {
	t.Helper()
	for h.Seq()+1 < int64(n) {
		evs := make([]eventlog.Event, 99)
		for i := range evs {
			evs[i] = eventlog.Event{Type: "tool/result", Time: 1, Data: json.RawMessage(fmt.Sprintf(`{"output":"%0200d"}`, h.Seq()+1+int64(i)))}
		}
		_, err := h.Append(t.Context(), evs...)
		require.NoError(t, err)
		d, _, err := h.LogDigest(t.Context())
		require.NoError(t, err)
		_, err = h.Append(t.Context(), eventlog.Event{Type: eventlog.TypeCheckpoint, Data: json.RawMessage(`{"log":"` + d + `"}`)})
		require.NoError(t, err)
		require.NoError(t, h.Flush(t.Context()))
	}
}

// A fork's first digest starts from its parent's saved state at the fork
// point: the one the parent's writer left at its last seq, or the nearest
// kept at a checkpoint before it; a fork of a fork from the grandparent's.
// The digest is the one hashing the logical log gives, and what is read
// does not grow with the parent's log (a parent of about 5 MiB: a fork
// reads under 3 MiB, the index stride of the reads being 1 MiB). Saved
// states that do not match the log are passed over.
func TestForkDigestFromSavedStates(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dir := filepath.Join(t.TempDir(), "s")
	counted := countfs.New(afero.NewOsFs())
	st := file.New(counted, dir)
	p, err := st.Create(ctx)
	require.NoError(t, err)
	writeWithCheckpoints(t, p, 20_000)
	last := p.Seq()
	require.NoError(t, p.Close())
	child, err := st.Fork(ctx, p.ID(), 10_050)
	require.NoError(t, err)
	writeWithCheckpoints(t, child, 10_300)
	require.NoError(t, child.Close())

	for _, tc := range []struct {
		name   string
		parent string
		at     int64
	}{
		{"at the last seq", p.ID(), last},
		{"at a checkpoint", p.ID(), 9_999},
		{"after a checkpoint", p.ID(), 15_050},
		{"before the first checkpoint", p.ID(), 50},
		{"in a fork's own events", child.ID(), 10_250},
		{"in a fork's inherited events", child.ID(), 5_000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cold := file.New(counted, dir) // nothing in memory
			before := counted.BytesRead()
			f, err := cold.Fork(ctx, tc.parent, tc.at)
			require.NoError(t, err)
			got, next, err := f.LogDigest(ctx)
			require.NoError(t, err)
			read := counted.BytesRead() - before
			require.Equal(t, tc.at+1, next)
			want := eventlog.NewDigest()
			for e, err := range f.Read(ctx, 0, handle.End) {
				require.NoError(t, err)
				want.Add(e)
			}
			require.Equal(t, want.String(), got)
			require.Less(t, read, int64(3<<20), "read %d bytes", read)
			require.NoError(t, f.Close())
			require.NoError(t, cold.Delete(ctx, f.ID()))
		})
	}

	t.Run("saved states that do not match are passed over", func(t *testing.T) {
		bogus := []map[string]any{{"next": 15_000, "last": fmt.Sprintf("%064d", 0), "state": json.RawMessage(`{"next":15000,"sha256":"AA=="}`)}}
		b, err := json.Marshal(bogus)
		require.NoError(t, err)
		require.NoError(t, st.PutDerived(ctx, p.ID(), "digests", b))
		f, err := st.Fork(ctx, p.ID(), 15_050)
		require.NoError(t, err)
		defer f.Close()
		got, _, err := f.LogDigest(ctx)
		require.NoError(t, err)
		want := eventlog.NewDigest()
		for e, err := range f.Read(ctx, 0, handle.End) {
			require.NoError(t, err)
			want.Add(e)
		}
		require.Equal(t, want.String(), got)
	})
}

// A session CreateFrom made keeps the digest it computed, as a writer's
// Close does: a writer's first digest on it reads one state and the last
// rows, not the log (of about 5 MiB).
func TestCreateFromSavesItsDigest(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	counted := countfs.New(afero.NewOsFs())
	st := file.New(counted, filepath.Join(t.TempDir(), "s"))
	evs := make([]eventlog.Event, 20_000)
	want := eventlog.NewDigest()
	for i := range evs {
		evs[i] = eventlog.Event{Seq: int64(i), Type: "tool/result", Time: 1, Data: json.RawMessage(fmt.Sprintf(`{"output":"%0200d"}`, i))}
		want.Add(evs[i])
	}
	info, err := st.CreateFrom(ctx, storetest.Events(evs, nil))
	require.NoError(t, err)
	w, err := st.Open(ctx, info.ID, handle.ReadWrite)
	require.NoError(t, err)
	defer w.Close()
	before := counted.BytesRead()
	got, _, err := w.LogDigest(ctx)
	require.NoError(t, err)
	require.Equal(t, want.String(), got)
	require.Less(t, counted.BytesRead()-before, int64(2<<20), "log of %d bytes", info.SizeBytes)
}
