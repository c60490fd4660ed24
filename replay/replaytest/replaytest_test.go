package replaytest_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/projection"
	"github.com/sessionlog/sessionlog/replay/replaytest"
)

// capture is a testing.TB that records failures instead of failing, so a
// test can read the messages Golden gives. Fatal ends the goroutine, as
// testing does; runGolden runs Golden on one of its own.
type capture struct {
	testing.TB
	errors []string
	logs   []string
}

func (c *capture) Helper()                   {}
func (c *capture) Errorf(f string, a ...any) { c.errors = append(c.errors, fmt.Sprintf(f, a...)) }
func (c *capture) Logf(f string, a ...any)   { c.logs = append(c.logs, fmt.Sprintf(f, a...)) }
func (c *capture) Fatalf(f string, a ...any) {
	c.Errorf(f, a...)
	runtime.Goexit()
}

func runGolden(t *testing.T, fixture string, ps ...projection.Projection) *capture {
	t.Helper()
	c := &capture{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		replaytest.Golden(c, fixture, ps...)
	}()
	<-done
	return c
}

// setUpdate sets -update and SESSIONLOG_UPDATE_GOLDEN for the test, so
// that it behaves the same whether or not `go test -update` was run.
func setUpdate(t *testing.T, on bool) {
	t.Helper()
	f := flag.Lookup("update")
	require.NotNil(t, f, "replaytest registers -update")
	old := f.Value.String()
	require.NoError(t, flag.Set("update", fmt.Sprint(on)))
	t.Cleanup(func() { _ = flag.Set("update", old) })
	t.Setenv(replaytest.EnvUpdate, "")
	require.Equal(t, on, replaytest.Updating())
}

// changed is the transcript projection with a changed behaviour: it
// rewrites one word of assistant messages.
type changed struct {
	*projection.Transcript
	from, to string
}

func (c changed) Apply(e eventlog.Event) {
	if e.Type == "assistant/message" {
		e.Data = bytes.ReplaceAll(e.Data, []byte(c.from), []byte(c.to))
	}
	c.Transcript.Apply(e)
}

// copyFixture copies a corpus fixture (and the sessions it needs: the
// corpus's parent, for the fork) into a temp folder, without its goldens.
func copyFixture(t *testing.T, name string, needs ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, n := range append([]string{name}, needs...) {
		data, err := os.ReadFile(filepath.Join(corpusDir, n))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, n), data, 0o644))
	}
	return filepath.Join(dir, name)
}

// makeGoldens writes the goldens of a fixture as the projections make them
// now, so that the tests below hold whatever the built-ins' behaviour.
func makeGoldens(t *testing.T, fixture string, ps ...projection.Projection) {
	t.Helper()
	setUpdate(t, true)
	c := runGolden(t, fixture, ps...)
	require.Empty(t, c.errors)
	setUpdate(t, false)
}

// textAt returns the path and text of the first message of a transcript
// golden whose text holds word.
func textAt(t *testing.T, goldenFile, word string) (path, text string) {
	t.Helper()
	b, err := os.ReadFile(goldenFile)
	require.NoError(t, err)
	var st projection.TranscriptState
	require.NoError(t, json.Unmarshal(b, &st))
	for i, m := range st.Messages {
		if strings.Contains(m.Text, word) {
			return fmt.Sprintf("messages[%d].text", i), m.Text
		}
	}
	t.Fatalf("no message of %s holds %q", goldenFile, word)
	return "", ""
}

// TestGoldenReadableDiff is the promise of the package: a change in a
// projection's behaviour fails with the first differing JSON path and both
// values, and -update brings the test back to green.
func TestGoldenReadableDiff(t *testing.T) {
	fixture := copyFixture(t, "vocabulary.jsonl")
	makeGoldens(t, fixture, projection.NewTranscript())
	goldenFile := fixture + ".transcript-v1.golden.json"
	before, err := os.ReadFile(goldenFile)
	require.NoError(t, err)
	path, text := textAt(t, goldenFile, "unchanged")
	changedText := strings.Replace(text, "unchanged", "untouched", 1)
	behaviour := func() projection.Projection {
		return changed{Transcript: projection.NewTranscript(), from: "unchanged", to: "untouched"}
	}

	c := runGolden(t, fixture, behaviour())
	require.Len(t, c.errors, 1)
	msg := c.errors[0]
	t.Log(msg)
	require.Contains(t, msg, fmt.Sprintf("%s: golden %q, got %q", path, text, changedText))
	require.Contains(t, msg, "(first of 2 differences)", "the prefix hash changes too")
	require.Contains(t, msg, "transcript/v1")
	require.Contains(t, msg, goldenFile)
	require.Contains(t, msg, "-update")
	require.Less(t, len(msg), 1000, "a diff, not two blobs")

	setUpdate(t, true)
	c = runGolden(t, fixture, behaviour())
	require.Empty(t, c.errors)
	require.Len(t, c.logs, 1)
	require.Contains(t, c.logs[0], "updated "+goldenFile)
	after, err := os.ReadFile(goldenFile)
	require.NoError(t, err)
	require.NotEqual(t, before, after)
	require.Contains(t, string(after), changedText)

	setUpdate(t, false)
	c = runGolden(t, fixture, behaviour())
	require.Empty(t, c.errors, "green again after -update")
	c = runGolden(t, fixture, projection.NewTranscript())
	require.Len(t, c.errors, 1, "and the old behaviour now differs")
	require.Contains(t, c.errors[0], fmt.Sprintf("%s: golden %q, got %q", path, changedText, text))
}

func TestGoldenMissing(t *testing.T) {
	fixture := copyFixture(t, "rollback.jsonl")
	makeGoldens(t, fixture)
	agentGolden := fixture + ".agent-v1.golden.json"
	require.NoError(t, os.Remove(agentGolden))

	setUpdate(t, false)
	c := runGolden(t, fixture) // the built-ins by default
	require.Len(t, c.errors, 1, "only the agent golden is missing")
	require.Contains(t, c.errors[0], "no golden file "+agentGolden+" for agent/v1")
	require.Contains(t, c.errors[0], "go test -run '^TestGoldenMissing$' -update")
	require.Contains(t, c.errors[0], replaytest.EnvUpdate+"=1")
	require.NoFileExists(t, agentGolden)

	t.Setenv(replaytest.EnvUpdate, "1")
	require.True(t, replaytest.Updating())
	c = runGolden(t, fixture)
	require.Empty(t, c.errors)
	require.FileExists(t, agentGolden)
	require.Contains(t, strings.Join(c.logs, "\n"), "created "+agentGolden)
	t.Setenv(replaytest.EnvUpdate, "")
	require.Empty(t, runGolden(t, fixture).errors)
}

// TestGoldenFormattingOnly: a golden reformatted by an editor still
// matches; -update rewrites it as Marshal writes it. The fork replays with
// its parent beside it.
func TestGoldenFormattingOnly(t *testing.T) {
	fixture := copyFixture(t, "fork.jsonl.zst", "01KB0000000000000000000006.jsonl")
	makeGoldens(t, fixture)
	g := fixture + ".agent-v1.golden.json"
	pretty, err := os.ReadFile(g)
	require.NoError(t, err)
	var compact bytes.Buffer
	require.NoError(t, json.Compact(&compact, pretty))
	require.NoError(t, os.WriteFile(g, compact.Bytes(), 0o644))

	require.Empty(t, runGolden(t, fixture).errors)
	setUpdate(t, true)
	require.Empty(t, runGolden(t, fixture).errors)
	got, err := os.ReadFile(g)
	require.NoError(t, err)
	require.Equal(t, string(pretty), string(got))
}

// TestGoldenForkNeedsParent: a fork replays only with its parent in the
// fixture's folder, and says so.
func TestGoldenForkNeedsParent(t *testing.T) {
	fixture := copyFixture(t, "fork.jsonl.zst")
	setUpdate(t, false)
	c := runGolden(t, fixture)
	require.Len(t, c.errors, 1)
	require.Contains(t, c.errors[0], "fork.jsonl.zst")
	require.Contains(t, c.errors[0], "parent session is missing")
}

// TestGoldenEditedFixture: a fixture edited by hand breaks its checkpoint's
// log digest, which is reported before any state is compared.
func TestGoldenEditedFixture(t *testing.T) {
	fixture := copyFixture(t, "rollback.jsonl")
	data, err := os.ReadFile(fixture)
	require.NoError(t, err)
	edited := bytes.Replace(data, []byte("Rename Foo to Bar everywhere."), []byte("Rename Foo to Baz everywhere."), 1)
	require.NotEqual(t, data, edited)
	require.NoError(t, os.WriteFile(fixture, edited, 0o644))
	setUpdate(t, true) // not even -update takes an edited fixture
	c := runGolden(t, fixture)
	require.Len(t, c.errors, 1)
	require.Contains(t, c.errors[0], "edited or damaged")
	require.Contains(t, c.errors[0], "checkpoint at seq 7")
	matches, err := filepath.Glob(fixture + ".*.golden.json")
	require.NoError(t, err)
	require.Empty(t, matches, "nothing written")
}

func TestGoldenSameProjectionTwice(t *testing.T) {
	c := runGolden(t, filepath.Join(corpusDir, "empty.jsonl"), projection.NewAgent(), projection.NewAgent())
	require.Len(t, c.errors, 1)
	require.Contains(t, c.errors[0], "agent/v1 given twice")
}

// TestDirOwnProjection runs Dir over a folder of fresh sessions with a
// projection of the caller's own, as a user would.
func TestDirOwnProjection(t *testing.T) {
	dir := t.TempDir()
	st := file.New(afero.NewOsFs(), dir)
	for i, enc := range []string{handle.EncodingRaw, handle.EncodingZstd} {
		h, err := st.Create(t.Context(), handle.WithEncoding(enc))
		require.NoError(t, err)
		for j := range 3 + i {
			_, err := h.Append(t.Context(), eventlog.Event{Type: "note", Time: int64(j), Data: json.RawMessage(fmt.Sprintf(`{"n":%d}`, j))})
			require.NoError(t, err)
		}
		require.NoError(t, h.Close())
	}
	fixtures, err := replaytest.Fixtures(dir)
	require.NoError(t, err)
	require.Len(t, fixtures, 2)

	made := 0
	factory := func() []projection.Projection { made++; return []projection.Projection{&counter{}} }
	setUpdate(t, true)
	t.Run("create", func(t *testing.T) { replaytest.Dir(t, dir, factory) })
	require.Equal(t, 3, made, "fresh projections per fixture, and one set to name the goldens")
	for _, f := range fixtures {
		require.FileExists(t, f+".counter-v1.golden.json")
	}
	setUpdate(t, false)
	t.Run("compare", func(t *testing.T) { replaytest.Dir(t, dir, factory) })
	b, err := os.ReadFile(fixtures[1] + ".counter-v1.golden.json")
	require.NoError(t, err)
	require.Equal(t, "{\n  \"events\": 4\n}\n", string(b), "each fixture counted from zero")
}

// counter is a projection of the caller's own: it counts events.
type counter struct{ n int }

func (c *counter) Name() string         { return "counter" }
func (c *counter) Version() int         { return 1 }
func (c *counter) Apply(eventlog.Event) { c.n++ }
func (c *counter) Reset()               { c.n = 0 }
func (c *counter) UnmarshalState(b []byte) error {
	var s struct{ Events int }
	err := json.Unmarshal(b, &s)
	c.n = s.Events
	return err
}
func (c *counter) MarshalState() ([]byte, error) {
	return json.Marshal(struct {
		Events int `json:"events"`
	}{c.n})
}
