package importertest_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/importer"
	"github.com/sessionlog/sessionlog/internal/testkit/importertest"
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
		{importer.Formatf("line 3: bad"), false},
		{importer.Formatf("no line named"), false},
		{importer.Formatf(`lines of type "line 99: x"`), false},
		{importer.Formatf("line 4: bad"), true},
		{importer.Formatf("x: line 0: bad"), true},
		{errors.New("line 1: not a format error"), true},
		{nil, true},
	} {
		require.Equal(t, c.fail, fails(t, func(tb testing.TB) { importertest.CheckError(tb, c.err, in, importer.ErrFormat) }), "%v", c.err)
	}
}

func TestCheckSession(t *testing.T) {
	good := func() importer.Session {
		s := importer.NewSession("x", "/a/f.jsonl")
		b := importer.NewBuilder(importer.Config{}, func(e eventlog.Event) error {
			s.Events = append(s.Events, e)
			return nil
		})
		b.Add("tool/call", 1, importer.Obj{"id", "c"})
		b.Add("b", 2, importer.Obj{})
		require.NoError(t, b.Done(&s))
		s.Spawns["k"] = importer.Spawn{Seq: 0, Call: "c"}
		return s
	}
	require.False(t, fails(t, func(tb testing.TB) { importertest.CheckSession(tb, good(), "x") }))
	for name, spoil := range map[string]func(*importer.Session){
		"source":       func(s *importer.Session) { s.Labels["source"] = "y" },
		"seq":          func(s *importer.Session) { s.Events[1].Seq = 5 },
		"type":         func(s *importer.Session) { s.Events[1].Type = "a b" },
		"time":         func(s *importer.Session) { s.Events[1].Time = -1 },
		"not compact":  func(s *importer.Session) { s.Events[1].Data = json.RawMessage(`{ }`) },
		"invalid data": func(s *importer.Session) { s.Events[1].Data = json.RawMessage(`{`) },
		"spawn seq":    func(s *importer.Session) { s.Spawns["k"] = importer.Spawn{Seq: 1, Call: "c"} },
		"spawn call":   func(s *importer.Session) { s.Spawns["k"] = importer.Spawn{Seq: 0, Call: "d"} },
		"createdAt":    func(s *importer.Session) { s.CreatedAt = -1 },
		"label":        func(s *importer.Session) { s.Labels["l"] = "\xff" },
		"dropped":      func(s *importer.Session) { s.Unmapped["x"] = 0 },
		"row size": func(s *importer.Session) {
			s.Events[1].Data = json.RawMessage(`"` + strings.Repeat("a", eventlog.MaxRowSize) + `"`)
		},
	} {
		s := good()
		spoil(&s)
		require.True(t, fails(t, func(tb testing.TB) { importertest.CheckSession(tb, s, "x") }), name)
	}
}

// lineCounter is a JSONL format that labels a session with the lines it
// read (n) and makes an event of each line's "type"; leaky, it counts a
// line the builder drops too, as a converter that keeps state across
// lines and does not take back what a dropped one did.
func lineCounter(leaky bool) importer.Importer {
	return importer.Format{Label: "x", ConvertFunc: func(ctx context.Context, r io.ReadSeeker, name string, cfg importer.Config, emit importer.Emit) (importer.Session, error) {
		s := importer.NewSession("x", name)
		b := importer.NewBuilder(cfg, emit)
		n := 0
		err := b.Lines(ctx, r, func(_ int, line []byte) error {
			n++
			b.Keep("x/line", 0)
			return nil
		})
		if err != nil {
			return s, err
		}
		if !leaky {
			n = b.Records()
		}
		s.Labels["n"] = strconv.Itoa(n)
		return s, b.Done(&s)
	}}
}

func TestCheckBadRecords(t *testing.T) {
	for _, in := range []string{
		"{}\n{}\n",
		"{}\n{\"a\":\"\x87\"}\n{}\n", // line 2 holds invalid UTF-8: the builder drops it
	} {
		for _, leaky := range []bool{false, true} {
			imp := lineCounter(leaky)
			s, err := importer.Parse(t.Context(), imp, strings.NewReader(in), "/a/f.jsonl", importer.Config{})
			require.NoError(t, err)
			dropped := s.Partial != nil
			require.Equal(t, leaky && dropped, fails(t, func(tb testing.TB) { importertest.CheckBadRecords(tb, imp, []byte(in), s) }), "%q leaky %v", in, leaky)
		}
	}
}
