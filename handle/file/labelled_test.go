package file_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"sync"
	"testing"
	"time"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/internal/testkit/faultfs"
)

// A program finds its session again by the labels it starts with: the
// first run creates it, every later one (after a crash too) opens it.
// Nothing records the ID: the labels name it.
func ExampleStore_OpenOrCreate() {
	ctx := context.Background()
	store := file.New(afero.NewMemMapFs(), "sessions")
	labels := map[string]string{"agent": "coder", "task": "issue-25"}

	h, created, err := store.OpenOrCreate(ctx, labels)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("first run, created:", created)
	if _, err := h.Append(ctx, eventlog.Event{Type: "user/message", Time: time.Now().UnixMilli(), Data: json.RawMessage(`{"text":"hi"}`)}); err != nil {
		log.Fatal(err)
	}
	if err := h.Close(); err != nil {
		log.Fatal(err)
	}
	first := h.ID()

	// The next run: the same labels, the same session, for writing.
	h, created, err = store.OpenOrCreate(ctx, labels)
	if err != nil {
		log.Fatal(err)
	}
	defer h.Close()
	fmt.Println("next run, created:", created, "· the same session:", h.ID() == first, "· events:", h.Seq()+1)
	// Output:
	// first run, created: true
	// next run, created: false · the same session: true · events: 1
}

func TestLabelID(t *testing.T) {
	a, err := handle.LabelID(map[string]string{"agent": "coder", "task": "7"})
	require.NoError(t, err)
	require.True(t, eventlog.ValidID(a), a)
	// Fixed across versions: sessions found by their labels depend on it.
	require.Equal(t, "76WMD4RD1DKCAMJ1PEP277NC5M", a)
	b, err := handle.LabelID(map[string]string{"task": "7", "agent": "coder"})
	require.NoError(t, err)
	require.Equal(t, a, b, "the order labels come in is not part of the name")
	for _, other := range []map[string]string{{"agent": "coder", "task": "8"}, {"agent": "coder"}, {"agent": "coder", "task": "7", "x": ""}} {
		c, err := handle.LabelID(other)
		require.NoError(t, err)
		require.NotEqual(t, a, c, "%v", other)
	}
	_, err = handle.LabelID(nil)
	require.Error(t, err)
}

func TestOpenOrCreate(t *testing.T) {
	ctx := t.Context()
	store := file.New(afero.NewMemMapFs(), "/s")
	labels := map[string]string{"agent": "coder", "task": "7"}
	h, created, err := store.OpenOrCreate(ctx, labels, handle.WithEncoding(handle.EncodingZstd))
	require.NoError(t, err)
	require.True(t, created)
	require.Equal(t, labels, h.Header().Labels)
	id := h.ID()

	// Its writer holds it: a second process gets the lock error.
	_, _, err = store.OpenOrCreate(ctx, labels)
	require.ErrorIs(t, err, handle.ErrLocked)
	require.NoError(t, h.Close())

	h, created, err = store.OpenOrCreate(ctx, map[string]string{"task": "7", "agent": "coder"})
	require.NoError(t, err)
	require.False(t, created)
	require.Equal(t, id, h.ID())
	require.True(t, h.Writable())
	require.NoError(t, h.Close())
	info, err := store.Stat(ctx, id)
	require.NoError(t, err)
	require.Equal(t, handle.EncodingZstd, info.Encoding, "the create options were used")

	// Other labels, another session.
	h, created, err = store.OpenOrCreate(ctx, map[string]string{"agent": "coder", "task": "8"})
	require.NoError(t, err)
	require.True(t, created)
	require.NotEqual(t, id, h.ID())
	require.NoError(t, h.Close())

	// A session made by hand under the ID with other labels is not taken
	// for the labelled one.
	taken := map[string]string{"agent": "reviewer"}
	tid, err := handle.LabelID(taken)
	require.NoError(t, err)
	h, err = store.Create(ctx, handle.WithID(tid), handle.WithLabels(map[string]string{"agent": "someone else"}))
	require.NoError(t, err)
	require.NoError(t, h.Close())
	_, _, err = store.OpenOrCreate(ctx, taken)
	require.ErrorIs(t, err, handle.ErrExists)

	_, _, err = store.OpenOrCreate(ctx, nil)
	require.Error(t, err)
}

// Processes that start at once end up on one session: one creates it and
// writes, the others are told another writer holds it.
func TestOpenOrCreateRace(t *testing.T) {
	fsys := afero.NewMemMapFs()
	labels := map[string]string{"agent": "coder"}
	var wg sync.WaitGroup
	results := make([]error, 8)
	handles := make([]handle.Handle, 8)
	for i := range results {
		wg.Go(func() {
			handles[i], _, results[i] = file.New(fsys, "/s").OpenOrCreate(t.Context(), labels)
		})
	}
	wg.Wait()
	writers := 0
	for i, err := range results {
		if err == nil {
			writers++
			require.NoError(t, handles[i].Close())
			continue
		}
		require.ErrorIs(t, err, handle.ErrLocked)
	}
	require.Equal(t, 1, writers)
	infos, err := file.New(fsys, "/s").List(t.Context())
	require.NoError(t, err)
	require.Len(t, infos, 1)
}

// A kill at any moment of OpenOrCreate leaves no session, or the session:
// never a second one, never one the next run cannot open. The process
// dies at its nth file operation (that one and every later one have no
// effect), then the power goes; the next run must find or create the one
// session.
func TestOpenOrCreateKilled(t *testing.T) {
	labels := map[string]string{"agent": "coder", "task": "crash"}
	died := errors.New("the process died here")
	for n := 1; ; n++ {
		ffs := faultfs.New(afero.NewMemMapFs())
		ops := 0
		ffs.SetHook(func(faultfs.Op, string) error {
			if ops++; ops >= n {
				return died
			}
			return nil
		})
		h, _, err := file.New(ffs, "/s").OpenOrCreate(t.Context(), labels)
		ffs.SetHook(nil)
		if err == nil {
			require.NoError(t, h.Close())
			t.Logf("%d points of death", n-1)
			require.Greater(t, n, 3)
			return
		}
		require.ErrorIs(t, err, died, "at op %d", n)
		for _, mode := range []faultfs.CrashMode{faultfs.KeepSynced, faultfs.KeepAll} {
			st := file.New(ffs.Crash(mode), "/s")
			h, _, err := st.OpenOrCreate(t.Context(), labels)
			require.NoError(t, err, "dead at op %d", n)
			require.Equal(t, labels, h.Header().Labels)
			require.NoError(t, h.Close())
			infos, err := st.List(t.Context())
			require.NoError(t, err)
			require.Len(t, infos, 1, "dead at op %d: one session", n)
		}
	}
}
