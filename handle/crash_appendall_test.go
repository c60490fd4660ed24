package handle_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/storetest"
	"github.com/sessionlog/sessionlog/internal/faultfs"
)

// TestCrashDuringAppendAll cuts the power during AppendAll at each
// file-system operation: the session holds its old log or its old log and
// the whole batch — never a part of the batch — in either encoding (a
// batch of many rows, larger than a zstd frame); once AppendAll returned
// nil it holds the batch; a retry on what is left succeeds.
func TestCrashDuringAppendAll(t *testing.T) {
	for _, enc := range crashEncodings {
		t.Run(enc, func(t *testing.T) {
			base := faultfs.New(afero.NewMemMapFs())
			st := handle.NewFileStore(base, crashDir)
			old := crashEvents(0, 20)
			h, err := st.Create(t.Context(), handle.WithID(linN), handle.WithSessionEncoding(enc))
			require.NoError(t, err)
			appendAndFlush(t, h, old...)
			require.NoError(t, h.Close())
			batch := crashEvents(20, 220) // 4.4 MiB: more than a zstd frame
			for i := range batch {
				// Rows that do not compress: the batch spans zstd frames.
				batch[i].Data = json.RawMessage(`{"noise":"` + noise(int64(i), 20<<10) + `"}`)
			}
			want := append(append([]eventlog.Event{}, old...), batch...)

			run := func(t *testing.T, st *handle.FileStore) error {
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

// TestAppendAll: the batch must follow the log (a conflict otherwise),
// carry its seqs and hold what Append takes; nothing of a refused batch is
// written.
func TestAppendAll(t *testing.T) {
	ctx := t.Context()
	st := handle.NewFileStore(afero.NewMemMapFs(), crashDir)
	h, err := st.Create(ctx, handle.WithID(linN))
	require.NoError(t, err)
	appendAndFlush(t, h, crashEvents(0, 3)...)
	require.NoError(t, h.Close())
	rollback := func(seq, to int64) eventlog.Event {
		return eventlog.Event{Seq: seq, Type: eventlog.TypeRollback, Time: 1, Data: fmt.Appendf(nil, `{"to":%d}`, to)}
	}
	for name, tc := range map[string]struct {
		expected int64
		batch    []eventlog.Event
		is       error
	}{
		"behind":       {2, crashEvents(2, 2), handle.ErrConflict},
		"ahead":        {4, crashEvents(4, 1), handle.ErrConflict},
		"a seq gap":    {3, append(crashEvents(3, 1), crashEvent(5)), eventlog.ErrInvalidEvent},
		"a checkpoint": {3, []eventlog.Event{{Seq: 3, Type: eventlog.TypeCheckpoint, Time: 1, Data: json.RawMessage(`{"log":"sha256:00"}`)}}, eventlog.ErrInvalidEvent},
		"a bad type":   {3, []eventlog.Event{{Seq: 3, Type: "a b", Time: 1}}, eventlog.ErrInvalidEvent},
		"rollback on":  {3, []eventlog.Event{rollback(3, 3)}, eventlog.ErrInvalidEvent},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := st.AppendAll(ctx, linN, tc.expected, storetest.Events(tc.batch, nil))
			require.ErrorIs(t, err, tc.is)
			info, err := st.Stat(ctx, linN)
			require.NoError(t, err)
			require.Equal(t, int64(3), info.Events, "nothing written")
		})
	}
	info, err := st.AppendAll(ctx, linN, 3, storetest.Events(append(crashEvents(3, 2), rollback(5, 2)), nil))
	require.NoError(t, err)
	require.Equal(t, int64(6), info.Events)
	_, err = st.AppendAll(ctx, "01JDX3N0Q3Z8Y6W2D1V5K7M9PB", 0, storetest.Events(nil, nil))
	require.ErrorIs(t, err, handle.ErrNotFound)
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
