package inspect_test

import (
	"encoding/json"
	"errors"
	"fmt"
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
	"github.com/sessionlog/sessionlog/handle/jetstream"
	"github.com/sessionlog/sessionlog/internal/testkit/natstest"
	"github.com/sessionlog/sessionlog/ops/inspect"
	"github.com/sessionlog/sessionlog/projection"
)

// ev is an event of type typ with data.
func ev(typ string, time int64, data string) eventlog.Event {
	e := eventlog.Event{Type: typ, Time: time}
	if data != "" {
		e.Data = json.RawMessage(data)
	}
	return e
}

func messages(n int) []eventlog.Event {
	out := make([]eventlog.Event, n)
	for i := range out {
		out[i] = ev("user/message", int64(i+1), fmt.Sprintf(`{"text":"m%d"}`, i))
	}
	return out
}

// session creates a session of st holding evs (flushed, closed).
func session(t *testing.T, st handle.Store, evs []eventlog.Event, opts ...handle.Option) string {
	t.Helper()
	h, err := st.Create(t.Context(), opts...)
	require.NoError(t, err)
	_, err = h.Append(t.Context(), evs...)
	require.NoError(t, err)
	require.NoError(t, h.Close())
	return h.ID()
}

// readAll ranges over r's events: the seqs it yielded and the error that
// ended it.
func readAll(t *testing.T, r *inspect.Read) ([]int64, error) {
	t.Helper()
	var seqs []int64
	for e, err := range r.Events(t.Context()) {
		if err != nil {
			return seqs, err
		}
		seqs = append(seqs, e.Seq)
	}
	return seqs, nil
}

// stores are the two stores a read works on alike.
func stores(t *testing.T) map[string]handle.Store {
	js, err := jetstream.New(t.Context(), natstest.Connect(t, natstest.Run(t)), jetstream.WithPrefix("inspect"))
	require.NoError(t, err)
	return map[string]handle.Store{"files": file.New(afero.NewMemMapFs(), "/s"), "jetstream": js}
}

// A damaged log reads as the events before its damage, then the damage
// (docs/cli.md, cat): the open refuses it, and a salvage read finds them
// (the fixtures: damage at seq 2, offset 282). A header that does not
// parse has nothing before it.
func TestReadBeforeTheDamage(t *testing.T) {
	files := file.New(afero.NewOsFs(), filepath.Join("..", "..", "testdata", "raw"))
	for _, name := range []string{"corrupt-garbage-row", "corrupt-seq-gap", "corrupt-nul-hole"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join("..", "..", "testdata", "raw", name+".jsonl")
			for _, tc := range []struct {
				from, to int64
				want     []int64
			}{{0, handle.End, []int64{0, 1}}, {1, handle.End, []int64{1}}, {0, 0, []int64{0}}} {
				r := inspect.NewRead(inspect.File(files, path), tc.from, tc.to)
				seqs, err := readAll(t, r)
				require.Equal(t, tc.want, seqs, "from %d to %d", tc.from, tc.to)
				var ce *eventlog.CorruptError
				require.ErrorAs(t, err, &ce)
				require.Equal(t, [2]int64{282, 2}, [2]int64{ce.Offset, ce.Seq})
			}
		})
	}
	// Regression: a session of a store whose last row is damaged was
	// looked up by Stat, which reads the tail, and read as nothing.
	st := file.New(afero.NewMemMapFs(), "/s")
	id := session(t, st, messages(3))
	path, err := st.Path(id)
	require.NoError(t, err)
	data, err := afero.ReadFile(st.Fs(), path)
	require.NoError(t, err)
	require.NoError(t, afero.WriteFile(st.Fs(), path, append(data[:len(data)-1], "garbage\n"...), 0o600))
	seqs, err := readAll(t, inspect.NewRead(inspect.InStore(st, id), 0, handle.End))
	require.Equal(t, []int64{0, 1}, seqs, "the session by ID")
	require.ErrorIs(t, err, eventlog.ErrCorrupt)

	fs := afero.NewMemMapFs()
	require.NoError(t, afero.WriteFile(fs, "/x/bad.jsonl", []byte("{not a header}\n"), 0o600))
	seqs, err = readAll(t, inspect.NewRead(inspect.File(file.New(fs, "/x"), "/x/bad.jsonl"), 0, handle.End))
	require.Empty(t, seqs)
	require.ErrorIs(t, err, eventlog.ErrCorrupt)
}

// Every checkpoint the read passes is checked, whatever from says; a
// mismatch does not stop the read (every event is yielded) but is kept
// in Mismatches; a clean log has none. The same on every store.
func TestReadChecksCheckpoints(t *testing.T) {
	for name, st := range stores(t) {
		t.Run(name, func(t *testing.T) {
			h, err := st.Create(t.Context())
			require.NoError(t, err)
			_, err = h.Append(t.Context(), messages(2)...)
			require.NoError(t, err)
			_, err = checkpoint.Create(t.Context(), h)
			require.NoError(t, err)
			_, err = h.Append(t.Context(), messages(2)...)
			require.NoError(t, err)
			require.NoError(t, h.Close())

			r := inspect.NewRead(inspect.InStore(st, h.ID()), 3, handle.End)
			seqs, err := readAll(t, r)
			require.NoError(t, err)
			require.Equal(t, []int64{3, 4}, seqs)
			require.Empty(t, r.Mismatches)
			require.Nil(t, r.Unchecked)
			require.Equal(t, h.Path(), r.Path)
		})
	}
	// A checkpoint whose digest no longer matches: the same length and
	// shape, one event changed behind the store's back.
	fs := afero.NewMemMapFs()
	st := file.New(fs, "/s")
	h, err := st.Create(t.Context())
	require.NoError(t, err)
	_, err = h.Append(t.Context(), ev("user/message", 1, `{"text":"hi"}`))
	require.NoError(t, err)
	_, err = checkpoint.Create(t.Context(), h)
	require.NoError(t, err)
	_, err = h.Append(t.Context(), messages(1)...)
	require.NoError(t, err)
	require.NoError(t, h.Close())
	b, err := afero.ReadFile(fs, h.Path())
	require.NoError(t, err)
	require.NoError(t, afero.WriteFile(fs, h.Path(), []byte(strings.Replace(string(b), `"hi"`, `"ho"`, 1)), 0o600))
	for _, from := range []int64{0, 2} {
		r := inspect.NewRead(inspect.InStore(st, h.ID()), from, handle.End)
		seqs, err := readAll(t, r)
		require.NoError(t, err, "a mismatch is no read error")
		require.Len(t, seqs, 3-int(from), "every event from %d", from)
		require.Len(t, r.Mismatches, 1)
		var de *eventlog.LogDigestError
		require.ErrorAs(t, r.Mismatches[0], &de)
		require.Equal(t, int64(1), de.Seq)
	}
}

// A fork whose parent is gone reads from past its fork point, its
// digests unchecked (they cover the parent's events) and Unchecked says
// why; from its start it fails with the lineage error.
func TestReadForkWithoutParent(t *testing.T) {
	fs := afero.NewMemMapFs()
	st := file.New(fs, "/s")
	parent := session(t, st, messages(4))
	f, err := st.Fork(t.Context(), parent, 1)
	require.NoError(t, err)
	_, err = f.Append(t.Context(), messages(2)...)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	require.NoError(t, fs.Remove("/s/"+parent+".jsonl"))

	r := inspect.NewRead(inspect.InStore(st, f.ID()), 2, handle.End)
	seqs, err := readAll(t, r)
	require.NoError(t, err)
	require.Equal(t, []int64{2, 3}, seqs)
	require.ErrorIs(t, r.Unchecked, handle.ErrLineage)

	_, err = readAll(t, inspect.NewRead(inspect.InStore(st, f.ID()), 0, handle.End))
	require.ErrorIs(t, err, handle.ErrLineage)
}

// A torn tail is not read and is said; stopping the range stops the read.
func TestReadTornAndStopped(t *testing.T) {
	files := file.New(afero.NewOsFs(), filepath.Join("..", "..", "testdata", "raw"))
	r := inspect.NewRead(inspect.File(files, filepath.Join("..", "..", "testdata", "raw", "torn-partial-row.jsonl")), 0, handle.End)
	seqs, err := readAll(t, r)
	require.NoError(t, err)
	require.NotEmpty(t, seqs)
	require.NotNil(t, r.Torn)
	n := 0
	for range r.Events(t.Context()) {
		n++
		break
	}
	require.Equal(t, 1, n)
}

// A salvage read needs a file: on a store whose sessions are not files it
// is refused with ErrNotFiles; on files it reads past the damage.
func TestSalvage(t *testing.T) {
	files := file.New(afero.NewOsFs(), filepath.Join("..", "..", "testdata", "raw"))
	l := inspect.File(files, filepath.Join("..", "..", "testdata", "raw", "corrupt-garbage-row.jsonl"))
	require.True(t, l.IsFile())
	var seqs []int64
	res, err := l.Salvage(t.Context(), func(e eventlog.Event) error { seqs = append(seqs, e.Seq); return nil })
	require.NoError(t, err)
	require.NotEmpty(t, res.Skips)
	require.Greater(t, len(seqs), 2, "events past the damage")

	st := stores(t)["jetstream"]
	id := session(t, st, messages(2))
	js := inspect.InStore(st, id)
	require.False(t, js.IsFile())
	_, err = js.Salvage(t.Context(), func(eventlog.Event) error { return nil })
	require.ErrorIs(t, err, inspect.ErrNotFiles)
	require.ErrorContains(t, err, id)
	stop := errors.New("stop")
	_, err = l.Salvage(t.Context(), func(eventlog.Event) error { return stop })
	require.ErrorIs(t, err, stop, "fn's error ends the salvage")
}

// Facts describes a session as Stat does and reads its stop facts from
// the tail, on every store; on files a tail no crash leaves fails as a
// full read does.
func TestFacts(t *testing.T) {
	for name, st := range stores(t) {
		t.Run(name, func(t *testing.T) {
			id := session(t, st, []eventlog.Event{
				ev("turn/start", 1, ""), ev("user/message", 2, `{"text":"go"}`), ev("turn/end", 3, `{"kind":"completed"}`),
				ev("turn/start", 4, ""), ev("user/message", 5, `{"text":"again"}`),
			})
			info, facts, err := inspect.Facts(t.Context(), inspect.InStore(st, id))
			require.NoError(t, err)
			want, err := st.Stat(t.Context(), id)
			require.NoError(t, err)
			require.Equal(t, want, info)
			require.True(t, facts.OpenTurn)
			require.Equal(t, int64(2), facts.Stop.Seq)
			require.True(t, facts.Verdict.Resumable)
			_, _, err = inspect.Facts(t.Context(), inspect.InStore(st, "01JDX3N0Q3Z8Y6W2D1V5K7M9PA"))
			require.ErrorIs(t, err, handle.ErrNotFound)
		})
	}
	fs := afero.NewMemMapFs()
	st := file.New(fs, "/s")
	h, err := st.Create(t.Context())
	require.NoError(t, err)
	require.NoError(t, h.Close())
	f, err := fs.OpenFile(h.Path(), os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.WriteString(strings.Repeat("x", eventlog.MaxRowSize+1))
	require.NoError(t, err)
	require.NoError(t, f.Close())
	_, _, err = inspect.Facts(t.Context(), inspect.InStore(st, h.ID()))
	require.ErrorIs(t, err, eventlog.ErrCorrupt, "as cat and append call it")
}

// Diff finds the first seq whose canonical bytes differ, with the event
// each side holds there (none past a log's end), and nothing in
// identical logs; headers are not compared.
func TestDiff(t *testing.T) {
	st := file.New(afero.NewMemMapFs(), "/s")
	base := session(t, st, messages(5))
	same := session(t, st, messages(5), handle.WithLabels(map[string]string{"other": "header"}))
	changed := session(t, st, append(messages(3), ev("user/message", 4, `{"text":"other"}`), messages(5)[4]))
	shorter := session(t, st, messages(3))
	open := func(id string) handle.Handle {
		h, err := st.Open(t.Context(), id, handle.ReadOnly)
		require.NoError(t, err)
		t.Cleanup(func() { h.Close() })
		return h
	}
	for _, tc := range []struct {
		name         string
		a, b         string
		seq          int64
		haveA, haveB bool
	}{
		{"identical", base, same, -1, false, false},
		{"an event differs", base, changed, 3, true, true},
		{"b ends first", base, shorter, 3, true, false},
		{"a ends first", shorter, base, 3, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := inspect.Diff(t.Context(), open(tc.a), open(tc.b))
			require.NoError(t, err)
			require.Equal(t, tc.seq, d.Seq)
			require.Equal(t, tc.haveA, d.A != nil)
			require.Equal(t, tc.haveB, d.B != nil)
			if d.A != nil {
				require.Equal(t, tc.seq, d.A.Seq)
			}
			require.Equal(t, int64(5), max(d.LenA, d.LenB))
		})
	}
}

// A session its writer left mid-turn is shown as a resume would leave
// it, in memory only, when no writer holds it; a writer's open turn is in
// progress and shown as it is; a closed turn needs nothing.
func TestCloseOpenTurn(t *testing.T) {
	fs := afero.NewMemMapFs()
	st := file.New(fs, "/s")
	open := session(t, st, []eventlog.Event{
		ev("turn/start", 1, ""), ev("user/message", 2, `{"text":"delete build/"}`), ev("step/start", 3, ""),
		ev("tool/call", 4, `{"id":"w","name":"rm","args":{},"effect":"write"}`),
	})
	closed := session(t, st, []eventlog.Event{ev("turn/start", 1, ""), ev("turn/end", 2, `{"kind":"completed"}`)})
	before, err := afero.ReadFile(fs, "/s/"+open+".jsonl")
	require.NoError(t, err)
	now := time.UnixMilli(1764450000000)

	for _, name := range []string{"transcript", "agent"} {
		t.Run(name, func(t *testing.T) {
			for _, tc := range []struct {
				id      string
				closers int
			}{{open, 3}, {closed, 0}} {
				p, err := projection.ByName(name)
				require.NoError(t, err)
				l := inspect.InStore(st, tc.id)
				src, err := l.Open(t.Context())
				require.NoError(t, err)
				for e, err := range src.Read(t.Context(), 0, handle.End) {
					require.NoError(t, err)
					p.Apply(e)
				}
				c, err := inspect.CloseOpenTurn(t.Context(), l, src, p, now)
				require.NoError(t, err)
				require.False(t, c.InProgress)
				require.Len(t, c.Closers, tc.closers)
				if tc.closers > 0 {
					require.Equal(t, int64(4), c.Closers[0].Seq, "the seq a resume would give it")
					require.Equal(t, "turn/end", c.Closers[2].Type)
					state, err := p.MarshalState()
					require.NoError(t, err)
					require.Contains(t, string(state), map[string]string{"transcript": "outcome unknown", "agent": `"kind":"interrupted"`}[name])
				}
				require.NoError(t, src.Close())
			}
		})
	}
	after, err := afero.ReadFile(fs, "/s/"+open+".jsonl")
	require.NoError(t, err)
	require.Equal(t, before, after, "nothing written")

	w, err := st.Open(t.Context(), open, handle.ReadWrite)
	require.NoError(t, err)
	defer w.Close()
	p := projection.NewAgent()
	for e, err := range w.Read(t.Context(), 0, handle.End) {
		require.NoError(t, err)
		p.Apply(e)
	}
	c, err := inspect.CloseOpenTurn(t.Context(), inspect.InStore(st, open), w, p, now)
	require.NoError(t, err)
	require.True(t, c.InProgress, "a writer's open turn is in progress")
	require.Empty(t, c.Closers)
}
