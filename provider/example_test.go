package provider_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"

	"filippo.io/age"
	"github.com/spf13/afero"

	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/provider"
)

// An agent's model calls, recorded through the middleware an SDK client
// takes (option.WithMiddleware), and the conversation read back.
func ExampleSession() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"hello"}],"stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":1}}`)
	}))
	defer model.Close()
	id, _ := age.GenerateX25519Identity()
	keys := provider.NewKeys(id) // the agent's; provider.DefaultKeys() keeps one in the user's config folder
	h, err := file.New(afero.NewOsFs(), dir).Create(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer h.Close()

	ps, err := provider.Open(ctx, h, provider.WithKeys(keys))
	if err != nil {
		log.Fatal(err)
	}
	mw := ps.Middleware() // option.WithMiddleware(mw) when the SDK's client is built

	req, _ := http.NewRequest("POST", model.URL+"/v1/messages", bytes.NewBufferString(`{"model":"m","max_tokens":8,"messages":[{"role":"user","content":"hi"}]}`))
	resp, err := mw(req, http.DefaultClient.Do)
	if err != nil {
		log.Fatal(err)
	}
	resp.Body.Close()

	conv, err := ps.Conversation(ctx) // what the next request is rebuilt from
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(conv.Request.Body))
	fmt.Println(conv.Complete(), conv.TurnOpen)
	for e, err := range h.Read(ctx, 0, handle.End) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(e.Seq, e.Type)
	}
	// Output:
	// {"model":"m","max_tokens":8,"messages":[{"role":"user","content":"hi"}]}
	// true false
	// 0 provider/request
	// 1 turn/start
	// 2 user/message
	// 3 step/start
	// 4 provider/response
	// 5 assistant/message
	// 6 usage
	// 7 step/end
	// 8 turn/end
}
