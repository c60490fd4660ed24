package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Sealed sessions from the command line: keygen, new --recipient (and
// $SESSIONLOG_RECIPIENTS), append and every read with --identity (and
// $SESSIONLOG_IDENTITY), a clear error and exit 2 without it, verify
// checking the framing alone, export sealed or --clear, redact, shred;
// and redaction at write, off with --no-redact.
func TestSealedCLI(t *testing.T) {
	dir := t.TempDir()
	store := filepath.Join(dir, "s")
	key := filepath.Join(dir, "me.key")
	secret := "ghp_" + strings.Repeat("Zx9q", 9) // a GitHub token, built at run time
	run := func(env map[string]string, stdin string, args ...string) result {
		t.Helper()
		return logtoolEnv(t, env, stdin, append([]string{"--dir", store}, args...)...)
	}
	ok := func(res result) result {
		t.Helper()
		require.Equal(t, 0, res.code, "stdout %s\nstderr %s", res.stdout, res.stderr)
		return res
	}

	var kg struct{ Identity, Recipient string }
	require.NoError(t, json.Unmarshal([]byte(ok(run(nil, "", "keygen", "--out", key)).stdout), &kg))
	require.Equal(t, key, kg.Identity)
	require.True(t, strings.HasPrefix(kg.Recipient, "age1"), kg.Recipient)
	require.Equal(t, 2, run(nil, "", "keygen", "--out", key).code, "an existing file is refused")
	fi, err := os.Stat(key)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	res := ok(run(nil, "", "keygen"))
	require.Contains(t, res.stdout, "AGE-SECRET-KEY-1")
	require.Contains(t, res.stderr, "public key: age1")

	var created struct{ ID, Path string }
	require.NoError(t, json.Unmarshal([]byte(ok(run(nil, "", "new", "--recipient", kg.Recipient, "--label", "title=labelsecret")).stdout), &created))
	id := created.ID
	require.Equal(t, 2, run(nil, "", "new", "--recipient", "age1nope").code)
	events := `{"type":"user/message","time":1,"data":{"text":"MARK42 and ` + secret + `"}}` + "\n"
	ok(run(nil, events, "--identity", key, "append", id))

	file, err := os.ReadFile(created.Path)
	require.NoError(t, err)
	for _, clear := range []string{"MARK42", secret, "labelsecret", "user/message"} {
		require.NotContains(t, string(file), clear)
	}

	// Without the identity: a clear error, exit 2; with it, every read.
	for _, args := range [][]string{{"cat", id}, {"stat", id}, {"show", "--no-pager", id}, {"replay", id}, {"tail", id}} {
		res := run(nil, "", args...)
		require.Equal(t, 2, res.code, "%v: %s", args, res.stderr)
		require.Contains(t, res.stderr, "no identity was given", args)
		require.Contains(t, res.stderr, "--identity", args)
		ok(run(nil, "", append([]string{"--identity", key}, args...)...))
	}
	env := map[string]string{envIdentity: key}
	res = ok(run(env, "", "cat", "--json", id))
	require.Contains(t, res.stdout, "MARK42 and [REDACTED:github-token]", "redacted at write")
	res = ok(run(env, "", "stat", "--json", id))
	require.Contains(t, res.stdout, `"title":"labelsecret"`)

	res = run(nil, "", "verify", "--json", id)
	require.Equal(t, 2, res.code, res.stderr)
	require.Contains(t, res.stdout, `"kind":"key"`)
	require.Contains(t, res.stdout, "only the framing was checked")
	ok(run(env, "", "verify", id))

	// Export: sealed by default, --clear on request.
	sealedOut, clearOut := filepath.Join(dir, "sealed.jsonl"), filepath.Join(dir, "clear.jsonl")
	ok(run(env, "", "export", "--out", sealedOut, id))
	b, err := os.ReadFile(sealedOut)
	require.NoError(t, err)
	require.NotContains(t, string(b), "MARK42")
	ok(run(env, "", "verify", sealedOut))
	ok(run(env, "", "export", "--clear", "--out", clearOut, id))
	b, err = os.ReadFile(clearOut)
	require.NoError(t, err)
	require.Contains(t, string(b), "MARK42")

	// Redact a stored log with an extra pattern.
	res = ok(run(env, "", "redact", "--json", "--pattern", `MARK[0-9]+`, id))
	require.Contains(t, res.stdout, `"kinds":["pattern"]`)
	res = ok(run(env, "", "cat", "--json", id))
	require.Contains(t, res.stdout, "[REDACTED:pattern] and [REDACTED:github-token]")
	require.Contains(t, res.stdout, `"type":"redact/rewrite"`)
	ok(run(env, "", "verify", id))
	require.Equal(t, 2, run(env, "", "redact", "--pattern", "(", id).code)

	// Shred needs no identity; afterwards, no identity reads it.
	res = ok(run(nil, "", "shred", "--json", id))
	require.Contains(t, res.stdout, `"envelopes":1`)
	res = run(env, "", "cat", id)
	require.Equal(t, 2, res.code)
	require.Contains(t, res.stderr, "shredded")

	res = run(nil, "", "ls")
	require.Equal(t, 2, res.code, "what ls cannot describe is sealed: the identity is missing")
	require.Contains(t, res.stderr, "--identity")

	// $SESSIONLOG_RECIPIENTS seals new sessions; --no-redact stores as
	// given (a clear session, to look at its file).
	require.NoError(t, json.Unmarshal([]byte(ok(run(map[string]string{envRecipients: kg.Recipient}, "", "new")).stdout), &created))
	b, err = os.ReadFile(created.Path)
	require.NoError(t, err)
	require.True(t, bytes.HasPrefix(b, []byte(`{"format":"sessionlog-sealed"`)))
	require.NoError(t, json.Unmarshal([]byte(ok(run(nil, "", "new")).stdout), &created))
	ok(run(nil, events, "--no-redact", "append", created.ID))
	b, err = os.ReadFile(created.Path)
	require.NoError(t, err)
	require.Contains(t, string(b), secret)
}

// newSealedSession makes an identity in file k of dir (logtool keygen)
// and a session sealed for it; it returns the identity's path and the ID.
func newSealedSession(t *testing.T, dir string) (key, id string) {
	t.Helper()
	key = filepath.Join(dir, "k")
	res := logtool(t, "", "--dir", dir, "keygen", "--out", key)
	require.Equal(t, 0, res.code, res.stderr)
	var kg struct{ Recipient string }
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &kg))
	id, _ = newSession(t, dir, "--recipient", kg.Recipient)
	return key, id
}

// redact and shred of a session forks depend on are refused (exit 1)
// unless --with-children.
func TestShredRedactForks(t *testing.T) {
	dir := t.TempDir()
	key, id := newSealedSession(t, dir)
	res := logtool(t, `{"type":"user/message","time":1,"data":{"text":"a"}}`+"\n", "--dir", dir, "--identity", key, "append", id)
	require.Equal(t, 0, res.code, res.stderr)
	res = logtool(t, "", "--dir", dir, "--identity", key, "fork", "--at", "0", id)
	require.Equal(t, 0, res.code, res.stderr)
	for _, cmd := range []string{"redact", "shred"} {
		res = logtool(t, "", "--dir", dir, "--identity", key, cmd, id)
		require.Equal(t, 1, res.code, res.stderr)
		require.Contains(t, res.stderr, "depend on it")
		res = logtool(t, "", "--dir", dir, "--identity", key, cmd, "--with-children", id)
		require.Equal(t, 0, res.code, res.stderr)
	}
}

// serve reads sealed sessions with the identities it is given, and
// answers what the CLI prints; without one, the session's page says what
// is missing.
func TestServeSealed(t *testing.T) {
	dir := t.TempDir()
	key, id := newSealedSession(t, dir)
	res := logtool(t, `{"type":"user/message","time":1,"data":{"text":"sealed hello"}}`+"\n", "--dir", dir, "--identity", key, "append", id)
	require.Equal(t, 0, res.code, res.stderr)

	u := startServe(t, dir, "--identity", key)
	for _, p := range []struct{ path, cli string }{{"/api/stat/" + id, "stat"}, {"/api/replay/" + id + "?projection=transcript", "replay"}} {
		code, body := apiGet(t, u, p.path)
		require.Equal(t, http.StatusOK, code, body)
		args := []string{"--dir", dir, "--identity", key, p.cli}
		if p.cli == "stat" {
			args = append(args, "--json")
		} else {
			args = append(args, "--projection", "transcript")
		}
		cli := logtool(t, "", append(args, id)...)
		require.Equal(t, 0, cli.code, cli.stderr)
		require.Equal(t, cli.stdout, body)
	}
	_, body := apiGet(t, u, "/api/replay/"+id+"?projection=transcript")
	require.Contains(t, body, "sealed hello")

	u = startServe(t, dir)
	code, body := apiGet(t, u, "/api/stat/"+id)
	require.NotEqual(t, http.StatusOK, code)
	require.Contains(t, body, "no identity was given")
}
