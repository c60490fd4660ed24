package file_test

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/checkpoint"
	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/handle/storetest"
)

// TestCrashDuringCreateFrom cuts the power during CreateFrom at each
// file-system operation (docs/format.md §9: an operation that creates a
// session leaves it absent or complete): the new session does not exist,
// or exists with exactly its events (its lineage resolving, its
// checkpoint verifying); once CreateFrom returned nil it exists; the
// sessions already there are untouched; and a retry on what is left
// succeeds.
func TestCrashDuringCreateFrom(t *testing.T) {
	t.Parallel()
	for li, enc := range sweepLayouts() {
		l := newLineage(t, enc)
		// A fork of P at 5 holding its own events, a checkpoint among them
		// that covers the inherited prefix; and a session that stands alone.
		own := make([]eventlog.Event, 0, 24)
		for seq := int64(6); seq < 30; seq++ {
			own = append(own, branchEvent("N", seq))
		}
		d := eventlog.NewDigest()
		for _, e := range append(slices.Clone(l.logs[linP][:6]), own[:10]...) {
			d.Add(e)
		}
		own[10] = eventlog.Event{Seq: 16, Type: eventlog.TypeCheckpoint, Time: 1, Data: json.RawMessage(`{"log":"` + d.String() + `"}`)}
		tests := []struct {
			name   string
			evs    []eventlog.Event
			opts   []handle.Option
			want   []eventlog.Event // the logical log
			verify int              // checkpoints
		}{
			{name: "Root", evs: crashEvents(0, 40), want: crashEvents(0, 40)},
			{name: "ForkWithCheckpoint", evs: own, want: append(slices.Clone(l.logs[linP][:6]), own...), verify: 1,
				opts: []handle.Option{handle.WithParent(eventlog.Parent{ID: linP, Seq: 5, Mode: eventlog.ModeFork})}},
			{name: "OtherEncoding", evs: crashEvents(0, 9), want: crashEvents(0, 9),
				opts: inLayout(otherEncoding(enc))},
		}
		for i, tc := range tests {
			if !inLayoutSample(li, i) {
				continue
			}
			t.Run(enc+"/"+tc.name, func(t *testing.T) {
				opts := append(append(inLayout(enc), handle.WithID(linN)), tc.opts...)
				run := func(t *testing.T, st *file.Store) error {
					info, err := st.CreateFrom(t.Context(), storetest.Events(tc.evs, nil), opts...)
					if err == nil {
						require.Equal(t, int64(len(tc.want))-1, info.LastSeq)
					}
					return err
				}
				opSweep{
					fresh: l.fresh,
					run:   run,
					check: func(t *testing.T, p cutPoint) {
						st := p.store()
						for _, id := range linIDs {
							require.True(t, l.requireFile(t, st, id), id)
							l.requireLog(t, st, id)
						}
						requireAbsentOrWhole := func() bool {
							r, log, ok := readFromZero(t, st, linN)
							require.Equal(t, ok, slices.Contains(listIDs(t, st), linN), "List agrees with Open")
							if !ok {
								_, err := st.Stat(t.Context(), linN)
								require.ErrorIs(t, err, handle.ErrNotFound)
								return false
							}
							require.Equal(t, canonLines(tc.want), canonLines(log), "whole, never partial")
							res, err := checkpoint.Verify(t.Context(), logSource{linN, log})
							require.NoError(t, err)
							require.Equal(t, tc.verify, res.Verified)
							require.NoError(t, r.Close())
							return true
						}
						exists := requireAbsentOrWhole()
						if p.completed() {
							require.True(t, exists, "it exists once CreateFrom returned nil")
						}
						if p.retry() {
							if !exists {
								// What the cut left of the build is invisible, and GC
								// removes it; nothing it keeps is a session.
								rep, err := st.GC(t.Context(), time.UnixMilli(0), false)
								require.NoError(t, err)
								require.Empty(t, rep.Deleted)
								names, err := afero.Glob(st.Fs(), filepath.Join(crashDir, "*.tmp"))
								require.NoError(t, err)
								require.Empty(t, names, "no temp file is left")
							}
							err := run(t, st)
							if exists {
								require.ErrorIs(t, err, handle.ErrExists)
							} else {
								require.NoError(t, err, "the retry succeeds")
							}
							require.True(t, requireAbsentOrWhole())
						}
					},
				}.sweep(t)
			})
		}
	}
}
