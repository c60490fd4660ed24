package verify_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessionlog/sessionlog/secrets/redact"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/checkpoint"
	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/handle/jetstream"
	"github.com/sessionlog/sessionlog/internal/testkit/natstest"
	"github.com/sessionlog/sessionlog/ops/verify"
)

const dir = "/s"

func ev(typ, data string) eventlog.Event {
	return eventlog.Event{Type: typ, Time: 1, Data: json.RawMessage(data)}
}

// threeEvents makes a store on a memory file system holding a session of
// seqs 0..2 and returns the store, its ID, path and lines (header first,
// each with its '\n').
func threeEvents(t *testing.T) (fsys afero.Fs, st *file.Store, id, path string, lines []string) {
	t.Helper()
	fsys = afero.NewMemMapFs()
	st = file.New(fsys, dir)
	h, err := st.Create(t.Context())
	require.NoError(t, err)
	_, err = h.Append(t.Context(), ev("user/message", `{"text":"a"}`), ev("assistant/message", `{"text":"b"}`), ev("user/message", `{"text":"a"}`))
	require.NoError(t, err)
	require.NoError(t, h.Close())
	b, err := afero.ReadFile(fsys, h.Path())
	require.NoError(t, err)
	lines = strings.SplitAfter(string(b), "\n")
	require.Len(t, lines, 5) // header, 3 rows, "" after the last '\n'
	return fsys, st, h.ID(), h.Path(), lines[:4]
}

func write(t *testing.T, fsys afero.Fs, path string, parts ...string) {
	t.Helper()
	require.NoError(t, afero.WriteFile(fsys, path, []byte(strings.Join(parts, "")), 0o600))
}

func ptr(v int64) *int64 { return &v }

func offsetOf(lines []string, n int) *int64 {
	return ptr(int64(len(strings.Join(lines[:n], ""))))
}

// Every kind of damage is found by both ways in — a session of a store
// and a file by path — with its kind, seq, offset and how far the log
// held; a torn tail alone is ok.
func TestDamage(t *testing.T) {
	const other = "01JDX3N0Q3Z8Y6W2D1V5K7M9PA"
	tests := []struct {
		name string
		// damage rewrites or extends the session's file; it returns the
		// path to check (a path that is not the session's is checked as
		// a file only).
		damage  func(t *testing.T, fsys afero.Fs, path string, lines []string) string
		events  int64
		torn    func(lines []string) *verify.Torn
		kind    string // "": ok
		seq     *int64
		offset  func(lines []string) *int64
		message string
	}{
		{name: "clean", events: 3},
		{
			name: "torn tail",
			damage: func(t *testing.T, fsys afero.Fs, path string, lines []string) string {
				write(t, fsys, path, append(lines, `{"seq":3,"type":"x","ti`)...)
				return path
			},
			events: 3,
			torn: func(lines []string) *verify.Torn {
				return &verify.Torn{Offset: *offsetOf(lines, 4), Bytes: int64(len(`{"seq":3,"type":"x","ti`))}
			},
		},
		{
			name: "NUL tail",
			damage: func(t *testing.T, fsys afero.Fs, path string, lines []string) string {
				write(t, fsys, path, append(lines, "\x00\x00\x00\x00\n")...)
				return path
			},
			events: 3,
			torn:   func(lines []string) *verify.Torn { return &verify.Torn{Offset: *offsetOf(lines, 4), Bytes: 5} },
		},
		{
			// Regression: read as a torn tail, verify said ok and the next
			// append cut the acknowledged row (docs/format.md, Torn tail or
			// corruption).
			name: "the last row's newline flipped after its append was acknowledged",
			damage: func(t *testing.T, fsys afero.Fs, path string, lines []string) string {
				write(t, fsys, path, lines[0], lines[1], lines[2], strings.TrimSuffix(lines[3], "\n")+"\v")
				return path
			},
			events: 2, kind: verify.KindCorrupt, seq: ptr(2),
			offset:  func(lines []string) *int64 { return offsetOf(lines, 3) },
			message: "acknowledged",
		},
		{
			// Regression: the tail does not read, so the store's Stat fails
			// too; Session reported no path and no events.
			name: "garbage after the last row",
			damage: func(t *testing.T, fsys afero.Fs, path string, lines []string) string {
				write(t, fsys, path, lines[0], lines[1], lines[2], strings.TrimSuffix(lines[3], "\n")+"garbage\n")
				return path
			},
			events: 2, kind: verify.KindCorrupt, seq: ptr(2),
			offset:  func(lines []string) *int64 { return offsetOf(lines, 3) },
			message: "unexpected bytes after the row",
		},
		{
			name: "garbage row in the middle",
			damage: func(t *testing.T, fsys afero.Fs, path string, lines []string) string {
				write(t, fsys, path, lines[0], lines[1], "garbage\n", lines[2], lines[3])
				return path
			},
			events: 1, kind: verify.KindCorrupt, seq: ptr(1),
			offset:  func(lines []string) *int64 { return offsetOf(lines, 2) },
			message: "repair --salvage",
		},
		{
			name: "seq gap",
			damage: func(t *testing.T, fsys afero.Fs, path string, lines []string) string {
				write(t, fsys, path, lines[0], lines[1], lines[3])
				return path
			},
			events: 1, kind: verify.KindCorrupt, seq: ptr(1),
			offset: func(lines []string) *int64 { return offsetOf(lines, 2) },
		},
		{
			name: "NUL hole before a valid row",
			damage: func(t *testing.T, fsys afero.Fs, path string, lines []string) string {
				write(t, fsys, path, lines[0], lines[1], strings.Repeat("\x00", len(lines[2])-1)+"\n", lines[3])
				return path
			},
			events: 1, kind: verify.KindCorrupt, seq: ptr(1),
			offset: func(lines []string) *int64 { return offsetOf(lines, 2) },
		},
		{
			// A reserved event a writer would have refused (written by
			// another tool) is reported with its seq, an unknown offset and
			// a fix that works: a fork before it. Regression: "invalid
			// rollback: <nil>" at offset 0, advising a salvage that cut
			// nothing.
			name: "a reserved event no writer accepts",
			damage: func(t *testing.T, fsys afero.Fs, path string, lines []string) string {
				write(t, fsys, path, lines[0], lines[1], `{"seq":1,"type":"rollback","time":0,"data":{"to":5}}`+"\n", lines[3])
				return path
			},
			events: 1, kind: verify.KindCorrupt, seq: ptr(1),
			offset:  func([]string) *int64 { return nil },
			message: "to seq 5 is not before the rollback's own seq",
		},
		{
			name: "version 2 header",
			damage: func(t *testing.T, fsys afero.Fs, path string, lines []string) string {
				id := strings.TrimSuffix(filepath.Base(path), ".jsonl")
				write(t, fsys, path, `{"format":"sessionlog","version":2,"id":"`+id+`","createdAt":0}`+"\n", lines[1])
				return path
			},
			kind:    verify.KindVersion,
			offset:  func([]string) *int64 { return ptr(0) },
			message: "version 2",
		},
		{
			name: "header id does not match the file name",
			damage: func(t *testing.T, fsys afero.Fs, path string, lines []string) string {
				moved := filepath.Join(dir, other+".jsonl")
				require.NoError(t, fsys.Rename(path, moved))
				return moved
			},
			kind:    verify.KindCorrupt,
			offset:  func([]string) *int64 { return ptr(0) },
			message: "does not match the file name",
		},
		{
			name: "freely named export",
			damage: func(t *testing.T, fsys afero.Fs, path string, lines []string) string {
				free := filepath.Join(dir, "export.jsonl")
				require.NoError(t, fsys.Rename(path, free))
				return free
			},
			events: 3,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys, st, id, path, lines := threeEvents(t)
			target := path
			if tt.damage != nil {
				target = tt.damage(t, fsys, path, lines)
			}
			check := func(t *testing.T, rep verify.Report) {
				require.Equal(t, tt.events, rep.Events)
				require.Equal(t, tt.events, rep.FileEvents, "no fork: all its own")
				require.Zero(t, rep.Checkpoints)
				require.Zero(t, rep.Unchecked)
				var torn *verify.Torn
				if tt.torn != nil {
					torn = tt.torn(lines)
				}
				require.Equal(t, torn, rep.Torn)
				if tt.kind == "" {
					require.True(t, rep.OK)
					require.Nil(t, rep.Error)
					return
				}
				require.False(t, rep.OK)
				require.NotNil(t, rep.Error)
				require.Equal(t, tt.kind, rep.Error.Kind, rep.Error.Message)
				require.Equal(t, tt.seq, rep.Error.Seq)
				require.Equal(t, tt.offset(lines), rep.Error.Offset)
				require.Contains(t, rep.Error.Message, tt.message)
				require.NotContains(t, rep.Error.Message, "<nil>")
				require.Equal(t, rep.Error.Message, rep.Error.Err.Error())
			}
			t.Run("File", func(t *testing.T) {
				rep := verify.File(t.Context(), fsys, target)
				require.Equal(t, target, rep.Path)
				if tt.kind != verify.KindVersion && !strings.Contains(tt.name, "file name") {
					require.Equal(t, id, *rep.ID)
				}
				check(t, rep)
			})
			if target == path {
				t.Run("Session", func(t *testing.T) {
					rep := verify.Session(t.Context(), st, id)
					require.Equal(t, id, *rep.ID)
					require.Equal(t, path, rep.Path)
					check(t, rep)
				})
			}
		})
	}
}

// A checkpoint whose digests do not match what precedes it is a digest
// failure at its seq; one naming a projection verify does not know is
// counted as unchecked, not failed.
func TestDigests(t *testing.T) {
	fsys := afero.NewMemMapFs()
	st := file.New(fsys, dir)
	h, err := st.Create(t.Context())
	require.NoError(t, err)
	_, err = h.Append(t.Context(), ev("user/message", `{"text":"hi"}`))
	require.NoError(t, err)
	_, err = checkpoint.Create(t.Context(), h)
	require.NoError(t, err)
	log, _, err := h.LogDigest(t.Context())
	require.NoError(t, err)
	_, err = h.Append(t.Context(), ev(eventlog.TypeCheckpoint, `{"log":"`+log+`","state":{"projection":"mine/v3","digest":"`+log+`"}}`))
	require.NoError(t, err)
	require.NoError(t, h.Close())
	id, path := h.ID(), h.Path()

	rep := verify.Session(t.Context(), st, id)
	require.True(t, rep.OK, rep.Error)
	require.Equal(t, int64(2), rep.Checkpoints)
	require.Equal(t, int64(1), rep.Unchecked)
	require.Equal(t, int64(3), rep.Events)

	// Same length, same shape: only the digest tells.
	b, err := afero.ReadFile(fsys, path)
	require.NoError(t, err)
	write(t, fsys, path, strings.Replace(string(b), `"hi"`, `"ho"`, 1))
	for name, rep := range map[string]verify.Report{
		"Session": verify.Session(t.Context(), st, id),
		"File":    verify.File(t.Context(), fsys, path),
	} {
		require.False(t, rep.OK, name)
		require.Equal(t, verify.KindDigest, rep.Error.Kind, name)
		require.Equal(t, ptr(1), rep.Error.Seq, name)
		require.Nil(t, rep.Error.Offset, name)
		require.Equal(t, int64(3), rep.Events, "%s: every row was checked", name)
	}
}

// A fork counts its logical log as stat does, its own events apart; a
// fork whose parent is gone is a lineage failure.
func TestFork(t *testing.T) {
	fsys, st, id, _, _ := threeEvents(t)
	f, err := st.Fork(t.Context(), id, 1)
	require.NoError(t, err)
	_, err = f.Append(t.Context(), ev("user/message", `{"text":"fork"}`))
	require.NoError(t, err)
	require.NoError(t, f.Close())
	for name, rep := range map[string]verify.Report{
		"Session": verify.Session(t.Context(), st, f.ID()),
		"File":    verify.File(t.Context(), fsys, f.Path()),
	} {
		require.True(t, rep.OK, "%s: %v", name, rep.Error)
		require.Equal(t, int64(3), rep.Events, name)
		require.Equal(t, int64(1), rep.FileEvents, name)
	}
	require.NoError(t, fsys.Remove(filepath.Join(dir, id+".jsonl")))
	for name, rep := range map[string]verify.Report{
		"Session": verify.Session(t.Context(), st, f.ID()),
		"File":    verify.File(t.Context(), fsys, f.Path()),
	} {
		require.False(t, rep.OK, name)
		require.Equal(t, verify.KindLineage, rep.Error.Kind, "%s: %s", name, rep.Error.Message)
		require.ErrorIs(t, rep.Error.Err, handle.ErrLineage, name)
	}
}

// A session the store refuses is never called clean, whichever way it is
// named: both encodings holding different logs (corrupt, "stored twice"),
// a folder named like a session (io, refused as not a regular file).
// Regression: verify read the raw file directly and reported it ok.
func TestRefused(t *testing.T) {
	fsys, st, id, raw, lines := threeEvents(t)
	require.NoError(t, st.Convert(t.Context(), id, handle.EncodingZstd))
	write(t, fsys, raw, lines[:3]...) // the raw file holds one event fewer
	zst := raw + ".zst"
	for name, rep := range map[string]verify.Report{
		"Session":  verify.Session(t.Context(), st, id),
		"File raw": verify.File(t.Context(), fsys, raw),
		"File zst": verify.File(t.Context(), fsys, zst),
	} {
		require.False(t, rep.OK, name)
		require.Equal(t, verify.KindCorrupt, rep.Error.Kind, name)
		require.Contains(t, rep.Error.Message, "stored twice", name)
		require.ErrorIs(t, rep.Error.Err, file.ErrDuplicate, name)
	}

	const folder = "01JDX3N0Q3Z8Y6W2D1V5K7M9PB"
	require.NoError(t, fsys.MkdirAll(filepath.Join(dir, folder+".jsonl"), 0o700))
	for name, rep := range map[string]verify.Report{
		"Session": verify.Session(t.Context(), st, folder),
		"File":    verify.File(t.Context(), fsys, filepath.Join(dir, folder+".jsonl")),
	} {
		require.False(t, rep.OK, name)
		require.Equal(t, verify.KindIO, rep.Error.Kind, name)
		require.ErrorIs(t, rep.Error.Err, file.ErrNotRegular, name)
		require.Equal(t, folder, *rep.ID, name)
	}
}

// Store checks every session in ID order, those its List cannot describe
// included; Files lists what a folder holds named like a session, in name
// order, and nothing else.
func TestStoreAndFiles(t *testing.T) {
	fsys, st, id, path, lines := threeEvents(t)
	h, err := st.Create(t.Context())
	require.NoError(t, err)
	require.NoError(t, h.Close())
	bad := h.Path()
	b, err := afero.ReadFile(fsys, bad)
	require.NoError(t, err)
	write(t, fsys, bad, string(b), "garbage\n", lines[1])
	const folder = "01JDX3N0Q3Z8Y6W2D1V5K7M9PB"
	require.NoError(t, fsys.MkdirAll(filepath.Join(dir, folder+".jsonl"), 0o700))
	write(t, fsys, filepath.Join(dir, "notes.txt"), "not a log")

	var got []string
	for rep, err := range verify.Store(t.Context(), st) {
		require.NoError(t, err)
		verdict := "ok"
		if !rep.OK {
			verdict = rep.Error.Kind
		}
		got = append(got, *rep.ID+" "+verdict)
	}
	want := []string{folder + " io", id + " ok", h.ID() + " corrupt"}
	require.Equal(t, want, got)

	files, err := verify.Files(fsys, dir)
	require.NoError(t, err)
	require.Equal(t, []string{filepath.Join(dir, folder+".jsonl"), path, bad}, files)

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	for _, err := range verify.Store(ctx, st) {
		require.ErrorIs(t, err, context.Canceled)
	}
}

// On JetStream a session is checked the same way, and a fork counts its
// logical log. Regression: verify on JetStream counted a fork's own
// events as its events (and none as its own).
func TestSessionJetStream(t *testing.T) {
	js := natstest.Connect(t, natstest.Run(t))
	st, err := jetstream.New(t.Context(), js, jetstream.WithPrefix("verify"))
	require.NoError(t, err)
	h, err := st.Create(t.Context())
	require.NoError(t, err)
	_, err = h.Append(t.Context(), ev("user/message", `{"text":"a"}`), ev("assistant/message", `{"text":"b"}`), ev("user/message", `{"text":"c"}`))
	require.NoError(t, err)
	_, err = checkpoint.Create(t.Context(), h)
	require.NoError(t, err)
	require.NoError(t, h.Close())
	f, err := st.Fork(t.Context(), h.ID(), 1)
	require.NoError(t, err)
	require.NoError(t, f.Close())

	rep := verify.Session(t.Context(), st, h.ID())
	require.True(t, rep.OK, rep.Error)
	require.Equal(t, verify.Report{Path: h.Path(), ID: rep.ID, OK: true, Events: 4, FileEvents: 4, Checkpoints: 1, Protection: &redact.Protection{}}, rep)
	rep = verify.Session(t.Context(), st, f.ID())
	require.True(t, rep.OK, rep.Error)
	require.Equal(t, int64(2), rep.Events)
	require.Zero(t, rep.FileEvents)
	var n int
	for rep, err := range verify.Store(t.Context(), st) {
		require.NoError(t, err)
		require.True(t, rep.OK)
		n++
	}
	require.Equal(t, 2, n)
	rep = verify.Session(t.Context(), st, "01JDX3N0Q3Z8Y6W2D1V5K7M9PA")
	require.False(t, rep.OK)
	require.ErrorIs(t, rep.Error.Err, handle.ErrNotFound)
}
