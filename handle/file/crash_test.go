package file_test

// Power-cut tests (docs/format.md §9) on faultfs over a MemMapFs: a flush is cut
// between its write and its fsync, the file system is crashed in every way
// faultfs models, and the survivors must hold every acknowledged event,
// byte for byte, report the torn tail exactly, and go on appending.
//
// Every test runs for both encodings (raw rows, zstd frames) except the
// NUL-hole one, which is about rows. The helpers here (crashEvent,
// requireCanonLog, requireRecovers, …) are shared with fault_test.go and
// kill_test.go.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"

	"filippo.io/age"
	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/internal/testkit/faultfs"
	"github.com/sessionlog/sessionlog/internal/testkit/sweep"
	"github.com/sessionlog/sessionlog/secrets/seal"
)

// crashDir is the store's folder on the memory file systems.
const crashDir = "/sessions"

// crashEncodings are the layouts the crash, fault and kill tests run
// for: the two encodings, clear and sealed (docs/format.md §11). A
// sealed layout's name is its encoding's after "sealed-".
var crashEncodings = []string{handle.EncodingRaw, handle.EncodingZstd, sealedRaw, sealedZstd}

// sweepLayouts are the layouts of the power-cut sweeps and the other
// matrices that cost minutes, the race detector's most: raw and sealed
// zstd (plain rows; compressed and sealed frames) by default, every one
// of crashEncodings under SESSIONLOG_SWEEPS=full (internal/testkit/sweep), as
// .ci/run runs them.
func sweepLayouts() []string {
	if sweep.Full() {
		return crashEncodings
	}
	return []string{handle.EncodingRaw, sealedZstd}
}

// inLayoutSample reports whether case i of a sweep over sweepLayouts runs
// in layout li of them: each case in one layout in turn by default (the
// layouts' sweeps cover different cases), every case in every layout
// under SESSIONLOG_SWEEPS=full.
func inLayoutSample(li, i int) bool {
	return sweep.Full() || i%len(sweepLayouts()) == li
}

const (
	sealedRaw  = "sealed-" + handle.EncodingRaw
	sealedZstd = "sealed-" + handle.EncodingZstd
)

// crashIdentity is the age identity the crash tests' sealed sessions are
// sealed for, and read with (a test key: every process of the kill
// harness must hold it).
var crashIdentity = func() *age.X25519Identity {
	id, err := age.ParseX25519Identity("AGE-SECRET-KEY-1GK4LXD068GEZPMZNZYJ2VKL3U3DQ8KCACN3U3ZNGRXEN6YW3C3NS6R8S8J")
	if err != nil {
		panic(err)
	}
	return id
}()

// encodingOf returns the encoding of a layout.
func encodingOf(layout string) string { return strings.TrimPrefix(layout, "sealed-") }

// isSealed reports whether a layout is sealed.
func isSealed(layout string) bool { return strings.HasPrefix(layout, "sealed-") }

// inLayout returns the create options of a session in layout.
func inLayout(layout string) []handle.Option {
	opts := []handle.Option{handle.WithEncoding(encodingOf(layout))}
	if isSealed(layout) {
		opts = append(opts, handle.WithRecipients(crashIdentity.Recipient()))
	}
	return opts
}

// inStore returns the options of a store whose sessions are created in
// layout (and which reads them).
func inStore(layout string) []handle.Option {
	opts := []handle.Option{handle.WithEncoding(encodingOf(layout)), handle.WithIdentities(crashIdentity)}
	if isSealed(layout) {
		opts = append(opts, handle.WithRecipients(crashIdentity.Recipient()))
	}
	return opts
}

// crashStore returns a store of the crash tests' folder on fsys, which
// reads their sealed sessions.
func crashStore(fsys afero.Fs) *file.Store {
	return file.New(fsys, crashDir, handle.WithIdentities(crashIdentity))
}

// encodeWrite returns the bytes a flush of batch writes in layout enc
// (the default pack types and zstd level). A sealed layout's bytes are
// random (a random nonce per record, and here a random key), their
// length is not: tests of sealed layouts compare lengths.
func encodeWrite(t *testing.T, enc string, batch []eventlog.Event) []byte {
	t.Helper()
	rows := eventlog.NewEncoder(nil).AppendRows(nil, batch)
	var frames []byte
	if encodingOf(enc) == handle.EncodingRaw {
		frames = rows
	} else {
		codec, err := eventlog.NewZstdCodec(0)
		require.NoError(t, err)
		frames, _ = codec.AppendFrames(nil, rows)
	}
	if !isSealed(enc) {
		return frames
	}
	key, err := seal.NewKey(0)
	require.NoError(t, err)
	if encodingOf(enc) == handle.EncodingRaw {
		out, err := seal.ResumeSealer("S", seal.Raw, key, 1).AppendRows(nil, rows)
		require.NoError(t, err)
		return out
	}
	out, err := seal.ResumeSealer("S", seal.Zstd, key, 1).AppendFrame(nil, frames)
	require.NoError(t, err)
	return out
}

// crashEvent is the event with the given seq in every log these tests
// write. It is derived from seq alone, so whoever finds an event in a log
// can check it. Two of every four events are assistant/chunk in a row, so
// batches hold packed rows as well as plain ones; data sizes vary with seq.
func crashEvent(seq int64) eventlog.Event {
	types := [...]string{"assistant/chunk", "assistant/chunk", "user/message", "tool/result"}
	padLen := int(uint64(seq) * 0x9E3779B97F4A7C15 >> 57) // 0..127, scattered
	pad := strings.Repeat(string(rune('a'+seq%26)), padLen)
	return eventlog.Event{
		Seq:  seq,
		Type: types[seq%4],
		Time: 1764450000000 + seq,
		Data: json.RawMessage(fmt.Sprintf(`{"seq":%d,"pad":"%s"}`, seq, pad)),
	}
}

// crashEvents returns crashEvent(from), …, crashEvent(from+n-1).
func crashEvents(from int64, n int) []eventlog.Event {
	evs := make([]eventlog.Event, n)
	for i := range evs {
		evs[i] = crashEvent(from + int64(i))
	}
	return evs
}

// canonLines returns the canon bytes of evs, one string each, for diffs
// that show which event differs.
func canonLines(evs []eventlog.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = string(eventlog.AppendCanon(nil, e))
	}
	return out
}

// readWholeLog reads every event of h and fails the test on any error.
func readWholeLog(t testing.TB, h handle.Handle) []eventlog.Event {
	t.Helper()
	var evs []eventlog.Event
	for e, err := range h.Read(t.Context(), 0, handle.End) {
		require.NoError(t, err)
		evs = append(evs, e)
	}
	return evs
}

// requireCanonLog checks that h holds exactly want, compared as canon bytes,
// and that its seqs say so.
func requireCanonLog(t *testing.T, h handle.Handle, want []eventlog.Event) {
	t.Helper()
	require.Equal(t, canonLines(want), canonLines(readWholeLog(t, h)))
	last := int64(len(want)) - 1
	require.Equal(t, last, h.Seq())
	require.Equal(t, last, h.DurableSeq())
}

// appendAndFlush appends evs and flushes, checking the seqs Append assigned.
func appendAndFlush(t testing.TB, h handle.Handle, evs ...eventlog.Event) {
	t.Helper()
	last, err := h.Append(t.Context(), evs...)
	require.NoError(t, err)
	require.Equal(t, evs[len(evs)-1].Seq, last, "seqs must be contiguous")
	require.NoError(t, h.Flush(t.Context()))
	require.Equal(t, last, h.DurableSeq())
}

// requireRecovers opens session id in st for writing and checks that it
// holds want and found torn; then it appends the next event and flushes,
// and checks that the log reads clean with want plus that event both
// after a power cut right then (faultfs.KeepSynced) and after Close. st's
// file system must be a *faultfs.FS.
func requireRecovers(t *testing.T, st *file.Store, id string, want []eventlog.Event, torn *eventlog.TornTail) {
	t.Helper()
	h, err := st.Open(t.Context(), id, handle.ReadWrite)
	require.NoError(t, err)
	require.Equal(t, torn, h.Torn())
	requireCanonLog(t, h, want)

	next := crashEvent(int64(len(want)))
	appendAndFlush(t, h, next)
	want = append(want[:len(want):len(want)], next)
	requireCanonLog(t, h, want)
	crashed := st.Fs().(*faultfs.FS).Crash(faultfs.KeepSynced)
	require.NoError(t, h.Close())

	for _, st := range []*file.Store{crashStore(crashed), st} {
		r, err := st.Open(t.Context(), id, handle.ReadOnly)
		require.NoError(t, err)
		require.Nil(t, r.Torn(), "the torn tail must be cut durably")
		requireCanonLog(t, r, want)
		require.NoError(t, r.Close())
	}
}

// crashedStore is a store on what a power cut left: crashed, wrapped in a
// faultfs.FS (which adopts it all as durable) so that it can crash again.
func crashedStore(crashed afero.Fs) *file.Store {
	return crashStore(faultfs.New(crashed))
}

// survivorsOf returns what a log in encoding enc holds when its
// acknowledged part (acked, in ackedSize bytes) is followed by tail, what
// survived of write, the bytes of a flush of batch: the acknowledged
// events plus those of batch that tail holds whole, and the torn tail
// after them, if any. Raw: the complete rows at the start of tail (a row
// of NUL bytes is torn, as nothing valid follows it). Zstd: a flush is one
// frame, whole or torn.
func survivorsOf(t *testing.T, enc string, acked, batch []eventlog.Event, ackedSize int64, tail, write []byte) ([]eventlog.Event, *eventlog.TornTail) {
	t.Helper()
	want := acked[:len(acked):len(acked)]
	off := 0
	switch {
	case encodingOf(enc) == handle.EncodingZstd:
		if bytes.Equal(tail, write) {
			want, off = append(want, batch...), len(tail)
		}
	case isSealed(enc):
		// A sealed row is a line; the complete lines of a prefix of the
		// write are the first rows, whole (a zero-filled write holds no
		// '\n').
		rows := bytes.SplitAfter(eventlog.NewEncoder(nil).AppendRows(nil, batch), []byte("\n"))
		for k := 0; ; k++ {
			i := bytes.IndexByte(tail[off:], '\n')
			if i < 0 {
				break
			}
			evs, err := eventlog.DecodeRow(bytes.TrimSuffix(rows[k], []byte("\n")))
			require.NoError(t, err)
			want = append(want, evs...)
			off += i + 1
		}
	default:
		for {
			i := bytes.IndexByte(tail[off:], '\n')
			if i < 0 {
				break
			}
			evs, err := eventlog.DecodeRow(tail[off : off+i])
			if err != nil {
				break
			}
			n := len(want) - len(acked)
			require.Equal(t, canonLines(batch[n:n+len(evs)]), canonLines(evs))
			want = append(want, batch[n:n+len(evs)]...)
			off += i + 1
		}
	}
	if off == len(tail) {
		return want, nil
	}
	return want, &eventlog.TornTail{Offset: ackedSize + int64(off), Bytes: int64(len(tail) - off)}
}

// tornFlush is a session whose last flush was cut by a power failure
// between its write and its fsync.
type tornFlush struct {
	fsys       *faultfs.FS
	id, path   string
	acked      []eventlog.Event // covered by a Flush that returned nil
	ackedBytes []byte           // the file as the last acknowledged Flush left it
	last       []eventlog.Event // the batch of the cut flush
	lastWrite  []byte           // the bytes that flush wrote and never fsynced
}

// newTornFlush creates a session in encoding enc, appends and flushes the
// batches of the given sizes, then appends lastN events and fails the
// fsync of their flush, leaving the write unsynced. With lastN == 0 the
// write is the tail frame a zstd handle writes on Close.
func newTornFlush(t *testing.T, enc string, batches []int, lastN int) tornFlush {
	t.Helper()
	ctx := t.Context()
	tf := tornFlush{fsys: faultfs.New(afero.NewMemMapFs())}
	st := crashStore(tf.fsys)
	h, err := st.Create(ctx, inLayout(enc)...)
	require.NoError(t, err)
	tf.id, tf.path = h.ID(), h.Path()
	for _, n := range batches {
		evs := crashEvents(int64(len(tf.acked)), n)
		appendAndFlush(t, h, evs...)
		tf.acked = append(tf.acked, evs...)
	}
	tf.ackedBytes, err = afero.ReadFile(tf.fsys, h.Path())
	require.NoError(t, err)

	tf.last = crashEvents(int64(len(tf.acked)), lastN)
	tf.fsys.FailNextSync(syscall.EIO) // the power goes before the fsync ends
	if lastN == 0 {
		require.ErrorIs(t, h.Close(), syscall.EIO) // zstd: Close writes a tail frame
	} else {
		_, err = h.Append(ctx, tf.last...)
		require.NoError(t, err)
		require.ErrorIs(t, h.Flush(ctx), syscall.EIO)
		require.Equal(t, int64(len(tf.acked))-1, h.DurableSeq())
		require.Error(t, h.Close()) // poisoned; writes nothing more
	}

	live, err := afero.ReadFile(tf.fsys, h.Path())
	require.NoError(t, err)
	require.Equal(t, tf.ackedBytes, live[:len(tf.ackedBytes)], "a flush must not touch acknowledged bytes")
	tf.lastWrite = live[len(tf.ackedBytes):]
	if lastN > 0 && isSealed(enc) {
		require.Len(t, tf.lastWrite, len(encodeWrite(t, enc, tf.last)))
	} else if lastN > 0 {
		require.Equal(t, encodeWrite(t, enc, tf.last), tf.lastWrite)
	}
	require.NotEmpty(t, tf.lastWrite)
	require.EqualValues(t, len(tf.lastWrite), tf.fsys.UnsyncedBytes(h.Path()))
	return tf
}

// tornSample is how many lengths of the cut write TestCrashTornFlushSweep
// keeps per setup and mode by default (every one under the full sweeps).
const tornSample = 8

// TestCrashTornFlushSweep cuts the power during a flush's write, keeping
// every possible number k of its bytes, as written (TornLast) or as zeros
// (ZeroFillLast, blocks never written), and recovers each result.
func TestCrashTornFlushSweep(t *testing.T) {
	t.Parallel()
	setups := []struct {
		name    string
		batches []int // acknowledged batches
		lastN   int   // events of the cut flush; 0: the cut write is Close's
		encs    []string
	}{
		{name: "OneRowAfterThreeFlushes", batches: []int{3, 1, 4}, lastN: 1, encs: crashEncodings},
		{name: "PackedAndPlainRows", batches: []int{2, 5}, lastN: 5, encs: crashEncodings},
		{name: "FirstFlush", batches: nil, lastN: 3, encs: crashEncodings},
		{name: "CloseTailFrame", batches: []int{4, 2}, lastN: 0, encs: []string{handle.EncodingZstd, sealedZstd}},
	}
	modes := []struct {
		name string
		mode func(k int) faultfs.CrashMode
		tail func(write []byte, k int) []byte // what survives of the write
	}{
		{
			name: "TornLast",
			mode: func(k int) faultfs.CrashMode { return faultfs.TornLast{Keep: k} },
			tail: func(write []byte, k int) []byte { return write[:k] },
		},
		{
			name: "ZeroFillLast",
			mode: func(k int) faultfs.CrashMode { return faultfs.ZeroFillLast{Keep: k} },
			tail: func(_ []byte, k int) []byte { return make([]byte, k) },
		},
	}
	for _, enc := range sweepLayouts() {
		points := 0
		for _, s := range setups {
			if !slices.Contains(s.encs, enc) {
				continue
			}
			t.Run(enc+"/"+s.name, func(t *testing.T) {
				tf := newTornFlush(t, enc, s.batches, s.lastN)
				for _, m := range modes {
					t.Run(m.name, func(t *testing.T) {
						// Every byte under the full sweeps, else a sample.
						keeps := sweep.Points(len(tf.lastWrite)+1, tornSample, t.Name())
						points += len(keeps)
						for _, k := range keeps {
							t.Run(fmt.Sprintf("keep=%d", k), func(t *testing.T) {
								tail := m.tail(tf.lastWrite, k)
								want, torn := survivorsOf(t, enc, tf.acked, tf.last, int64(len(tf.ackedBytes)), tail, tf.lastWrite)
								if len(tf.last) > 0 && (m.name == "ZeroFillLast" || k < len(tf.lastWrite)) {
									require.LessOrEqual(t, len(want), len(tf.acked)+len(tf.last)-1)
								}
								if m.name == "ZeroFillLast" && k > 0 {
									require.Equal(t, &eventlog.TornTail{Offset: int64(len(tf.ackedBytes)), Bytes: int64(k)}, torn)
								}

								crashed := tf.fsys.Crash(m.mode(k))
								got, err := afero.ReadFile(crashed, tf.path)
								require.NoError(t, err)
								require.Equal(t, tf.ackedBytes, got[:len(tf.ackedBytes)])
								require.Len(t, got, len(tf.ackedBytes)+k)
								requireRecovers(t, crashedStore(crashed), tf.id, want, torn)
							})
						}
					})
				}
			})
		}
		// docs/reliability.md, "Figures" (1); any loss fails the test above.
		t.Logf("figure: power-cut: append (torn and zero-filled last write, every byte) | %s | %d crash points", enc, points)
	}
}

// TestCrashDurabilityPoints cuts the power at moments of a session's life
// and checks that exactly what was acknowledged survives. Create is
// durable by itself (file and folder fsynced); appended events are not
// until a Flush returns, and never reach the file before it (so KeepAll
// cannot resurrect them either).
func TestCrashDurabilityPoints(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		mode faultfs.CrashMode
		// run works on a fresh session and returns the events that must
		// survive.
		run func(t *testing.T, h handle.Handle) []eventlog.Event
	}{
		{
			name: "RightAfterCreate",
			mode: faultfs.KeepSynced,
			run:  func(*testing.T, handle.Handle) []eventlog.Event { return nil },
		},
		{
			name: "AppendedNeverFlushed",
			mode: faultfs.KeepSynced,
			run: func(t *testing.T, h handle.Handle) []eventlog.Event {
				_, err := h.Append(t.Context(), crashEvents(0, 5)...)
				require.NoError(t, err)
				return nil
			},
		},
		{
			name: "AppendedNeverFlushedKeepAll",
			mode: faultfs.KeepAll,
			run: func(t *testing.T, h handle.Handle) []eventlog.Event {
				_, err := h.Append(t.Context(), crashEvents(0, 5)...)
				require.NoError(t, err)
				return nil
			},
		},
		{
			name: "AfterFlush",
			mode: faultfs.KeepSynced,
			run: func(t *testing.T, h handle.Handle) []eventlog.Event {
				appendAndFlush(t, h, crashEvents(0, 4)...)
				appendAndFlush(t, h, crashEvents(4, 3)...)
				return crashEvents(0, 7)
			},
		},
		{
			name: "AfterFlushThenUnflushedKeepAll",
			mode: faultfs.KeepAll,
			run: func(t *testing.T, h handle.Handle) []eventlog.Event {
				appendAndFlush(t, h, crashEvents(0, 6)...)
				_, err := h.Append(t.Context(), crashEvents(6, 2)...)
				require.NoError(t, err)
				return crashEvents(0, 6)
			},
		},
		{
			name: "AfterClose",
			mode: faultfs.KeepSynced,
			run: func(t *testing.T, h handle.Handle) []eventlog.Event {
				appendAndFlush(t, h, crashEvents(0, 2)...)
				_, err := h.Append(t.Context(), crashEvents(2, 3)...)
				require.NoError(t, err)
				require.NoError(t, h.Close()) // Close flushes
				return crashEvents(0, 5)
			},
		},
	}
	for _, enc := range crashEncodings {
		for _, tc := range tests {
			t.Run(enc+"/"+tc.name, func(t *testing.T) {
				fsys := faultfs.New(afero.NewMemMapFs())
				h, err := crashStore(fsys).Create(t.Context(), inLayout(enc)...)
				require.NoError(t, err)
				want := tc.run(t, h)

				crashed := fsys.Crash(tc.mode) // h is never closed: the power is gone
				st := crashStore(crashed)
				infos, err := st.List(t.Context())
				require.NoError(t, err)
				require.Len(t, infos, 1, "Create must be durable")
				require.Equal(t, h.ID(), infos[0].ID)
				require.EqualValues(t, len(want), infos[0].Events)
				requireRecovers(t, crashedStore(crashed), h.ID(), want, nil)
			})
		}
	}
}

// TestCrashDuringCreate cuts the power before every file operation of
// Create and once after it: the session either does not exist or exists
// whole (a header and nothing else); a half-written header never shows.
func TestCrashDuringCreate(t *testing.T) {
	t.Parallel()
	for _, enc := range crashEncodings {
		t.Run(enc, func(t *testing.T) { testCrashDuringCreate(t, enc) })
	}
}

func testCrashDuringCreate(t *testing.T, enc string) {
	type snapshot struct {
		name    string
		crashed afero.Fs
	}
	fsys := faultfs.New(afero.NewMemMapFs())
	var snaps []snapshot
	fsys.SetHook(func(op faultfs.Op, name string) error {
		for _, m := range []struct {
			name string
			mode faultfs.CrashMode
		}{{"KeepSynced", faultfs.KeepSynced}, {"KeepAll", faultfs.KeepAll}} {
			snaps = append(snaps, snapshot{fmt.Sprintf("%02d-before-%s-%s", len(snaps)/2, op, m.name), fsys.Crash(m.mode)})
		}
		return nil
	})
	h, err := crashStore(fsys).Create(t.Context(), inLayout(enc)...)
	require.NoError(t, err)
	fsys.SetHook(nil)
	snaps = append(snaps, snapshot{"after-Create", fsys.Crash(faultfs.KeepSynced)})
	require.Greater(t, len(snaps), 10)

	for i, s := range snaps {
		t.Run(s.name, func(t *testing.T) {
			st := crashStore(s.crashed)
			infos, err := st.List(t.Context())
			require.NoError(t, err)
			r, err := st.Open(t.Context(), h.ID(), handle.ReadWrite)
			if errors.Is(err, handle.ErrNotFound) {
				require.Empty(t, infos)
				require.NotEqual(t, len(snaps)-1, i, "the session must exist once Create returned")
				return
			}
			require.NoError(t, err)
			require.Len(t, infos, 1)
			require.Nil(t, r.Torn())
			require.Equal(t, h.Header(), r.Header())
			requireCanonLog(t, r, nil)
			require.NoError(t, r.Close())
			requireRecovers(t, crashedStore(s.crashed), h.ID(), nil, nil)
		})
	}
	require.NoError(t, h.Close())
	t.Logf("figure: power-cut: create (before every file operation, kept and lost unsynced data) | %s | %d crash points", enc, len(snaps))
}

// TestCrashNULHoleIsCorruption (raw logs: it is about rows) writes NUL
// bytes by hand over rows that have valid rows after them: no power cut can do that (docs/format.md §9), so
// opening fails with a *CorruptError at the hole, whatever the mode, and
// leaves the file as it was.
func TestCrashNULHoleIsCorruption(t *testing.T) {
	fsys := faultfs.New(afero.NewMemMapFs())
	st := file.New(fsys, crashDir)
	h, err := st.Create(t.Context())
	require.NoError(t, err)
	// Rows: seq 0-1 packed, 2, 3, 4-5 packed, 6, 7, 8-9 packed.
	appendAndFlush(t, h, crashEvents(0, 4)...)
	appendAndFlush(t, h, crashEvents(4, 6)...)
	require.NoError(t, h.Close())
	clean, err := afero.ReadFile(fsys.Crash(faultfs.KeepSynced), h.Path())
	require.NoError(t, err)

	// rowStart[i] is the offset of row i (0 is the header); rowSeq[i] its
	// first seq.
	var rowStart []int
	for off := 0; off < len(clean); {
		rowStart = append(rowStart, off)
		off += bytes.IndexByte(clean[off:], '\n') + 1
	}
	rowSeq := []int64{-1, 0, 2, 3, 4, 6, 7, 8}
	require.Len(t, rowStart, len(rowSeq))
	rowEnd := func(i int) int { return rowStart[i] + bytes.IndexByte(clean[rowStart[i]:], '\n') }

	tests := []struct {
		name     string
		row      int // the damaged row
		from, to int // NUL bytes go to [from, to)
	}{
		{name: "WholeRowKeepingNewline", row: 3, from: rowStart[3], to: rowEnd(3)},
		{name: "WholeRowAndNewline", row: 3, from: rowStart[3], to: rowEnd(3) + 1},
		{name: "BlockInsideRow", row: 4, from: rowStart[4] + 5, to: rowStart[4] + 13},
		{name: "FirstRow", row: 1, from: rowStart[1], to: rowEnd(1)},
		{name: "TwoRows", row: 2, from: rowStart[2], to: rowEnd(3)},
		{name: "OneRowBeforeTheLastTwo", row: 5, from: rowStart[5], to: rowEnd(5) + 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			damaged := bytes.Clone(clean)
			clear(damaged[tc.from:tc.to])
			crashed := afero.NewMemMapFs()
			require.NoError(t, afero.WriteFile(crashed, h.Path(), damaged, 0o600))
			st := file.New(crashed, crashDir)
			for _, mode := range []handle.Mode{handle.ReadWrite, handle.ReadOnly, handle.ReadWrite} {
				_, err := st.Open(t.Context(), h.ID(), mode)
				require.ErrorIs(t, err, eventlog.ErrCorrupt)
				var ce *eventlog.CorruptError
				require.ErrorAs(t, err, &ce)
				require.Equal(t, h.Path(), ce.Path)
				require.EqualValues(t, rowStart[tc.row], ce.Offset)
				require.Equal(t, rowSeq[tc.row], ce.Seq)
			}
			got, err := afero.ReadFile(crashed, h.Path())
			require.NoError(t, err)
			require.Equal(t, damaged, got, "a failed open must not touch the file")
		})
	}

	t.Run("HoleInLastRowIsTorn", func(t *testing.T) {
		last := len(rowStart) - 1
		damaged := bytes.Clone(clean)
		clear(damaged[rowStart[last]:rowEnd(last)])
		crashed := afero.NewMemMapFs()
		require.NoError(t, afero.WriteFile(crashed, h.Path(), damaged, 0o600))
		torn := &eventlog.TornTail{Offset: int64(rowStart[last]), Bytes: int64(len(clean) - rowStart[last])}
		requireRecovers(t, crashedStore(crashed), h.ID(), crashEvents(0, int(rowSeq[last])), torn)
	})
}
