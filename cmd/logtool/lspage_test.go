package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
)

// TestLsPages lists a store a page at a time: --limit N, then --before
// the cursor the page printed, until a page is not full; the pages join
// into what ls lists at once, in its order, as JSON and as words.
func TestLsPages(t *testing.T) {
	dir := t.TempDir()
	st := file.New(afero.NewOsFs(), dir)
	for i := range 7 {
		h, err := st.Create(t.Context(), handle.WithCreatedAt(int64(1000+i%3)), handle.WithLabels(map[string]string{"n": fmt.Sprint(i % 2)}))
		require.NoError(t, err)
		require.NoError(t, h.Close())
	}
	ids := func(lines []map[string]any) []string {
		var out []string
		for _, l := range lines {
			out = append(out, l["id"].(string))
		}
		return out
	}
	for _, filter := range [][]string{nil, {"--label", "n=1"}} {
		res := logtool(t, "", append([]string{"--dir", dir, "ls", "--json"}, filter...)...)
		require.Equal(t, 0, res.code, res.stderr)
		all := ids(jsonLines(t, res.stdout))
		var pages []string
		args := append([]string{"--dir", dir, "ls", "--json", "--limit", "3"}, filter...)
		for {
			res := logtool(t, "", args...)
			require.Equal(t, 0, res.code, res.stderr)
			lines := jsonLines(t, res.stdout)
			pages = append(pages, ids(lines)...)
			if len(lines) < 3 {
				break
			}
			cursor := lines[len(lines)-1]["cursor"].(string)
			args = append([]string{"--dir", dir, "ls", "--json", "--limit", "3", "--before", cursor}, filter...)
		}
		require.Equal(t, all, pages, "filter %v", filter)
	}

	res := logtoolWords(t, "", "--dir", dir, "ls", "--limit", "3")
	require.Equal(t, 0, res.code, res.stderr)
	rows := strings.Split(strings.TrimSpace(res.stdout), "\n")
	require.Len(t, rows, 5, "a head, 3 rows, the next page")
	next, ok := strings.CutPrefix(rows[4], "next page: --before ")
	require.True(t, ok, rows[4])
	res = logtoolWords(t, "", "--dir", dir, "ls", "--limit", "3", "--before", next)
	require.Equal(t, 0, res.code, res.stderr)
	require.NotContains(t, res.stdout, strings.Fields(rows[3])[0], "the next page starts after the cursor")

	for _, bad := range [][]string{{"--before", "nope"}, {"--limit", "-1"}, {"--tree", "--limit", "2"}} {
		res := logtool(t, "", append([]string{"--dir", dir, "ls"}, bad...)...)
		require.Equal(t, 2, res.code, "%v: %s", bad, res.stderr)
	}
}

// TestStatByNameInALargeStore names a session by ID prefix and by label
// query among many: the index answers, the names resolve as before.
func TestStatByNameInALargeStore(t *testing.T) {
	dir := t.TempDir()
	st := file.New(afero.NewOsFs(), dir)
	var last string
	for i := range 50 {
		h, err := st.Create(t.Context(), handle.WithLabels(map[string]string{"task": fmt.Sprint(i)}))
		require.NoError(t, err)
		_, err = h.Append(t.Context(), eventlog.Event{Type: "user/message", Time: 1, Data: []byte(`{"text":"hi"}`)})
		require.NoError(t, err)
		require.NoError(t, h.Close())
		last = h.ID()
	}
	for _, name := range []string{"task=49", strings.ToLower(last[:23])} {
		res := logtool(t, "", "--dir", dir, "stat", "--json", name)
		require.Equal(t, 0, res.code, res.stderr)
		require.Equal(t, last, jsonLines(t, res.stdout)[0]["id"], name)
	}
	res := logtool(t, "", "--dir", dir, "stat", "task=50")
	require.Equal(t, 2, res.code, "a name no session answers to")
	require.Contains(t, res.stderr, "no session has the labels task=50")
}
