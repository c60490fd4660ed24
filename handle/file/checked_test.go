package file_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/checkpoint"
	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/handle/storetest"
	"github.com/sessionlog/sessionlog/internal/testkit/countfs"
	"github.com/sessionlog/sessionlog/internal/testkit/sweep"
)

// bigEvent is event i of the logs these tests grow: about 2 KB of data
// that compresses to about half, every fifth one a streamed chunk
// (packed with its neighbours).
func bigEvent(i int) eventlog.Event {
	typ := "tool/result"
	if i%5 == 0 {
		typ = "assistant/chunk"
	}
	rng := rand.New(rand.NewPCG(uint64(i), 1))
	raw := make([]byte, 1000)
	for j := 0; j < len(raw); j += 8 {
		binary.LittleEndian.PutUint64(raw[j:], rng.Uint64())
	}
	return eventlog.Event{Type: typ, Time: int64(1764450000000 + i),
		Data: fmt.Appendf(nil, `{"i":%d,"text":"%x"}`, i, raw)}
}

// writeBig creates a session of n bigEvents in st, flushed every flushEvery
// events, closes it and returns its ID, its file's path and its events.
func writeBig(t *testing.T, st *file.Store, enc string, n, flushEvery int) (string, string, []eventlog.Event) {
	t.Helper()
	ctx := t.Context()
	h, err := st.Create(ctx)
	require.NoError(t, err)
	var evs []eventlog.Event
	for i := range n {
		e := bigEvent(i)
		seq, err := h.Append(ctx, e)
		require.NoError(t, err)
		e.Seq = seq
		evs = append(evs, e)
		if (i+1)%flushEvery == 0 {
			require.NoError(t, h.Flush(ctx))
		}
	}
	require.NoError(t, h.Close())
	p, err := st.Path(h.ID())
	require.NoError(t, err)
	return h.ID(), p, evs
}

// osStore is a store in a new temporary folder of the OS file system
// (the checked record needs real file identities), with fsyncs that do
// nothing and no redaction at write (these tests are about reads: their
// events hold no secret, and scanning megabytes of them for one cost a
// quarter of their CPU under the race detector), counting the bytes read;
// its sessions are created in layout (raw, zstd, or either sealed).
func osStore(t *testing.T, layout string) (*file.Store, *countfs.FS, string) {
	t.Helper()
	dir := t.TempDir()
	counted := countfs.New(noSyncFs{afero.NewOsFs()})
	return file.New(counted, dir, append(inStore(layout), handle.Unredacted())...), counted, dir
}

// Reopening a log this store closed reads a bounded amount, not the log:
// the checked record says what the full check found. The handle it gives
// holds the same log, appends after it, and the next close leaves a record
// that again says what a full check finds. Without the record the same
// open reads the whole log.
func TestOpenTrustsUnchangedLog(t *testing.T) {
	for _, enc := range sweepLayouts() {
		t.Run(enc, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			st, counted, dir := osStore(t, enc)
			id, path, evs := writeBig(t, st, enc, 3000, 50)
			fi, err := os.Stat(path)
			require.NoError(t, err)
			require.Greater(t, fi.Size(), int64(3<<20), "the log spans several index strides")
			ok, err := file.CheckedRecord(ctx, st, id)
			require.NoError(t, err)
			require.True(t, ok, "Close left a record of the file as it is")
			// A sealed log's head (its clear header, key records and sealed
			// header row) and its last record are read in 64 KiB chunks:
			// a few more than a clear log's, still a fixed amount.
			bound := int64(160 << 10)
			if isSealed(enc) {
				bound = 320 << 10
			}

			for _, mode := range []handle.Mode{handle.ReadOnly, handle.ReadWrite} {
				before := counted.BytesRead()
				h, err := st.Open(ctx, id, mode)
				require.NoError(t, err)
				require.Less(t, counted.BytesRead()-before, bound, "open read a bounded amount (the header, the log's last bytes, the record)")
				require.Equal(t, int64(len(evs)-1), h.Seq())
				require.Nil(t, h.Torn())
				require.Equal(t, canonLines(evs), canonLines(readWholeLog(t, h)))
				if mode == handle.ReadWrite {
					e := bigEvent(len(evs))
					e.Seq, err = h.Append(ctx, e)
					require.NoError(t, err)
					require.Equal(t, int64(len(evs)), e.Seq)
					evs = append(evs, e)
				}
				require.NoError(t, h.Close())
			}
			ok, err = file.CheckedRecord(ctx, st, id)
			require.NoError(t, err)
			require.True(t, ok)

			require.NoError(t, os.Remove(filepath.Join(dir, ".cache", id+".checked")))
			before := counted.BytesRead()
			h, err := st.Open(ctx, id, handle.ReadOnly)
			require.NoError(t, err)
			fi, err = os.Stat(path)
			require.NoError(t, err)
			require.GreaterOrEqual(t, counted.BytesRead()-before, fi.Size(), "without a record, open reads the whole log")
			require.NoError(t, h.Close())
			ok, err = file.CheckedRecord(ctx, st, id)
			require.NoError(t, err)
			require.False(t, ok, "a reader writes nothing into the store")

			h, err = st.Open(ctx, id, handle.ReadWrite)
			require.NoError(t, err)
			ok, err = file.CheckedRecord(ctx, st, id)
			require.NoError(t, err)
			require.True(t, ok, "a writer's full check saved a record")
			require.NoError(t, h.Close())
		})
	}
}

// A log that changed after its record was taken is checked in full at
// open: damage in the middle is found even when the file keeps its size
// and its modification time; a copy, a torn tail, a damaged record or
// another session's record each cost a full read and give the right log.
func TestOpenChecksChangedLog(t *testing.T) {
	type change struct {
		name    string
		apply   func(t *testing.T, path, cache, other string)
		corrupt bool // open must fail with a *CorruptError
	}
	damage := func(t *testing.T, path string) {
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		mid := len(b) / 2
		if !strings.HasSuffix(path, ".zst") {
			mid += bytes.Index(b[mid:], []byte("\n{")) + 1 // a row's opening brace
		}
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		require.NoError(t, err)
		_, err = f.WriteAt([]byte{b[mid] ^ 0x5a}, int64(mid))
		require.NoError(t, err)
		require.NoError(t, f.Close())
	}
	changes := []change{
		{name: "damage in the middle", corrupt: true, apply: func(t *testing.T, path, _, _ string) { damage(t, path) }},
		{name: "copied: same bytes, another file", apply: func(t *testing.T, path, _, _ string) {
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			require.NoError(t, os.Remove(path))
			require.NoError(t, os.WriteFile(path, b, 0o600))
		}},
		{name: "torn tail", apply: func(t *testing.T, path, _, _ string) {
			fi, err := os.Stat(path)
			require.NoError(t, err)
			require.NoError(t, os.Truncate(path, fi.Size()-7))
		}},
		{name: "damaged record", apply: func(t *testing.T, _, cache, _ string) {
			require.NoError(t, os.WriteFile(cache, []byte("sha256:00\n{}"), 0o600))
		}},
		{name: "another session's record", apply: func(t *testing.T, _, cache, other string) {
			b, err := os.ReadFile(other)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(cache, b, 0o600))
		}},
	}
	if runtime.GOOS == "linux" { // elsewhere a file is known by its size and modification time only
		changes = append(changes, change{name: "damage in the middle, modification time set back", corrupt: true,
			apply: func(t *testing.T, path, _, _ string) {
				fi, err := os.Stat(path)
				require.NoError(t, err)
				damage(t, path)
				require.NoError(t, os.Chtimes(path, time.Time{}, fi.ModTime()))
				after, err := os.Stat(path)
				require.NoError(t, err)
				require.Equal(t, fi.ModTime(), after.ModTime())
				require.Equal(t, fi.Size(), after.Size())
			}})
	}
	for _, enc := range []string{handle.EncodingRaw, handle.EncodingZstd} {
		for k, c := range changes {
			// By default each change in one encoding, in turn; in both
			// under SESSIONLOG_SWEEPS=full.
			if !sweep.Full() && (k%2 == 0) != (enc == handle.EncodingRaw) {
				continue
			}
			t.Run(enc+"/"+c.name, func(t *testing.T) {
				t.Parallel()
				ctx := t.Context()
				st, counted, dir := osStore(t, enc)
				id, path, evs := writeBig(t, st, enc, 1200, 40)
				other, _, _ := writeBig(t, st, enc, 40, 5) // above file.CheckedMin: it has a record
				file.ForgetAcknowledged(st, id)            // a torn tail must read as one
				c.apply(t, path, filepath.Join(dir, ".cache", id+".checked"), filepath.Join(dir, ".cache", other+".checked"))
				fi, err := os.Stat(path)
				require.NoError(t, err)

				before := counted.BytesRead()
				h, err := st.Open(ctx, id, handle.ReadWrite)
				if c.corrupt {
					var ce *eventlog.CorruptError
					require.ErrorAs(t, err, &ce)
					require.Equal(t, path, ce.Path)
					return
				}
				require.NoError(t, err)
				require.GreaterOrEqual(t, counted.BytesRead()-before, fi.Size()-8<<10, "the whole log was read")
				got := readWholeLog(t, h)
				require.Equal(t, canonLines(evs[:len(got)]), canonLines(got))
				if c.name == "torn tail" {
					require.NotNil(t, h.Torn()) // raw: the last row; zstd: the tail frame
				} else {
					require.Len(t, got, len(evs))
				}
				_, err = h.Append(ctx, bigEvent(len(got))) // and cuts a torn tail
				require.NoError(t, err)
				require.NoError(t, h.Close())
				ok, err := file.CheckedRecord(ctx, st, id)
				require.NoError(t, err)
				require.True(t, ok)
			})
		}
	}
}

// Stat of a zstd log whose writer is still open (no tail frame at the
// end) walks the frames written since the writer's last checked record,
// not every frame of the log, and says what a walk of every frame says.
func TestStatZstdWriterOpenBounded(t *testing.T) {
	ctx := t.Context()
	st, counted, dir := osStore(t, handle.EncodingZstd)
	h, err := st.Create(ctx)
	require.NoError(t, err)
	defer h.Close()
	for i := range 6000 { // a frame per event
		_, err := h.Append(ctx, eventlog.Event{Type: "tool/call", Time: int64(i), Data: fmt.Appendf(nil, `{"i":%d}`, i)})
		require.NoError(t, err)
		require.NoError(t, h.Flush(ctx))
	}
	before := counted.BytesRead()
	info, err := st.Stat(ctx, h.ID())
	require.NoError(t, err)
	bounded := counted.BytesRead() - before
	require.Equal(t, int64(5999), info.LastSeq)
	require.Equal(t, "tool/call", info.LastType)
	require.Equal(t, int64(5999), info.LastTime)

	require.NoError(t, os.Remove(filepath.Join(dir, ".cache", h.ID()+".checked")))
	before = counted.BytesRead()
	walked, err := st.Stat(ctx, h.ID())
	require.NoError(t, err)
	require.Equal(t, walked, info, "the same answer as a walk of every frame")
	require.Greater(t, counted.BytesRead()-before, 4*bounded, "a walk of every frame reads more")
	require.Less(t, bounded, int64(32<<10))
}

// Whatever a session went through (appends of every size, packed runs,
// flushes, checkpoints, closes and reopens for reading and for writing, a
// record deleted), a checked record that names the log file as it is says
// exactly what a full check of it finds.
func TestCheckedRecordProperty(t *testing.T) {
	t.Parallel()
	// 2 seeds by default, each in one encoding in turn; 8 in both under
	// SESSIONLOG_SWEEPS=full.
	for seed := range uint64(sweep.Size(2, 8, 8)) {
		for ei, enc := range []string{handle.EncodingRaw, handle.EncodingZstd} {
			if !sweep.Full() && uint64(ei) != seed%2 {
				continue
			}
			rng := rand.New(rand.NewPCG(seed, 7))
			ctx := t.Context()
			fsys := afero.NewMemMapFs()
			st := file.New(fsys, "/s", handle.WithEncoding(enc))
			h, err := st.Create(ctx)
			require.NoError(t, err)
			id := h.ID()
			n := 0
			for step := range 25 {
				where := fmt.Sprintf("seed %d %s step %d", seed, enc, step)
				switch op := rng.IntN(10); {
				case op < 5 && h.Writable():
					for range 1 + rng.IntN(40) {
						e := bigEvent(n)
						if rng.IntN(30) == 0 { // now and then a large row: the log spans index strides
							e.Data = []byte(`{"big":"` + strings.Repeat("x", rng.IntN(400<<10)) + `"}`)
						}
						_, err := h.Append(ctx, e)
						require.NoError(t, err, where)
						n++
						if rng.IntN(8) == 0 {
							require.NoError(t, h.Flush(ctx), where)
						}
					}
				case op == 5 && h.Writable():
					_, err := checkpoint.Create(ctx, h)
					require.NoError(t, err, where)
					n++
				case op == 6:
					_ = fsys.Remove(filepath.Join("/s", ".cache", id+".checked"))
				default:
					wrote := h.Writable()
					require.NoError(t, h.Close(), where)
					ok, err := file.CheckedRecord(ctx, st, id)
					require.NoError(t, err, where)
					path, err := st.Path(id)
					require.NoError(t, err, where)
					fi, err := fsys.Stat(path)
					require.NoError(t, err, where)
					small := fi.Size() < file.CheckedMin          // a small log keeps none
					require.True(t, ok || !wrote || small, where) // a writer leaves a record on Close
					mode := handle.ReadWrite
					if op == 7 {
						mode = handle.ReadOnly
					}
					h, err = st.Open(ctx, id, mode)
					require.NoError(t, err, where)
					require.Equal(t, int64(n-1), h.Seq(), where)
					require.Len(t, readWholeLog(t, h), n, where)
					ok, err = file.CheckedRecord(ctx, st, id)
					require.NoError(t, err, where)
					require.True(t, ok || mode == handle.ReadOnly || small, where) // a writer's open leaves one; a reader's writes nothing
				}
			}
			require.NoError(t, h.Close())
			r, err := st.Open(ctx, id, handle.ReadOnly)
			require.NoError(t, err)
			_, err = checkpoint.Verify(ctx, r)
			require.NoError(t, err)
			require.NoError(t, r.Close())
		}
	}
}

// A session written whole — by CreateFrom, grown by AppendAll, rewritten
// by Convert — gets the checked record a writer's Close leaves: the first
// open after it reads a bounded amount (the header, the last frame, the
// record), not the log, and the record says what a full check finds (its
// end, next seq, last frame and a seq index of the stride a full check
// builds). By default in sealed zstd alone (whose Convert writes sealed
// raw), 4,000 events and 500 more (two full zstd frames, a small one):
// megabytes of frames cost the race detector seconds a thousand events;
// every layout, 7,000 events and 3,000 more, under SESSIONLOG_SWEEPS=full.
func TestWholeWritesLeaveCheckedRecord(t *testing.T) {
	t.Parallel()
	layouts, created, appended := []string{sealedZstd}, 4000, 500
	if sweep.Full() {
		layouts, created, appended = crashEncodings, 7000, 3000
	}
	for _, enc := range layouts {
		t.Run(enc, func(t *testing.T) {
			ctx := t.Context()
			st, counted, _ := osStore(t, enc)
			var evs []eventlog.Event
			for i := range created + appended {
				e := bigEvent(i)
				e.Seq = int64(i)
				evs = append(evs, e)
			}
			info, err := st.CreateFrom(ctx, storetest.Events(evs[:created], nil), inLayout(enc)...)
			require.NoError(t, err)
			opened := func(what string, want []eventlog.Event) {
				t.Helper()
				ok, err := file.CheckedRecord(ctx, st, info.ID)
				require.NoError(t, err, what)
				require.True(t, ok, "%s left a record of the file as it is", what)
				now, err := st.Stat(ctx, info.ID)
				require.NoError(t, err)
				require.Greater(t, now.SizeBytes, int64(3<<20), "a log of several zstd frames and index strides")
				before := counted.BytesRead()
				h, err := st.Open(ctx, info.ID, handle.ReadOnly)
				require.NoError(t, err)
				require.Less(t, counted.BytesRead()-before, now.SizeBytes/3, "after %s, open read a bounded amount", what)
				require.Equal(t, want[len(want)-1].Seq, h.Seq())
				require.Equal(t, canonLines(want), canonLines(readWholeLog(t, h)))
				require.NoError(t, h.Close())
			}
			opened("CreateFrom", evs[:created])
			_, err = st.AppendAll(ctx, info.ID, int64(created), storetest.Events(evs[created:], nil))
			require.NoError(t, err)
			opened("AppendAll", evs)
			other := handle.EncodingZstd
			if encodingOf(enc) == other {
				other = handle.EncodingRaw
			}
			require.NoError(t, st.Convert(ctx, info.ID, other))
			opened("Convert", evs)
		})
	}
}
