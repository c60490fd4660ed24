package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/handle/jetstream"
)

// new --recipient on a JetStream store (--store nats://…) makes a sealed
// session: append and every read need --identity (exit 2 and a clear
// error without), and no message of the stream holds the plaintext.
func TestStoreNATSSealed(t *testing.T) {
	url := natsURL(t, "sealed")
	key := filepath.Join(t.TempDir(), "me.key")
	run := func(stdin string, args ...string) result {
		t.Helper()
		return logtool(t, stdin, append([]string{"--store", url}, args...)...)
	}
	ok := func(res result) result {
		t.Helper()
		require.Equal(t, 0, res.code, "stdout %s\nstderr %s", res.stdout, res.stderr)
		return res
	}
	var kg struct{ Identity, Recipient string }
	require.NoError(t, json.Unmarshal([]byte(ok(logtool(t, "", "keygen", "--out", key)).stdout), &kg))

	id := natsNew(t, url, "--recipient", kg.Recipient, "--label", "title=labelsecret")
	ok(run(`{"type":"user/message","time":1,"data":{"text":"MARK42"}}`+"\n", "--identity", key, "append", id))

	for _, args := range [][]string{{"cat", id}, {"stat", id}, {"replay", id}} {
		res := run("", args...)
		require.Equal(t, 2, res.code, "%v: %s", args, res.stderr)
		require.Contains(t, res.stderr, "--identity", args)
		ok(run("", append([]string{"--identity", key}, args...)...))
	}
	require.Contains(t, ok(run("", "--identity", key, "cat", "--json", id)).stdout, "MARK42")
	require.Contains(t, ok(run("", "--identity", key, "stat", "--json", id)).stdout, `"title":"labelsecret"`)

	st, err := jetstream.OpenURL(context.Background(), url)
	require.NoError(t, err)
	defer st.Close()
	stream, err := st.JetStream().Stream(context.Background(), st.Stream())
	require.NoError(t, err)
	first, err := stream.GetMsg(context.Background(), 1)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(first.Data), `{"format":"sessionlog-sealed"`), "the first message starts a sealed log")
	last, err := stream.GetLastMsgForSubject(context.Background(), st.Subject(id))
	require.NoError(t, err)
	for _, m := range [][]byte{first.Data, last.Data} {
		for _, clear := range []string{"MARK42", "labelsecret", "user/message"} {
			require.NotContains(t, string(m), clear)
		}
	}
	// A sealed export stays sealed (handle.SealedExporter); shred destroys
	// the key records (handle.Shredder): the identity reads it no more.
	exp := ok(run("", "--identity", key, "export", id))
	require.True(t, strings.HasPrefix(exp.stdout, `{"format":"sessionlog-sealed"`), "a sealed export")
	require.NotContains(t, exp.stdout, "MARK42")
	var rep struct{ Shredded []string }
	require.NoError(t, json.Unmarshal([]byte(ok(run("", "shred", "--json", id)).stdout), &rep))
	require.Equal(t, []string{id}, rep.Shredded)
	res := run("", "--identity", key, "cat", id)
	require.Equal(t, 2, res.code, res.stderr)
}
