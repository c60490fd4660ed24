package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/internal/natstest"
)

// natsURL starts an embedded nats-server (see natstest.Run), shut down
// when t ends, and returns a --store URL for it.
func natsURL(t *testing.T, prefix string) string {
	s := natstest.Run(t)
	return fmt.Sprintf("nats://%s/%s?sync=always&lease=1s", s.Addr(), prefix)
}

// The commands work on a JetStream store as on files; export, import and
// copy move sessions between the two keeping every byte and digest.
func TestStoreNATS(t *testing.T) {
	url := natsURL(t, "cli")
	dir := t.TempDir()
	nats := func(stdin string, args ...string) result {
		t.Helper()
		res := logtool(t, stdin, append([]string{"--store", url}, args...)...)
		require.Equal(t, 0, res.code, "%v: %s", args, res.stderr)
		return res
	}
	var created struct{ ID, Path string }
	require.NoError(t, json.Unmarshal([]byte(nats("", "new", "--label", "agent=cli").stdout), &created))
	id := created.ID
	require.Equal(t, "nats:cli.s."+id, created.Path)
	res := nats(`{"type":"user/message","data":{"text":"hello"}}
{"type":"assistant/chunk","data":{"text":"hi"}}
{"type":"assistant/chunk","data":{"text":"!"}}
`, "append", id)
	require.Equal(t, `{"acked":2}`+"\n", res.stdout)
	cat := nats("", "cat", "--json", id).stdout
	require.Equal(t, 3, strings.Count(cat, "\n"))
	require.Contains(t, nats("", "stat", id).stdout, "seq 2 assistant/chunk")
	require.Contains(t, nats("", "ls").stdout, id)
	require.Contains(t, nats("", "verify", "--json", id).stdout, `"ok":true`)

	// export from JetStream: the file reads the same, byte for byte.
	out := filepath.Join(t.TempDir(), "exported.jsonl")
	nats("", "export", "--out", out, id)
	res = logtool(t, "", "cat", "--json", out)
	require.Equal(t, 0, res.code, res.stderr)
	require.Equal(t, cat, res.stdout)

	// copy JetStream -> files -> another JetStream prefix: digests kept.
	res = logtool(t, "", "copy", url, dir)
	require.Equal(t, 0, res.code, res.stderr)
	var copied copyResult
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &copied))
	require.Equal(t, copyResult{ID: id, Events: 3, Digest: copied.Digest}, copied)
	res = logtool(t, "", "--dir", dir, "cat", "--json", id)
	require.Equal(t, 0, res.code, res.stderr)
	require.Equal(t, cat, res.stdout)
	other := strings.Replace(url, "/cli?", "/other?", 1)
	res = logtool(t, "", "copy", dir, other)
	require.Equal(t, 0, res.code, res.stderr)
	require.Contains(t, res.stdout, copied.Digest)
	res = logtool(t, "", "copy", dir, other)
	require.Equal(t, exitUsage, res.code, "a session that exists already is refused")
	require.Contains(t, res.stderr, "session exists")

	// import of the exported file into JetStream.
	res = logtool(t, "", "--store", strings.Replace(url, "/cli?", "/imported?", 1), "import", out)
	require.Equal(t, 0, res.code, res.stderr)

	// Errors are the file store's.
	res = logtool(t, "", "--store", url, "cat", "01JDX3N0Q3Z8Y6W2D1V5K7M9PA")
	require.Equal(t, exitUsage, res.code, res.stderr)
	require.Contains(t, res.stderr, "not found")
}

func TestDemoNATS(t *testing.T) {
	url := natsURL(t, "demo")
	res := logtool(t, "", "--dir", t.TempDir(), "--store", url, "demo")
	require.Equal(t, 0, res.code, res.stderr)
	for _, want := range []string{
		"killed the agent (SIGKILL) mid-turn",
		"stat: open turn true",
		"resume appended seq",
		"rolled back to checkpoint turn-1",
		"forked ",
		"$ logtool ls --store",
		"$ logtool verify",
	} {
		require.Contains(t, res.stdout, want)
	}
	require.NotContains(t, res.stdout, "FAIL")
}
