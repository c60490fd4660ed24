package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCatPrintsEventsBeforeTheDamage checks docs/cli.md (cat): on a corrupt
// log prints the events before the first damage, then the error (exit 1).
// It printed nothing before.
func TestCatPrintsEventsBeforeTheDamage(t *testing.T) {
	for _, name := range []string{"corrupt-garbage-row", "corrupt-seq-gap", "corrupt-nul-hole"} {
		t.Run(name, func(t *testing.T) {
			f := filepath.Join("..", "..", "testdata", "raw", name+".jsonl")
			res := logtool(t, "", "cat", "--json", f)
			require.Equal(t, 1, res.code)
			require.Equal(t, `{"seq":0,"type":"turn/start","time":1764450000050,"data":{}}`+"\n"+
				`{"seq":1,"type":"user/message","time":1764450000100,"data":{"text":"read a.go"}}`+"\n", res.stdout)
			require.Contains(t, res.stderr, "at offset 282 (seq 2)")
			require.Contains(t, res.stderr, "logtool repair --salvage")

			res = logtool(t, "", "cat", "--from", "1", "--type", "user/message", f)
			require.Equal(t, 1, res.code)
			require.Equal(t, 1, strings.Count(res.stdout, "\n"), "the filters still apply: %s", res.stdout)
		})
	}
	// Damage at the header: nothing to print.
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.jsonl")
	require.NoError(t, os.WriteFile(bad, []byte("{not a header}\n"), 0o600))
	res := logtool(t, "", "cat", bad)
	require.Equal(t, 1, res.code)
	require.Empty(t, res.stdout)
}

// TestCatChecksCheckpointDigests checks that cat reports a checkpoint
// whose log digest does not match the events before it, on stderr, after
// printing every event, with exit 1; a clean log exits 0.
func TestCatChecksCheckpointDigests(t *testing.T) {
	dir := t.TempDir()
	id, path := newSession(t, dir)
	res := logtool(t, `{"type":"user/message","time":1,"data":{"text":"hi"}}`+"\n", "--dir", dir, "append", id)
	require.Equal(t, 0, res.code, res.stderr)
	require.Equal(t, 0, logtool(t, "", "--dir", dir, "checkpoint", id).code)
	res = logtool(t, `{"type":"user/message","time":2,"data":{"text":"more"}}`+"\n", "--dir", dir, "append", id)
	require.Equal(t, 0, res.code, res.stderr)
	clean := logtool(t, "", "--dir", dir, "cat", "--json", id)
	require.Equal(t, 0, clean.code, clean.stderr)
	require.Empty(t, clean.stderr)

	// Same length, same shape: only the digest tells.
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, []byte(strings.Replace(string(b), `"hi"`, `"ho"`, 1)), 0o600))
	res = logtool(t, "", "--dir", dir, "cat", "--json", id)
	require.Equal(t, 1, res.code)
	require.Equal(t, 3, strings.Count(res.stdout, "\n"), "every event is printed first")
	require.Contains(t, res.stderr, "checkpoint at seq 1: its log digest sha256:")
	require.Contains(t, res.stderr, "1 checkpoint digest do")

	// --from past the checkpoint still checks it: cat reads from the first.
	res = logtool(t, "", "--dir", dir, "cat", "--from", "2", id)
	require.Equal(t, 1, res.code)
	require.Equal(t, 1, strings.Count(res.stdout, "\n"))
}

// TestVerifyCountsTheLogicalLog checks docs/cli.md (verify): its events counts a
// fork's logical log, as stat does, and fileEvents its own rows.
func TestVerifyCountsTheLogicalLog(t *testing.T) {
	dir, ids := storeOfFixtures(t)
	fork := ids["fork.jsonl.zst"]
	v := logtool(t, "", "--dir", dir, "verify", "--json", fork)
	require.Equal(t, 0, v.code, v.stdout)
	got := jsonLines(t, v.stdout)[0]
	st := jsonLines(t, logtool(t, "", "--dir", dir, "stat", "--json", fork).stdout)[0]
	require.Equal(t, st["events"], got["events"])
	require.Equal(t, float64(19), got["events"])
	require.Equal(t, float64(9), got["fileEvents"], "19 events, 10 inherited")
	v = logtoolWords(t, "", "--dir", dir, "verify", fork)
	require.Contains(t, v.stdout, "  19 events (9 in this file, the rest inherited)\n")
	v = logtoolWords(t, "", "--dir", dir, "verify", ids["child.jsonl"])
	require.Contains(t, v.stdout, "  12 events\n", "a child inherits nothing")
}

// TestWordsForCounts checks the messages that said "1 events", "1 files"
// and "its events are 0..-1": counts and ranges are said in words.
func TestWordsForCounts(t *testing.T) {
	require.Equal(t, "1 event", plural(1, "event"))
	require.Equal(t, "no seqs", seqsWords(0, -1))
	require.Equal(t, "seq 3", seqsWords(3, 3))
	require.Equal(t, "holds no events", holdsWords(-1))
	require.Equal(t, "holds seqs 0 to 7", holdsWords(7))

	dir := t.TempDir()
	id, _ := newSession(t, dir)
	res := logtool(t, "", "--dir", dir, "fork", "--at", "0", id)
	require.Equal(t, 2, res.code, "a seq past the end is a usage error")
	require.Contains(t, res.stderr, "--at 0: "+id+" holds no events")
	res = logtoolWords(t, "", "--dir", dir, "checkpoints", id)
	require.Equal(t, "no checkpoints\n", res.stdout)
	require.Equal(t, 0, logtool(t, `{"type":"a","time":1}`+"\n", "--dir", dir, "append", id).code)
	require.Equal(t, 0, logtool(t, "", "--dir", dir, "checkpoint", "--label", "x", id).code)
	res = logtoolWords(t, "", "--dir", dir, "checkpoints", id)
	require.Regexp(t, `^   SEQ  TIME                      BRANCH     LABEL\n     1  \S+  live       x\n$`, res.stdout)
}
