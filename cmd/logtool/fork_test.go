package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
)

// appendEvents appends event lines to a session and requires success.
func appendEvents(t *testing.T, dir, id string, lines ...string) {
	t.Helper()
	res := logtool(t, strings.Join(lines, "\n")+"\n", "--dir", dir, "append", id)
	require.Equal(t, 0, res.code, res.stderr)
}

// catJSON returns `cat --json` of a session, requiring success.
func catJSON(t *testing.T, dir string, args ...string) string {
	t.Helper()
	res := logtool(t, "", append([]string{"--dir", dir, "cat", "--json"}, args...)...)
	require.Equal(t, 0, res.code, res.stderr)
	return res.stdout
}

// forkSession runs `logtool fork` and returns the new session's ID and path.
func forkSession(t *testing.T, dir string, args ...string) (id, path string) {
	t.Helper()
	res := logtool(t, "", append([]string{"--dir", dir, "fork"}, args...)...)
	require.Equal(t, 0, res.code, res.stderr)
	var created struct{ ID, Path string }
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &created))
	return created.ID, created.Path
}

// The newcomer flow: new, append, fork, append to both branches,
// ls --tree, export the fork, verify the export alone, import it elsewhere,
// diff.
func TestForkExportImportFlow(t *testing.T) {
	for _, enc := range []string{"raw", "zstd"} {
		t.Run(enc, func(t *testing.T) {
			dir := t.TempDir()
			parent, _ := newSession(t, dir, "--encoding", enc, "--label", "agent=coder")
			appendEvents(t, dir, parent,
				`{"type":"turn/start","time":1,"data":{}}`,
				`{"type":"user/message","time":2,"data":{"text":"hi"}}`,
				`{"type":"assistant/chunk","time":3,"data":{"text":"He"}}`,
				`{"type":"assistant/chunk","time":4,"data":{"text":"llo"}}`,
				`{"type":"assistant/message","time":5,"data":{"text":"Hello"}}`,
				`{"type":"turn/end","time":6,"data":{"kind":"completed"}}`,
			)
			cp := logtool(t, "", "--dir", dir, "checkpoint", "--label", "done", parent)
			require.Equal(t, 0, cp.code, cp.stderr)
			require.Contains(t, cp.stdout, `"seq":6`)

			const at = 6 // the checkpoint is the fork's last inherited event
			fork, forkPath := forkSession(t, dir, "--at", strconv.Itoa(at), parent)
			ext := ".jsonl"
			if enc == "zstd" {
				ext = ".jsonl.zst"
			}
			require.Equal(t, filepath.Join(dir, fork+ext), forkPath, "the fork takes its parent's encoding")
			require.FileExists(t, forkPath, "durable on return")

			appendEvents(t, dir, parent, `{"type":"turn/start","time":10,"data":{"input":"parent"}}`)
			appendEvents(t, dir, fork,
				`{"type":"turn/start","time":20,"data":{"input":"fork"}}`,
				`{"type":"user/message","time":21,"data":{"text":"on the fork"}}`,
			)

			// ls --tree: the fork under its parent, with the right counts.
			res := logtool(t, "", "--dir", dir, "ls", "--tree", "--json")
			require.Equal(t, 0, res.code, res.stderr)
			rows := jsonLines(t, res.stdout)
			require.Len(t, rows, 2)
			require.Equal(t, parent, rows[0]["id"])
			require.EqualValues(t, 0, rows[0]["depth"])
			require.EqualValues(t, 8, rows[0]["events"])
			require.Nil(t, rows[0]["parent"])
			require.Equal(t, fork, rows[1]["id"])
			require.EqualValues(t, 1, rows[1]["depth"])
			require.EqualValues(t, 9, rows[1]["events"], "7 inherited + 2 of its own")
			require.EqualValues(t, 21, rows[1]["lastTime"])
			require.Equal(t, map[string]any{"id": parent, "seq": float64(at), "mode": "fork"}, rows[1]["parent"])
			require.Equal(t, false, rows[1]["parentGone"])

			res = logtoolWords(t, "", "--dir", dir, "ls", "--tree")
			require.Equal(t, 0, res.code, res.stderr)
			lines := strings.Split(strings.TrimSpace(res.stdout), "\n")
			require.Len(t, lines, 3)
			require.True(t, strings.HasPrefix(lines[0], "ID "), lines[0])
			require.Regexp(t, `^`+parent+` +- +8 +\d+y ago +agent=coder$`, lines[1])
			require.Regexp(t, `^  `+fork+` +fork@6 +9 +\d+y ago +-$`, lines[2])

			// export the fork: standalone, verifies alone, same logical log.
			forkCat := catJSON(t, dir, fork)
			out := filepath.Join(t.TempDir(), "fork.export.jsonl")
			res = logtool(t, "", "--dir", dir, "export", "--out", out, fork)
			require.Equal(t, 0, res.code, res.stderr)
			require.JSONEq(t, `{"id":"`+fork+`","path":"`+out+`","events":9,"lastSeq":8}`, res.stdout)
			toStdout := logtool(t, "", "--dir", dir, "export", fork)
			require.Equal(t, 0, toStdout.code, toStdout.stderr)
			written, err := os.ReadFile(out)
			require.NoError(t, err)
			require.Equal(t, string(written), toStdout.stdout, "stdout and --out write the same bytes")
			require.NotContains(t, strings.SplitN(string(written), "\n", 2)[0], `"parent"`)

			v := logtool(t, "", "verify", "--json", out)
			require.Equal(t, 0, v.code, v.stdout)
			require.JSONEq(t, `{"path":"`+out+`","id":"`+fork+`","ok":true,"events":9,"fileEvents":9,"torn":null,"checkpoints":1,"unchecked":0,"error":null,"protection":{"sealed":false,"redacted":0,"escrowed":0}}`, v.stdout)
			require.Equal(t, forkCat, catJSON(t, dir, out))

			st := logtool(t, "", "stat", "--json", out)
			require.Equal(t, 0, st.code, st.stderr)
			var info map[string]any
			require.NoError(t, json.Unmarshal([]byte(st.stdout), &info))
			require.Nil(t, info["parent"])
			require.Equal(t, "raw", info["encoding"])

			// import it into another store: same ID, same log.
			other := t.TempDir()
			res = logtool(t, "", "--dir", other, "import", out)
			require.Equal(t, 0, res.code, res.stderr)
			exported, err := os.Stat(out)
			require.NoError(t, err)
			require.JSONEq(t, `{"id":"`+fork+`","path":"`+filepath.Join(other, fork+".jsonl")+`","events":9,"source":"`+out+`","format":"sessionlog","status":"created","sourceBytes":`+strconv.FormatInt(exported.Size(), 10)+`}`, res.stdout)
			require.Equal(t, forkCat, catJSON(t, other, fork))
			v = logtool(t, "", "--dir", other, "verify", "--json", fork)
			require.Equal(t, 0, v.code, v.stdout)
			require.Contains(t, v.stdout, `"checkpoints":1`)
			st = logtool(t, "", "--dir", other, "stat", "--json", fork)
			require.NoError(t, json.Unmarshal([]byte(st.stdout), &info))
			require.Equal(t, map[string]any{}, info["labels"], "the fork had no labels")

			// diff: the branches part at at+1; a session equals itself and its export.
			d := logtool(t, "", "--dir", dir, "diff", "--json", parent, fork)
			require.Equal(t, 1, d.code, d.stderr)
			require.JSONEq(t, `{"firstDiff":7,"a":{"seq":7,"type":"turn/start","time":10,"data":{"input":"parent"}},"b":{"seq":7,"type":"turn/start","time":20,"data":{"input":"fork"}},"lenA":8,"lenB":9}`, d.stdout)
			d = logtoolWords(t, "", "--dir", dir, "diff", parent, fork)
			require.Equal(t, 1, d.code)
			require.Contains(t, d.stdout, "first difference at seq 7")
			require.Contains(t, d.stderr, "differ from seq 7")
			for _, same := range []struct{ a, b, want string }{
				{parent, parent, "identical: 8 events\n"},
				{fork, out, "identical: 9 events\n"},
			} {
				d = logtoolWords(t, "", "--dir", dir, "diff", same.a, same.b)
				require.Equal(t, 0, d.code, d.stderr)
				require.Equal(t, same.want, d.stdout)
				require.Empty(t, d.stderr)
			}
		})
	}
}

func TestForkRefuses(t *testing.T) {
	dir := t.TempDir()
	parent, parentPath := newSession(t, dir)
	appendEvents(t, dir, parent, `{"type":"a","time":1}`, `{"type":"b","time":2}`)
	free := filepath.Join(t.TempDir(), "copy.jsonl")
	require.NoError(t, copyFile(parentPath, free))
	const missing = "01JDX3N0Q3Z8Y6W2D1V5K7M9PA"

	tests := []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"at past the parent's end", []string{"--at", "2", parent}, 2, "--at 2: " + parent + " holds seqs 0 to 1"},
		{"unknown session", []string{"--at", "0", missing}, 2, "not found"},
		{"no --at", []string{parent}, 2, "needs --at"},
		{"negative --at", []string{"--at", "-1", parent}, 2, `--at "-1": want a seq, an integer >= 0`},
		{"freely named file", []string{"--at", "0", free}, 2, "needs a session of a store"},
		{"bad encoding", []string{"--at", "0", "--encoding", "lz4", parent}, 2, "want raw or zstd"},
		{"bad label", []string{"--at", "0", "--label", "x", parent}, 2, "want k=v"},
		{"no session", []string{"--at", "0"}, 2, "accepts 1 arg"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := logtool(t, "", append([]string{"--dir", dir, "fork"}, tt.args...)...)
			require.Equal(t, tt.code, res.code, res.stderr)
			require.Contains(t, res.stderr, tt.msg)
			require.Empty(t, res.stdout)
		})
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	logs := 0
	for _, e := range entries {
		if _, _, ok := file.ParseFileName(e.Name()); ok {
			logs++
		}
	}
	require.Equal(t, 1, logs, "no fork was created")
}

func TestForkOptions(t *testing.T) {
	dir := t.TempDir()
	parent, parentPath := newSession(t, dir, "--label", "agent=coder")
	appendEvents(t, dir, parent, `{"type":"a","time":1}`, `{"type":"b","time":2}`)

	fork, forkPath := forkSession(t, dir, "--at", "0", "--encoding", "zstd", "--label", "why=retry", parentPath)
	require.Equal(t, filepath.Join(dir, fork+".jsonl.zst"), forkPath)
	res := logtool(t, "", "--dir", dir, "stat", "--json", fork)
	require.Equal(t, 0, res.code, res.stderr)
	var info map[string]any
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &info))
	require.Equal(t, map[string]any{"why": "retry"}, info["labels"])
	require.EqualValues(t, 1, info["events"])

	// A fork of a fork reads through both.
	appendEvents(t, dir, fork, `{"type":"c","time":3}`)
	grand, _ := forkSession(t, dir, "--at", "1", fork)
	appendEvents(t, dir, grand, `{"type":"d","time":4}`)
	require.Equal(t, `{"seq":0,"type":"a","time":1,"data":null}
{"seq":1,"type":"c","time":3,"data":null}
{"seq":2,"type":"d","time":4,"data":null}
`, catJSON(t, dir, grand))
	res = logtool(t, "", "--dir", dir, "export", grand)
	require.Equal(t, 0, res.code, res.stderr)
	require.Equal(t, 4, strings.Count(res.stdout, "\n"), "the header and three rows: %s", res.stdout)
}

func TestExportTo(t *testing.T) {
	dir := t.TempDir()
	id, path := newSession(t, dir, "--label", "title=t")
	appendEvents(t, dir, id,
		`{"type":"user/message","time":1,"data":{"text":"a"}}`,
		`{"type":"assistant/chunk","time":2,"data":{"text":"b"}}`,
		`{"type":"assistant/chunk","time":3,"data":{"text":"c"}}`,
	)
	require.Equal(t, 0, logtool(t, "", "--dir", dir, "checkpoint", id).code) // seq 3
	appendEvents(t, dir, id, `{"type":"user/message","time":5,"data":{"text":"d"}}`)
	require.Equal(t, 0, logtool(t, "", "--dir", dir, "checkpoint", id).code) // seq 5

	for _, to := range []string{"0", "2", "3", "4", "5"} {
		t.Run("to "+to, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), id+".jsonl")
			res := logtool(t, "", "--dir", dir, "export", "--to", to, "--out", out, id)
			require.Equal(t, 0, res.code, res.stderr)
			require.Equal(t, catJSON(t, dir, "--to", to, id), catJSON(t, dir, out))
			n, _ := strconv.Atoi(to)
			checkpoints := 0
			if n >= 3 {
				checkpoints = 1
			}
			if n >= 5 {
				checkpoints = 2
			}
			v := logtool(t, "", "verify", "--json", out)
			require.Equal(t, 0, v.code, v.stdout)
			require.Contains(t, v.stdout, `"checkpoints":`+strconv.Itoa(checkpoints)+`,`)
			require.Contains(t, v.stdout, `"events":`+strconv.Itoa(n+1)+`,`)
		})
	}

	existing := filepath.Join(t.TempDir(), "x.jsonl")
	require.NoError(t, copyFile(path, existing))
	tests := []struct {
		name string
		args []string
		msg  string
	}{
		{"to past the end", []string{"--to", "6", id}, "holds seqs 0 to 5"},
		{"negative to", []string{"--to", "-1", id}, `--to "-1": want a seq, an integer >= 0`},
		{"out exists", []string{"--out", existing, id}, "exists"},
		{"out zstd", []string{"--out", filepath.Join(t.TempDir(), "x.jsonl.zst"), id}, "raw"},
		{"out named after another session", []string{"--out", filepath.Join(t.TempDir(), "01JDX3N0Q3Z8Y6W2D1V5K7M9PA.jsonl"), id}, "named after session"},
		{"unknown session", []string{"01JDX3N0Q3Z8Y6W2D1V5K7M9PA"}, "not found"},
		{"out folder missing", []string{"--out", filepath.Join(t.TempDir(), "no", "x.jsonl"), id}, "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := logtool(t, "", append([]string{"--dir", dir, "export"}, tt.args...)...)
			require.Equal(t, 2, res.code, res.stderr)
			require.Contains(t, res.stderr, tt.msg)
			require.Empty(t, res.stdout)
		})
	}
	got, err := os.ReadFile(existing)
	require.NoError(t, err)
	want, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, want, got, "an existing --out is left alone")
}

func TestExportLineageBroken(t *testing.T) {
	dir := t.TempDir()
	parent, _ := newSession(t, dir)
	appendEvents(t, dir, parent, `{"type":"a","time":1}`)
	_, forkPath := forkSession(t, dir, "--at", "0", parent)
	alone := filepath.Join(t.TempDir(), filepath.Base(forkPath))
	require.NoError(t, copyFile(forkPath, alone))

	res := logtool(t, "", "export", alone)
	require.Equal(t, 1, res.code, res.stderr)
	require.Contains(t, res.stderr, "lineage")
	require.Empty(t, res.stdout, "nothing is written before the lineage is known to be whole")

	out := filepath.Join(t.TempDir(), "out.jsonl")
	res = logtool(t, "", "export", "--out", out, alone)
	require.Equal(t, 1, res.code, res.stderr)
	require.NoFileExists(t, out)
	entries, err := os.ReadDir(filepath.Dir(out))
	require.NoError(t, err)
	require.Empty(t, entries, "the temp file is removed")
}

func TestImport(t *testing.T) {
	dir := t.TempDir()
	id, path := newSession(t, dir, "--label", "agent=coder", "--encoding", "zstd")
	appendEvents(t, dir, id, `{"type":"a","time":1}`, `{"type":"b","time":2,"data":[1, 2]}`)
	require.Equal(t, 0, logtool(t, "", "--dir", dir, "checkpoint", id).code)

	// A zstd log is imported as it stands, in its own encoding.
	other := t.TempDir()
	res := logtool(t, "", "--dir", other, "import", "--from", "sessionlog", path)
	require.Equal(t, 0, res.code, res.stderr)
	require.Equal(t, catJSON(t, dir, id), catJSON(t, other, id))
	st := logtool(t, "", "--dir", other, "stat", "--json", id)
	var info map[string]any
	require.NoError(t, json.Unmarshal([]byte(st.stdout), &info))
	require.Equal(t, map[string]any{"agent": "coder"}, info["labels"])
	require.Equal(t, "zstd", info["encoding"])

	before, err := os.ReadFile(filepath.Join(other, id+".jsonl.zst"))
	require.NoError(t, err)
	corrupt := filepath.Join(t.TempDir(), "bad.jsonl")
	writeFile(t, corrupt, `{"format":"sessionlog","version":1,"id":"01JDX3N0Q3Z8Y6W2D1V5K7M9PA","createdAt":1}`+"\n",
		`{"seq":0,"type":"a","time":1}`+"\n", `{"seq":5,"type":"a","time":1}`+"\n", `{"seq":6,"type":"a","time":1}`+"\n")

	// Its ID is its identity: imported again it is unchanged. What cannot
	// be imported fails, a line saying why, or (exit 2) nothing runs.
	tests := []struct {
		name   string
		args   []string
		code   int
		status string // of the one line printed; "" for none
		msg    string
	}{
		{"existing id", []string{path}, 0, "unchanged", ""},
		{"another format", []string{"--from", "claude", path}, 1, "failed", "not a Claude Code transcript"},
		{"codex", []string{"--from", "codex", path}, 1, "failed", "not a Codex rollout line"},
		{"unknown format", []string{"--from", "word", path}, 2, "", "want one of"},
		{"a folder", []string{dir}, 0, "unchanged", ""},
		{"missing file", []string{filepath.Join(dir, "none.jsonl")}, 2, "failed", "no such file or folder"},
		{"corrupt file", []string{corrupt}, 1, "failed", "corrupt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := logtool(t, "", append([]string{"--dir", other, "import"}, tt.args...)...)
			require.Equal(t, tt.code, res.code, res.stderr)
			require.Contains(t, res.stderr, tt.msg)
			if tt.status == "" {
				require.Empty(t, res.stdout)
				return
			}
			out := importLines(t, res.stdout)
			require.Len(t, out, 1)
			require.Equal(t, tt.status, out[0].Status)
		})
	}
	// Another log under the same ID: a conflict, the session untouched.
	clash := filepath.Join(t.TempDir(), "clash.jsonl")
	writeFile(t, clash, `{"format":"sessionlog","version":1,"id":"`+id+`","createdAt":1}`+"\n", `{"seq":0,"type":"z","time":9}`+"\n")
	res = logtool(t, "", "--dir", other, "import", clash)
	require.Equal(t, 2, res.code, res.stderr)
	require.Contains(t, res.stderr, "session exists: "+id)
	after, err := os.ReadFile(filepath.Join(other, id+".jsonl.zst"))
	require.NoError(t, err)
	require.Equal(t, before, after, "the session already there is untouched")
	require.NoFileExists(t, filepath.Join(other, "01JDX3N0Q3Z8Y6W2D1V5K7M9PA.jsonl"), "nothing of the corrupt file")
}

func TestLsTreeParentGone(t *testing.T) {
	dir := t.TempDir()
	parent, _ := newSession(t, dir)
	appendEvents(t, dir, parent, `{"type":"a","time":1}`, `{"type":"tool/call","time":2,"data":{"id":"c1"}}`)
	fork, _ := forkSession(t, dir, "--at", "0", parent)
	child, _ := newSession(t, dir, "--parent", parent, "--at", "1", "--mode", "child", "--call", "c1", "--label", "role=helper")
	appendEvents(t, dir, child, `{"type":"x","time":3}`)

	res := logtoolWords(t, "", "--dir", dir, "ls", "--tree")
	require.Equal(t, 0, res.code, res.stderr)
	lines := strings.Split(strings.TrimSpace(res.stdout), "\n")
	require.Len(t, lines, 4)
	require.True(t, strings.HasPrefix(lines[1], parent+" "))
	// Under the parent, oldest first: the fork and the child may have been
	// created in the same millisecond, then their IDs decide.
	under := requireOldestFirst(t, dir, lines[2:])
	require.Regexp(t, `^  `+fork+` +fork@0 +1 +- +-$`, under[fork])
	require.Regexp(t, `^  `+child+` +child@1 call c1 +1 +\d+y ago +role=helper$`, under[child])

	// Delete the parent: the fork gets its prefix and stands alone; the
	// child outlives it, its parent gone.
	st := file.New(afero.NewOsFs(), dir)
	require.ErrorAs(t, st.Delete(t.Context(), parent), new(*handle.DependentsError))
	require.NoError(t, st.Delete(t.Context(), parent, handle.Detach()))

	res = logtoolWords(t, "", "--dir", dir, "ls", "--tree")
	require.Equal(t, 0, res.code, res.stderr)
	lines = strings.Split(strings.TrimSpace(res.stdout), "\n")
	require.Len(t, lines, 3)
	byID := requireOldestFirst(t, dir, lines[1:]) // both roots now
	require.Regexp(t, `^`+fork+` +- +1 `, byID[fork], "detached: a root")
	require.Regexp(t, `^`+child+` +child@1 call c1 +1 +.* role=helper  \(parent `+parent+` gone\)$`, byID[child])

	res = logtool(t, "", "ls", "--tree", "--json", dir)
	require.Equal(t, 0, res.code, res.stderr)
	rows := map[any]map[string]any{}
	for _, r := range jsonLines(t, res.stdout) {
		rows[r["id"]] = r
	}
	require.Len(t, rows, 2)
	require.EqualValues(t, 0, rows[child]["depth"])
	require.Equal(t, true, rows[child]["parentGone"])
	require.Equal(t, map[string]any{"id": parent, "seq": 1.0, "mode": "child", "call": "c1"}, rows[child]["parent"])
	require.EqualValues(t, 0, rows[fork]["depth"])
	require.Equal(t, false, rows[fork]["parentGone"])
}

func TestLsTreeEdges(t *testing.T) {
	dir := t.TempDir()
	res := logtool(t, "", "--dir", filepath.Join(dir, "none"), "ls", "--tree")
	require.Equal(t, 2, res.code, "a --dir that is not there is a mistake, not an empty store")
	require.Contains(t, res.stderr, "no such folder (give --dir D or --store URL")
	require.Equal(t, 2, logtool(t, "", "ls", "--tree", filepath.Join(dir, "none")).code, "a named folder must exist")

	id, _ := newSession(t, dir)
	const broken = "01JDX3N0Q3Z8Y6W2D1V5K7M9PA"
	writeFile(t, filepath.Join(dir, broken+".jsonl"), "not a header\n")
	res = logtool(t, "", "--dir", dir, "ls", "--tree", "--json")
	require.Equal(t, 1, res.code, "an unreadable session fails the listing")
	rows := jsonLines(t, res.stdout)
	require.Len(t, rows, 1, "the readable sessions are still shown")
	require.Equal(t, id, rows[0]["id"])
	require.Contains(t, res.stderr, broken)
}

func TestDiff(t *testing.T) {
	dir := t.TempDir()
	a, _ := newSession(t, dir)
	appendEvents(t, dir, a, `{"type":"x","time":1,"data":{"k":1}}`, `{"type":"y","time":2}`)
	prefix, _ := newSession(t, dir)
	appendEvents(t, dir, prefix, `{"type":"x","time":1,"data":{"k":1}}`)
	data, _ := newSession(t, dir)
	appendEvents(t, dir, data, `{"type":"x","time":1,"data":{"k":2}}`, `{"type":"y","time":2}`)
	spaced, _ := newSession(t, dir)
	appendEvents(t, dir, spaced, `{"type":"x","time":1,"data":{ "k" : 1 }}`, `{"type":"y","time":2}`)
	empty, _ := newSession(t, dir)

	tests := []struct {
		name string
		a, b string
		code int
		want string
	}{
		{"same", a, a, 0, `{"firstDiff":null,"a":null,"b":null,"lenA":2,"lenB":2}`},
		{"compacted data is equal", a, spaced, 0, `{"firstDiff":null,"a":null,"b":null,"lenA":2,"lenB":2}`},
		{"b is a prefix", a, prefix, 1, `{"firstDiff":1,"a":{"seq":1,"type":"y","time":2,"data":null},"b":null,"lenA":2,"lenB":1}`},
		{"a is a prefix", prefix, a, 1, `{"firstDiff":1,"a":null,"b":{"seq":1,"type":"y","time":2,"data":null},"lenA":1,"lenB":2}`},
		{"data differs", a, data, 1, `{"firstDiff":0,"a":{"seq":0,"type":"x","time":1,"data":{"k":1}},"b":{"seq":0,"type":"x","time":1,"data":{"k":2}},"lenA":2,"lenB":2}`},
		{"empty", empty, empty, 0, `{"firstDiff":null,"a":null,"b":null,"lenA":0,"lenB":0}`},
		{"empty against one", empty, prefix, 1, `{"firstDiff":0,"a":null,"b":{"seq":0,"type":"x","time":1,"data":{"k":1}},"lenA":0,"lenB":1}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := logtool(t, "", "--dir", dir, "diff", "--json", tt.a, tt.b)
			require.Equal(t, tt.code, res.code, res.stderr)
			require.JSONEq(t, tt.want, res.stdout)
			require.Equal(t, 1, strings.Count(res.stdout, "\n"))
		})
	}

	res := logtoolWords(t, "", "--dir", dir, "diff", a, prefix)
	require.Equal(t, 1, res.code)
	require.Contains(t, res.stdout, "first difference at seq 1 (a: 2 events, b: 1 event)")
	require.Contains(t, res.stdout, "(none: its log ends at seq 0)")

	for _, args := range [][]string{{a}, {a, "01JDX3N0Q3Z8Y6W2D1V5K7M9PA"}, {"01JDX3N0Q3Z8Y6W2D1V5K7M9PA", a}} {
		res := logtool(t, "", append([]string{"--dir", dir, "diff"}, args...)...)
		require.Equal(t, 2, res.code, res.stderr)
		require.Empty(t, res.stdout)
	}
}

func TestImportFork(t *testing.T) {
	dir := t.TempDir()
	parent, _ := newSession(t, dir)
	appendEvents(t, dir, parent, `{"type":"a","time":1}`, `{"type":"b","time":2}`)
	fork, forkPath := forkSession(t, dir, "--at", "0", "--label", "k=v", parent)
	appendEvents(t, dir, fork, `{"type":"c","time":3}`)

	// A fork's file, its parent beside it: imported whole, standing alone.
	other := t.TempDir()
	res := logtool(t, "", "--dir", other, "import", forkPath)
	require.Equal(t, 0, res.code, res.stderr)
	require.Contains(t, res.stdout, `"events":2`)
	require.Equal(t, catJSON(t, dir, fork), catJSON(t, other, fork))
	st := logtool(t, "", "--dir", other, "stat", "--json", fork)
	var info map[string]any
	require.NoError(t, json.Unmarshal([]byte(st.stdout), &info))
	require.Nil(t, info["parent"])
	require.Equal(t, map[string]any{"k": "v"}, info["labels"])

	// Its parent gone, the import fails and leaves nothing behind.
	alone := filepath.Join(t.TempDir(), filepath.Base(forkPath))
	require.NoError(t, copyFile(forkPath, alone))
	third := t.TempDir()
	res = logtool(t, "", "--dir", third, "import", alone)
	require.Equal(t, 1, res.code, res.stderr)
	require.Contains(t, res.stderr, "lineage")
	require.Equal(t, "failed", importLines(t, res.stdout)[0].Status)
	entries, err := os.ReadDir(third)
	require.NoError(t, err)
	for _, e := range entries {
		_, _, ok := file.ParseFileName(e.Name())
		require.False(t, ok, "no session left: %s", e.Name())
	}
}

func TestLsTreeLoop(t *testing.T) {
	dir := t.TempDir()
	root, _ := newSession(t, dir)
	const a, b = "01JDX3N0Q3Z8Y6W2D1V5K7M9PA", "01JDX3N0Q3Z8Y6W2D1V5K7M9PB"
	header := func(id, parent string) string {
		return `{"format":"sessionlog","version":1,"id":"` + id + `","createdAt":1,"parent":{"id":"` + parent + `","seq":0,"mode":"fork"}}` + "\n"
	}
	writeFile(t, filepath.Join(dir, a+".jsonl"), header(a, b))
	writeFile(t, filepath.Join(dir, b+".jsonl"), header(b, a))

	res := logtool(t, "", "--dir", dir, "ls", "--tree")
	require.Equal(t, 1, res.code, res.stderr)
	require.Contains(t, res.stdout, root)
	require.NotContains(t, res.stdout, a)
	require.Contains(t, res.stderr, a+": not shown: its chain of parents loops")
	require.Contains(t, res.stderr, b+": not shown")
}

func TestImportKeepsCreatedAt(t *testing.T) {
	dir, other := t.TempDir(), t.TempDir()
	id, path := newSession(t, dir)
	require.Equal(t, 0, logtool(t, `{"type":"a"}`+"\n", "--dir", dir, "append", id).code)
	before := logtool(t, "", "--dir", dir, "stat", "--json", id)
	res := logtool(t, "", "--dir", other, "import", path)
	require.Equal(t, 0, res.code, res.stderr)
	after := logtool(t, "", "--dir", other, "stat", "--json", id)
	var a, b struct{ CreatedAt int64 }
	require.NoError(t, json.Unmarshal([]byte(before.stdout), &a))
	require.NoError(t, json.Unmarshal([]byte(after.stdout), &b))
	require.Equal(t, a.CreatedAt, b.CreatedAt)
}

// requireOldestFirst checks that the sessions of ls --tree lines (siblings)
// come oldest first by createdAt, then by ID (sessions created in the same
// millisecond by different processes have no other order), and returns the
// lines by session ID.
func requireOldestFirst(t *testing.T, dir string, lines []string) map[string]string {
	t.Helper()
	byID := map[string]string{}
	type age struct {
		created int64
		id      string
	}
	var ages []age
	for _, l := range lines {
		id := strings.Fields(l)[0]
		byID[id] = l
		res := logtool(t, "", "--dir", dir, "stat", "--json", id)
		require.Equal(t, 0, res.code, res.stderr)
		var st struct {
			CreatedAt int64 `json:"createdAt"`
		}
		require.NoError(t, json.Unmarshal([]byte(res.stdout), &st))
		ages = append(ages, age{st.CreatedAt, id})
	}
	require.True(t, slices.IsSortedFunc(ages, func(a, b age) int {
		return cmp.Or(cmp.Compare(a.created, b.created), strings.Compare(a.id, b.id))
	}), "oldest first: %v", ages)
	return byID
}

// TestDiffRequests: two recorded runs that differ in one tool result
// differ at the request that carries it.
func TestDiffRequests(t *testing.T) {
	dir := t.TempDir()
	runs := 0
	req := func(msgs string) string {
		return fmt.Sprintf(`{"type":"provider/request","time":1,"data":{"provider":"anthropic","api":"messages","method":"POST","path":"/v1/messages","body":{"model":"m","metadata":{"user_id":"run-%d"},"messages":[%s]}}}`, runs, msgs)
	}
	resp := func(seq string) string {
		return `{"type":"provider/response","time":2,"data":{"request":` + seq + `,"status":200,"body":{"type":"message","content":[]},"complete":true}}`
	}
	u := `{"role":"user","content":"go"}`
	run := func(out string) string {
		runs++ // a volatile field that differs from run to run
		id, _ := newSession(t, dir)
		appendEvents(t, dir, id, req(u), resp("0"), req(u+`,{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"`+out+`"}]}`), resp("2"))
		return id
	}
	a, b, same := run("one"), run("two"), run("one")

	res := logtool(t, "", "--dir", dir, "diff", "--requests", "--json", a, b)
	require.Equal(t, 1, res.code, res.stderr)
	require.JSONEq(t, `{"call":1,"seqA":2,"seqB":2,"path":"messages[1].content[0].content","a":"\"one\"","b":"\"two\"","callsA":2,"callsB":2}`, res.stdout)

	res = logtool(t, "", "--dir", dir, "diff", "--requests", "--json", a, same)
	require.Equal(t, 0, res.code, res.stderr)
	require.JSONEq(t, `{"call":null,"callsA":2,"callsB":2}`, res.stdout)

	res = logtoolWords(t, "", "--dir", dir, "diff", "--requests", a, b)
	require.Equal(t, 1, res.code)
	require.Contains(t, res.stdout, "first differing model request: call 1")
	require.Contains(t, res.stdout, "messages[1].content[0].content")
}
