package core_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/core"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/internal/testkit/countfs"
)

func TestTreeQueries(t *testing.T) {
	ctx := context.Background()
	store := file.New(afero.NewMemMapFs(), "/s")
	mk := func(opts ...handle.Option) string {
		h, err := store.Create(ctx, opts...)
		require.NoError(t, err)
		_, err = h.Append(ctx, eventlog.Event{Type: "x", Data: json.RawMessage(`{}`)}, eventlog.Event{Type: "x"})
		require.NoError(t, err)
		require.NoError(t, h.Close())
		return h.ID()
	}
	fork := func(id string) string {
		h, err := store.Fork(ctx, id, 1)
		require.NoError(t, err)
		require.NoError(t, h.Close())
		return h.ID()
	}
	root := mk()
	f1 := fork(root)
	f2 := fork(root)
	f11 := fork(f1)
	child := mk(handle.WithParent(eventlog.Parent{ID: f1, Seq: 0, Mode: eventlog.ModeChild, Call: "c9"}))
	other := mk()

	roots, err := store.Tree(ctx)
	require.NoError(t, err)
	require.Len(t, roots, 2)
	require.Equal(t, root, roots[0].Header.ID)
	require.Equal(t, other, roots[1].Header.ID)
	kids := func(n *handle.Node) []string {
		var out []string
		for _, c := range n.Children {
			out = append(out, c.Header.ID)
		}
		return out
	}
	require.Equal(t, []string{f1, f2}, kids(roots[0]))
	require.Equal(t, []string{f11, child}, kids(roots[0].Children[0]))

	children, err := store.Children(ctx, f1)
	require.NoError(t, err)
	require.Len(t, children, 2)
	chain, gone, err := store.Ancestors(ctx, f11)
	require.NoError(t, err)
	require.Empty(t, gone)
	require.Equal(t, []string{f1, root}, []string{chain[0].ID, chain[1].ID})

	// A child outlives its parent: the link reports the parent as gone.
	require.NoError(t, store.Delete(ctx, f1, handle.Detach()))
	chain, gone, err = store.Ancestors(ctx, child)
	require.NoError(t, err)
	require.Empty(t, chain)
	require.Equal(t, f1, gone)
	roots, err = store.Tree(ctx)
	require.NoError(t, err)
	var goneNode *handle.Node
	for _, r := range roots {
		if r.Header.ID == child {
			goneNode = r
		}
	}
	require.NotNil(t, goneNode)
	require.True(t, goneNode.ParentGone)
}

// Tree queries read headers through a derived index: on a store of many
// sessions, a second query reads only the index, not every header.
func TestTreeUsesHeaderIndex(t *testing.T) {
	ctx := context.Background()
	base := afero.NewMemMapFs()
	counted := countfs.New(base)
	store := file.New(counted, "/s")
	const sessions = 300
	for range sessions {
		h, err := store.Create(ctx)
		require.NoError(t, err)
		require.NoError(t, h.Close())
	}
	roots, err := store.Tree(ctx)
	require.NoError(t, err)
	require.Len(t, roots, sessions)
	before := counted.BytesRead()
	_, err = store.Tree(ctx)
	require.NoError(t, err)
	indexed := counted.BytesRead() - before
	fi, err := base.Stat("/s/.cache/headers.json")
	require.NoError(t, err)
	require.LessOrEqual(t, indexed, fi.Size(), "the second query read the index alone")
}

// TreeOf arranges any store's sessions by their headers' parents: roots
// and children oldest first (then by ID), a missing parent marked gone, a
// session naming itself a root with its parent gone, and a loop under no
// root.
func TestTreeOf(t *testing.T) {
	const a, b, c, d, e, f, g = "01JDX3N0Q3Z8Y6W2D1V5K7M9PA", "01JDX3N0Q3Z8Y6W2D1V5K7M9PB", "01JDX3N0Q3Z8Y6W2D1V5K7M9PC",
		"01JDX3N0Q3Z8Y6W2D1V5K7M9PD", "01JDX3N0Q3Z8Y6W2D1V5K7M9PE", "01JDX3N0Q3Z8Y6W2D1V5K7M9PF", "01JDX3N0Q3Z8Y6W2D1V5K7M9PG"
	info := func(id string, created int64, parent string) handle.Info {
		h := eventlog.Header{ID: id, CreatedAt: created}
		if parent != "" {
			h.Parent = &eventlog.Parent{ID: parent, Seq: 0, Mode: eventlog.ModeFork}
		}
		return handle.Info{ID: id, Path: "p/" + id, Header: h}
	}
	// shape renders a forest as "ID(children)" with "!" for a gone parent.
	var shape func(ns []*handle.Node) string
	shape = func(ns []*handle.Node) string {
		out := ""
		for _, n := range ns {
			out += n.Header.ID[len(n.Header.ID)-1:]
			if n.ParentGone {
				out += "!"
			}
			if len(n.Children) > 0 {
				out += "(" + shape(n.Children) + ")"
			}
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		infos []handle.Info
		want  string
	}{
		{"empty", nil, ""},
		{"roots oldest first, then by ID", []handle.Info{info(c, 2, ""), info(b, 1, ""), info(a, 2, "")}, "BAC"},
		{"children under their parent, oldest first", []handle.Info{info(d, 5, a), info(a, 1, ""), info(c, 3, a), info(b, 4, c)}, "A(C(B)D)"},
		{"a parent not listed is gone", []handle.Info{info(b, 1, g)}, "B!"},
		{"a session that is its own parent", []handle.Info{info(e, 1, e)}, "E!"},
		{"a loop hangs under no root", []handle.Info{info(e, 1, f), info(f, 2, e), info(a, 3, "")}, "A"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			roots := core.TreeOf(tc.infos)
			require.Equal(t, tc.want, shape(roots))
			for _, r := range roots {
				require.Equal(t, "p/"+r.Header.ID, r.Path)
			}
		})
	}
}
