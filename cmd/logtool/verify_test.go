package main

import (
	"encoding/json"
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

func TestVerify(t *testing.T) {
	const other = "01JDX3N0Q3Z8Y6W2D1V5K7M9PA"
	tests := []struct {
		name string
		// damage rewrites or extends the session's file; it returns the
		// path to verify.
		damage    func(t *testing.T, path string, lines []string) string
		ok        bool
		events    int64
		torn      func(lines []string) (offset, bytes int64) // nil: no torn tail
		kind      string
		seq       int64 // -1: null
		offset    func(lines []string) int64
		messageIn string
	}{
		{
			name:   "clean",
			damage: func(t *testing.T, path string, _ []string) string { return path },
			ok:     true, events: 3,
		},
		{
			name: "torn tail",
			damage: func(t *testing.T, path string, _ []string) string {
				appendBytes(t, path, `{"seq":3,"type":"x","ti`)
				return path
			},
			ok: true, events: 3,
			torn: func(lines []string) (int64, int64) {
				return int64(len(strings.Join(lines, ""))), int64(len(`{"seq":3,"type":"x","ti`))
			},
		},
		{
			name: "NUL tail",
			damage: func(t *testing.T, path string, _ []string) string {
				appendBytes(t, path, "\x00\x00\x00\x00\n")
				return path
			},
			ok: true, events: 3,
			torn: func(lines []string) (int64, int64) { return int64(len(strings.Join(lines, ""))), 5 },
		},
		{
			// Regression: read as a torn tail, verify said ok and the next
			// append cut the acknowledged row (docs/format.md, Torn tail or
			// corruption).
			name: "the last row's newline flipped after its append was acknowledged",
			damage: func(t *testing.T, path string, lines []string) string {
				writeFile(t, path, lines[0], lines[1], lines[2], strings.TrimSuffix(lines[3], "\n")+"\v")
				return path
			},
			events: 2, kind: "corrupt", seq: 2,
			offset:    func(lines []string) int64 { return int64(len(lines[0]) + len(lines[1]) + len(lines[2])) },
			messageIn: "acknowledged",
		},
		{
			name: "garbage row in the middle",
			damage: func(t *testing.T, path string, lines []string) string {
				writeFile(t, path, lines[0], lines[1], "garbage\n", lines[2], lines[3])
				return path
			},
			events: 1, kind: "corrupt", seq: 1,
			offset:    func(lines []string) int64 { return int64(len(lines[0]) + len(lines[1])) },
			messageIn: "repair --salvage",
		},
		{
			name: "seq gap",
			damage: func(t *testing.T, path string, lines []string) string {
				writeFile(t, path, lines[0], lines[1], lines[3])
				return path
			},
			events: 1, kind: "corrupt", seq: 1,
			offset: func(lines []string) int64 { return int64(len(lines[0]) + len(lines[1])) },
		},
		{
			name: "NUL hole before a valid row",
			damage: func(t *testing.T, path string, lines []string) string {
				writeFile(t, path, lines[0], lines[1], strings.Repeat("\x00", len(lines[2])-1)+"\n", lines[3])
				return path
			},
			events: 1, kind: "corrupt", seq: 1,
			offset: func(lines []string) int64 { return int64(len(lines[0]) + len(lines[1])) },
		},
		{
			name: "version 2 header",
			damage: func(t *testing.T, path string, lines []string) string {
				id := strings.TrimSuffix(filepath.Base(path), ".jsonl")
				writeFile(t, path, `{"format":"sessionlog","version":2,"id":"`+id+`","createdAt":0}`+"\n", lines[1])
				return path
			},
			kind: "version", seq: -1,
			offset:    func([]string) int64 { return 0 },
			messageIn: "version 2",
		},
		{
			name: "header id does not match the file name",
			damage: func(t *testing.T, path string, lines []string) string {
				moved := filepath.Join(filepath.Dir(path), other+".jsonl")
				require.NoError(t, os.Rename(path, moved))
				return moved
			},
			kind: "corrupt", seq: -1,
			offset:    func([]string) int64 { return 0 },
			messageIn: "does not match the file name",
		},
		{
			name: "freely named export",
			damage: func(t *testing.T, path string, _ []string) string {
				free := filepath.Join(filepath.Dir(path), "export.jsonl")
				require.NoError(t, os.Rename(path, free))
				return free
			},
			ok: true, events: 3,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			id, path, lines := threeEvents(t, dir)
			target := tt.damage(t, path, lines)

			res := logtool(t, "", "--dir", dir, "verify", "--json", target)
			var got verifyLine
			require.NoError(t, json.Unmarshal([]byte(res.stdout), &got), res.stdout)
			require.Equal(t, target, got.Path)
			require.Equal(t, tt.ok, got.OK)
			require.Equal(t, tt.events, got.Events)
			require.Zero(t, got.Checkpoints)
			require.Zero(t, got.Unchecked)
			if tt.kind != "version" && !strings.Contains(tt.name, "file name") {
				require.NotNil(t, got.ID)
				require.Equal(t, id, *got.ID)
			}
			if tt.torn == nil {
				require.Nil(t, got.Torn)
			} else {
				off, n := tt.torn(lines)
				require.NotNil(t, got.Torn)
				require.Equal(t, off, got.Torn.Offset)
				require.Equal(t, n, got.Torn.Bytes)
			}
			if tt.ok {
				require.Equal(t, 0, res.code, res.stderr)
				require.Nil(t, got.Error)
				return
			}
			require.Equal(t, 1, res.code)
			require.Contains(t, res.stderr, "verify: 1 of 1 file failed")
			require.NotNil(t, got.Error)
			require.Equal(t, tt.kind, got.Error.Kind)
			if tt.seq < 0 {
				require.Nil(t, got.Error.Seq)
			} else {
				require.NotNil(t, got.Error.Seq)
				require.Equal(t, tt.seq, *got.Error.Seq)
			}
			require.NotNil(t, got.Error.Offset)
			require.Equal(t, tt.offset(lines), *got.Error.Offset)
			require.Contains(t, got.Error.Message, tt.messageIn)
		})
	}
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

	res = logtool(t, "", "verify", dir)
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

// A session stored in both encodings with different logs is refused by
// the store (docs/format.md §2); verify must not call either file clean, whether it
// is given the ID, a file or the folder. Regression: verify read the raw
// file directly and reported it ok.
func TestVerifyRefusesDuplicateEncodings(t *testing.T) {
	dir := t.TempDir()
	id, raw, lines := threeEvents(t, dir)
	require.Equal(t, 0, logtool(t, "", "--dir", dir, "convert", "--encoding", "zstd", id).code)
	writeFile(t, raw, lines[:3]...) // the raw file holds one event fewer
	zst := raw + ".zst"
	require.FileExists(t, zst)

	for _, args := range [][]string{{id}, {raw}, {zst}, {dir}} {
		res := logtool(t, "", append([]string{"--dir", dir, "verify", "--json"}, args...)...)
		require.Equal(t, 1, res.code, "%v: %s", args, res.stdout)
		for _, m := range jsonLines(t, res.stdout) {
			require.False(t, m["ok"].(bool), "%v", args)
			errObj := m["error"].(map[string]any)
			require.Equal(t, "corrupt", errObj["kind"], "%v", args)
			require.Contains(t, errObj["message"], "stored twice", "%v", args)
		}
	}
	res := logtool(t, "", "--dir", dir, "cat", id)
	require.Equal(t, 1, res.code)
	require.Contains(t, res.stderr, "stored twice")
}

// A reserved event a writer would have refused (written by another tool)
// is reported with its seq, an unknown offset and a fix that works: a fork
// before it. Regression: "invalid rollback: <nil>" at offset 0, advising a
// salvage that cut nothing.
func TestVerifyInvalidReservedEvent(t *testing.T) {
	dir := t.TempDir()
	_, path, lines := threeEvents(t, dir)
	writeFile(t, path, lines[0], lines[1], `{"seq":1,"type":"rollback","time":0,"data":{"to":5}}`+"\n", lines[3])
	res := logtool(t, "", "verify", "--json", path)
	require.Equal(t, 1, res.code, res.stderr)
	var got verifyLine
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &got))
	require.NotNil(t, got.Error)
	require.Equal(t, "corrupt", got.Error.Kind)
	require.Equal(t, int64(1), *got.Error.Seq)
	require.Nil(t, got.Error.Offset, "the reader of the logical log does not know it")
	require.Contains(t, got.Error.Message, "to seq 5 is not before the rollback's own seq")
	require.Contains(t, got.Error.Message, "logtool fork --at 0")
	require.NotContains(t, got.Error.Message, "<nil>")
}
