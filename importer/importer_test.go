package importer_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"strings"
	"testing"

	"github.com/spf13/afero"
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

	var bld importer.Builder
	require.Equal(t, int64(0), bld.Add("a", 5, importer.Obj{}))
	require.Equal(t, int64(1), bld.Add("b", -1, json.RawMessage(nil)))
	es, err := bld.Events()
	require.NoError(t, err)
	require.Equal(t, int64(5), es[1].Time, "a negative time is the previous event's")
	require.Equal(t, "null", string(es[1].Data))
}

func TestLines(t *testing.T) {
	var got []string
	var b importer.Builder
	torn, err := b.Lines(strings.NewReader("{\"a\":1}\r\n\n  \n{\"b\":2}\n{\"c\""), 100, func(n int, line []byte) error {
		got = append(got, string(line))
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, &importer.Torn{Line: 5, Offset: 21, Bytes: 4}, torn)
	require.Equal(t, []string{`{"a":1}`, `{"b":2}`}, got)

	_, err = b.Lines(strings.NewReader(strings.Repeat("x", 101)+"\n"), 100, func(int, []byte) error { return nil })
	require.True(t, errors.Is(err, importer.ErrFormat))
	var re *importer.RecordError
	require.ErrorAs(t, err, &re)
	require.Equal(t, 1, re.Line)

	// A line fn fails on: its events are dropped, the error names it.
	var c importer.Builder
	_, err = c.Lines(strings.NewReader("{}\n{}\n"), 100, func(n int, line []byte) error {
		c.Add("a", 1, importer.Obj{})
		if n == 2 {
			return importer.Formatf("no")
		}
		return nil
	})
	require.ErrorAs(t, err, &re)
	require.Equal(t, 2, re.Line)
	require.Equal(t, "line 2: no", err.Error())
	es, berr := c.Events()
	require.NoError(t, berr)
	require.Len(t, es, 1, "the bad line's event dropped")
	require.Equal(t, 1, c.Records())
}

func TestUnits(t *testing.T) {
	fs := afero.NewMemMapFs()
	require.NoError(t, afero.WriteFile(fs, "/d/b/x.traj", []byte("{}"), 0o600))
	require.NoError(t, afero.WriteFile(fs, "/d/a.traj", []byte("{}"), 0o600))
	require.NoError(t, afero.WriteFile(fs, "/d/notes.txt", []byte("hi"), 0o600))
	require.NoError(t, fs.MkdirAll("/e", 0o700))
	f := refusing
	units, err := importer.Units(fs, f, "/d")
	require.NoError(t, err)
	require.Equal(t, []importer.Unit{{"/d/a.traj"}, {"/d/b/x.traj"}}, units)
	_, err = importer.Units(fs, f, "/e")
	require.ErrorIs(t, err, importer.ErrNoFiles)
	_, err = importer.Units(fs, f, "/none")
	require.Error(t, err)
	ss, refused := importer.Convert(t.Context(), fs, f, units[0])
	require.Empty(t, ss)
	require.Len(t, refused, 1)
	require.ErrorIs(t, refused[0], importer.ErrFormat)
	require.Equal(t, "/d/a.traj: no", refused[0].Error())
}

// Regression: Builder made events the log refuses (an invalid type, a row
// beyond MaxRowSize) without an error, so `logtool import` failed on
// append, and reported data it could not marshal (nested too deeply once
// wrapped) as an error that was not ErrFormat. Now Events reports the
// first such event, by seq, as a format error.
func TestBuilderChecksEvents(t *testing.T) {
	for name, add := range map[string]func(*importer.Builder){
		"type": func(b *importer.Builder) { b.Add("not a type", 1, importer.Obj{}) },
		"row size": func(b *importer.Builder) {
			b.Add("x", 1, importer.Obj{"text", strings.Repeat("a", eventlog.MaxRowSize)})
		},
		"nesting": func(b *importer.Builder) {
			b.Add("x", 1, json.RawMessage(strings.Repeat("[", 10001)+strings.Repeat("]", 10001)))
		},
	} {
		t.Run(name, func(t *testing.T) {
			var b importer.Builder
			b.Add("ok", 0, importer.Obj{})
			add(&b)
			b.Add("ok", 2, importer.Obj{})
			_, err := b.Events()
			require.ErrorIs(t, err, importer.ErrFormat)
			require.Contains(t, err.Error(), "seq 1: ")
			require.Equal(t, err, b.Err())
		})
	}
	var b importer.Builder
	b.Add("x", 0, importer.Obj{"text", strings.Repeat("a", eventlog.MaxRowSize-100)})
	_, err := b.Events()
	require.NoError(t, err, "a row within the limit")
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
var refusing = importer.Format{Label: "t", Suffix: ".traj", ParseFunc: func(context.Context, io.Reader, string, importer.Config) (importer.Session, error) {
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
	_, err = importer.NewRegistry(refusing, refusing)
	require.Error(t, err, "two importers of one name")
}
