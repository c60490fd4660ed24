package provider_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"filippo.io/age"
	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/provider"
)

const akia = "AKIAIOSFODNN7EXAMPLE"

func newKeys(t *testing.T) *provider.Keys {
	id, err := age.GenerateX25519Identity()
	require.NoError(t, err)
	return provider.NewKeys(id)
}

// post sends body through the middleware to the server, as an SDK would.
func post(t *testing.T, mw func(*http.Request, func(*http.Request) (*http.Response, error)) (*http.Response, error), url, body string) []byte {
	req, err := http.NewRequest(http.MethodPost, url+"/v1/messages", bytes.NewReader([]byte(body)))
	require.NoError(t, err)
	req.Header.Set("x-api-key", "sk-ant-api03-secret")
	req.Header.Set("anthropic-version", "2023-06-01")
	resp, err := mw(req, http.DefaultClient.Do)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return b
}

func TestSessionKeepsConversationExactly(t *testing.T) {
	ctx := context.Background()
	replies := []string{
		`{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"thinking","thinking":"the key ` + akia + ` is there","signature":"sig1"},{"type":"text","text":"reading"},{"type":"tool_use","id":"tu_1","name":"read_file","input":{"path":"a"},"caller":{"type":"direct"}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":5,"cache_creation_input_tokens":3,"cache_read_input_tokens":2,"cache_creation":{"ephemeral_5m_input_tokens":1,"ephemeral_1h_input_tokens":2},"service_tier":"standard"}}`,
		`{"id":"msg_2","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"done"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":20,"output_tokens":1}}`,
	}
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(replies[n]))
		n++
	}))
	defer srv.Close()

	dir := t.TempDir()
	store := file.New(afero.NewOsFs(), dir)
	h, err := store.Create(ctx)
	require.NoError(t, err)
	defer h.Close()
	keys := newKeys(t)
	ps, err := provider.Open(ctx, h, provider.WithKeys(keys))
	require.NoError(t, err)

	req1 := `{"model":"m","max_tokens":100,"system":"be brief","messages":[{"role":"user","content":"hi"}]}`
	post(t, ps.Middleware(), srv.URL, req1)
	var m1 map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(replies[0]), &m1))
	req2 := `{"model":"m","max_tokens":100,"system":"be brief","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":` + string(m1["content"]) + `},{"role":"user","content":[{"type":"tool_result","tool_use_id":"tu_1","content":"secret ` + akia + `"}]}]}`
	post(t, ps.Middleware(), srv.URL, req2)

	conv, err := ps.Conversation(ctx)
	require.NoError(t, err)
	require.JSONEq(t, req2, string(conv.Request.Body))
	require.Equal(t, req2, string(conv.Request.Body), "byte for byte")
	require.True(t, conv.Complete())
	require.JSONEq(t, replies[1], string(conv.Response.Body))
	require.False(t, conv.TurnOpen)

	// Read again from the store, by a new Session.
	prev, err := ps.At(ctx, conv.Response.Seq-1)
	require.NoError(t, err)
	require.Equal(t, req2, string(prev.Request.Body))

	require.NoError(t, h.Flush(ctx))
	files, err := filepath.Glob(filepath.Join(dir, "*"))
	require.NoError(t, err)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		require.NotContains(t, string(b), akia, f)
		require.NotContains(t, string(b), "sk-ant-api03-secret", f)
	}
	// Without keys the conversation cannot be opened.
	_, err = provider.At(ctx, h, h.Seq(), nil)
	require.ErrorIs(t, err, provider.ErrNoKey)
}

// A tool result recorded as an input, then sent in the next request, is
// one tool/result event, not two (regression: the request derived it
// again).
func TestResultRecordedAsInputIsDerivedOnce(t *testing.T) {
	ctx := context.Background()
	replies := []string{
		`{"id":"resp_1","object":"response","status":"completed","output":[{"type":"function_call","id":"fc_1","call_id":"call_1","name":"read","arguments":"{}"}]}`,
		`{"id":"resp_2","object":"response","status":"completed","output":[{"type":"message","id":"msg_2","role":"assistant","content":[{"type":"output_text","text":"done"}]}]}`,
	}
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(replies[n]))
		n++
	}))
	defer srv.Close()
	store := file.New(afero.NewMemMapFs(), "/store")
	h, err := store.Create(ctx)
	require.NoError(t, err)
	defer h.Close()
	ps, err := provider.Open(ctx, h, provider.WithKeys(newKeys(t)))
	require.NoError(t, err)
	send := func(body string) {
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/v1/responses", bytes.NewReader([]byte(body)))
		require.NoError(t, err)
		resp, err := ps.Middleware()(req, http.DefaultClient.Do)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		require.NoError(t, resp.Body.Close())
	}
	user := `{"role":"user","content":"hi"}`
	call := `{"type":"function_call","id":"fc_1","call_id":"call_1","name":"read","arguments":"{}"}`
	output := `{"type":"function_call_output","call_id":"call_1","output":"x"}`
	send(`{"model":"m","input":[` + user + `]}`)
	_, err = ps.Input(ctx, "openai", "responses", json.RawMessage(output))
	require.NoError(t, err)
	send(`{"model":"m","input":[` + user + `,` + call + `,` + output + `]}`)
	results := 0
	for e, err := range h.Read(ctx, h.Header().FirstSeq(), h.Seq()) {
		require.NoError(t, err)
		if e.Type == "tool/result" {
			results++
		}
	}
	require.Equal(t, 1, results)
}

// A Chat Completions custom tool call is derived with its name and input
// (regression: only "function" tool calls were read, so a custom call
// became a tool/call with no name).
func TestChatCustomToolCallIsDerived(t *testing.T) {
	ctx := context.Background()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"custom","custom":{"name":"grep","input":"needle"}}]}}]}`))
	}))
	defer srv.Close()
	h, err := file.New(afero.NewMemMapFs(), "/store").Create(ctx)
	require.NoError(t, err)
	defer h.Close()
	ps, err := provider.Open(ctx, h, provider.WithKeys(newKeys(t)))
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/v1/chat/completions", bytes.NewReader([]byte(`{"model":"m","messages":[{"role":"user","content":"find it"}]}`)))
	require.NoError(t, err)
	resp, err := ps.Middleware()(req, http.DefaultClient.Do)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	var calls []string
	for e, err := range h.Read(ctx, h.Header().FirstSeq(), h.Seq()) {
		require.NoError(t, err)
		if e.Type == "tool/call" {
			calls = append(calls, string(e.Data))
		}
	}
	require.Equal(t, []string{`{"args":"needle","id":"call_1","name":"grep"}`}, calls)
}
