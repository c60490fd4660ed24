package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	neturl "net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	"github.com/synadia-io/orbit.go/jetstreamext"

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
	var forked struct{ ID string }
	require.NoError(t, json.Unmarshal([]byte(nats("", "fork", "--at", "1", id).stdout), &forked))
	require.Equal(t, strings.Join(strings.SplitAfter(cat, "\n")[:2], ""), nats("", "cat", "--json", forked.ID).stdout,
		"the fork reads its parent's events 0..1")
	require.Contains(t, nats("", "replay", "--projection", "transcript", forked.ID).stdout, "hello")
	// Regression: verify on JetStream counted a fork's own events as its
	// events (and none as its own); as on files, events is the logical log.
	require.Contains(t, nats("", "verify", "--json", forked.ID).stdout, `"ok":true,"events":2,"fileEvents":0,`)
	require.Contains(t, nats("", "verify", "--json", id).stdout, `"ok":true,"events":3,"fileEvents":3,`)

	// export from JetStream: the file reads the same, byte for byte.
	out := filepath.Join(t.TempDir(), "exported.jsonl")
	nats("", "export", "--out", out, id)
	res = logtool(t, "", "cat", "--json", out)
	require.Equal(t, 0, res.code, res.stderr)
	require.Equal(t, cat, res.stdout)

	// copy JetStream -> files -> another JetStream prefix: digests kept.
	res = logtool(t, "", "copy", url, dir)
	require.Equal(t, 0, res.code, res.stderr)
	lines := jsonLines(t, res.stdout)
	require.Len(t, lines, 2)
	require.Equal(t, id, lines[0]["id"], "the parent is copied before its fork")
	require.Equal(t, 3.0, lines[0]["events"])
	require.Equal(t, forked.ID, lines[1]["id"])
	require.Equal(t, 0.0, lines[1]["events"], "a fork's inherited events stay its parent's")
	copied := copyResult{Digest: lines[0]["digest"].(string)}
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

// Checkpoints are checked on read on JetStream as on files: an event
// changed behind the store's back (the server's disk, say) after a
// checkpoint covered it fails verify with a digest error.
func TestStoreNATSCheckpointVerified(t *testing.T) {
	url := natsURL(t, "cp")
	res := logtool(t, "", "--store", url, "new")
	require.Equal(t, 0, res.code, res.stderr)
	var created struct{ ID string }
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &created))
	id := created.ID
	res = logtool(t, `{"type":"user/message","data":{"text":"hello"}}`+"\n", "--store", url, "append", id)
	require.Equal(t, 0, res.code, res.stderr)
	res = logtool(t, "", "--store", url, "checkpoint", id)
	require.Equal(t, 0, res.code, res.stderr)
	res = logtool(t, "", "--store", url, "verify", "--json", id)
	require.Equal(t, 0, res.code, res.stderr)
	require.Contains(t, res.stdout, `"checkpoints":1`)

	// Rewrite the subject with "hello" turned into "jello": every row
	// still decodes, only the digest tells.
	u, err := neturl.Parse(url)
	require.NoError(t, err)
	nc, err := nats.Connect("nats://" + u.Host)
	require.NoError(t, err)
	defer nc.Close()
	js, err := natsjs.New(nc)
	require.NoError(t, err)
	subj := "cp.s." + id
	msgs, err := jetstreamext.GetBatch(t.Context(), js, "cp", 100, jetstreamext.GetBatchSubject(subj))
	require.NoError(t, err)
	var out []*nats.Msg
	for m, err := range msgs {
		require.NoError(t, err)
		nm := &nats.Msg{Subject: subj, Data: bytes.ReplaceAll(m.Data, []byte("hello"), []byte("jello")), Header: nats.Header{}}
		for _, k := range []string{"Sl-Off", "Sl-Seq"} {
			if v := m.Header.Get(k); v != "" {
				nm.Header.Set(k, v)
			}
		}
		out = append(out, nm)
	}
	out[0].Header.Set(natsjs.MsgRollup, natsjs.MsgRollupSubject)
	_, err = jetstreamext.PublishMsgBatch(t.Context(), js, out)
	require.NoError(t, err)

	res = logtool(t, "", "--store", url, "verify", "--json", id)
	require.Equal(t, exitFailed, res.code, res.stdout)
	require.Contains(t, res.stdout, `"kind":"digest"`)
}

// Regression: with --store, the commands that work on folders only (ls
// --tree, gc, tail, convert, repair) answered about --dir ("no sessions",
// nothing to collect) or failed on a file path; they now refuse (exit 2).
func TestStoreNATSFileOnlyCommandsRefuse(t *testing.T) {
	url := natsURL(t, "fileonly")
	id := "01JDX3N0Q3Z8Y6W2D1V5K7M9PA"
	for _, args := range [][]string{
		{"ls", "--tree"},
		{"gc", "--older-than", "1h", "--dry-run"},
		{"tail", id},
		{"convert", "--encoding", "zstd", id},
		{"repair", id},
	} {
		res := logtool(t, "", append([]string{"--store", url}, args...)...)
		require.Equal(t, 2, res.code, "%v: %s", args, res.stderr)
		require.Contains(t, res.stderr, "works on a folder store only", args)
	}
	res := logtool(t, "", "--store", url, "ls")
	require.Equal(t, 0, res.code, res.stderr)
}
