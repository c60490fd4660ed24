package anthropictest_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/adapters/anthropic/anthropictest"
)

// TestFakeChecksRequestsAsTheAPIDoes: the fake refuses, with the API's
// 400, a thinking block whose text or signature changed (a redaction of a
// key it quotes, say), altered redacted_thinking data, a tool_use without
// its tool_result, a tool_result without its tool_use, and a tool-calling
// assistant message that does not start with thinking when thinking is
// on; it answers what is intact.
func TestFakeChecksRequestsAsTheAPIDoes(t *testing.T) {
	fake := anthropictest.New(func(turn, step int) []anthropictest.Call { return nil })
	defer fake.Close()
	const text = "the key is AKIAIOSFODNN7EXAMPLE"
	thinking := func(th, sig string) string {
		return `{"type":"thinking","thinking":"` + th + `","signature":"` + sig + `"}`
	}
	ok := thinking(text, fake.Sign(text))
	redacted := `{"type":"redacted_thinking","data":"` + fake.Redacted("r1") + `"}`
	use := `{"type":"tool_use","id":"t1","name":"f","input":{}}`
	result := `{"type":"tool_result","tool_use_id":"t1","content":"x"}`
	req := func(assistant []string, results ...string) string {
		res := append([]string{}, results...)
		if len(res) == 0 {
			res = []string{`{"type":"text","text":"next"}`}
		}
		return `{"model":"m","max_tokens":9,"thinking":{"type":"enabled","budget_tokens":5},"messages":[` +
			`{"role":"user","content":[{"type":"text","text":"hi"}]},` +
			`{"role":"assistant","content":[` + strings.Join(assistant, ",") + `]},` +
			`{"role":"user","content":[` + strings.Join(res, ",") + `]}]}`
	}
	for _, c := range []struct {
		name, body, err string
	}{
		{"intact", req([]string{ok, redacted, use}, result), ""},
		{"redacted thinking text", req([]string{thinking("the key is [REDACTED:aws-access-key-id]", fake.Sign(text)), use}, result), "Invalid signature in thinking block"},
		{"another signature", req([]string{thinking(text, fake.Sign("other")), use}, result), "Invalid signature in thinking block"},
		{"redacted_thinking altered", req([]string{ok, strings.Replace(redacted, `"data":"`, `"data":"x`, 1), use}, result), "Invalid redacted_thinking data"},
		{"tool_use unanswered", req([]string{ok, use}), "without `tool_result`"},
		{"tool_result of no tool_use", req([]string{ok}, result), "unexpected `tool_use_id`"},
		{"thinking not first", req([]string{`{"type":"text","text":"t"}`, ok, use}, result), "must start with a thinking block"},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp, err := http.Post(fake.URL+"/v1/messages", "application/json", strings.NewReader(c.body))
			require.NoError(t, err)
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			if c.err == "" {
				require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
				return
			}
			require.Equal(t, http.StatusBadRequest, resp.StatusCode)
			var e struct {
				Type  string
				Error struct{ Type, Message string }
			}
			require.NoError(t, json.Unmarshal(b, &e))
			require.Equal(t, "error", e.Type)
			require.Equal(t, "invalid_request_error", e.Error.Type)
			require.Contains(t, e.Error.Message, c.err)
		})
	}
}
