package slopenai_test

import (
	"context"
	"fmt"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/spf13/afero"

	slopenai "github.com/sessionlog/sessionlog/adapters/openai"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/provider"
)

// runTool runs a tool call for real (here: two pretend tools).
func runTool(c slopenai.Call) string {
	if c.Name == "read_file" {
		return "aws_access_key_id = AKIAIOSFODNN7EXAMPLE"
	}
	return "wrote out"
}

// A Responses tool loop that survives a crash at any point: each step is
// rebuilt from the session's log, so the same code starts a session and
// resumes one after a kill. Tool outputs are recorded as soon as they
// exist; a tool with a write effect is marked started before it runs.
// The log keeps the provider's exact conversation; secrets in it are
// redacted in the store's files and sealed to the agent's key.
func Example() {
	ctx := context.Background()
	srv := httptest.NewServer(&fakeResponses{key: []byte("server"), script: toolScript}) // a fake of the Responses API
	defer srv.Close()
	dir, err := os.MkdirTemp("", "slopenai-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	// The session and its keys (kept outside the store; provider.Open
	// without WithKeys uses provider.DefaultKeys).
	store := file.New(afero.NewOsFs(), filepath.Join(dir, "store"))
	h, err := store.Create(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer h.Close()
	keys, err := provider.LoadOrCreateKeys(filepath.Join(dir, "identity"))
	if err != nil {
		log.Fatal(err)
	}
	ps, err := provider.Open(ctx, h, provider.WithKeys(keys))
	if err != nil {
		log.Fatal(err)
	}
	// One option records every call the client makes.
	client := openai.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("sk-example"), slopenai.Record(ps))

	for {
		conv, err := ps.Conversation(ctx)
		if err != nil {
			log.Fatal(err)
		}
		next, err := slopenai.Responses(conv)
		if err != nil {
			log.Fatal(err)
		}
		if next.Done {
			var final responses.Response
			if err := final.UnmarshalJSON(conv.Response.Body); err != nil {
				log.Fatal(err)
			}
			fmt.Println(final.OutputText())
			break
		}
		params := next.Params
		if next.Empty {
			params = responses.ResponseNewParams{
				Model: "fake-model", Store: openai.Bool(false),
				Include: []responses.ResponseIncludable{responses.ResponseIncludableReasoningEncryptedContent},
				Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
					responses.ResponseInputItemParamOfMessage("read the config and write out", responses.EasyInputMessageRoleUser),
				}},
			}
		}
		for _, c := range next.Pending {
			out := slopenai.UnknownOutcome // it was started before a crash
			if !c.Started {
				if c.Name == "write_file" {
					if _, err := ps.BeginTool(ctx, c.CallID); err != nil {
						log.Fatal(err)
					}
				}
				out = runTool(c)
			}
			item := slopenai.OutputFor(c, out)
			if err := slopenai.RecordOutput(ctx, ps, item); err != nil {
				log.Fatal(err)
			}
			params.Input.OfInputItemList = append(params.Input.OfInputItemList, item)
		}
		if _, err := client.Responses.New(ctx, params); err != nil {
			log.Fatal(err)
		}
	}
	// Output:
	// Done: the config is read.
}
