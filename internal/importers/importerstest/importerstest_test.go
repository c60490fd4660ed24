package importerstest_test

import (
	"encoding/json"
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/internal/importers"
	"github.com/sessionlog/sessionlog/internal/importers/importerstest"
)

// recorder is a testing.TB that notes a failure instead of failing.
type recorder struct {
	testing.TB
	failed bool
}

func (r *recorder) Helper()               {}
func (r *recorder) Errorf(string, ...any) { r.failed = true }
func (r *recorder) FailNow()              { r.failed = true; runtime.Goexit() }

// fails reports whether check fails.
func fails(t *testing.T, check func(testing.TB)) bool {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		check(r)
	}()
	<-done
	return r.failed
}

func TestCheckError(t *testing.T) {
	in := []byte("a\nb\n") // three lines, the last empty
	for _, c := range []struct {
		err  error
		fail bool
	}{
		{importers.Formatf("line 3: bad"), false},
		{importers.Formatf("no line named"), false},
		{importers.Formatf(`lines of type "line 99: x"`), false},
		{importers.Formatf("line 4: bad"), true},
		{importers.Formatf("x: line 0: bad"), true},
		{errors.New("line 1: not a format error"), true},
		{nil, true},
	} {
		require.Equal(t, c.fail, fails(t, func(tb testing.TB) { importerstest.CheckError(tb, c.err, in, importers.ErrFormat) }), "%v", c.err)
	}
}

func TestCheckSession(t *testing.T) {
	good := func() importers.Session {
		s := importers.NewSession("x", "/a/f.jsonl")
		var b importers.Builder
		b.Add("tool/call", 1, importers.Obj{"id", "c"})
		b.Add("b", 2, importers.Obj{})
		s.Events, _ = b.Events()
		s.Spawns["k"] = importers.Spawn{Seq: 0, Call: "c"}
		return s
	}
	require.False(t, fails(t, func(tb testing.TB) { importerstest.CheckSession(tb, good(), "x") }))
	for name, spoil := range map[string]func(*importers.Session){
		"source":       func(s *importers.Session) { s.Labels["source"] = "y" },
		"seq":          func(s *importers.Session) { s.Events[1].Seq = 5 },
		"type":         func(s *importers.Session) { s.Events[1].Type = "a b" },
		"time":         func(s *importers.Session) { s.Events[1].Time = -1 },
		"not compact":  func(s *importers.Session) { s.Events[1].Data = json.RawMessage(`{ }`) },
		"invalid data": func(s *importers.Session) { s.Events[1].Data = json.RawMessage(`{`) },
		"spawn seq":    func(s *importers.Session) { s.Spawns["k"] = importers.Spawn{Seq: 1, Call: "c"} },
		"spawn call":   func(s *importers.Session) { s.Spawns["k"] = importers.Spawn{Seq: 0, Call: "d"} },
		"createdAt":    func(s *importers.Session) { s.CreatedAt = -1 },
		"label":        func(s *importers.Session) { s.Labels["l"] = "\xff" },
		"dropped":      func(s *importers.Session) { s.Dropped["x"] = 0 },
		"row size": func(s *importers.Session) {
			s.Events[1].Data = json.RawMessage(`"` + strings.Repeat("a", eventlog.MaxRowSize) + `"`)
		},
	} {
		s := good()
		spoil(&s)
		require.True(t, fails(t, func(tb testing.TB) { importerstest.CheckSession(tb, s, "x") }), name)
	}
}
