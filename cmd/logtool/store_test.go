package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	neturl "net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"
	"github.com/synadia-io/orbit.go/jetstreamext"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/handle/jetstream"
	"github.com/sessionlog/sessionlog/internal/testkit/natstest"
	"github.com/sessionlog/sessionlog/ops/transfer"
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
	require.Contains(t, logtoolWords(t, "", "--store", url, "stat", id).stdout, "seq 2 assistant/chunk")
	require.Contains(t, nats("", "ls").stdout, id)
	// Names work on a stream as in a folder (handle.Resolve over Store).
	require.Equal(t, cat, nats("", "cat", "agent=cli").stdout)
	require.Equal(t, cat, nats("", "cat", strings.ToLower(id)).stdout)
	res = logtool(t, "", "--store", url, "cat", "agent=nobody")
	require.Equal(t, exitUsage, res.code)
	require.Contains(t, res.stderr, "(looked in --store "+url+";")
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
	copied := transfer.Result{Digest: lines[0]["digest"].(string)}
	res = logtool(t, "", "--dir", dir, "cat", "--json", id)
	require.Equal(t, 0, res.code, res.stderr)
	require.Equal(t, cat, res.stdout)
	other := strings.Replace(url, "/cli?", "/other?", 1)
	res = logtool(t, "", "copy", dir, other)
	require.Equal(t, 0, res.code, res.stderr)
	require.Contains(t, res.stdout, copied.Digest)
	res = logtool(t, "", "copy", dir, other)
	require.Equal(t, 0, res.code, "the same copy again: %s", res.stderr)
	for _, l := range jsonLines(t, res.stdout) {
		require.Equal(t, "unchanged", l["status"], "a session the destination holds already is passed over")
	}

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
		"$ logtool ls --tree",
		"fork@20",
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

// Regression: with --store, the commands that work on folders only
// answered about --dir ("no sessions", nothing to collect) or failed on a
// file path; convert and repair, file operations, now refuse (exit 2).
// (ls --tree, gc and tail work on either store: the tests below.)
func TestStoreNATSFileOnlyCommandsRefuse(t *testing.T) {
	url := natsURL(t, "fileonly")
	id := "01JDX3N0Q3Z8Y6W2D1V5K7M9PA"
	for _, args := range [][]string{
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

// natsNew creates a session on the store at url and returns its ID.
func natsNew(t *testing.T, url string, args ...string) string {
	t.Helper()
	res := logtool(t, "", append([]string{"--store", url, "new"}, args...)...)
	require.Equal(t, 0, res.code, res.stderr)
	var created struct{ ID string }
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &created))
	return created.ID
}

// natsAppend appends event lines to session id on the store at url.
func natsAppend(t *testing.T, url, id string, lines ...string) {
	t.Helper()
	res := logtool(t, strings.Join(lines, "\n")+"\n", "--store", url, "append", id)
	require.Equal(t, 0, res.code, res.stderr)
}

// ls --tree on JetStream shows the forest as on files: the same rows, in
// the same order, for the same sessions copied from a folder.
func TestStoreNATSTree(t *testing.T) {
	url := natsURL(t, "tree")
	dir := t.TempDir()
	parent, _ := newSession(t, dir, "--label", "agent=a")
	appendEvents(t, dir, parent, `{"type":"a","time":1}`, `{"type":"tool/call","time":2,"data":{"id":"c1"}}`)
	fork, _ := forkSession(t, dir, "--at", "0", parent)
	child, _ := newSession(t, dir, "--parent", parent, "--at", "1", "--mode", "child", "--call", "c1")
	appendEvents(t, dir, child, `{"type":"x","time":3}`)
	alone, _ := newSession(t, dir)
	res := logtool(t, "", "copy", dir, url)
	require.Equal(t, 0, res.code, res.stderr)

	for _, form := range [][]string{{"ls", "--tree"}, {"ls", "--tree", "--json"}} {
		files := logtoolWords(t, "", append([]string{"--dir", dir}, form...)...)
		require.Equal(t, 0, files.code, files.stderr)
		stream := logtoolWords(t, "", append([]string{"--store", url}, form...)...)
		require.Equal(t, 0, stream.code, stream.stderr)
		if form[len(form)-1] == "--json" {
			f, s := jsonLines(t, files.stdout), jsonLines(t, stream.stdout)
			require.Len(t, s, 4)
			for i := range f {
				require.Equal(t, f[i]["id"], s[i]["id"], "row %d", i)
				require.Equal(t, f[i]["depth"], s[i]["depth"], "row %d", i)
				require.Equal(t, f[i]["parent"], s[i]["parent"], "row %d", i)
				require.Equal(t, f[i]["events"], s[i]["events"], "row %d", i)
				require.Equal(t, "nats:tree.s."+s[i]["id"].(string), s[i]["path"])
			}
			continue
		}
		require.Equal(t, files.stdout, stream.stdout, "the same rendering")
		require.Contains(t, stream.stdout, "\n  "+fork+" ")
		require.Contains(t, stream.stdout, "\n  "+child+" ")
		require.Contains(t, stream.stdout, "\n"+alone+" ")
	}

	// The parent purged behind the store's back: the child and the fork
	// are roots whose parent is gone, as on files.
	nc, err := nats.Connect("nats://" + hostOf(t, url))
	require.NoError(t, err)
	defer nc.Close()
	js, err := natsjs.New(nc)
	require.NoError(t, err)
	st, err := js.Stream(t.Context(), "tree")
	require.NoError(t, err)
	require.NoError(t, st.Purge(t.Context(), natsjs.WithPurgeSubject("tree.s."+parent)))
	res = logtoolWords(t, "", "--store", url, "ls", "--tree")
	require.Equal(t, 0, res.code, res.stderr)
	require.Regexp(t, `(?m)^`+child+` +child@1 call c1 +1 .*\(parent `+parent+` gone\)$`, res.stdout)
	require.Regexp(t, `(?m)^`+fork+` +fork@0 `, res.stdout)
}

// hostOf returns the host:port of a --store URL.
func hostOf(t *testing.T, url string) string {
	t.Helper()
	u, err := neturl.Parse(url)
	require.NoError(t, err)
	return u.Host
}

// tail on JetStream prints the last N events, and with -f what a writer
// appends while it runs, until Ctrl-C (exit 130).
func TestStoreNATSTail(t *testing.T) {
	url := natsURL(t, "tail")
	id := natsNew(t, url)
	natsAppend(t, url, id, `{"type":"a","time":1}`, `{"type":"b","time":1}`, `{"type":"c","time":1}`)
	res := logtool(t, "", "--store", url, "tail", "-n", "2", "--json", id)
	require.Equal(t, 0, res.code, res.stderr)
	require.Equal(t, `{"seq":1,"type":"b","time":1,"data":null}`+"\n"+`{"seq":2,"type":"c","time":1,"data":null}`+"\n", res.stdout)

	tf := startTail(t, "--store", url, "tail", "-f", "-n", "1", "--json", id)
	next := tf.next
	require.Equal(t, `{"seq":2,"type":"c","time":1,"data":null}`+"\n", next(), "tail is running: it printed the last event")
	for i, typ := range []string{"d", "e", "f"} {
		natsAppend(t, url, id, `{"type":"`+typ+`","time":2}`)
		require.Equal(t, fmt.Sprintf(`{"seq":%d,"type":"%s","time":2,"data":null}`, 3+i, typ)+"\n", next())
	}
	require.Equal(t, exitInterrupted, tf.stop(), "Ctrl-C ends tail -f with 130")
	require.Equal(t, "logtool: interrupted\n", tf.stderr.String(), "nothing said but the interruption")
}

// gc on JetStream decides as on files: an old session goes; an old parent
// of a fresh fork stays, and so does an old session whose writer holds its
// lease; the dry run says exactly that and deletes nothing.
func TestStoreNATSGC(t *testing.T) {
	url := natsURL(t, "gc")
	dir := t.TempDir()
	day := 24 * time.Hour
	clock := time.Now().Add(-40 * day)
	fst := file.New(afero.NewOsFs(), dir, func(c *handle.Config) { c.Now = func() time.Time { return clock } })
	session := func(parent string) string {
		t.Helper()
		var h handle.Handle
		var err error
		if parent == "" {
			h, err = fst.Create(t.Context())
		} else {
			h, err = fst.Fork(t.Context(), parent, 0)
		}
		require.NoError(t, err)
		_, err = h.Append(t.Context(), eventlog.Event{Type: "x", Time: clock.UnixMilli()})
		require.NoError(t, err)
		require.NoError(t, h.Close())
		return h.ID()
	}
	alone, parent, held := session(""), session(""), session("")
	clock = time.Now()
	fork := session(parent)
	res := logtool(t, "", "copy", dir, url)
	require.Equal(t, 0, res.code, res.stderr)

	// A writer on another connection holds held's lease through both runs.
	jst := natsStore(t, url, "gc")
	w, err := jst.Open(t.Context(), held, handle.ReadWrite)
	require.NoError(t, err)
	defer w.Close()

	type report struct{ Deleted, Kept, Leftovers []string }
	gc := func(args ...string) report {
		t.Helper()
		res := logtool(t, "", append([]string{"--store", url, "gc", "--older-than", "30d"}, args...)...)
		require.Equal(t, 0, res.code, res.stderr)
		var rep report
		require.NoError(t, json.Unmarshal([]byte(res.stdout), &rep))
		return rep
	}
	want := report{Deleted: []string{alone}, Kept: []string{parent, held}, Leftovers: []string{}}
	slices.Sort(want.Kept)
	require.Equal(t, want, gc("--dry-run"))
	require.Len(t, jsonLines(t, logtool(t, "", "--store", url, "ls", "--json").stdout), 4, "a dry run deletes nothing")
	require.Equal(t, want, gc(), "the real run does what the dry run said")
	for _, id := range []string{parent, held, fork} {
		require.Equal(t, 0, logtool(t, "", "--store", url, "stat", id).code, "kept: %s", id)
	}
	require.Equal(t, exitUsage, logtool(t, "", "--store", url, "stat", alone).code, "deleted")
}

// natsStore opens the JetStream store of prefix on the server of url, as
// another process would, on its own connection closed when t ends.
func natsStore(t *testing.T, url, prefix string) *jetstream.Store {
	t.Helper()
	nc, err := nats.Connect("nats://" + hostOf(t, url))
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := natsjs.New(nc)
	require.NoError(t, err)
	st, err := jetstream.New(t.Context(), js, jetstream.WithPrefix(prefix), jetstream.WithSyncAlways())
	require.NoError(t, err)
	return st
}

// ls and ls --tree take a store URL as DIR, as copy and verify do; a
// folder DIR that is not there is an error, not an empty store.
func TestStoreNATSLsURL(t *testing.T) {
	url := natsURL(t, "lsurl")
	id := natsNew(t, url)
	res := logtool(t, "", "--dir", t.TempDir(), "ls", "--json", url)
	require.Equal(t, 0, res.code, res.stderr)
	require.Contains(t, res.stdout, `"id":"`+id+`"`)
	res = logtool(t, "", "ls", "--tree", "--json", url)
	require.Equal(t, 0, res.code, res.stderr)
	require.Contains(t, res.stdout, `"id":"`+id+`"`)
	res = logtool(t, "", "ls", filepath.Join(t.TempDir(), "nowhere"))
	require.Equal(t, exitUsage, res.code)
	require.Contains(t, res.stderr, "no such folder")
}

// A copy whose digest differs once read back is a failed check (exit 1,
// as for corruption), not a mistake of the command line.
func TestCopyDigestDiffersExit(t *testing.T) {
	err := fmt.Errorf("transfer: copy X: %w", &transfer.DigestError{ID: "X", Got: "sha256:a", Want: "sha256:b"})
	require.Equal(t, exitFailed, exitCode(err))
}
