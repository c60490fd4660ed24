package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"
)

// logtoolEnv runs one command line in-process with the given environment.
func logtoolEnv(t *testing.T, env map[string]string, stdin string, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(t.Context(), args, strings.NewReader(stdin), &out, &errOut, func(k string) string { return env[k] })
	return result{code: code, stdout: out.String(), stderr: errOut.String()}
}

// TestResultsForPeopleAndScripts checks the output convention of the
// commands that change something: one line in words on a terminal, the
// JSON object with --json, and the JSON object when piped.
func TestResultsForPeopleAndScripts(t *testing.T) {
	dir := t.TempDir()
	term := map[string]string{"SESSIONLOG_TERMINAL": "1"}
	res := logtoolEnv(t, term, "", "--dir", dir, "new")
	require.Equal(t, 0, res.code, res.stderr)
	require.Regexp(t, `^created session [0-9A-Z]{26} in `+dir+`/[0-9A-Z]{26}\.jsonl\n$`, res.stdout)
	id := strings.Fields(res.stdout)[2]
	require.Equal(t, 0, logtool(t, `{"type":"turn/start","time":1}`+"\n"+`{"type":"tool/call","time":2,"data":{"id":"c","name":"ls","args":{},"effect":"read"}}`+"\n", "--dir", dir, "append", id).code)
	export := filepath.Join(t.TempDir(), "x.jsonl")

	for _, tc := range []struct {
		args  []string
		human string // a regexp of the line on a terminal
	}{
		{[]string{"checkpoint", "--label", "one", id}, `^checkpoint at seq 2 «one»: log sha256:[0-9a-f]{12}…, agent/v1 sha256:[0-9a-f]{12}…\n$`},
		{[]string{"rollback", "--to", "0", id}, `^rolled back at seq 3 to seq 0: the events between are an abandoned branch \(logtool show draws it\)\n$`},
		{[]string{"resume", id}, `^closed the open turn: 1 event appended \(seq 4\); the session may continue: the last turn was interrupted`},
		{[]string{"fork", "--at", "1", id}, `^forked ` + id + ` after seq 1 into [0-9A-Z]{26} \(.*\): nothing copied\n$`},
		{[]string{"convert", "--encoding", "zstd", id}, `^converted ` + id + ` to zstd: \d+ B, was \d+ B \(.*\.jsonl\.zst\)\n$`},
		{[]string{"repair", id}, `^nothing to repair; the log holds 5 events\n$`},
		{[]string{"export", "--out", export, id}, `^exported ` + id + ` to .*x\.jsonl: 5 events\n$`},
		{[]string{"gc", "--older-than", "3650d", "--dry-run"}, `^would delete no sessions\n$`},
	} {
		t.Run(tc.args[0], func(t *testing.T) {
			args := append([]string{"--dir", dir}, tc.args...)
			if tc.args[0] == "fork" || tc.args[0] == "export" {
				// Each run creates something: the JSON forms get their own.
				res := logtoolEnv(t, term, "", args...)
				require.Equal(t, 0, res.code, res.stderr)
				require.Regexp(t, tc.human, res.stdout)
				return
			}
			res := logtoolEnv(t, term, "", args...)
			require.Equal(t, 0, res.code, res.stderr)
			require.Regexp(t, tc.human, res.stdout)
			if tc.args[0] == "checkpoint" || tc.args[0] == "rollback" || tc.args[0] == "resume" {
				return // a second run appends again; the JSON forms are tested elsewhere
			}
			for _, r := range []result{logtoolEnv(t, term, "", append(args[:2:2], append([]string{tc.args[0], "--json"}, tc.args[1:]...)...)...), logtool(t, "", args...)} {
				require.Equal(t, 0, r.code, r.stderr)
				require.True(t, json.Valid([]byte(r.stdout)), "JSON with --json and when piped: %q", r.stdout)
			}
		})
	}
}

// logtoolAt runs one command line in-process with the clock at now.
func logtoolAt(t *testing.T, now time.Time, env map[string]string, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	a := &app{stdin: strings.NewReader(""), stdout: &out, stderr: &errOut, env: func(k string) string {
		if v, ok := env[k]; ok {
			return v
		}
		return wordsEnv[k]
	},
		fs: afero.NewOsFs(), now: func() time.Time { return now }}
	root := newRootCmd(a)
	root.SetArgs(args)
	code := exitOK
	if err := root.ExecuteContext(t.Context()); err != nil {
		code = exitCode(err)
		errOut.WriteString(err.Error())
	}
	return result{code: code, stdout: out.String(), stderr: errOut.String()}
}

// TestLsFitsAndFilters pins ls's table at 80 columns, --wide, and the
// --label and --since filters, with the clock fixed.
func TestLsFitsAndFilters(t *testing.T) {
	dir, _ := storeOfFixtures(t)
	now := time.Date(2025, 12, 1, 2, 0, 0, 0, time.UTC)
	res := logtoolAt(t, now, nil, "--dir", dir, "ls")
	require.Equal(t, 0, res.code, res.stderr)
	requireFits(t, res.stdout, 80)
	checkGolden(t, filepath.Join("testdata", "ls", "fixtures.golden"), []byte(res.stdout))

	res = logtoolAt(t, now, nil, "--dir", dir, "ls", "--wide")
	require.Equal(t, 0, res.code, res.stderr)
	checkGolden(t, filepath.Join("testdata", "ls", "fixtures-wide.golden"), []byte(res.stdout))

	res = logtoolAt(t, now, map[string]string{"SESSIONLOG_TERMINAL": "1", "COLUMNS": "60"}, "--dir", dir, "ls")
	requireFits(t, res.stdout, 60)

	res = logtoolAt(t, now, nil, "--dir", dir, "ls", "--tree")
	require.Equal(t, 0, res.code, res.stderr)
	requireFits(t, res.stdout, 80)
	checkGolden(t, filepath.Join("testdata", "ls", "fixtures-tree.golden"), []byte(res.stdout))

	res = logtoolAt(t, now, nil, "--dir", dir, "ls", "--label", "fixture=fork", "--label", "agent=gencorpus")
	require.Equal(t, 2, strings.Count(res.stdout, "\n"), res.stdout)
	require.Contains(t, res.stdout, "01KB0000000000000000000007")
	res = logtoolAt(t, now, nil, "--dir", dir, "ls", "--json", "--since", "1d")
	require.Equal(t, 0, res.code, res.stderr)
	require.Len(t, jsonLines(t, res.stdout), 6, "the six fixtures created on 2025-11-30 from 02:00 on")
	res = logtoolAt(t, now, nil, "--dir", dir, "ls", "--since", "1m")
	require.Equal(t, "no sessions\n", res.stdout)
	require.Equal(t, exitUsage, logtoolAt(t, now, nil, "--dir", dir, "ls", "--tree", "--wide").code)
	require.Equal(t, exitUsage, logtoolAt(t, now, nil, "--dir", dir, "ls", "--since", "soon").code)
}
