package slopenai_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/require"

	slopenai "github.com/sessionlog/sessionlog/adapters/openai"
	"github.com/sessionlog/sessionlog/provider"
	"github.com/sessionlog/sessionlog/provider/fixture"
)

// The fixture helper works for a Responses loop as for the Anthropic
// example: the recorded run replays offline (streamed and not), a changed
// instruction fails at its path, a changed tool output is reported for its
// call. Record the fixtures again with -update.
func TestResponsesFixture(t *testing.T) {
	for _, stream := range []bool{false, true} {
		name := fmt.Sprintf("responses-stream-%t.jsonl", stream)
		run := func(t testing.TB, change func(*agent)) (*fixture.Fixture, error) {
			f := fixture.Open(t, filepath.Join("testdata", name))
			srv := httptest.NewServer(&fakeResponses{key: []byte("fixture-key"), script: toolScript}) // answers only under -update
			t.Cleanup(srv.Close)
			a := &agent{ps: f.Session(), stream: stream, turns: turns,
				client: openai.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("sk-test"), option.WithMaxRetries(0), option.WithMiddleware(f.Middleware()))}
			if change != nil {
				change(a)
			}
			return f, a.run(context.Background(), t, slopenai.Next{Empty: true})
		}
		t.Run(fmt.Sprint("stream=", stream), func(t *testing.T) {
			f, err := run(t, nil)
			require.NoError(t, err)
			f.Check()
			b, err := os.ReadFile(filepath.Join("testdata", name))
			require.NoError(t, err)
			require.NotContains(t, string(b), akia)
		})
		if stream || fixture.Updating() {
			continue // the divergences check the fixture: never record them
		}
		t.Run("a changed instruction", func(t *testing.T) {
			_, err := run(t, func(a *agent) { a.instructions = "You are a hasty agent." })
			var de *provider.DivergenceError
			require.ErrorAs(t, err, &de)
			require.Equal(t, "instructions", de.Path)
		})
		t.Run("a changed tool output", func(t *testing.T) {
			f, err := run(&quiet{T: t}, func(a *agent) { a.toolOut = "other" })
			require.NoError(t, err, "the run goes on")
			d := f.Replayer().ToolDivergences()
			require.NotEmpty(t, d)
			require.Equal(t, "call_1", d[0].CallID)
		})
	}
}

// quiet keeps a fixture's failures from failing the test.
type quiet struct{ *testing.T }

func (quiet) Errorf(string, ...any) {}
