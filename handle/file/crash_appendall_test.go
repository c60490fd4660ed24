package file_test

import (
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/handle/storetest"
	"github.com/sessionlog/sessionlog/internal/testkit/faultfs"
	"github.com/sessionlog/sessionlog/internal/testkit/sweep"
)

// TestCrashDuringAppendAll cuts the power during AppendAll at each
// file-system operation: the session holds its old log or its old log and
// the whole batch — never a part of the batch — in either encoding (a
// batch of many rows, larger than a zstd frame); once AppendAll returned
// nil it holds the batch; a retry on what is left succeeds.
func TestCrashDuringAppendAll(t *testing.T) {
	t.Parallel()
	for _, enc := range crashEncodings {
		t.Run(enc, func(t *testing.T) {
			base := faultfs.New(afero.NewMemMapFs())
			st := crashStore(base)
			old := crashEvents(0, 20)
			h, err := st.Create(t.Context(), append(inLayout(enc), handle.WithID(linN))...)
			require.NoError(t, err)
			appendAndFlush(t, h, old...)
			require.NoError(t, h.Close())
			// 4.4 MiB of rows that do not compress: the batch spans zstd
			// frames and is written in two chunks. By default the same
			// sweep runs on a batch of one chunk (the cost of megabytes at
			// each cut point, under the race detector most, would dominate
			// the run); the full sweeps run the frame-spanning batch.
			n, size := 20, 1<<10
			if sweep.Full() {
				n, size = 220, 20<<10
			}
			batch := crashEvents(20, n)
			for i := range batch {
				batch[i].Data = json.RawMessage(`{"noise":"` + noise(int64(i), size) + `"}`)
			}
			want := append(append([]eventlog.Event{}, old...), batch...)

			run := func(t *testing.T, st *file.Store) error {
				info, err := st.AppendAll(t.Context(), linN, 20, storetest.Events(batch, nil))
				if err == nil {
					require.Equal(t, int64(len(want)), info.Events)
				}
				return err
			}
			opSweep{
				fresh: func() afero.Fs { return base.Crash(faultfs.KeepSynced) },
				run:   run,
				check: func(t *testing.T, p cutPoint) {
					st := p.store()
					oldOrWhole := func() bool {
						_, log, ok := readFromZero(t, st, linN)
						require.True(t, ok, "the session is never gone")
						if len(log) == len(old) {
							require.Equal(t, canonLines(old), canonLines(log), "the old log")
							return false
						}
						require.Equal(t, canonLines(want), canonLines(log), "the old log and the whole batch, never a part of it")
						return true
					}
					grown := oldOrWhole()
					if p.completed() {
						require.True(t, grown, "grown once AppendAll returned nil")
					}
					if p.retry() && !grown {
						require.NoError(t, run(t, st), "the retry succeeds")
						require.True(t, oldOrWhole())
					}
				},
			}.sweep(t)
		})
	}
}

// noise is n letters that do not compress, the same for the same seed.
func noise(seed int64, n int) string {
	r := rand.New(rand.NewPCG(uint64(seed), 7))
	b := make([]byte, n)
	for i := range b {
		b[i] = 'a' + byte(r.IntN(26))
	}
	return string(b)
}
