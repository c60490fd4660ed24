package file_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
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
	"github.com/sessionlog/sessionlog/internal/testkit/faultfs"
	"github.com/sessionlog/sessionlog/projection"
	"github.com/sessionlog/sessionlog/recorder"
	"github.com/sessionlog/sessionlog/replay"
)

// TestSealedMarkerInNoFile (docs/format.md §11: no plaintext of a sealed
// session is written anywhere in the store) writes a marker, and a label,
// into sealed sessions and runs every operation of the store on them —
// writes and reopens (the checked record), checkpoints (saved digest
// states), forks, reads, Stat, List, the tree (the headers index), tail
// reads and stop facts (their derived record), replay with stored
// states, convert and compact, CreateFrom, AppendAll, a repair of a torn
// tail (its side file), a sealed export into the folder, GC — and a
// power cut in the middle of a convert, a CreateFrom and an AppendAll,
// which leave their temp files: no file under the store's folder, at any of those
// points, holds the marker or the label in clear.
func TestSealedMarkerInNoFile(t *testing.T) {
	for _, enc := range []string{handle.EncodingRaw, handle.EncodingZstd} {
		t.Run(enc, func(t *testing.T) {
			ctx := t.Context()
			fsys := faultfs.New(afero.NewMemMapFs())
			id := newIdentity(t)
			st := file.New(fsys, "/s", handle.WithRecipients(id.Recipient()), handle.WithIdentities(id),
				handle.WithEncoding(enc), func(c *handle.Config) { c.ZstdLevel = 1 })
			check := func(what string, f afero.Fs) {
				t.Helper()
				t.Run(what, func(t *testing.T) { requireNoMarker(t, f, "/s") })
			}
			labels := map[string]string{"title": "labelvalue-secret"}

			// Writes, checkpoints with state digests, reopen, close.
			w, err := st.Create(ctx, handle.WithLabels(labels))
			require.NoError(t, err)
			sid := w.ID()
			rec, err := recorder.New(ctx, w, recorder.WithCache(st))
			require.NoError(t, err)
			for turn := range 3 {
				_, err = rec.BeginTurn(ctx, marker)
				require.NoError(t, err)
				_, err = rec.UserMessage(ctx, marker+" question", "")
				require.NoError(t, err)
				_, err = rec.BeginStep(ctx)
				require.NoError(t, err)
				for range 5 {
					_, err = rec.Chunk(ctx, marker+" chunk ")
					require.NoError(t, err)
				}
				_, err = rec.ToolCall(ctx, recorder.Call{ID: "c" + string(rune('0'+turn)), Name: "read", Args: json.RawMessage(`{"path":"` + marker + `"}`)})
				require.NoError(t, err)
				_, err = rec.ToolResult(ctx, recorder.Result{ID: "c" + string(rune('0'+turn)), Output: marker + " output"})
				require.NoError(t, err)
				_, err = rec.MemorySet(ctx, "k", marker, nil)
				require.NoError(t, err)
				_, err = rec.EndStep(ctx)
				require.NoError(t, err)
				_, err = rec.EndTurn(ctx, recorder.Completed, "")
				require.NoError(t, err)
			}
			require.NoError(t, rec.Close())
			check("written", fsys)
			require.NotEmpty(t, must(afero.Glob(fsys, "/s/.cache/*")), "derived data was kept")

			w, err = st.Open(ctx, sid, handle.ReadWrite)
			require.NoError(t, err)
			_, err = w.Append(ctx, markerEvents(3, w.Seq()+1)...)
			require.NoError(t, err)
			_, err = checkpoint.Create(ctx, w, checkpoint.WithLabel(marker))
			require.NoError(t, err)
			require.NoError(t, w.Close())

			// Forks, reads, Stat, List, the tree, tail reads, stop facts,
			// replay with stored states.
			f, err := st.Fork(ctx, sid, 10, handle.WithLabels(labels))
			require.NoError(t, err)
			_, err = f.Append(ctx, markerEvents(4, 11)...)
			require.NoError(t, err)
			_, err = checkpoint.Create(ctx, f)
			require.NoError(t, err)
			require.NoError(t, f.Close())
			for _, s := range []string{sid, f.ID()} {
				r, err := st.Open(ctx, s, handle.ReadOnly)
				require.NoError(t, err)
				require.NotEmpty(t, readEvents(t, r))
				_, err = replay.Replay(ctx, r, []projection.Projection{projection.NewAgent(), projection.NewTranscript()}, replay.WithCache(st))
				require.NoError(t, err)
				res, err := checkpoint.Verify(ctx, r, projection.NewAgent())
				require.NoError(t, err)
				require.Equal(t, res.Checkpoints, res.Verified)
				require.NoError(t, r.Close())
				info, err := st.Stat(ctx, s)
				require.NoError(t, err)
				require.True(t, info.Sealed)
				tr, err := st.OpenTail(ctx, s)
				require.NoError(t, err)
				for _, err := range tr.Read(ctx, tr.Seq()-3, handle.End) {
					require.NoError(t, err)
				}
				_, err = recorder.ReadFacts(ctx, tr, st)
				require.NoError(t, err)
				require.NoError(t, tr.Close())
			}
			infos, err := st.List(ctx)
			require.NoError(t, err)
			require.Len(t, infos, 2)
			_, err = st.Tree(ctx)
			require.NoError(t, err)
			check("read", fsys)

			// Convert, compact, detach, CreateFrom, AppendAll.
			other := handle.EncodingZstd
			if enc == other {
				other = handle.EncodingRaw
			}
			require.NoError(t, st.Convert(ctx, sid, other))
			require.NoError(t, st.Convert(ctx, sid, enc))
			if enc == handle.EncodingZstd {
				require.NoError(t, st.Compact(ctx, sid))
			}
			require.NoError(t, st.Detach(ctx, f.ID()))
			made, err := st.CreateFrom(ctx, storetest.Events(markerEvents(20), nil), handle.WithLabels(labels))
			require.NoError(t, err)
			require.True(t, made.Sealed)
			_, err = st.AppendAll(ctx, made.ID, 20, storetest.Events(markerEvents(5, 20), nil))
			require.NoError(t, err)
			check("rewritten", fsys)

			// A process killed in a convert and in a CreateFrom, before
			// their renames: the temp files stay.
			var cut afero.Fs
			fsys.SetHook(func(op faultfs.Op, name string) error {
				if op == faultfs.OpRename && cut == nil && strings.HasPrefix(name, "/s/01") {
					cut = snapshot(t, fsys)
				}
				return nil
			})
			require.NoError(t, st.Convert(ctx, made.ID, other))
			fsys.SetHook(nil)
			require.NotEmpty(t, must(afero.Glob(cut, "/s/*.tmp")), "the cut left the convert's temp file")
			check("cut in convert", cut)
			cut = nil
			fsys.SetHook(func(op faultfs.Op, name string) error {
				if op == faultfs.OpRename && cut == nil && strings.HasSuffix(name, enc2ext(enc)) {
					cut = snapshot(t, fsys)
				}
				return nil
			})
			_, err = st.CreateFrom(ctx, storetest.Events(markerEvents(30), nil))
			require.NoError(t, err)
			fsys.SetHook(nil)
			require.NotEmpty(t, must(afero.Glob(cut, "/s/*.tmp")), "the cut left the CreateFrom's temp file")
			check("cut in CreateFrom", cut)
			cut = nil
			fsys.SetHook(func(op faultfs.Op, name string) error {
				if op == faultfs.OpRename && cut == nil && strings.HasPrefix(name, "/s/01") {
					cut = snapshot(t, fsys)
				}
				return nil
			})
			_, err = st.AppendAll(ctx, made.ID, 25, storetest.Events(markerEvents(5, 25), nil))
			require.NoError(t, err)
			fsys.SetHook(nil)
			require.NotEmpty(t, must(afero.Glob(cut, "/s/*.tmp")), "the cut left the AppendAll's temp file")
			check("cut in AppendAll", cut)

			// A torn tail repaired: its side file.
			path, err := st.Path(sid)
			require.NoError(t, err)
			whole, err := afero.ReadFile(fsys, path)
			require.NoError(t, err)
			lf, err := fsys.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
			require.NoError(t, err)
			_, err = lf.Write(whole[len(whole)-40 : len(whole)-3]) // the end of a record, cut short
			require.NoError(t, err)
			require.NoError(t, lf.Close())
			rep, err := st.Repair(ctx, sid, false)
			require.NoError(t, err)
			require.NotNil(t, rep.Torn)
			check("repaired", fsys)

			// A sealed export into the folder, and GC.
			var out bytes.Buffer
			n, err := st.ExportSealed(ctx, sid, &out, infos[0].LastSeq)
			require.NoError(t, err)
			require.Positive(t, n)
			require.NoError(t, afero.WriteFile(fsys, filepath.Join("/s", "export.jsonl"), out.Bytes(), 0o600))
			exp, err := st.OpenPath(ctx, filepath.Join("/s", "export.jsonl"))
			require.NoError(t, err)
			require.Len(t, readEvents(t, exp), int(n))
			require.NoError(t, exp.Close())
			_, err = st.GC(ctx, time.Now().Add(time.Hour), false)
			require.NoError(t, err)
			check("after gc", fsys)
		})
	}
}

// snapshot copies the files of fsys as they are now: what a process
// killed at that instant leaves.
func snapshot(t *testing.T, fsys afero.Fs) afero.Fs {
	out := afero.NewMemMapFs()
	require.NoError(t, afero.Walk(fsys, "/", func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		b, err := afero.ReadFile(fsys, path)
		if err != nil {
			return err
		}
		return afero.WriteFile(out, path, b, 0o600)
	}))
	return out
}

func enc2ext(enc string) string {
	if enc == handle.EncodingZstd {
		return ".jsonl.zst"
	}
	return ".jsonl"
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

var _ = context.Background
var _ = eventlog.Event{}
