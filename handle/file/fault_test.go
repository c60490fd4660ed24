package file_test

// Fault tests (docs/format.md §9): a failed write or fsync poisons the handle, a
// reopen recovers from what is on disk; a failed step of Create fails it;
// concurrent flushers share fsyncs (group commit).

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/internal/testkit/faultfs"
)

// failNth returns a hook that fails the nth (from 1) operation op on path
// with err.
func failNth(op faultfs.Op, path string, n int, err error) faultfs.Hook {
	var mu sync.Mutex
	seen := 0
	return func(o faultfs.Op, name string) error {
		if o != op || name != path {
			return nil
		}
		mu.Lock()
		defer mu.Unlock()
		if seen++; seen == n {
			return err
		}
		return nil
	}
}

// requirePoisoned checks that every call on h fails with a *PoisonedError
// wrapping cause.
func requirePoisoned(t *testing.T, h handle.Handle, cause error) {
	t.Helper()
	ctx := t.Context()
	check := func(what string, err error) {
		t.Helper()
		var pe *handle.PoisonedError
		require.ErrorAs(t, err, &pe, what)
		require.ErrorIs(t, err, cause, what)
		require.Equal(t, h.Path(), pe.Path, what)
	}
	_, err := h.Append(ctx, crashEvent(h.Seq()+1))
	check("Append", err)
	_, err = h.AppendAt(ctx, h.Seq()+1, crashEvent(h.Seq()+1))
	check("AppendAt", err)
	check("Flush", h.Flush(ctx))
	n := 0
	for _, err := range h.Read(ctx, 0, handle.End) {
		n++
		check("Read", err)
	}
	require.Equal(t, 1, n, "Read yields the error alone")
}

// TestFaultPoisonsAndReopenRecovers fails each step of a flush (the write,
// short, with ENOSPC; its fsync; and, when the log had a torn tail, the
// cut and its fsync) and checks that the handle is poisoned, keeps its
// lock until Close, and that a reopen, through the same store or a new
// one, finds every acknowledged event and appends after it.
func TestFaultPoisonsAndReopenRecovers(t *testing.T) {
	t.Parallel()
	acked := crashEvents(0, 7)                                       // flushed in two batches
	batch := crashEvents(7, 4)                                       // raw rows: [7] [8 9] [10]
	garbage := []byte(`{"seq":7,"type":"user/message","time":17644`) // a torn tail left by an earlier crash

	// inject arms the fault; write is what the flush writes and row1 the
	// length of its first row (zstd: its frame).
	type injector func(fsys *faultfs.FS, path string, write []byte, row1 int)
	shortWrite := func(k func(write []byte, row1 int) int) injector {
		return func(fsys *faultfs.FS, _ string, write []byte, row1 int) {
			fsys.FailNextWrite(syscall.ENOSPC, k(write, row1))
		}
	}
	failSync := func(fsys *faultfs.FS, _ string, _ []byte, _ int) { fsys.FailNextSync(syscall.EIO) }
	tests := []struct {
		name   string
		torn   bool // the log is opened with a torn tail, so the flush cuts it first
		inject injector
		cause  error
	}{
		{name: "ShortWriteNothing", inject: shortWrite(func([]byte, int) int { return 0 }), cause: syscall.ENOSPC},
		{name: "ShortWriteOneByte", inject: shortWrite(func([]byte, int) int { return 1 }), cause: syscall.ENOSPC},
		{name: "ShortWriteHalfRow", inject: shortWrite(func(_ []byte, row1 int) int { return row1 / 2 }), cause: syscall.ENOSPC},
		{name: "ShortWriteAllButNewline", inject: shortWrite(func(_ []byte, row1 int) int { return row1 - 1 }), cause: syscall.ENOSPC},
		{name: "ShortWriteOneWholeRow", inject: shortWrite(func(_ []byte, row1 int) int { return row1 }), cause: syscall.ENOSPC},
		{name: "ShortWriteAllButLastByte", inject: shortWrite(func(w []byte, _ int) int { return len(w) - 1 }), cause: syscall.ENOSPC},
		{name: "FsyncEIO", inject: failSync, cause: syscall.EIO},
		{name: "TornCutTruncateEIO", torn: true, inject: func(fsys *faultfs.FS, path string, _ []byte, _ int) {
			fsys.SetHook(failNth(faultfs.OpTruncate, path, 1, syscall.EIO))
		}, cause: syscall.EIO},
		{name: "TornCutFsyncEIO", torn: true, inject: failSync, cause: syscall.EIO},
		{name: "TornShortWriteHalfRow", torn: true, inject: shortWrite(func(_ []byte, row1 int) int { return row1 / 2 }), cause: syscall.ENOSPC},
		{name: "TornWriteFsyncEIO", torn: true, inject: func(fsys *faultfs.FS, path string, _ []byte, _ int) {
			fsys.SetHook(failNth(faultfs.OpSync, path, 2, syscall.EIO)) // the cut's fsync passes
		}, cause: syscall.EIO},
	}
	for _, enc := range crashEncodings {
		write := encodeWrite(t, enc, batch) // sealed: of the same length
		row1 := len(write)
		if encodingOf(enc) == handle.EncodingRaw {
			row1 = bytes.IndexByte(write, '\n') + 1
		}
		for _, tc := range tests {
			for _, reopen := range []string{"SameStore", "NewStore"} {
				t.Run(enc+"/"+tc.name+"/"+reopen, func(t *testing.T) {
					ctx := t.Context()
					fsys := faultfs.New(afero.NewMemMapFs())
					st := crashStore(fsys)
					h, err := st.Create(ctx, inLayout(enc)...)
					require.NoError(t, err)
					appendAndFlush(t, h, acked[:3]...)
					appendAndFlush(t, h, acked[3:]...)
					ackedBytes, err := afero.ReadFile(fsys, h.Path())
					require.NoError(t, err)
					if tc.torn {
						require.NoError(t, h.Close())
						ackedBytes, err = afero.ReadFile(fsys, h.Path()) // zstd: Close added a tail frame
						require.NoError(t, err)
						f, err := fsys.OpenFile(h.Path(), os.O_WRONLY|os.O_APPEND, 0)
						require.NoError(t, err)
						_, err = f.Write(garbage)
						require.NoError(t, err)
						require.NoError(t, f.Sync())
						require.NoError(t, f.Close())
						h, err = st.Open(ctx, h.ID(), handle.ReadWrite)
						require.NoError(t, err)
						require.Equal(t, &eventlog.TornTail{Offset: int64(len(ackedBytes)), Bytes: int64(len(garbage))}, h.Torn())
					}

					_, err = h.Append(ctx, batch...)
					require.NoError(t, err)
					tc.inject(fsys, h.Path(), write, row1)
					err = h.Flush(ctx)
					fsys.SetHook(nil)
					var pe *handle.PoisonedError
					require.ErrorAs(t, err, &pe)
					require.ErrorIs(t, err, tc.cause)
					require.Equal(t, int64(len(acked))-1, h.DurableSeq())
					requirePoisoned(t, h, tc.cause)

					// Until Close the poisoned handle is still the writer;
					// readers go on reading what is on disk.
					_, err = st.Open(ctx, h.ID(), handle.ReadWrite)
					require.ErrorIs(t, err, handle.ErrLocked)
					r, err := st.Open(ctx, h.ID(), handle.ReadOnly)
					require.NoError(t, err)
					got := readWholeLog(t, r)
					require.GreaterOrEqual(t, len(got), len(acked))
					require.Equal(t, canonLines(acked), canonLines(got[:len(acked)]))
					require.NoError(t, r.Close())

					err = h.Close()
					require.ErrorAs(t, err, &pe, "Close reports the poison")
					require.ErrorIs(t, h.Close(), handle.ErrClosed)

					live, err := afero.ReadFile(fsys, h.Path())
					require.NoError(t, err)
					require.Equal(t, ackedBytes, live[:len(ackedBytes)], "acknowledged bytes are never touched")
					tail := live[len(ackedBytes):]
					switch tc.name {
					case "TornCutTruncateEIO":
						require.Equal(t, garbage, tail)
					case "TornCutFsyncEIO":
						require.Empty(t, tail)
					default:
						if isSealed(enc) {
							// A sealed write's bytes are random, its length is not.
							require.LessOrEqual(t, len(tail), len(write), "the file ends in a prefix of the write")
						} else {
							require.True(t, bytes.HasPrefix(write, tail), "the file ends in a prefix of the write")
						}
					}
					written := write
					if isSealed(enc) && len(tail) == len(write) {
						written = tail // the whole write, as it is
					}
					want, torn := survivorsOf(t, enc, acked, batch, int64(len(ackedBytes)), tail, written)
					if len(tail) > 0 && len(tail) < row1 {
						require.NotNil(t, torn, "partial bytes are a torn tail")
					}
					if reopen == "NewStore" {
						st = crashStore(fsys)
					}
					requireRecovers(t, st, h.ID(), want, torn)
				})
			}
		}
	}
}

// TestFaultCreate fails each file operation of Create: Create returns the
// error, holds no lock afterwards and leaves no session and no temp file,
// so the ID can be created again, durably. (Regression: a failed folder
// fsync used to leave the header at its name, not durable: opening it,
// flushing and cutting the power lost the session with acknowledged
// events.)
func TestFaultCreate(t *testing.T) {
	t.Parallel()
	const id = "01JDX3N0Q3Z8Y6W2D1V5K7M9PA"
	exts := map[string]string{handle.EncodingRaw: ".jsonl", handle.EncodingZstd: ".jsonl.zst"}
	tests := []struct {
		name string
		op   faultfs.Op
		file func(path string) string // the file the operation is on
	}{
		{name: "Mkdir", op: faultfs.OpMkdir, file: func(string) string { return crashDir }},
		{name: "CreateTemp", op: faultfs.OpCreate, file: func(p string) string { return p + ".tmp" }},
		{name: "WriteTemp", op: faultfs.OpWrite, file: func(p string) string { return p + ".tmp" }},
		{name: "FsyncTemp", op: faultfs.OpSync, file: func(p string) string { return p + ".tmp" }},
		{name: "Rename", op: faultfs.OpRename, file: func(p string) string { return p }},
		{name: "OpenFolder", op: faultfs.OpOpen, file: func(string) string { return crashDir }},
		{name: "FsyncFolder", op: faultfs.OpDirSync, file: func(string) string { return crashDir }},
	}
	for _, enc := range crashEncodings {
		path := filepath.Join(crashDir, id+exts[encodingOf(enc)])
		for _, tc := range tests {
			t.Run(enc+"/"+tc.name, func(t *testing.T) {
				ctx := t.Context()
				fsys := faultfs.New(afero.NewMemMapFs())
				st := crashStore(fsys)
				fsys.SetHook(failNth(tc.op, tc.file(path), 1, syscall.EIO))
				h, err := st.Create(ctx, append(inLayout(enc), handle.WithID(id))...)
				fsys.SetHook(nil)
				require.ErrorIs(t, err, syscall.EIO)
				require.Nil(t, h)

				_, err = crashStore(fsys.Crash(faultfs.KeepAll)).Open(ctx, id, handle.ReadOnly)
				require.ErrorIs(t, err, handle.ErrNotFound, "a failed Create leaves no durable session")
				_, err = fsys.Stat(path + ".tmp")
				require.ErrorIs(t, err, fs.ErrNotExist, "no temp file is left behind")
				_, err = st.Stat(ctx, id)
				require.ErrorIs(t, err, handle.ErrNotFound, "a failed Create leaves no session, durable or not")

				h, err = st.Create(ctx, append(inLayout(enc), handle.WithID(id))...)
				require.NoError(t, err)
				require.Equal(t, path, h.Path())
				requireCanonLog(t, h, nil)
				require.NoError(t, h.Close())
				requireRecovers(t, st, id, nil, nil)
			})
		}
	}
}

// TestFaultGroupCommit runs 64 goroutines that each append one event and
// flush, 50 times, and asserts that they share fsyncs. To make that an
// assertion rather than a matter of timing, the goroutines go in rounds
// (all Flushes of a round return before the next round's Appends), and an
// fsync of the log waits until every goroutine has appended its event of
// the round: events appended while an fsync is under way must all go into
// the next write, with one fsync. So a round takes one fsync or two, never
// more, where a log without group commit would take 64.
func TestFaultGroupCommit(t *testing.T) {
	t.Parallel()
	for _, enc := range crashEncodings {
		t.Run(enc, func(t *testing.T) { testGroupCommit(t, enc) })
	}
}

func testGroupCommit(t *testing.T, enc string) {
	const goroutines, rounds = 64, 50
	const events = goroutines * rounds
	ctx := t.Context()
	fsys := faultfs.New(afero.NewMemMapFs())
	h, err := crashStore(fsys).Create(ctx, inLayout(enc)...)
	require.NoError(t, err)

	var mu sync.Mutex
	cond := sync.NewCond(&mu)
	appended := 0              // Appends tried so far
	atBarrier, roundNo := 0, 0 // goroutines done with round roundNo
	fsys.SetHook(func(op faultfs.Op, name string) error {
		if op != faultfs.OpSync || name != h.Path() {
			return nil
		}
		// Rounds before this fsync's are durable, so durable+1 tells
		// which round it belongs to.
		round := int(h.DurableSeq()+1) / goroutines
		mu.Lock()
		defer mu.Unlock()
		for appended < goroutines*(round+1) {
			cond.Wait()
		}
		return nil
	})
	endRound := func() {
		mu.Lock()
		defer mu.Unlock()
		r := roundNo
		if atBarrier++; atBarrier == goroutines {
			atBarrier, roundNo = 0, roundNo+1
			cond.Broadcast()
		}
		for r == roundNo {
			cond.Wait()
		}
	}
	syncsBefore := fsys.SyncCount()

	errs := make(chan error, events)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range rounds {
				e := eventlog.Event{Type: "test/group", Time: 1, Data: fmt.Appendf(nil, `{"g":%d,"i":%d}`, g, i)}
				_, err := h.Append(ctx, e)
				mu.Lock()
				appended++
				cond.Broadcast()
				mu.Unlock()
				if err == nil {
					err = h.Flush(ctx)
				}
				if err != nil {
					errs <- err // keep going, or the others wait forever
				}
				endRound()
			}
		})
	}
	wg.Wait()
	fsys.SetHook(nil)
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	syncs := fsys.SyncCount() - syncsBefore
	t.Logf("%d events, %d fsyncs", events, syncs)
	require.GreaterOrEqual(t, syncs, rounds)
	require.LessOrEqual(t, syncs, 2*rounds)
	require.Less(t, syncs, events/2)
	require.Equal(t, int64(events-1), h.DurableSeq())

	// All of them durable, contiguous, each goroutine's in its order.
	r, err := crashStore(fsys.Crash(faultfs.KeepSynced)).Open(ctx, h.ID(), handle.ReadOnly)
	require.NoError(t, err)
	next := make([]int, goroutines)
	got := readWholeLog(t, r)
	require.Len(t, got, events)
	for seq, e := range got {
		require.EqualValues(t, seq, e.Seq)
		var g, i int
		_, err := fmt.Sscanf(string(e.Data), `{"g":%d,"i":%d}`, &g, &i)
		require.NoError(t, err)
		require.Equal(t, next[g], i, "events of goroutine %d out of order", g)
		next[g]++
	}
	require.NoError(t, r.Close())
	require.NoError(t, h.Close())
}
