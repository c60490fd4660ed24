package file_test

import (
	"context"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
)

// A Delete refused because a writer holds the session changes nothing:
// its forks are neither deleted nor detached first.
func TestRefusedDeleteTouchesNoFork(t *testing.T) {
	ctx := context.Background()
	store := file.New(afero.NewMemMapFs(), "/s")
	parent, err := store.Create(ctx)
	require.NoError(t, err)
	defer parent.Close()
	_, err = parent.Append(ctx, eventlog.Event{Type: "x"})
	require.NoError(t, err)
	require.NoError(t, parent.Flush(ctx))
	fork, err := store.Fork(ctx, parent.ID(), 0)
	require.NoError(t, err)
	require.NoError(t, fork.Close())
	for _, opt := range []handle.Option{handle.Cascade(), handle.Detach()} {
		require.ErrorIs(t, store.Delete(ctx, parent.ID(), opt), handle.ErrLocked)
		info, err := store.Stat(ctx, fork.ID())
		require.NoError(t, err, "the fork is still there")
		require.NotNil(t, info.Header.Parent, "and still a fork")
	}
}

// A closed fork handle yields nothing but ErrClosed, inherited events
// included, and opens no parent.
func TestClosedForkReadsNothing(t *testing.T) {
	ctx := context.Background()
	store := file.New(afero.NewMemMapFs(), "/s")
	parent, err := store.Create(ctx)
	require.NoError(t, err)
	_, err = parent.Append(ctx, eventlog.Event{Type: "x"}, eventlog.Event{Type: "y"})
	require.NoError(t, err)
	require.NoError(t, parent.Close())
	fork, err := store.Fork(ctx, parent.ID(), 1)
	require.NoError(t, err)
	require.NoError(t, fork.Close())
	n := 0
	var got error
	for _, err := range fork.Read(ctx, 0, handle.End) {
		if err != nil {
			got = err
			break
		}
		n++
	}
	require.Zero(t, n)
	require.ErrorIs(t, got, handle.ErrClosed)
	// An empty range is empty, not a lineage error.
	r, err := store.Open(ctx, fork.ID(), handle.ReadOnly)
	require.NoError(t, err)
	defer r.Close()
	for _, err := range r.Read(ctx, 5, 3) {
		require.NoError(t, err)
	}
}
