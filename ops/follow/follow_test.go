package follow_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/handle/jetstream"
	"github.com/sessionlog/sessionlog/internal/testkit/natstest"
	"github.com/sessionlog/sessionlog/ops/follow"
)

// fixture is a session being written and a Follower of it.
type fixture struct {
	t     *testing.T
	st    handle.Store
	id    string
	f     *follow.Follower
	notes []follow.Note
}

func newFixture(t *testing.T, st handle.Store, opts ...follow.Option) *fixture {
	t.Helper()
	h, err := st.Create(t.Context())
	require.NoError(t, err)
	require.NoError(t, h.Close())
	x := &fixture{t: t, st: st, id: h.ID()}
	x.add("a", "b")
	f, err := follow.Open(t.Context(), follow.Session(st, x.id), append(opts, follow.WithNotes(func(n follow.Note) { x.notes = append(x.notes, n) }))...)
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	x.f = f
	return x
}

// add appends events of these types, as one writer run (open, append,
// flush, close).
func (x *fixture) add(types ...string) {
	x.t.Helper()
	w, err := x.st.Open(x.t.Context(), x.id, handle.ReadWrite)
	require.NoError(x.t, err)
	for _, typ := range types {
		_, err := w.Append(x.t.Context(), eventlog.Event{Type: typ, Time: 1, Data: json.RawMessage(`{}`)})
		require.NoError(x.t, err)
	}
	require.NoError(x.t, w.Close())
}

// poll looks once and returns what was yielded, as "seq:type" words.
func (x *fixture) poll() string {
	x.t.Helper()
	var got []string
	for e, err := range x.f.Poll(x.t.Context()) {
		require.NoError(x.t, err)
		got = append(got, fmt.Sprintf("%d:%s", e.Seq, e.Type))
	}
	return strings.Join(got, " ")
}

// said returns the notes since the last call, in words.
func (x *fixture) said() string {
	var s []string
	for _, n := range x.notes {
		s = append(s, n.String())
	}
	x.notes = nil
	return strings.Join(s, "\n")
}

func fileStore(t *testing.T) (afero.Fs, *file.Store) {
	fsys := afero.NewMemMapFs()
	return fsys, file.New(fsys, "/s")
}

// The first look yields the log from the start point; every later one
// what was appended since, and nothing (and no note) when nothing was.
func TestFollowAppends(t *testing.T) {
	_, st := fileStore(t)
	for _, tc := range []struct {
		name  string
		opt   follow.Option
		first string
	}{
		{"from the start", follow.From(0), "0:a 1:b"},
		{"from seq 1", follow.From(1), "1:b"},
		{"the last 1", follow.Last(1), "1:b"},
		{"the last 0", follow.Last(0), ""},
		{"the last 10", follow.Last(10), "0:a 1:b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := newFixture(t, st, tc.opt)
			require.Equal(t, tc.first, x.poll())
			require.Equal(t, "", x.poll())
			x.add("c")
			require.Equal(t, "2:c", x.poll())
			x.add("d", "e")
			require.Equal(t, "3:d 4:e", x.poll())
			require.Equal(t, "", x.poll())
			require.Empty(t, x.said())
			require.Equal(t, int64(5), x.f.Next())
		})
	}
}

// A start past the end of the log waits for the log to reach it, and is
// no cut.
func TestFollowFromPastTheEnd(t *testing.T) {
	_, st := fileStore(t)
	x := newFixture(t, st, follow.From(3))
	require.Equal(t, "", x.poll())
	x.add("c")
	require.Equal(t, "", x.poll())
	x.add("d", "e")
	require.Equal(t, "3:d 4:e", x.poll())
	require.Empty(t, x.said())
}

// A convert moves the session to another file: the Follower says so and
// follows it there, and back, yielding nothing twice.
func TestFollowConvert(t *testing.T) {
	_, st := fileStore(t)
	x := newFixture(t, st)
	require.Equal(t, "0:a 1:b", x.poll())
	require.NoError(t, st.Convert(t.Context(), x.id, handle.EncodingZstd))
	x.add("c")
	require.Equal(t, "2:c", x.poll())
	require.Equal(t, "the session moved to /s/"+x.id+".jsonl.zst (logtool convert): following the new file", x.said())
	require.NoError(t, st.Convert(t.Context(), x.id, handle.EncodingRaw))
	x.add("d")
	require.Equal(t, "3:d", x.poll())
	require.Contains(t, x.said(), "moved to /s/"+x.id+".jsonl ")

	// Replaced under the same name (a compaction): found once the store
	// holds an event the old file does not.
	require.NoError(t, st.Convert(t.Context(), x.id, handle.EncodingZstd))
	require.Equal(t, "", x.poll())
	x.said()
	require.NoError(t, st.Compact(t.Context(), x.id))
	require.Equal(t, "", x.poll())
	x.add("e")
	require.Equal(t, "4:e", x.poll())
	require.Equal(t, "/s/"+x.id+".jsonl.zst was replaced (a convert, a repair or a writer's rewrite): following the new file", x.said())
}

// A log cut back (a salvage) and written again, shorter or past its old
// size: the Follower goes on from where the log parts from what it
// yielded, and says so.
func TestFollowCut(t *testing.T) {
	for _, more := range []int{1, 4} {
		t.Run(fmt.Sprintf("%d written after the cut", more), func(t *testing.T) {
			fsys, st := fileStore(t)
			x := newFixture(t, st)
			x.add("c", "d")
			require.Equal(t, "0:a 1:b 2:c 3:d", x.poll())
			path := "/s/" + x.id + ".jsonl"
			b, err := afero.ReadFile(fsys, path)
			require.NoError(t, err)
			cut := 0
			for range 3 { // the header and seqs 0, 1
				cut += bytes.IndexByte(b[cut:], '\n') + 1
			}
			require.NoError(t, afero.WriteFile(fsys, path, b[:cut], 0o600))
			types := []string{"x", "y", "z", "w"}[:more]
			x.add(types...)
			want := []string{}
			for i, typ := range types {
				want = append(want, fmt.Sprintf("%d:%s", 2+i, typ))
			}
			require.Equal(t, strings.Join(want, " "), x.poll())
			require.Contains(t, x.said(), "the log differs from what was shown from seq 2 on (it was cut, and perhaps written again): going on from seq 2")
		})
	}
}

// A session gone for a while (between a rename and its return) is waited
// for, said once, and followed again when it is back.
func TestFollowGoneAndBack(t *testing.T) {
	fsys, st := fileStore(t)
	x := newFixture(t, st)
	require.Equal(t, "0:a 1:b", x.poll())
	path := "/s/" + x.id + ".jsonl"
	require.NoError(t, fsys.Rename(path, "/elsewhere.jsonl"))
	require.Equal(t, "", x.poll())
	require.Equal(t, "", x.poll())
	require.Equal(t, path+" is gone (deleted, or being replaced): waiting for it to come back", x.said())
	require.NoError(t, fsys.Rename("/elsewhere.jsonl", path))
	x.add("c")
	require.Equal(t, "2:c", x.poll())
	require.Equal(t, path+" is back", x.said())
}

// A freely named file is followed by path.
func TestFollowFile(t *testing.T) {
	fsys, st := fileStore(t)
	x := newFixture(t, st)
	b, err := afero.ReadFile(fsys, "/s/"+x.id+".jsonl")
	require.NoError(t, err)
	require.NoError(t, afero.WriteFile(fsys, "/out/export.jsonl", b, 0o600))
	f, err := follow.Open(t.Context(), follow.File(file.New(fsys, "/out"), "/out/export.jsonl"))
	require.NoError(t, err)
	defer f.Close()
	var n int
	for _, err := range f.Poll(t.Context()) {
		require.NoError(t, err)
		n++
	}
	require.Equal(t, 2, n)
	_, err = follow.Open(t.Context(), follow.File(file.New(fsys, "/out"), "/out/missing.jsonl"))
	require.ErrorIs(t, err, handle.ErrNotFound)
}

// A session that cannot be opened is Open's error; a look after the
// context's end yields its error.
func TestFollowErrors(t *testing.T) {
	_, st := fileStore(t)
	x := newFixture(t, st)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	var errs []error
	for _, err := range x.f.Poll(ctx) {
		errs = append(errs, err)
	}
	require.Len(t, errs, 1)
	require.ErrorIs(t, errs[0], context.Canceled)
	_, err := follow.Open(t.Context(), follow.Session(st, "01JDX3N0Q3Z8Y6W2D1V5K7M9PA"))
	require.ErrorIs(t, err, handle.ErrNotFound)
}

// On JetStream the Follower follows the subject, across appends and
// across a detach that rewrites a fork's subject, without a word while
// nothing but appends happen.
func TestFollowJetStream(t *testing.T) {
	st, err := jetstream.New(t.Context(), natstest.Connect(t, natstest.Run(t)), jetstream.WithPrefix("follow"))
	require.NoError(t, err)
	x := newFixture(t, st, follow.Last(1))
	require.Equal(t, "1:b", x.poll())
	for i, typ := range []string{"c", "d", "e"} {
		x.add(typ)
		require.Equal(t, fmt.Sprintf("%d:%s", 2+i, typ), x.poll())
	}
	require.Empty(t, x.said())

	fork, err := st.Fork(t.Context(), x.id, 4)
	require.NoError(t, err)
	require.NoError(t, fork.Close())
	y := &fixture{t: t, st: st, id: fork.ID()}
	y.add("g")
	f, err := follow.Open(t.Context(), follow.Session(st, y.id), follow.Last(1), follow.WithNotes(func(n follow.Note) { y.notes = append(y.notes, n) }))
	require.NoError(t, err)
	defer f.Close()
	y.f = f
	require.Equal(t, "5:g", y.poll())
	require.NoError(t, st.Delete(t.Context(), x.id, handle.Detach()))
	y.add("h")
	require.Equal(t, "6:h", y.poll(), "followed across the detach")
}
