package inspect_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/ops/inspect"
	"github.com/sessionlog/sessionlog/projection"
	"github.com/sessionlog/sessionlog/recorder"
)

func marshal(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// TestReportJSON pins the JSON of the stat and tree reports, key for key
// and in order: what stat --json, ls --json and ls --tree --json print
// (docs/cli.md) and serve's /api/ answers.
func TestReportJSON(t *testing.T) {
	fork := handle.Info{
		ID: "F", Path: "/s/F.jsonl", Encoding: "jsonl", Events: 5, LastSeq: 4, LastType: "user/message", LastTime: 2000, SizeBytes: 321,
		Header: eventlog.Header{ID: "F", CreatedAt: 1500, Labels: map[string]string{"agent": "a"},
			Parent: &eventlog.Parent{ID: "P", Seq: 2, Mode: eventlog.ModeChild, Call: "c1"}},
	}
	empty := handle.Info{ID: "E", Path: "/s/E.jsonl", Encoding: "zstd", LastSeq: -1, SizeBytes: 90,
		Header: eventlog.Header{ID: "E", CreatedAt: 1000}}
	const forkJSON = `{"id":"F","path":"/s/F.jsonl","encoding":"jsonl","createdAt":1500,"parent":{"id":"P","seq":2,"mode":"child","call":"c1"},` +
		`"labels":{"agent":"a"},"events":5,"lastSeq":4,"lastType":"user/message","lastTime":2000,"sizeBytes":321`
	const emptyJSON = `{"id":"E","path":"/s/E.jsonl","encoding":"zstd","createdAt":1000,"parent":null,` +
		`"labels":{},"events":0,"lastSeq":-1,"lastType":null,"lastTime":null,"sizeBytes":90`
	stopped := recorder.Facts{Stop: &recorder.Stop{Seq: 4, Kind: "failed", Reason: "boom"},
		Verdict: recorder.Verdict{Resumable: false, Reason: "it failed"}}
	fresh := recorder.Facts{OpenTurn: true, Verdict: recorder.Verdict{Resumable: true, Reason: "open"}}
	gone := errors.New("gone")
	tests := []struct {
		name string
		v    any
		want string
	}{
		{"ls line", inspect.NewStatReport(fork), forkJSON + `}`},
		{"ls line of an empty session", inspect.NewStatReport(empty), emptyJSON + `}`},
		{"stat of a stopped session", inspect.NewStatReport(fork).WithFacts(stopped),
			forkJSON + `,"openTurn":false,"stop":{"seq":4,"kind":"failed","reason":"boom","verdict":{"resumable":false,"reason":"it failed"}}}`},
		{"stat before any turn/end", inspect.NewStatReport(empty).WithFacts(fresh),
			emptyJSON + `,"openTurn":true,"stop":{"seq":null,"kind":"","reason":"","verdict":{"resumable":true,"reason":"open"}}}`},
		{"tree line", inspect.ForestRow{Node: &handle.Node{ParentGone: true}, Depth: 1, Info: fork}.Report(),
			forkJSON + `,"depth":1,"parentGone":true}`},
		{"tree line of a session not described", inspect.ForestRow{Node: &handle.Node{}, Info: empty, Err: gone}.Report(),
			emptyJSON + `,"depth":0,"parentGone":false,"error":"gone"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, marshal(t, tt.v))
		})
	}
}

// TestStat: Stat is the session's description with its stop facts read
// from its tail.
func TestStat(t *testing.T) {
	st := file.New(afero.NewMemMapFs(), "/s")
	id := session(t, st, messages(3))
	rep, err := inspect.Stat(t.Context(), inspect.InStore(st, id))
	require.NoError(t, err)
	require.Equal(t, id, rep.ID)
	require.Equal(t, int64(3), rep.Events)
	require.NotNil(t, rep.OpenTurn)
	require.NotNil(t, rep.Stop)
	_, err = inspect.Stat(t.Context(), inspect.InStore(st, "01JDX3N0Q3Z8Y6W2D1V5K7M9PZ"))
	require.ErrorIs(t, err, handle.ErrNotFound)
}

// TestList: the last active first, ties by ID descending; a session that
// cannot be described is reported by ID and the others listed.
func TestList(t *testing.T) {
	st := file.New(afero.NewOsFs(), t.TempDir()) // a folder's mtime tells the index it is stale
	old := session(t, st, nil, handle.WithCreatedAt(1000))
	busy := session(t, st, []eventlog.Event{ev("user/message", 5000, `{"text":"now"}`)}, handle.WithCreatedAt(500)) // created first, active last
	late := session(t, st, nil, handle.WithCreatedAt(3000))
	infos, broken, err := inspect.List(t.Context(), st)
	require.NoError(t, err)
	require.Empty(t, broken)
	var ids []string
	for _, in := range infos {
		ids = append(ids, in.ID)
	}
	require.Equal(t, []string{busy, late, old}, ids)

	// A log that appears behind the store's back (a copy restored by
	// hand) makes the session index stale: the listing reads it, and
	// reports it when it cannot describe it.
	bad := "01JDX3N0Q3Z8Y6W2D1V5K7M9PA"
	path, err := st.Path(bad)
	require.NoError(t, err)
	require.NoError(t, afero.WriteFile(st.Fs(), path, []byte("{not a header}\n"), 0o600))
	infos, broken, err = inspect.List(t.Context(), st)
	require.NoError(t, err)
	require.Len(t, infos, 3)
	require.Len(t, broken, 1)
	require.Contains(t, broken[0].Error(), bad)
}

// TestState: the state a reader is shown is the replay to the last event,
// with an open turn no writer holds closed in memory, and rollbacks
// applied.
func TestState(t *testing.T) {
	st := file.New(afero.NewMemMapFs(), "/s")
	id := session(t, st, []eventlog.Event{
		ev("turn/start", 1, ""), ev("user/message", 2, `{"text":"first"}`), ev("turn/end", 3, `{"kind":"completed"}`),
		ev("turn/start", 4, ""), ev("user/message", 5, `{"text":"abandoned"}`), ev("turn/end", 6, `{"kind":"completed"}`),
		ev("rollback", 7, `{"to":2}`),
		ev("turn/start", 8, ""), ev("user/message", 9, `{"text":"open"}`),
	})
	l := inspect.InStore(st, id)
	src, err := l.Open(t.Context())
	require.NoError(t, err)
	defer src.Close()
	p := projection.NewTranscript()
	_, c, err := inspect.State(t.Context(), l, src, p, time.UnixMilli(1764450000000))
	require.NoError(t, err)
	require.False(t, c.InProgress)
	require.NotEmpty(t, c.Closers, "the open turn is closed in memory")
	var texts []string
	for _, m := range p.State().Messages {
		texts = append(texts, m.Text)
	}
	require.Equal(t, []string{"first", "open"}, texts, "the rollback applied")
}
