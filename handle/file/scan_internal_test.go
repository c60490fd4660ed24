package file

import (
	"fmt"
	"testing"
	"time"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/core"
)

// scanning is the file engine with its index hidden: the store core then
// answers List, Children, Ancestors and GC from the logs themselves (IDs,
// Headers, Stat), as it does for any backend without an index.
type scanning struct{ fileEngine }

func (scanning) Index() core.Index { return nil }

// TestScanAnswersAsTheIndex: the store core's two paths over one folder —
// the file store's index, and the scan a backend without an index gets —
// give the same answers to every query: filters, both orders, pages and
// their cursors, the relatives of a session and GC.
func TestScanAnswersAsTheIndex(t *testing.T) {
	ctx := t.Context()
	fsys := afero.NewMemMapFs()
	now := time.UnixMilli(1764450000000)
	clock := now
	at := func(c *handle.Config) { c.Now = func() time.Time { return clock } }
	indexed := New(fsys, "/s", at)
	scan := core.NewStore(scanning{fileEngine{indexed}}, at)

	day := 24 * time.Hour
	var ids []string
	mk := func(age time.Duration, parent string, labels map[string]string, events int) string {
		clock = now.Add(-age)
		var h handle.Handle
		var err error
		if parent == "" {
			h, err = indexed.Create(ctx, handle.WithLabels(labels))
		} else {
			h, err = indexed.Fork(ctx, parent, 0, handle.WithLabels(labels))
		}
		require.NoError(t, err)
		for i := range events {
			_, err = h.Append(ctx, eventlog.Event{Type: "x", Time: clock.UnixMilli() + int64(i)})
			require.NoError(t, err)
		}
		require.NoError(t, h.Close())
		ids = append(ids, h.ID())
		return h.ID()
	}
	lab := func(agent string, task int) map[string]string {
		return map[string]string{"agent": agent, "task": fmt.Sprint(task)}
	}
	lone := mk(50*day, "", nil, 1)
	old := mk(40*day, "", lab("a", 1), 3)
	oldFork := mk(39*day, old, lab("a", 2), 1)
	keptParent := mk(35*day, "", lab("b", 1), 2)
	mk(1*day, keptParent, lab("b", 2), 1)
	for i := range 8 {
		mk(time.Duration(10-i)*time.Hour, "", lab([]string{"a", "b"}[i%2], i%3), 1+i%3)
	}
	grand := mk(2*time.Hour, oldFork, nil, 2)
	gone := mk(90*time.Minute, "", lab("a", 1), 1)
	require.NoError(t, indexed.Delete(ctx, gone))
	// A session written to after it was made is active later than it was
	// created: the two orders differ.
	clock = now
	h, err := indexed.Open(ctx, keptParent, handle.ReadWrite)
	require.NoError(t, err)
	_, err = h.Append(ctx, eventlog.Event{Type: "late", Time: now.UnixMilli()})
	require.NoError(t, err)
	require.NoError(t, h.Close())

	all, err := indexed.List(ctx, handle.Page(0, handle.Cursor{}))
	require.NoError(t, err)
	require.Len(t, all, len(ids)-1)
	queries := []struct {
		name string
		opts []handle.Option
	}{
		{"all", nil},
		{"label", []handle.Option{handle.WithLabels(map[string]string{"agent": "a"})}},
		{"labels", []handle.Option{handle.WithLabels(lab("b", 1))}},
		{"no match", []handle.Option{handle.WithLabels(map[string]string{"agent": "z"})}},
		{"prefix", []handle.Option{handle.WithID(ids[5][:9])}},
		{"prefix of one", []handle.Option{handle.WithID(ids[6])}},
		{"deleted", []handle.Option{handle.WithID(gone)}},
		{"parent", []handle.Option{handle.WithParent(eventlog.Parent{ID: old})}},
		{"by activity", []handle.Option{handle.Page(0, handle.Cursor{})}},
		{"first page", []handle.Option{handle.Page(4, handle.Cursor{})}},
		{"next page", []handle.Option{handle.Page(4, all[3].Cursor())}},
		{"last page", []handle.Option{handle.Page(4, all[len(all)-2].Cursor())}},
		{"labelled page", []handle.Option{handle.WithLabels(map[string]string{"agent": "b"}), handle.Page(2, all[1].Cursor())}},
	}
	for _, q := range queries {
		t.Run(q.name, func(t *testing.T) {
			want, err := indexed.List(ctx, q.opts...)
			require.NoError(t, err)
			got, err := scan.List(ctx, q.opts...)
			require.NoError(t, err)
			require.Equal(t, want, got)
		})
	}

	for _, id := range []string{old, oldFork, grand, keptParent} {
		want, err := indexed.Children(ctx, id)
		require.NoError(t, err)
		got, err := scan.Children(ctx, id)
		require.NoError(t, err)
		require.Equal(t, want, got, "children of %s", id)
		wantChain, wantGone, err := indexed.Ancestors(ctx, id)
		require.NoError(t, err)
		gotChain, gotGone, err := scan.Ancestors(ctx, id)
		require.NoError(t, err)
		require.Equal(t, wantChain, gotChain, "ancestors of %s", id)
		require.Equal(t, wantGone, gotGone)
	}
	_, _, err = scan.Ancestors(ctx, gone)
	require.ErrorIs(t, err, handle.ErrNotFound)

	cutoff := now.Add(-30 * day)
	want, err := indexed.GC(ctx, cutoff, true)
	require.NoError(t, err)
	got, err := scan.GC(ctx, cutoff, true)
	require.NoError(t, err)
	require.ElementsMatch(t, want.Deleted, got.Deleted)
	require.ElementsMatch(t, want.Kept, got.Kept)
	require.Equal(t, []string{lone}, got.Deleted, "an old session a fork of a fork needs stays, with the fork between")
	require.Subset(t, got.Kept, []string{old, oldFork})

	rep, err := scan.GC(ctx, cutoff, false)
	require.NoError(t, err)
	require.Equal(t, []string{lone}, rep.Deleted)
	after, err := New(fsys, "/s", at).List(ctx)
	require.NoError(t, err)
	left, err := scan.List(ctx)
	require.NoError(t, err)
	require.Equal(t, after, left, "a new indexed view of the folder agrees with the scan after it collected")
	require.Len(t, left, len(ids)-2)
}
