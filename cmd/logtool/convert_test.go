package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A zstd session is used like a raw one, and convert moves a session
// between the encodings keeping its logical log byte for byte.
func TestZstdSessionAndConvert(t *testing.T) {
	dir := t.TempDir()
	id, path := newSession(t, dir, "--encoding", "zstd", "--label", "agent=t")
	var in strings.Builder
	for i := range 40 {
		typ := "assistant/chunk"
		if i%8 == 7 {
			typ = "tool/result"
		}
		fmt.Fprintf(&in, `{"type":%q,"time":%d,"data":{"text":"part %d %s"}}`+"\n", typ, 1000+i, i, strings.Repeat("z", i))
	}
	res := logtool(t, in.String(), "--dir", dir, "append", "--flush-every", "5", id)
	require.Equal(t, 0, res.code, res.stderr)
	require.Contains(t, res.stdout, `{"acked":39}`)

	cat := logtool(t, "", "--dir", dir, "cat", "--json", id)
	require.Equal(t, 0, cat.code, cat.stderr)
	require.Len(t, strings.Split(strings.TrimSpace(cat.stdout), "\n"), 40)

	for _, tc := range []struct {
		encoding, path string
	}{
		{"raw", filepath.Join(dir, id+".jsonl")},
		{"zstd", path},
		{"zstd", path}, // zstd to zstd compacts
	} {
		t.Run("to "+tc.encoding, func(t *testing.T) {
			res := logtool(t, "", "--dir", dir, "convert", "--encoding", tc.encoding, id)
			require.Equal(t, 0, res.code, res.stderr)
			var got struct {
				Path, Encoding string
			}
			require.NoError(t, json.Unmarshal([]byte(res.stdout), &got))
			require.Equal(t, tc.path, got.Path)
			require.Equal(t, tc.encoding, got.Encoding)
			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			var logs []string
			for _, e := range entries {
				if strings.HasPrefix(e.Name(), id+".jsonl") {
					logs = append(logs, e.Name())
				}
			}
			require.Equal(t, []string{filepath.Base(tc.path)}, logs, "exactly one file holds the session")

			again := logtool(t, "", "--dir", dir, "cat", "--json", id)
			require.Equal(t, cat.stdout, again.stdout)
			v := logtool(t, "", "--dir", dir, "verify", "--json", tc.path)
			require.Equal(t, 0, v.code, v.stdout)
			require.Contains(t, v.stdout, `"ok":true`)
			require.Contains(t, v.stdout, `"events":40`)
			st := logtool(t, "", "--dir", dir, "stat", "--json", id)
			require.Contains(t, st.stdout, `"encoding":"`+tc.encoding+`"`)
			require.Contains(t, st.stdout, `"lastSeq":39`)
		})
	}

	ls := logtool(t, "", "--dir", dir, "ls", "--json")
	require.Equal(t, 0, ls.code, ls.stderr)
	require.Contains(t, ls.stdout, id)

	bad := logtool(t, "", "--dir", dir, "convert", "--encoding", "lz4", id)
	require.Equal(t, 2, bad.code)
}
