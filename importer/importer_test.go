package importer_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/importer"
)

func TestObj(t *testing.T) {
	var nilMap map[string]any
	b, err := importer.Marshal(importer.Obj{
		"text", "a<b", "zero", int64(0), "empty", "", "opt", importer.Opt(""), "n", importer.OptInt(0),
		"raw", json.RawMessage(`{ "x" : 1 }`), "none", nil, "nilMap", nilMap, "inner", importer.Obj{},
	})
	require.NoError(t, err)
	require.Equal(t, `{"text":"a<b","zero":0,"empty":"","raw":{"x":1},"inner":{}}`, string(b))
	_, err = importer.Marshal(importer.Obj{"odd"})
	require.Error(t, err)

	var got []eventlog.Event
	bld := importer.NewBuilder(importer.Config{}, func(e eventlog.Event) error {
		got = append(got, e)
		return nil
	})
	require.Equal(t, int64(0), bld.Add("a", 5, importer.Obj{}))
	require.Equal(t, int64(1), bld.Add("b", -1, json.RawMessage(nil)))
	require.NoError(t, bld.Flush())
	require.Equal(t, int64(5), got[1].Time, "a negative time is the previous event's")
	require.Equal(t, "null", string(got[1].Data))
}

// lines runs Lines over in with fn (nil: nothing but the record), and
// returns the lines fn saw, the events and the session.
func lines(t *testing.T, in string, cfg importer.Config, fn func(b *importer.Builder, n int) error) (seen []string, events []eventlog.Event, s importer.Session, err error) {
	t.Helper()
	b := importer.NewBuilder(cfg, func(e eventlog.Event) error {
		events = append(events, e)
		return nil
	})
	err = b.Lines(t.Context(), strings.NewReader(in), func(n int, line []byte) error {
		seen = append(seen, string(line))
		if fn != nil {
			if err := fn(b, n); err != nil {
				return err
			}
		}
		b.Keep("t/line", 1)
		return nil
	})
	if err == nil {
		require.NoError(t, b.Done(&s))
	}
	return seen, events, s, err
}

func TestLines(t *testing.T) {
	seen, events, s, err := lines(t, "{\"a\":1}\r\n\n  \n{\"b\":2}\n{\"c\"", importer.Config{}, nil)
	require.NoError(t, err)
	require.Equal(t, &importer.Torn{Line: 5, Offset: 21, Bytes: 4}, s.Torn)
	require.Equal(t, []string{`{"a":1}`, `{"b":2}`}, seen)
	require.Len(t, events, 2, "each line kept as its record")
	require.Equal(t, int64(21), s.Bytes, "the bytes read, without the torn line")
	require.Equal(t, 2, s.Records)

	// A line over the limit: the first, and the file is refused; a later
	// one cuts the session before it, or is skipped.
	_, _, _, err = lines(t, strings.Repeat("x", 101)+"\n", importer.Config{MaxLine: 100}, nil)
	require.True(t, errors.Is(err, importer.ErrFormat))
	var re *importer.RecordError
	require.ErrorAs(t, err, &re)
	require.Equal(t, 1, re.Line)
	long := "{}\n" + strings.Repeat("x", 300) + "\n{}\n"
	seen, _, s, err = lines(t, long, importer.Config{MaxLine: 100}, nil)
	require.NoError(t, err)
	require.Equal(t, []string{"{}"}, seen)
	require.Equal(t, 2, s.Partial.Line)
	seen, _, s, err = lines(t, long, importer.Config{MaxLine: 100, SkipBad: true}, nil)
	require.NoError(t, err)
	require.Equal(t, []string{"{}", "{}"}, seen)
	require.Len(t, s.Skipped, 1)
	require.Contains(t, s.Skipped[0].Error(), "line 2: more than the 100 bytes")

	// A line fn fails on: its events are dropped, the error names it.
	seen, events, s, err = lines(t, "{}\n{}\n{}\n", importer.Config{}, func(b *importer.Builder, n int) error {
		b.Add("a", 1, importer.Obj{})
		if n == 2 {
			return importer.Formatf("no")
		}
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, "line 2: no", s.Partial.Error())
	require.Len(t, seen, 2, "stops at the bad line")
	require.Len(t, events, 2, "the bad line's events dropped")
	require.Equal(t, 1, s.Records)

	// Emit's error stops the conversion as it is.
	boom := errors.New("boom")
	b := importer.NewBuilder(importer.Config{}, func(eventlog.Event) error { return boom })
	err = b.Lines(t.Context(), strings.NewReader("{}\n{}\n"), func(int, []byte) error {
		b.Keep("t/line", 1)
		return nil
	})
	require.ErrorIs(t, err, boom)
	require.False(t, errors.Is(err, importer.ErrFormat))
}

// TestLinesRefusesALongLineEarly: a line over the limit is refused as
// soon as the limit is crossed: Lines reads hardly more of it.
func TestLinesRefusesALongLineEarly(t *testing.T) {
	src := &countingReader{r: endless('x')}
	b := importer.NewBuilder(importer.Config{MaxLine: 1 << 20}, nil)
	err := b.Lines(t.Context(), io.MultiReader(strings.NewReader("{}\n"), src), func(int, []byte) error {
		b.Keep("t/line", 1)
		return nil
	})
	require.NoError(t, err)
	var s importer.Session
	require.NoError(t, b.Done(&s))
	require.Equal(t, 2, s.Partial.Line)
	require.Less(t, src.n, int64(1<<20+200<<10), "read %d bytes of an endless line", src.n)
}

// endless is a reader of one byte, for ever.
type endless byte

func (e endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(e)
	}
	return len(p), nil
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// Regression: Builder made events the log refuses (an invalid type, a row
// beyond MaxRowSize) without an error, so `logtool import` failed on
// append, and reported data it could not marshal (nested too deeply once
// wrapped) as an error that was not ErrFormat. Now Flush reports the
// first such event, by seq, as a format error.
func TestBuilderChecksEvents(t *testing.T) {
	for name, add := range map[string]func(*importer.Builder){
		"type": func(b *importer.Builder) { b.Add("not a type", 1, importer.Obj{}) },
		"row size": func(b *importer.Builder) { // raw: what Obj marshals to, without marshalling 16 MiB
			b.Add("x", 1, json.RawMessage(`{"text":"`+strings.Repeat("a", eventlog.MaxRowSize)+`"}`))
		},
		"nesting": func(b *importer.Builder) {
			b.Add("x", 1, json.RawMessage(strings.Repeat("[", 10001)+strings.Repeat("]", 10001)))
		},
	} {
		t.Run(name, func(t *testing.T) {
			b := importer.NewBuilder(importer.Config{}, nil)
			b.Add("ok", 0, importer.Obj{})
			add(b)
			b.Add("ok", 2, importer.Obj{})
			err := b.Flush()
			require.ErrorIs(t, err, importer.ErrFormat)
			require.Contains(t, err.Error(), "seq 1: ")
			require.Equal(t, err, b.Err())
		})
	}
	b := importer.NewBuilder(importer.Config{}, nil)
	b.Add("x", 0, json.RawMessage(`{"text":"`+strings.Repeat("a", eventlog.MaxRowSize-100)+`"}`))
	require.NoError(t, b.Flush(), "a row within the limit")
}

func TestTokens(t *testing.T) {
	for _, c := range []struct {
		counts []int64
		sum    int64
		ok     bool
	}{
		{nil, 0, true},
		{[]int64{1, 2, 3}, 6, true},
		{[]int64{math.MaxInt64, 0}, math.MaxInt64, true},
		{[]int64{math.MaxInt64, 1}, 0, false},
		{[]int64{math.MaxInt64 - 1, 1, 1}, 0, false},
		{[]int64{5, -1}, 0, false},
		{[]int64{math.MinInt64}, 0, false},
	} {
		sum, ok := importer.Tokens(c.counts...)
		require.Equal(t, c.ok, ok, "%v", c.counts)
		require.Equal(t, c.sum, sum, "%v", c.counts)
	}
}

// refusing is an importer of *.traj files that refuses every file.
var refusing = importer.Format{Label: "t", Suffix: ".traj",
	SniffFunc: func(head []byte) bool { return strings.HasPrefix(string(head), "t:") },
	ConvertFunc: func(context.Context, io.ReadSeeker, string, importer.Config, importer.Emit) (importer.Session, error) {
		return importer.Session{}, importer.Formatf("no")
	}}

func TestRegistry(t *testing.T) {
	r, err := importer.NewRegistry(refusing)
	require.NoError(t, err)
	got, err := r.Lookup("t")
	require.NoError(t, err)
	require.Equal(t, "t", got.Name())
	require.True(t, got.Match("/a/b.traj"))
	require.False(t, got.Match("/a/b.traj.txt"))
	_, err = r.Lookup("x")
	require.ErrorIs(t, err, importer.ErrUnknownFormat)
	require.Contains(t, err.Error(), "want one of t")
	require.Equal(t, []string{"t"}, r.Names())
	require.Len(t, r.Sniff([]byte("t: yes")), 1)
	require.Empty(t, r.Sniff([]byte("no")))
	_, err = importer.NewRegistry(refusing, refusing)
	require.Error(t, err, "two importers of one name")
}
