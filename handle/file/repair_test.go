package file_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
)

func repairFixture(t *testing.T, fsys afero.Fs) (*file.Store, handle.Handle) {
	t.Helper()
	ctx := context.Background()
	store := file.New(fsys, "/s")
	h, err := store.Create(ctx)
	require.NoError(t, err)
	for i := range 10 {
		_, err := h.Append(ctx, eventlog.Event{Type: "x", Time: int64(i), Data: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))})
		require.NoError(t, err)
		require.NoError(t, h.Flush(ctx))
	}
	require.NoError(t, h.Close())
	return store, h
}

func TestRepairCutsTornTailKeepingEvidence(t *testing.T) {
	ctx := context.Background()
	fsys := afero.NewMemMapFs()
	store, h := repairFixture(t, fsys)
	clean, err := afero.ReadFile(fsys, h.Path())
	require.NoError(t, err)
	f, err := fsys.OpenFile(h.Path(), os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.Write([]byte(`{"seq":10,"ty`))
	require.NoError(t, err)
	require.NoError(t, f.Close())

	rep, err := store.Repair(ctx, h.ID(), false)
	require.NoError(t, err)
	require.Equal(t, &handle.Cut{Offset: int64(len(clean)), Bytes: 13, Side: fmt.Sprintf("%s.torn-%d", h.Path(), len(clean))}, rep.Torn)
	require.Equal(t, int64(10), rep.Events)
	got, err := afero.ReadFile(fsys, h.Path())
	require.NoError(t, err)
	require.Equal(t, clean, got)
	side, err := afero.ReadFile(fsys, rep.Torn.Side)
	require.NoError(t, err)
	require.Equal(t, `{"seq":10,"ty`, string(side), "the cut bytes are kept")

	again, err := store.Repair(ctx, h.ID(), false)
	require.NoError(t, err)
	require.Nil(t, again.Torn, "a clean log is left alone")
}

func TestRepairSalvage(t *testing.T) {
	ctx := context.Background()
	fsys := afero.NewMemMapFs()
	store, h := repairFixture(t, fsys)
	b, err := afero.ReadFile(fsys, h.Path())
	require.NoError(t, err)
	off := bytes.Index(b, []byte(`{"seq":6,`))
	require.Positive(t, off)
	b[off] = '#'
	require.NoError(t, afero.WriteFile(fsys, h.Path(), b, 0o600))

	_, err = store.Repair(ctx, h.ID(), false)
	require.ErrorIs(t, err, eventlog.ErrCorrupt, "without --salvage a corrupt log is left as it is")
	unchanged, err := afero.ReadFile(fsys, h.Path())
	require.NoError(t, err)
	require.Equal(t, b, unchanged)

	rep, err := store.Repair(ctx, h.ID(), true)
	require.NoError(t, err)
	require.NotNil(t, rep.Salvaged)
	require.Equal(t, int64(off), rep.Salvaged.Offset)
	require.Equal(t, int64(6), rep.FirstLost)
	require.Equal(t, int64(9), rep.LastLost)
	require.Equal(t, int64(6), rep.Events)
	side, err := afero.ReadFile(fsys, rep.Salvaged.Side)
	require.NoError(t, err)
	require.Equal(t, b[off:], side)

	w, err := store.Open(ctx, h.ID(), handle.ReadWrite)
	require.NoError(t, err)
	defer w.Close()
	require.Equal(t, int64(5), w.Seq())
	last, err := w.Append(ctx, eventlog.Event{Type: "x"})
	require.NoError(t, err)
	require.Equal(t, int64(6), last)
	require.NoError(t, w.Flush(ctx))
}

func TestSalvagePathReadsPastDamage(t *testing.T) {
	ctx := context.Background()
	fsys := afero.NewMemMapFs()
	store, h := repairFixture(t, fsys)
	b, err := afero.ReadFile(fsys, h.Path())
	require.NoError(t, err)
	off := bytes.Index(b, []byte(`{"seq":3,`))
	b[off] = '#'
	require.NoError(t, afero.WriteFile(fsys, h.Path(), b, 0o600))
	var seqs []int64
	res, err := store.SalvagePath(ctx, h.Path(), func(e eventlog.Event) bool {
		seqs = append(seqs, e.Seq)
		return true
	})
	require.NoError(t, err)
	require.Equal(t, []int64{0, 1, 2, 4, 5, 6, 7, 8, 9}, seqs)
	require.Len(t, res.Skips, 1)
	require.Equal(t, int64(off), res.Skips[0].Offset)
	require.Equal(t, int64(3), res.Skips[0].FirstLost)
	require.Equal(t, int64(3), res.Skips[0].LastLost)
}

// Appends go on from a cut, so a later repair can cut at the same offset:
// it must keep its bytes in a new side file and leave the first one
// alone. Regression: the side file was truncated and rewritten, losing
// the bytes the first repair had saved.
func TestRepairNeverOverwritesASideFile(t *testing.T) {
	ctx := context.Background()
	fsys := afero.NewMemMapFs()
	store, h := repairFixture(t, fsys)
	clean, err := afero.ReadFile(fsys, h.Path())
	require.NoError(t, err)
	tear := func(tail string) *handle.Cut {
		t.Helper()
		f, err := fsys.OpenFile(h.Path(), os.O_WRONLY|os.O_APPEND, 0)
		require.NoError(t, err)
		_, err = f.Write([]byte(tail))
		require.NoError(t, err)
		require.NoError(t, f.Close())
		rep, err := store.Repair(ctx, h.ID(), false)
		require.NoError(t, err)
		require.NotNil(t, rep.Torn)
		require.Equal(t, int64(len(clean)), rep.Torn.Offset)
		return rep.Torn
	}
	tails := []string{`{"seq":10,"first`, `{"seq":10,"second`, `{"seq":10,"third`}
	var sides []string
	for _, tail := range tails {
		sides = append(sides, tear(tail).Side)
	}
	require.Equal(t, []string{
		fmt.Sprintf("%s.torn-%d", h.Path(), len(clean)),
		fmt.Sprintf("%s.torn-%d.1", h.Path(), len(clean)),
		fmt.Sprintf("%s.torn-%d.2", h.Path(), len(clean)),
	}, sides)
	for i, side := range sides {
		b, err := afero.ReadFile(fsys, side)
		require.NoError(t, err)
		require.Equal(t, tails[i], string(b), "every cut keeps its own bytes")
	}
}

// A salvage read of a fork gives its logical log: the inherited events
// from the parent, then what can be read of its own rows.
func TestSalvagePathOfAFork(t *testing.T) {
	ctx := context.Background()
	fsys := afero.NewMemMapFs()
	store, parent := repairFixture(t, fsys)
	fork, err := store.Fork(ctx, parent.ID(), 4)
	require.NoError(t, err)
	for i := range 3 {
		_, err := fork.Append(ctx, eventlog.Event{Type: "y", Time: int64(i), Data: json.RawMessage(fmt.Sprintf(`{"f":%d}`, i))})
		require.NoError(t, err)
	}
	require.NoError(t, fork.Close())
	b, err := afero.ReadFile(fsys, fork.Path())
	require.NoError(t, err)
	off := bytes.Index(b, []byte(`{"seq":6,`))
	b[off] = '#'
	require.NoError(t, afero.WriteFile(fsys, fork.Path(), b, 0o600))

	read := func() ([]int64, eventlog.SalvageResult, error) {
		var seqs []int64
		res, err := store.SalvagePath(ctx, fork.Path(), func(e eventlog.Event) bool {
			seqs = append(seqs, e.Seq)
			return true
		})
		return seqs, res, err
	}
	seqs, res, err := read()
	require.NoError(t, err)
	require.Equal(t, []int64{0, 1, 2, 3, 4, 5, 7}, seqs)
	require.Len(t, res.Skips, 1)
	require.Equal(t, int64(6), res.Skips[0].FirstLost)

	// Without its parent the fork's logical log cannot be read.
	require.NoError(t, fsys.Remove(parent.Path()))
	seqs, _, err = read()
	require.ErrorIs(t, err, handle.ErrNotFound)
	require.Empty(t, seqs)
}
