package anthropic_test

import (
	"context"
	"fmt"
	"os"

	"filippo.io/age"
	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/spf13/afero"

	adapter "github.com/sessionlog/sessionlog/adapters/anthropic"
	"github.com/sessionlog/sessionlog/adapters/anthropic/anthropictest"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/provider"
)

// A tool loop driven by the log: each round rebuilds what comes next from
// the recorded conversation, so the same code runs a fresh session and
// resumes a crashed one.
func Example() {
	ctx := context.Background()
	fake := anthropictest.New(func(turn, step int) []anthropictest.Call {
		if step == 0 {
			return []anthropictest.Call{{Name: "get_time", Input: map[string]string{}}}
		}
		return nil
	})
	defer fake.Close()
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)

	h, _, err := file.New(afero.NewOsFs(), dir).OpenOrCreate(ctx, map[string]string{"agent": "example"})
	if err != nil {
		panic(err)
	}
	defer h.Close()
	id, _ := age.GenerateX25519Identity() // an agent keeps its key (provider.DefaultKeys)
	ps, err := provider.Open(ctx, h, provider.WithKeys(provider.NewKeys(id)))
	if err != nil {
		panic(err)
	}
	client := sdk.NewClient(adapter.Record(ps), option.WithBaseURL(fake.URL), option.WithAPIKey("k"))
	effects := map[string]adapter.Effect{"get_time": adapter.Read}
	turns := []string{"What time is it?"}
	for {
		next, err := adapter.Current(ctx, ps, effects)
		if err != nil {
			panic(err)
		}
		for _, c := range next.Run { // run what has no result yet
			fmt.Println("tool:", c.Use.Name)
			if err := adapter.RecordResult(ctx, ps, c.Use.ID, "noon", false); err != nil {
				panic(err)
			}
		}
		if len(next.Run) > 0 {
			continue
		}
		p := next.Params
		if next.Done {
			if next.Turns == len(turns) {
				break
			}
			if len(p.Messages) == 0 {
				p = sdk.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 1024, Thinking: sdk.ThinkingConfigParamOfEnabled(512),
					Tools: []sdk.ToolUnionParam{{OfTool: &sdk.ToolParam{Name: "get_time", InputSchema: sdk.ToolInputSchemaParam{}}}}}
			}
			p.Messages = append(p.Messages, sdk.NewUserMessage(sdk.NewTextBlock(turns[next.Turns])))
		}
		msg, err := client.Messages.New(ctx, p) // recorded by the middleware
		if err != nil {
			panic(err)
		}
		fmt.Println("model:", msg.StopReason)
	}
	// Output:
	// model: tool_use
	// tool: get_time
	// model: end_turn
}
