package main

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/adapters/anthropic/anthropictest"
	"github.com/sessionlog/sessionlog/provider"
	"github.com/sessionlog/sessionlog/provider/fixture"
)

// fixturePlan: the first turn reads a file that holds a key (the
// thinking quotes it), the second runs a command.
func fixturePlan(turn, step int) []anthropictest.Call {
	switch {
	case turn == 0 && step == 0:
		return []anthropictest.Call{{Name: "read_file", Input: map[string]string{"path": "secret.txt"}}}
	case turn == 1 && step == 0:
		return []anthropictest.Call{{Name: "run_command", Input: map[string]string{"command": "echo hello"}}}
	}
	return nil
}

var fixtureTurns = []string{"what is in secret.txt?", "say hello"}

// replay runs the example's loop on its fixture: no model, no network
// (with -update, against the fake Messages API, writing the fixture).
func replay(t testing.TB, stream bool, change func(*config)) (*fixture.Fixture, error) {
	name := "fixture-json.jsonl"
	if stream {
		name = "fixture-stream.jsonl"
	}
	f := fixture.Open(t, filepath.Join("testdata", name))
	work := t.(interface{ TempDir() string }).TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(work, "secret.txt"), []byte("aws_access_key_id = "+akia+"\n"), 0o600))
	fake := anthropictest.New(fixturePlan, anthropictest.WithQuote("read_file")) // answers only under -update
	t.Cleanup(fake.Close)
	cfg := config{work: work, model: "claude-test", stream: stream, maxTokens: 1024, budget: 1024, out: io.Discard, system: systemPrompt}
	if change != nil {
		change(&cfg)
	}
	client := sdk.NewClient(option.WithBaseURL(fake.URL), option.WithAPIKey("test"), option.WithMaxRetries(0), option.WithMiddleware(f.Middleware()))
	return f, loop(context.Background(), cfg, fixtureTurns, f.Session(), client)
}

func TestReplayFixture(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "json", true: "stream"}[stream], func(t *testing.T) {
			f, err := replay(t, stream, nil)
			require.NoError(t, err, "every request matches the recording")
			f.Check()
			b, err := os.ReadFile(filepath.Join("testdata", map[bool]string{false: "fixture-json.jsonl", true: "fixture-stream.jsonl"}[stream]))
			require.NoError(t, err)
			require.NotContains(t, string(b), akia, "the fixture holds the key in clear nowhere")
		})
	}
}

func TestFixtureDivergesOnSystemPrompt(t *testing.T) {
	if fixture.Updating() {
		t.Skip("checks the fixture: -update would record the divergence as the fixture")
	}
	_, err := replay(t, false, func(c *config) { c.system = systemPrompt + " Be terse." })
	var de *provider.DivergenceError
	require.True(t, errors.As(err, &de), "%v", err)
	require.True(t, strings.HasPrefix(de.Path, "system"), de.Path)
	require.Equal(t, 0, de.Call)
	require.GreaterOrEqual(t, de.Seq, int64(0))
	require.ErrorContains(t, err, "seq ")
}

// tb keeps a fixture's failures instead of failing the test.
type tb struct {
	*testing.T
	errs []string
}

func (r *tb) Errorf(format string, args ...any) { r.errs = append(r.errs, format) }

func TestFixtureReportsAChangedToolOutput(t *testing.T) {
	if fixture.Updating() {
		t.Skip("checks the fixture: -update would record the divergence as the fixture")
	}
	rec := &tb{T: t}
	f, err := replay(rec, false, func(c *config) {
		c.tool = func(ctx context.Context, work string, use sdk.ToolUseBlock) (string, bool) {
			if use.Name == "read_file" {
				return "something else", false
			}
			return tool(ctx, work, use)
		}
	})
	require.NoError(t, err, "the run goes on")
	d := f.Replayer().ToolDivergences()
	require.Len(t, d, 1)
	require.NotEmpty(t, d[0].CallID)
	require.Contains(t, d[0].Live, "something else")
	f.Check()
	require.NotEmpty(t, rec.errs, "the run's tool/result differs from the fixture's")
}
