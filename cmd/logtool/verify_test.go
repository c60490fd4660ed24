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

// verifyLine is one line of verify --json.
type verifyLine struct {
	Path   string  `json:"path"`
	ID     *string `json:"id"`
	OK     bool    `json:"ok"`
	Events int64   `json:"events"`
	Torn   *struct {
		Offset int64 `json:"offset"`
		Bytes  int64 `json:"bytes"`
	} `json:"torn"`
	Checkpoints int64 `json:"checkpoints"`
	Unchecked   int64 `json:"unchecked"`
	Error       *struct {
		Kind    string `json:"kind"`
		Seq     *int64 `json:"seq"`
		Offset  *int64 `json:"offset"`
		Message string `json:"message"`
	} `json:"error"`
}

// threeEvents makes a session holding seqs 0..2 and returns its ID, path
// and lines (header first).
func threeEvents(t *testing.T, dir string) (id, path string, lines []string) {
	t.Helper()
	id, path = newSession(t, dir)
	require.Equal(t, 0, logtool(t, goodLine0+goodLine1+goodLine0, "--dir", dir, "append", id).code)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	lines = strings.SplitAfter(string(data), "\n")
	require.Len(t, lines, 5) // header, 3 rows, "" after the last '\n'
	return id, path, lines[:4]
}

// verify's contract for scripts (docs/cli.md): one JSON object a file or
// session with the report's fields, one line for people, exit 1 when any
// fails. What each kind of damage reports is tested in package verify.
func TestVerify(t *testing.T) {
	dir := t.TempDir()
	id, path, lines := threeEvents(t, dir)
	appendBytes(t, path, `{"seq":3,"type":"x","ti`)
	for _, target := range []string{path, id} {
		res := logtool(t, "", "--dir", dir, "verify", "--json", target)
		require.Equal(t, 0, res.code, res.stderr)
		require.Equal(t, fmt.Sprintf(`{"path":%q,"id":%q,"ok":true,"events":3,"fileEvents":3,"torn":{"offset":%d,"bytes":23},"checkpoints":0,"unchecked":0,"error":null,"protection":{"sealed":false,"redacted":0,"escrowed":0}}`+"\n",
			path, id, len(strings.Join(lines, ""))), res.stdout, target)
		res = logtoolWords(t, "", "--dir", dir, "verify", target)
		require.Equal(t, 0, res.code, res.stderr)
		require.Equal(t, fmt.Sprintf("ok    %s  %s  3 events; torn tail of 23 bytes at offset %d (never acknowledged; cut by the next append or repair)\n",
			path, id, len(strings.Join(lines, ""))), res.stdout)
	}

	writeFile(t, path, lines[0], lines[1], "garbage\n", lines[2], lines[3])
	for target, what := range map[string]string{path: "file", id: "session"} {
		res := logtool(t, "", "--dir", dir, "verify", "--json", target)
		require.Equal(t, 1, res.code)
		require.Contains(t, res.stderr, "verify: 1 of 1 "+what+" failed")
		var got verifyLine
		require.NoError(t, json.Unmarshal([]byte(res.stdout), &got), res.stdout)
		require.Equal(t, path, got.Path)
		require.False(t, got.OK)
		require.Equal(t, int64(1), got.Events)
		require.Equal(t, "corrupt", got.Error.Kind)
		require.Equal(t, int64(1), *got.Error.Seq)
		require.Equal(t, int64(len(lines[0])+len(lines[1])), *got.Error.Offset)
	}
	res := logtool(t, "", "--dir", dir, "verify", "01JDX3N0Q3Z8Y6W2D1V5K7M9PA")
	require.Equal(t, exitUsage, res.code, "a session not found is an error of the command line")
	require.Empty(t, res.stdout)
}

// TestDamagedLastRowByName: a session whose last row is corrupt (stat's
// tail read fails) still resolves by its ID or a prefix of it: verify
// reports it as for its path, cat and stat name the damage, and repair
// mends it. Resolution once judged the log and hid it behind an error.
func TestDamagedLastRowByName(t *testing.T) {
	dir := t.TempDir()
	id, path, lines := threeEvents(t, dir)
	writeFile(t, path, lines[0], lines[1], lines[2], strings.TrimSuffix(lines[3], "\n")+"garbage\n")
	var want string
	for _, target := range []string{path, id, strings.ToLower(id[:20])} {
		res := logtool(t, "", "--dir", dir, "verify", "--json", target)
		require.Equal(t, 1, res.code, target)
		require.Contains(t, res.stderr, "verify: 1 of 1 ", target)
		var got verifyLine
		require.NoError(t, json.Unmarshal([]byte(res.stdout), &got), "%s: %q", target, res.stdout)
		require.Equal(t, path, got.Path, target)
		require.Equal(t, id, *got.ID, target)
		require.Equal(t, "corrupt", got.Error.Kind, target)
		require.Equal(t, int64(2), *got.Error.Seq, target)
		if want == "" {
			want = res.stdout
		}
		require.Equal(t, want, res.stdout, "%s reports as the path does", target)

		res = logtoolWords(t, "", "--dir", dir, "verify", target)
		require.Equal(t, 1, res.code, target)
		require.Contains(t, res.stdout, "FAIL  "+path+"  "+id+"  corrupt: ", target)
	}
	for _, cmd := range []string{"cat", "stat", "show"} {
		res := logtool(t, "", "--dir", dir, cmd, id)
		require.Equal(t, 1, res.code, cmd)
		require.Contains(t, res.stderr, "corrupt log in", cmd)
	}
	byPath := logtool(t, "", "--dir", dir, "cat", "--json", path)
	require.Equal(t, 2, strings.Count(byPath.stdout, "\n"), "the events before the damage")
	for _, target := range []string{id, id[:20]} {
		res := logtool(t, "", "--dir", dir, "cat", "--json", target)
		require.Equal(t, byPath.stdout, res.stdout, "%s reads as the path does", target)
		res = logtool(t, "", "--dir", dir, "show", "--no-pager", target)
		require.Contains(t, res.stdout, "user    a\nagent   b\n", target)
	}
	res := logtool(t, "", "--dir", dir, "repair", id)
	require.Equal(t, 1, res.code, "no cut without --salvage")
	require.Contains(t, res.stderr, "repair --salvage")
	res = logtool(t, "", "--dir", dir, "repair", "--salvage", id)
	require.Equal(t, 0, res.code, res.stderr)
	res = logtool(t, "", "--dir", dir, "verify", "--json", id)
	require.Equal(t, 0, res.code, res.stderr)
	require.Contains(t, res.stdout, `"ok":true,"events":2,`)
}

func TestVerifyFolder(t *testing.T) {
	dir := t.TempDir()
	_, good, _ := threeEvents(t, dir)
	_, bad, lines := threeEvents(t, dir)
	writeFile(t, bad, lines[0], lines[1], "garbage\n", lines[2])
	require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("not a log"), 0o600))

	res := logtool(t, "", "verify", "--json", dir)
	require.Equal(t, 1, res.code)
	var byPath = map[string]bool{}
	for _, m := range jsonLines(t, res.stdout) {
		byPath[m["path"].(string)] = m["ok"].(bool)
	}
	require.Equal(t, map[string]bool{good: true, bad: false}, byPath)
	require.Contains(t, res.stderr, "1 of 2 files failed")

	res = logtoolWords(t, "", "verify", dir)
	require.Equal(t, 1, res.code)
	require.Contains(t, res.stdout, "ok    "+good)
	require.Contains(t, res.stdout, "FAIL  "+bad)
}

// TestReadersRefuseDamage: cat and stat fail with exit 1 on a log they
// cannot trust, and name the damage.
func TestReadersRefuseDamage(t *testing.T) {
	dir := t.TempDir()
	id, path, lines := threeEvents(t, dir)
	writeFile(t, path, lines[0], lines[1], "garbage\n", lines[2])
	res := logtool(t, "", "--dir", dir, "cat", "--json", id)
	require.Equal(t, 1, res.code)
	require.Contains(t, res.stderr, "corrupt")

	writeFile(t, path, `{"format":"sessionlog","version":2,"id":"`+id+`","createdAt":0}`+"\n")
	for _, cmd := range []string{"cat", "stat"} {
		res = logtool(t, "", "--dir", dir, cmd, id)
		require.Equal(t, 1, res.code, cmd)
		require.Contains(t, res.stderr, "version 2", cmd)
	}
}

func TestCatTornTailIsNotAnError(t *testing.T) {
	dir := t.TempDir()
	id, path, _ := threeEvents(t, dir)
	appendBytes(t, path, `{"seq":3,`)
	res := logtool(t, "", "--dir", dir, "cat", "--json", id)
	require.Equal(t, 0, res.code, res.stderr)
	require.Equal(t, 3, strings.Count(res.stdout, "\n"))
	require.Contains(t, res.stderr, "torn tail of 9 bytes", "dropped and reported (docs/format.md §9)")

	res = logtool(t, "{\"type\":\"x\"}\n", "--dir", dir, "append", id)
	require.Equal(t, 0, res.code, res.stderr)
	require.Equal(t, "{\"acked\":3}\n", res.stdout)
	require.Contains(t, res.stderr, "torn tail of 9 bytes")
	require.Contains(t, res.stderr, "cut before the first append")
	res = logtool(t, "", "--dir", dir, "cat", "--json", id)
	require.Empty(t, res.stderr, "cut")
	require.Equal(t, 4, strings.Count(res.stdout, "\n"))
}

// A session stored in both encodings with different logs (docs/format.md
// §2) fails verify whether it is named by ID, file or folder, and cat: exit
// 1, "stored twice". What verify reports of it is tested in package verify.
func TestDuplicateEncodingsExit(t *testing.T) {
	dir := t.TempDir()
	id, raw, lines := threeEvents(t, dir)
	require.Equal(t, 0, logtool(t, "", "--dir", dir, "convert", "--encoding", "zstd", id).code)
	writeFile(t, raw, lines[:3]...) // the raw file holds one event fewer
	for _, args := range [][]string{{"verify", id}, {"verify", raw}, {"verify", raw + ".zst"}, {"verify", dir}, {"cat", id}} {
		res := logtool(t, "", append([]string{"--dir", dir}, args...)...)
		require.Equal(t, 1, res.code, "%v: %s", args, res.stdout)
		require.Contains(t, res.stdout+res.stderr, "stored twice", "%v", args)
	}
}
