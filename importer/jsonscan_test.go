package importer_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/importer"
)

// members reads the members of the object in src with a Scanner: each
// value whole (Raw), or skipped when skip says so.
func members(src []byte, limit int, skip func(key string) bool) (map[string]json.RawMessage, error) {
	s := importer.NewScanner(bytes.NewReader(src), limit)
	out := map[string]json.RawMessage{}
	err := s.Object(func(key string) error {
		if skip != nil && skip(key) {
			return s.Skip()
		}
		raw, err := s.Raw()
		if err != nil {
			return err
		}
		out[key] = raw
		return nil
	})
	if err == nil {
		err = s.End()
	}
	return out, err
}

func TestScanner(t *testing.T) {
	src := []byte(` { "a" : [1, {"b":"}]\"x"}], "c":"\u00e9\n", "d": -1.5e3, "e":null, "f":{"g":[true,false]} } `)
	got, err := members(src, 1000, nil)
	require.NoError(t, err)
	require.Equal(t, `[1, {"b":"}]\"x"}]`, string(got["a"]))
	require.Equal(t, `"\u00e9\n"`, string(got["c"]))
	require.Equal(t, `-1.5e3`, string(got["d"]))
	require.Equal(t, `null`, string(got["e"]))
	require.Equal(t, `{"g":[true,false]}`, string(got["f"]))

	// A value over the limit is refused as soon as it is read that far,
	// skipped or not.
	long := []byte(`{"k":"` + strings.Repeat("x", 100) + `"}`)
	for _, skip := range []bool{false, true} {
		_, err = members(long, 50, func(string) bool { return skip })
		require.ErrorIs(t, err, importer.ErrTooLarge)
		require.ErrorIs(t, err, importer.ErrFormat)
	}

	// Arrays are walked one element at a time.
	s := importer.NewScanner(strings.NewReader(`[ {"x":1} , [2] ,"3"]`), 100)
	var elems []string
	require.NoError(t, s.Array(func() error {
		raw, err := s.Raw()
		elems = append(elems, string(raw))
		return err
	}))
	require.Equal(t, []string{`{"x":1}`, `[2]`, `"3"`}, elems)

	for _, bad := range []string{``, `{`, `{"a"}`, `{"a":1,}`, `{"a":1} x`, `{1:2}`, `{"a":]}`, `[1 2]`} {
		_, err := members([]byte(bad), 100, nil)
		require.Error(t, err, "%q", bad)
	}

	m, ok := importer.Head([]byte(`{"type":"user","n":3,"message":{"content":"tru`))
	require.True(t, ok)
	require.Equal(t, "user", importer.HeadString(m, "type"))
	require.Equal(t, "3", string(m["n"]))
	require.NotContains(t, m, "message", "a member cut off is not read")
	_, ok = importer.Head([]byte(`[1]`))
	require.False(t, ok)
}

// FuzzScanner reads any bytes as an object with a Scanner: no panic, and
// for a valid JSON object the members it finds are encoding/json's (the
// last of a repeated key), each value a valid one.
func FuzzScanner(f *testing.F) {
	for _, seed := range []string{`{}`, `{"a":1}`, `{"a":"\"}","b":[{},[]]}`, `{"a":1,"a":2}`, ` {"x" : -0.5e-3 , "y":true}`, `{"a":"\ud800"}`, `{`, `[1]`, `"s"`, `{"a":[1,2,{"b":null}]}`, "{\"\xff\":1}"} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		_, _ = importer.Head(in)
		got, err := members(in, len(in)+1, nil)
		var want map[string]json.RawMessage
		if json.Unmarshal(in, &want) != nil || want == nil {
			return // not an object: any error is fine, no panic is the test
		}
		require.NoError(t, err, "a valid object: %q", in)
		require.Len(t, got, len(want))
		for k, v := range want {
			require.Contains(t, got, k)
			var a, b any
			require.NoError(t, json.Unmarshal(v, &a))
			require.NoError(t, json.Unmarshal(got[k], &b), "%q: %q", k, got[k])
			require.Equal(t, a, b, "%q", k)
		}
		// Skipping every value finds the same structure.
		_, err = members(in, len(in)+1, func(string) bool { return true })
		require.NoError(t, err)
		if len(in) > 2 {
			_, err = members(in, 1, func(string) bool { return true })
			if err != nil && !errors.Is(err, importer.ErrTooLarge) {
				t.Fatalf("a limit of 1 byte: %v", err)
			}
		}
	})
}

// FuzzLines reads any bytes as JSONL: no panic; the records fn sees are
// LineRecords', and the bytes counted are the source's but a torn line.
func FuzzLines(f *testing.F) {
	for _, seed := range []string{"", "{}\n", "{}\r\n\n  \n[1]\n{\"a\"", "x\n{}\n", strings.Repeat("y", 40) + "\n{}\n", "{}\n{}"} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var seen []string
		b := importer.NewBuilder(importer.Config{MaxLine: 32, SkipBad: true}, nil)
		err := b.Lines(t.Context(), bytes.NewReader(in), func(n int, line []byte) error {
			seen = append(seen, string(line))
			b.Keep("t/line", 1)
			return nil
		})
		if err != nil {
			require.ErrorIs(t, err, importer.ErrFormat, "only a bad first line fails")
			return
		}
		var s importer.Session
		require.NoError(t, b.Done(&s))
		torn := int64(0)
		if s.Torn != nil {
			torn = s.Torn.Bytes
		}
		long := 0 // skipped lines fn never saw
		for _, sk := range s.Skipped {
			if strings.Contains(sk.Error(), "more than the 32 bytes") {
				long++
			}
		}
		// fn saw every line but the long ones; a line that is no JSON
		// (its record cannot be kept) is dropped.
		require.Equal(t, len(seen), s.Records+len(s.Skipped)-long)
		if len(s.Skipped) == 0 {
			require.Equal(t, int64(len(in))-torn, s.Bytes)
			var want []string
			require.NoError(t, importer.LineRecords(bytes.NewReader(in), 32, func(r json.RawMessage) error {
				want = append(want, string(r))
				return nil
			}))
			require.Len(t, seen, len(want))
		}
	})
}
