package file_test

import (
	"iter"
	"os"
	"slices"
	"strconv"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/checkpoint"
	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/secrets/seal"
)

// readLog opens session id of st read-only and returns its logical log
// and the torn tail it ends in.
func readLog(t *testing.T, st *file.Store, id string) ([]string, bool) {
	t.Helper()
	r, err := st.Open(t.Context(), id, handle.ReadOnly)
	require.NoError(t, err, "%s must open", id)
	defer r.Close()
	return canonLines(readWholeLog(t, r)), r.Torn() != nil
}

// TestCrashDuringCheckpoint cuts the power during a writer's open,
// checkpoint and close, at each file-system operation: the log is the one
// before, or the one before and the checkpoint (which then verifies), never
// anything else; once Close returned nil the checkpoint is there.
func TestCrashDuringCheckpoint(t *testing.T) {
	t.Parallel()
	for _, enc := range crashEncodings {
		l := newLineage(t, enc)
		before := canonLines(l.logs[linP])
		run := func(t *testing.T, st *file.Store) error {
			h, err := st.Open(t.Context(), linP, handle.ReadWrite)
			if err != nil {
				return err
			}
			defer h.Close()
			if _, err := checkpoint.Create(t.Context(), h, checkpoint.WithLabel("swept")); err != nil {
				return err
			}
			return h.Close()
		}
		t.Run(enc, func(t *testing.T) {
			opSweep{
				fresh: l.fresh,
				run:   run,
				check: func(t *testing.T, p cutPoint) {
					st := p.store()
					log, torn := readLog(t, st, linP)
					require.False(t, torn, "only synced bytes survive: nothing torn")
					require.Equal(t, before, log[:min(len(before), len(log))], "the log before is intact")
					require.LessOrEqual(t, len(log), len(before)+1, "at most the checkpoint more")
					if p.completed() {
						require.Len(t, log, len(before)+1, "the checkpoint is there once Close returned nil")
					}
					r, err := st.Open(t.Context(), linP, handle.ReadOnly)
					require.NoError(t, err)
					res, err := checkpoint.Verify(t.Context(), r)
					require.NoError(t, err)
					require.Equal(t, res.Checkpoints, res.Verified)
					require.NoError(t, r.Close())
				},
			}.sweep(t)
		})
	}
}

// TestCrashDuringRepair cuts the power during the repair of a torn tail,
// at each file-system operation: the log reads the same events before and
// after, the torn tail is still there or cut, and once Repair returned nil
// it is cut and its bytes are in the side file. Repairing again completes.
func TestCrashDuringRepair(t *testing.T) {
	t.Parallel()
	const tornBytes = `{"seq":99,"type":"user/mes`
	for _, enc := range crashEncodings {
		l := newLineage(t, enc)
		want := canonLines(l.logs[linP])
		fresh := func() afero.Fs {
			fsys := l.fresh()
			f, err := fsys.OpenFile(l.paths[linP], os.O_WRONLY|os.O_APPEND, 0)
			require.NoError(t, err)
			_, err = f.Write([]byte(tornBytes))
			require.NoError(t, err)
			require.NoError(t, f.Close())
			return fsys
		}
		run := func(t *testing.T, st *file.Store) error {
			_, err := st.Repair(t.Context(), linP, false)
			return err
		}
		t.Run(enc, func(t *testing.T) {
			opSweep{
				fresh: fresh,
				run:   run,
				check: func(t *testing.T, p cutPoint) {
					st := p.store()
					log, torn := readLog(t, st, linP)
					require.Equal(t, want, log, "the same events, cut or not")
					if p.completed() {
						require.False(t, torn, "cut once Repair returned nil")
						side := l.paths[linP] + ".torn-" + strconv.Itoa(len(l.files[linP]))
						got, err := afero.ReadFile(st.Fs(), side)
						require.NoError(t, err, "the side file")
						require.Equal(t, tornBytes, string(got))
					}
					if p.retry() {
						require.NoError(t, run(t, st))
						log, torn := readLog(t, st, linP)
						require.Equal(t, want, log)
						require.False(t, torn)
					}
				},
			}.sweep(t)
		})
	}
}

// TestCrashDuringShred cuts the power during Shred of a sealed session,
// at each file-system operation: the session reads its log as before, or
// is shredded (unreadable, its framing sound), never anything else; once
// Shred returned nil it is shredded; the other sessions are untouched;
// and a retry completes.
func TestCrashDuringShred(t *testing.T) {
	t.Parallel()
	for _, enc := range crashEncodings {
		if !isSealed(enc) {
			continue // only a sealed session has envelopes to destroy
		}
		l := newLineage(t, enc)
		run := func(t *testing.T, st *file.Store) error {
			_, err := st.Shred(t.Context(), linU, false)
			return err
		}
		t.Run(enc, func(t *testing.T) {
			opSweep{
				fresh: l.fresh,
				run:   run,
				check: func(t *testing.T, p cutPoint) {
					st := p.store()
					for _, id := range linIDs {
						if id != linU {
							require.True(t, l.requireFile(t, st, id), id)
						}
					}
					shredded := func() bool {
						r, err := st.Open(t.Context(), linU, handle.ReadOnly)
						if err != nil {
							require.ErrorIs(t, err, seal.ErrNoKey)
							require.Contains(t, err.Error(), "shredded")
							return true
						}
						require.NoError(t, r.Close())
						l.requireLog(t, st, linU)
						return false
					}
					done := shredded()
					if p.completed() {
						require.True(t, done, "shredded once Shred returned nil")
					}
					if p.retry() {
						_, err := st.Shred(t.Context(), linU, false)
						require.NoError(t, err)
						require.True(t, shredded())
					}
				},
			}.sweep(t)
		})
	}
}

// TestCrashDuringRewrite cuts the power during a Rewrite (what a
// redaction of a stored log does), at each file-system operation: the
// session holds its log as before or the new one, never a mix; once
// Rewrite returned nil, the new one.
func TestCrashDuringRewrite(t *testing.T) {
	t.Parallel()
	for _, enc := range sweepLayouts() {
		l := newLineage(t, enc)
		old := canonLines(l.logs[linU])
		extra := crashEvent(int64(len(l.logs[linU])))
		want := append(slices.Clone(old), canonLines([]eventlog.Event{extra})...)
		run := func(t *testing.T, st *file.Store) error {
			_, err := st.Rewrite(t.Context(), linU, func(h handle.Handle) iter.Seq2[eventlog.Event, error] {
				return func(yield func(eventlog.Event, error) bool) {
					for e, err := range h.Read(t.Context(), 0, handle.End) {
						if !yield(e, err) {
							return
						}
					}
					yield(extra, nil)
				}
			})
			return err
		}
		t.Run(enc, func(t *testing.T) {
			opSweep{
				fresh: l.fresh,
				run:   run,
				check: func(t *testing.T, p cutPoint) {
					st := p.store()
					log, torn := readLog(t, st, linU)
					require.False(t, torn)
					if p.completed() {
						require.Equal(t, want, log, "the new log once Rewrite returned nil")
					} else if len(log) != len(want) {
						require.Equal(t, old, log, "the old log, or the new one")
					}
				},
			}.sweep(t)
		})
	}
}
