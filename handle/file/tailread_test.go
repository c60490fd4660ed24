package file_test

import (
	"math/rand/v2"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/internal/testkit/sweep"
)

// readRange returns the events src yields for from..to, and its error.
func readRange(t *testing.T, read func(from, to int64) func(func(eventlog.Event, error) bool), from, to int64) ([]eventlog.Event, error) {
	t.Helper()
	var out []eventlog.Event
	for e, err := range read(from, to) {
		if err != nil {
			return out, err
		}
		out = append(out, e)
	}
	return out, nil
}

// A TailReader yields what a handle's Read yields, for any range, on every
// kind of log a Stat meets: closed by its writer (a checked record and,
// for zstd, a tail frame), without a record (converted, copied), with a
// writer that appended since (no tail frame, a stale record), with a torn
// tail, and a fork (its parent's events read through a TailReader on the
// parent). By default each kind in one encoding (zstd: closed, writer
// open, fork; raw: no record, torn); in both under SESSIONLOG_SWEEPS=full.
func TestTailReaderReadsAsHandle(t *testing.T) {
	for _, enc := range []string{handle.EncodingRaw, handle.EncodingZstd} {
		for k, kind := range []string{"closed", "no record", "writer open", "torn", "fork"} {
			if !sweep.Full() && (k%2 == 0) != (enc == handle.EncodingZstd) {
				continue
			}
			t.Run(enc+"/"+kind, func(t *testing.T) {
				t.Parallel()
				ctx := t.Context()
				st, _, _ := osStore(t, enc)
				id, path, evs := writeBig(t, st, enc, 1500, 7)
				switch kind {
				case "no record":
					require.NoError(t, st.DeleteDerived(ctx, id, "checked"))
				case "writer open":
					w, err := st.Open(ctx, id, handle.ReadWrite)
					require.NoError(t, err)
					t.Cleanup(func() { w.Close() })
					for i := range 300 {
						e := bigEvent(len(evs) + i)
						e.Seq, err = w.Append(ctx, e)
						require.NoError(t, err)
						evs = append(evs, e)
						if i%9 == 0 {
							require.NoError(t, w.Flush(ctx))
						}
					}
					require.NoError(t, w.Flush(ctx))
				case "torn":
					f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
					require.NoError(t, err)
					_, err = f.Write([]byte(`{"seq":`))
					require.NoError(t, err)
					require.NoError(t, f.Close())
				case "fork":
					fork, err := st.Fork(ctx, id, 1200)
					require.NoError(t, err)
					evs = evs[:1201]
					for i := range 100 {
						e := bigEvent(5000 + i)
						e.Seq, err = fork.Append(ctx, e)
						require.NoError(t, err)
						evs = append(evs, e)
					}
					require.NoError(t, fork.Close())
					id = fork.ID()
				}
				h, err := st.Open(ctx, id, handle.ReadOnly)
				require.NoError(t, err)
				defer h.Close()
				tr, err := st.OpenTail(ctx, id)
				require.NoError(t, err)
				defer tr.Close()
				last := int64(len(evs) - 1)
				require.Equal(t, last, tr.Seq())
				require.Equal(t, h.Header(), tr.Header())
				rng := rand.New(rand.NewPCG(uint64(len(enc)), uint64(len(kind))))
				ranges := [][2]int64{{0, handle.End}, {last, last}, {last - 255, last}, {0, 0}, {1199, 1202}, {last + 1, handle.End}}
				// Under the race detector each range costs seconds.
				randoms := sweep.Size(4, 40, 40)
				for range randoms {
					a, b := rng.Int64N(last+1), rng.Int64N(last+1)
					ranges = append(ranges, [2]int64{min(a, b), max(a, b)})
				}
				for _, r := range ranges {
					want, err := readRange(t, func(from, to int64) func(func(eventlog.Event, error) bool) { return h.Read(ctx, from, to) }, r[0], r[1])
					require.NoError(t, err)
					got, err := readRange(t, func(from, to int64) func(func(eventlog.Event, error) bool) { return tr.Read(ctx, from, to) }, r[0], r[1])
					require.NoError(t, err, "range %v", r)
					require.Equal(t, canonLines(want), canonLines(got), "range %v", r)
				}
			})
		}
	}
}

// Reading the last events of a long log through a TailReader reads about
// what they take, not the log; so does reading any event of a raw log (a
// binary search), and of a zstd log with a checked record (frames backward
// for at most a stride of its index, then from the index entry before).
func TestTailReaderReadsBounded(t *testing.T) {
	for _, enc := range []string{handle.EncodingRaw, handle.EncodingZstd} {
		t.Run(enc, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			st, counted, _ := osStore(t, enc)
			n := 6000
			if enc == handle.EncodingZstd {
				n = 16000 // 2 KB events compress to about half: the log is 8 times the bound
			}
			id, path, evs := writeBig(t, st, enc, n, 10)
			fi, err := os.Stat(path)
			require.NoError(t, err)
			last := int64(len(evs) - 1)
			for _, r := range [][2]int64{{last - 255, last}, {2000, 2255}, {3, 20}} {
				before := counted.BytesRead()
				tr, err := st.OpenTail(ctx, id)
				require.NoError(t, err)
				got, err := readRange(t, func(from, to int64) func(func(eventlog.Event, error) bool) { return tr.Read(ctx, from, to) }, r[0], r[1])
				require.NoError(t, err)
				require.NoError(t, tr.Close())
				require.Equal(t, canonLines(evs[r[0]:r[1]+1]), canonLines(got))
				read := counted.BytesRead() - before
				bound := fi.Size() / 8
				if enc == handle.EncodingZstd {
					bound = 5 << 19 // two index strides, the range and a frame
				}
				require.Less(t, read, bound, "range %v of a log of %d bytes read %d bytes", r, fi.Size(), read)
			}
		})
	}
}
