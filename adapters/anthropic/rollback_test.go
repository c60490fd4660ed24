package anthropic_test

import (
	"context"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	adapter "github.com/sessionlog/sessionlog/adapters/anthropic"
	"github.com/sessionlog/sessionlog/adapters/anthropic/anthropictest"
	"github.com/sessionlog/sessionlog/checkpoint"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/provider"
)

// logLoop is a loop driven by the log (as examples/anthropic-agent): it
// rebuilds what comes next each round, with liveLoop's tool outputs.
func logLoop(t *testing.T, ctx context.Context, client sdk.Client, ps *provider.Session, turns []string) {
	for {
		next, err := adapter.Current(ctx, ps, effects)
		require.NoError(t, err)
		for _, c := range next.Run {
			out := "ran " + c.Use.Name
			if c.Use.Name == "read_file" {
				out = "key=" + akia
			}
			require.NoError(t, adapter.RecordResult(ctx, ps, c.Use.ID, out, false))
		}
		if len(next.Run) > 0 {
			continue
		}
		p := next.Params
		if next.Done {
			if next.Turns == len(turns) {
				return
			}
			if len(p.Messages) == 0 {
				p = baseParams()
			}
			p.Messages = append(p.Messages, sdk.NewUserMessage(sdk.NewTextBlock(turns[next.Turns])))
		}
		_, err = client.Messages.New(ctx, p)
		require.NoError(t, err)
	}
}

// TestResumeAfterRollback rolls the log back to the end of each durable
// append of the first run, and resumes there: the requests sent from then
// on are the ones the first run sent from the same point (the provider
// records' delta follows the live branch).
func TestResumeAfterRollback(t *testing.T) {
	ctx := context.Background()
	fake := anthropictest.New(plan)
	defer fake.Close()
	dir := t.TempDir()
	h, err := file.New(afero.NewOsFs(), dir).Create(ctx)
	require.NoError(t, err)
	defer h.Close()
	ps, err := provider.Open(ctx, h, provider.WithKeys(newKeys(t)))
	require.NoError(t, err)
	client := sdk.NewClient(adapter.Record(ps), option.WithBaseURL(fake.URL), option.WithAPIKey("k"), option.WithMaxRetries(0))
	turns := []string{"look at the files", "again"}
	logLoop(t, ctx, client, ps, turns)
	want := fake.Requests()
	require.Len(t, want, 5)

	// The ends of the first run's durable appends (a request, a
	// response, a tool's result, each with its derived events), latest
	// first: each rollback's target is then on the live branch.
	var ends []int64
	for e, err := range h.Read(ctx, 1, h.Seq()) {
		require.NoError(t, err)
		switch e.Type {
		case provider.TypeRequest, provider.TypeResponse, provider.TypeInput, "tool/approval":
			ends = append([]int64{e.Seq - 1}, ends...)
		}
	}
	require.Greater(t, len(ends), 10)
	for _, end := range ends {
		_, err := checkpoint.Rollback(ctx, h, end)
		require.NoError(t, err)
		fake.Reset()
		logLoop(t, ctx, client, ps, turns)
		got := bodiesOf(t, fake.Requests())
		require.NotEmpty(t, got, "resumed after a rollback to seq %d", end)
		require.LessOrEqual(t, len(got), len(want))
		require.Equal(t, bodiesOf(t, want[len(want)-len(got):]), got, "resumed after a rollback to seq %d", end)
	}
	requireNoClearKey(t, dir)
}

func bodiesOf(t *testing.T, rs []anthropictest.Received) []string {
	var b []string
	for _, r := range rs {
		require.Equal(t, 200, r.Status, r.Error)
		b = append(b, r.Body)
	}
	return b
}

// TestResumeOnAFork forks the run's session at the end of every durable
// append and resumes on the fork: the requests sent are the first run's
// from the same point (a fork's inherited provider records are its own
// conversation).
func TestResumeOnAFork(t *testing.T) {
	ctx := context.Background()
	fake := anthropictest.New(plan)
	defer fake.Close()
	dir := t.TempDir()
	st := file.New(afero.NewOsFs(), dir)
	h, err := st.Create(ctx)
	require.NoError(t, err)
	defer h.Close()
	keys := newKeys(t)
	ps, err := provider.Open(ctx, h, provider.WithKeys(keys))
	require.NoError(t, err)
	turns := []string{"look at the files", "again"}
	logLoop(t, ctx, sdk.NewClient(adapter.Record(ps), option.WithBaseURL(fake.URL), option.WithAPIKey("k"), option.WithMaxRetries(0)), ps, turns)
	want := fake.Requests()
	var ends []int64
	for e, err := range h.Read(ctx, 1, h.Seq()) {
		require.NoError(t, err)
		switch e.Type {
		case provider.TypeRequest, provider.TypeResponse, provider.TypeInput, "tool/approval":
			ends = append(ends, e.Seq-1)
		}
	}
	require.Greater(t, len(ends), 10)
	for _, end := range ends {
		f, err := st.Fork(ctx, h.ID(), end)
		require.NoError(t, err)
		fps, err := provider.Open(ctx, f, provider.WithKeys(keys))
		require.NoError(t, err)
		fake.Reset()
		logLoop(t, ctx, sdk.NewClient(adapter.Record(fps), option.WithBaseURL(fake.URL), option.WithAPIKey("k"), option.WithMaxRetries(0)), fps, turns)
		require.NoError(t, f.Close())
		got := bodiesOf(t, fake.Requests())
		require.NotEmpty(t, got, "resumed on a fork at seq %d", end)
		require.LessOrEqual(t, len(got), len(want))
		require.Equal(t, bodiesOf(t, want[len(want)-len(got):]), got, "resumed on a fork at seq %d", end)
	}
	requireNoClearKey(t, dir)
}
