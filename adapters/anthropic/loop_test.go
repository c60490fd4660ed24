package anthropic_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"filippo.io/age"
	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	adapter "github.com/sessionlog/sessionlog/adapters/anthropic"
	"github.com/sessionlog/sessionlog/adapters/anthropic/anthropictest"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/provider"
)

const akia = "AKIAIOSFODNN7EXAMPLE"

var effects = map[string]adapter.Effect{"read_file": adapter.Read, "run_command": adapter.Write}

// plan reads a file holding an AWS key, then writes, then answers.
func plan(turn, step int) []anthropictest.Call {
	switch step {
	case 0:
		return []anthropictest.Call{{Name: "read_file", Input: map[string]string{"path": "secret.txt"}}, {Name: "run_command", Input: map[string]string{"command": "echo hi"}}}
	case 1:
		if turn == 0 {
			return []anthropictest.Call{{Name: "run_command", Input: map[string]string{"command": "date"}}}
		}
	}
	return nil
}

func newKeys(t *testing.T) *provider.Keys {
	id, err := age.GenerateX25519Identity()
	require.NoError(t, err)
	return provider.NewKeys(id)
}

// canon returns JSON as canonical JSON, without the top-level "stream"
// member (the SDK's streaming call adds it to the params).
func canon(t *testing.T, b []byte) string {
	var v any
	require.NoError(t, json.Unmarshal(b, &v))
	if m, ok := v.(map[string]any); ok {
		delete(m, "stream")
	}
	out, err := json.Marshal(v)
	require.NoError(t, err)
	return string(out)
}

// liveLoop is the classic tool loop a user writes: the messages kept in
// memory, each response turned into its param by the SDK, each tool's
// result recorded as soon as it ran.
func liveLoop(t *testing.T, ctx context.Context, client sdk.Client, ps *provider.Session, stream bool, base sdk.MessageNewParams, turns []string) {
	p := base
	for _, turn := range turns {
		p.Messages = append(p.Messages, sdk.NewUserMessage(sdk.NewTextBlock(turn)))
		for {
			var msg sdk.Message
			if stream {
				s := client.Messages.NewStreaming(ctx, p)
				for s.Next() {
					require.NoError(t, msg.Accumulate(s.Current()))
				}
				require.NoError(t, s.Err())
				require.NoError(t, s.Close())
			} else {
				m, err := client.Messages.New(ctx, p)
				require.NoError(t, err)
				msg = *m
			}
			p.Messages = append(p.Messages, msg.ToParam())
			var results []sdk.ContentBlockParamUnion
			for _, b := range msg.Content {
				if b.Type != "tool_use" {
					continue
				}
				out := "ran " + b.Name
				if b.Name == "read_file" {
					out = "key=" + akia
				}
				require.NoError(t, adapter.RecordResult(ctx, ps, b.ID, out, false))
				results = append(results, sdk.NewToolResultBlock(b.ID, out, false))
			}
			if len(results) == 0 {
				break
			}
			p.Messages = append(p.Messages, sdk.NewUserMessage(results...))
		}
	}
}

func baseParams() sdk.MessageNewParams {
	return sdk.MessageNewParams{
		Model: "claude-test", MaxTokens: 1024,
		System:   []sdk.TextBlockParam{{Text: "be brief"}},
		Thinking: sdk.ThinkingConfigParamOfEnabled(512),
		Tools: []sdk.ToolUnionParam{{OfTool: &sdk.ToolParam{Name: "read_file", InputSchema: sdk.ToolInputSchemaParam{Properties: map[string]any{"path": map[string]any{"type": "string"}}}}},
			{OfTool: &sdk.ToolParam{Name: "run_command", InputSchema: sdk.ToolInputSchemaParam{Properties: map[string]any{"command": map[string]any{"type": "string"}}}}}},
	}
}

// TestRebuildAtEverySeqOfALiveLoop runs the classic loop against the fake
// (which refuses a request whose thinking was altered) and checks, at
// every seq of the log, that Rebuild gives what the loop sent next.
func TestRebuildAtEverySeqOfALiveLoop(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "json", true: "stream"}[stream], func(t *testing.T) {
			ctx := context.Background()
			fake := anthropictest.New(plan)
			defer fake.Close()
			dir := t.TempDir()
			st := file.New(afero.NewOsFs(), dir)
			h, err := st.Create(ctx)
			require.NoError(t, err)
			defer h.Close()
			ps, err := provider.Open(ctx, h, provider.WithKeys(newKeys(t)))
			require.NoError(t, err)
			client := sdk.NewClient(adapter.Record(ps), option.WithBaseURL(fake.URL), option.WithAPIKey("sk-ant-test"), option.WithMaxRetries(0))
			turns := []string{"look at the files", "again"}
			liveLoop(t, ctx, client, ps, stream, baseParams(), turns)

			got := fake.Requests()
			require.Len(t, got, 5)
			for _, r := range got {
				require.Equal(t, 200, r.Status, r.Error)
			}
			var sent []string
			for _, r := range got {
				sent = append(sent, r.Body)
			}
			var msgs []sdk.MessageParam
			for _, turn := range turns {
				msgs = append(msgs, sdk.NewUserMessage(sdk.NewTextBlock(turn)))
			}
			checkEverySeq(t, ctx, h, ps, sent, msgs, baseParams)
			requireNoClearKey(t, dir)
		})
	}
}

// checkEverySeq asserts the property: at every seq, the rebuilt request
// (completed as Next says: the results of Run, the next turn's message)
// equals, as canonical JSON, the next request the loop sent.
func checkEverySeq(t *testing.T, ctx context.Context, h handle.Handle, ps *provider.Session, sent []string, turns []sdk.MessageParam, base func() sdk.MessageNewParams) {
	var reqSeqs []int64
	for e, err := range h.Read(ctx, 0, handle.End) {
		require.NoError(t, err)
		if e.Type == provider.TypeRequest {
			reqSeqs = append(reqSeqs, e.Seq)
		}
	}
	require.Len(t, reqSeqs, len(sent))
	for seq := int64(0); seq <= h.Seq(); seq++ {
		conv, err := ps.At(ctx, seq)
		require.NoError(t, err)
		next, err := adapter.Rebuild(conv, effects)
		require.NoError(t, err, "seq %d", seq)
		// Next is the request after seq; or, when the last request has
		// no complete response, that request, asked again.
		k, _ := slices.BinarySearch(reqSeqs, seq+1)
		if next.Ask {
			k = slices.Index(reqSeqs, conv.Request.Seq)
		}
		if k == len(reqSeqs) {
			require.True(t, next.Done, "seq %d: the loop ended", seq)
			require.Equal(t, len(turns), next.Turns, "seq %d", seq)
			require.Empty(t, next.Run)
			continue
		}
		want := sent[k]
		p := next.Params
		if conv.Request == nil {
			p = base()
		}
		var results []sdk.ContentBlockParamUnion
		for _, c := range next.Run {
			results = append(results, resultIn(t, want, c.Use.ID))
		}
		if len(results) > 0 {
			last := &p.Messages[len(p.Messages)-1]
			if last.OfUser != nil && !slices.ContainsFunc(last.OfUser.Content, func(b sdk.ContentBlockParamUnion) bool { return b.OfText != nil }) {
				last.OfUser.Content = append(last.OfUser.Content, results...)
			} else {
				p.Messages = append(p.Messages, sdk.NewUserMessage(results...))
			}
		}
		if next.Done {
			require.Less(t, next.Turns, len(turns), "seq %d", seq)
			p.Messages = append(p.Messages, turns[next.Turns])
		}
		b, err := json.Marshal(p)
		require.NoError(t, err)
		require.Equal(t, canon(t, []byte(want)), canon(t, b), "seq %d: the rebuilt request is not request %d", seq, k)
	}
}

// resultIn returns the tool_result block for id in the last message of
// the request body.
func resultIn(t *testing.T, body, id string) sdk.ContentBlockParamUnion {
	var p sdk.MessageNewParams
	require.NoError(t, json.Unmarshal([]byte(body), &p))
	last := p.Messages[len(p.Messages)-1]
	require.NotNil(t, last.OfUser)
	for _, b := range last.OfUser.Content {
		if b.OfToolResult != nil && b.OfToolResult.ToolUseID == id {
			return b
		}
	}
	t.Fatalf("no tool_result for %s in %s", id, body)
	return sdk.ContentBlockParamUnion{}
}

func requireNoClearKey(t *testing.T, dir string) {
	require.NoError(t, filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		require.NotContains(t, string(b), akia, path)
		return nil
	}))
}
