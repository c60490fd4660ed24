package anthropic_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	adapter "github.com/sessionlog/sessionlog/adapters/anthropic"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/internal/testkit/sweep"
	"github.com/sessionlog/sessionlog/provider"
)

// samples holds, for every response content block kind the SDK defines
// (ContentBlockUnion's variants), blocks with every field set, one per
// shape of the kind's own unions (results and errors, each citation,
// each caller). %s is replaced by a fresh id.
var samples = map[string][]string{
	"text": {
		`{"type":"text","text":"plain %s","citations":null}`,
		`{"type":"text","text":"cited %s","citations":[` +
			`{"type":"char_location","cited_text":"a","document_index":0,"document_title":"d","end_char_index":5,"file_id":"file_1","start_char_index":1},` +
			`{"type":"page_location","cited_text":"b","document_index":1,"document_title":"p","end_page_number":3,"file_id":"file_2","start_page_number":2},` +
			`{"type":"content_block_location","cited_text":"c","document_index":2,"document_title":null,"end_block_index":4,"file_id":null,"start_block_index":1},` +
			`{"type":"web_search_result_location","cited_text":"d","encrypted_index":"EiQ=","title":"t","url":"https://example.com"},` +
			`{"type":"search_result_location","cited_text":"e","end_block_index":2,"search_result_index":0,"source":"s","start_block_index":0,"title":"r"}]}`,
	},
	"thinking":          {`{"type":"thinking","thinking":"I think %s; the key is AKIAIOSFODNN7EXAMPLE","signature":"sig-%s"}`},
	"redacted_thinking": {`{"type":"redacted_thinking","data":"EmwKAhgBEgy%s+/="}`},
	"tool_use": {
		`{"type":"tool_use","id":"toolu_%s","name":"reader","input":{"path":"a <b> & c"},"caller":{"type":"direct"}}`,
		`{"type":"tool_use","id":"toolu_%s","name":"writer","input":{},"caller":{"type":"code_execution_20250825","tool_id":"srvtoolu_x"},"toolset_name":"ts"}`,
		`{"type":"tool_use","id":"toolu_%s","name":"writer","input":{"n":[1,2.5,null,true]},"caller":{"type":"code_execution_20260120","tool_id":"srvtoolu_y"}}`,
	},
	"server_tool_use": {`{"type":"server_tool_use","id":"srvtoolu_%s","name":"web_search","input":{"query":"q"},"caller":{"type":"direct"}}`},
	"web_search_tool_result": {
		`{"type":"web_search_tool_result","tool_use_id":"srvtoolu_%s","caller":{"type":"direct"},"content":[{"type":"web_search_result","encrypted_content":"Eo8=","page_age":"1 day","title":"t","url":"https://example.com"}]}`,
		`{"type":"web_search_tool_result","tool_use_id":"srvtoolu_%s","caller":{"type":"direct"},"content":{"type":"web_search_tool_result_error","error_code":"max_uses_exceeded"}}`,
	},
	"web_fetch_tool_result": {
		`{"type":"web_fetch_tool_result","tool_use_id":"srvtoolu_%s","caller":{"type":"direct"},"content":{"type":"web_fetch_result","url":"https://example.com","retrieved_at":"2026-01-01T00:00:00Z","content":{"type":"document","title":"t","citations":{"enabled":true},"source":{"type":"text","media_type":"text/plain","data":"hello"}}}}`,
		`{"type":"web_fetch_tool_result","tool_use_id":"srvtoolu_%s","caller":{"type":"direct"},"content":{"type":"web_fetch_tool_result_error","error_code":"url_not_accessible"}}`,
	},
	"code_execution_tool_result": {
		`{"type":"code_execution_tool_result","tool_use_id":"srvtoolu_%s","content":{"type":"code_execution_result","content":[{"type":"code_execution_output","file_id":"file_3"}],"return_code":0,"stderr":"","stdout":"ok"}}`,
		`{"type":"code_execution_tool_result","tool_use_id":"srvtoolu_%s","content":{"type":"encrypted_code_execution_result","content":[],"encrypted_stdout":"RW5j","return_code":1,"stderr":"e"}}`,
		`{"type":"code_execution_tool_result","tool_use_id":"srvtoolu_%s","content":{"type":"code_execution_tool_result_error","error_code":"unavailable"}}`,
	},
	"bash_code_execution_tool_result": {
		`{"type":"bash_code_execution_tool_result","tool_use_id":"srvtoolu_%s","content":{"type":"bash_code_execution_result","content":[{"type":"bash_code_execution_output","file_id":"file_4"}],"return_code":0,"stderr":"","stdout":"ls"}}`,
		`{"type":"bash_code_execution_tool_result","tool_use_id":"srvtoolu_%s","content":{"type":"bash_code_execution_tool_result_error","error_code":"unavailable"}}`,
	},
	"text_editor_code_execution_tool_result": {
		`{"type":"text_editor_code_execution_tool_result","tool_use_id":"srvtoolu_%s","content":{"type":"text_editor_code_execution_view_result","content":"x","file_type":"text","num_lines":1,"start_line":1,"total_lines":1}}`,
		`{"type":"text_editor_code_execution_tool_result","tool_use_id":"srvtoolu_%s","content":{"type":"text_editor_code_execution_create_result","is_file_update":false}}`,
		`{"type":"text_editor_code_execution_tool_result","tool_use_id":"srvtoolu_%s","content":{"type":"text_editor_code_execution_str_replace_result","lines":["a","b"],"new_lines":2,"new_start":1,"old_lines":1,"old_start":1}}`,
		`{"type":"text_editor_code_execution_tool_result","tool_use_id":"srvtoolu_%s","content":{"type":"text_editor_code_execution_tool_result_error","error_code":"unavailable","error_message":"no"}}`,
	},
	"tool_search_tool_result": {
		`{"type":"tool_search_tool_result","tool_use_id":"srvtoolu_%s","content":{"type":"tool_search_tool_search_result","tool_references":[{"type":"tool_reference","tool_name":"reader"}]}}`,
		`{"type":"tool_search_tool_result","tool_use_id":"srvtoolu_%s","content":{"type":"tool_search_tool_result_error","error_code":"unavailable","error_message":"no"}}`,
	},
	"container_upload": {`{"type":"container_upload","file_id":"file_%s"}`},
}

func sample(kind string, i int, id string) string {
	return strings.ReplaceAll(samples[kind][i], "%s", id)
}

// snake turns an SDK method suffix (WebSearchToolResult) into its block
// type (web_search_tool_result).
func snake(s string) string {
	var b strings.Builder
	for i, r := range s {
		if r >= 'A' && r <= 'Z' {
			if i > 0 {
				b.WriteByte('_')
			}
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// TestSamplesCoverEverySDKBlockKind takes the list of block kinds from
// the SDK's ContentBlockUnion (its As<Variant> methods) and checks that
// the generator has every kind, each sample decoding to its variant, and
// every field of the variant's type set in one of the kind's samples.
func TestSamplesCoverEverySDKBlockKind(t *testing.T) {
	ty := reflect.TypeOf(sdk.ContentBlockUnion{})
	kinds := 0
	for i := range ty.NumMethod() {
		m := ty.Method(i)
		if !strings.HasPrefix(m.Name, "As") || m.Name == "AsAny" {
			continue
		}
		kinds++
		kind := snake(strings.TrimPrefix(m.Name, "As"))
		require.NotEmpty(t, samples[kind], "the generator has no %s block", kind)
		seen := map[string]bool{}
		var fields []string
		for j := range samples[kind] {
			raw := sample(kind, j, "x")
			var b sdk.ContentBlockUnion
			require.NoError(t, json.Unmarshal([]byte(raw), &b), raw)
			v := b.AsAny()
			require.NotNil(t, v, raw)
			vt := reflect.TypeOf(v)
			require.Equal(t, m.Type.Out(0), vt, raw)
			var keys map[string]json.RawMessage
			require.NoError(t, json.Unmarshal([]byte(raw), &keys))
			fields = fields[:0]
			for f := range vt.NumField() {
				tag, _, _ := strings.Cut(vt.Field(f).Tag.Get("json"), ",")
				if tag != "" && tag != "-" {
					fields = append(fields, tag)
				}
			}
			for k := range keys {
				require.Contains(t, fields, k, "%s sample %d has a field the SDK's %s does not", kind, j, vt)
				seen[k] = true
			}
		}
		for _, f := range fields {
			require.True(t, seen[f], "no %s sample has the field %s", kind, f)
		}
	}
	require.Equal(t, len(samples), kinds, "the generator has a kind the SDK does not define")
}

// genBase is the generated loop's first request, before its messages.
func genBase() sdk.MessageNewParams {
	p := baseParams()
	p.StopSequences = []string{"STOP"}
	p.Metadata = sdk.MetadataParam{UserID: sdk.String("u1")}
	return p
}

// userKinds are the kinds of paramSamples a user's turn message holds
// (a tool_result answers a call: the loop makes those).
var userKinds = []string{"document", "image", "search_result", "text"}

// step is one generated model response.
type step struct {
	blocks []string
	stop   string
	stream bool
}

// genConversation generates turns of steps: each step but the last of a
// turn calls tools (or pauses the turn); blocks are drawn from every kind.
func genConversation(r *rand.Rand) (turns []sdk.MessageParam, steps []step) {
	kinds := make([]string, 0, len(samples))
	for k := range samples {
		if k != "tool_use" && k != "thinking" {
			kinds = append(kinds, k)
		}
	}
	// Map order is random: sort for a reproducible generator.
	slicesSort(kinds)
	n := 0
	id := func() string { n++; return fmt.Sprintf("%d", n) }
	for t := range 1 + r.IntN(3) {
		blocks := []sdk.ContentBlockParamUnion{sdk.NewTextBlock(fmt.Sprintf("turn %d: do the thing", t))}
		for range r.IntN(3) {
			k := userKinds[r.IntN(len(userKinds))]
			var b sdk.ContentBlockParamUnion
			if err := json.Unmarshal([]byte(paramSamples[k][r.IntN(len(paramSamples[k]))]), &b); err != nil {
				panic(err)
			}
			blocks = append(blocks, b)
		}
		turns = append(turns, sdk.NewUserMessage(blocks...))
		nSteps := 1 + r.IntN(3)
		for s := range nSteps {
			st := step{stream: r.IntN(2) == 0, stop: "end_turn"}
			st.blocks = append(st.blocks, sample("thinking", 0, id()))
			for range r.IntN(4) {
				k := kinds[r.IntN(len(kinds))]
				st.blocks = append(st.blocks, sample(k, r.IntN(len(samples[k])), id()))
			}
			if s < nSteps-1 {
				if r.IntN(4) == 0 {
					st.stop = "pause_turn"
				} else {
					st.stop = "tool_use"
					for range 1 + r.IntN(3) {
						st.blocks = append(st.blocks, sample("tool_use", r.IntN(len(samples["tool_use"])), id()))
					}
				}
			}
			steps = append(steps, st)
		}
	}
	return turns, steps
}

func slicesSort(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// scriptServer answers request i with steps[i], as JSON or as a stream
// of the events the API would send for it.
func scriptServer(t *testing.T, steps []step) *httptest.Server {
	var mu sync.Mutex
	i := 0
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		st := steps[i]
		i++
		mu.Unlock()
		var content []json.RawMessage
		for _, b := range st.blocks {
			content = append(content, json.RawMessage(b))
		}
		usage := json.RawMessage(`{"input_tokens":12,"output_tokens":5,"cache_creation_input_tokens":3,"cache_read_input_tokens":2,"cache_creation":{"ephemeral_5m_input_tokens":1,"ephemeral_1h_input_tokens":2},"server_tool_use":{"web_search_requests":1},"service_tier":"standard"}`)
		msg := map[string]any{"id": fmt.Sprintf("msg_%d", i), "type": "message", "role": "assistant", "model": "claude-test",
			"content": content, "stop_reason": st.stop, "stop_sequence": nil, "usage": usage, "container": nil}
		if !st.stream {
			w.Header().Set("Content-Type", "application/json")
			require.NoError(t, json.NewEncoder(w).Encode(msg))
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		ev := func(v map[string]any) {
			b, err := json.Marshal(v)
			require.NoError(t, err)
			fmt.Fprintf(w, "event: %s\ndata: %s\n\n", v["type"], b)
		}
		start := map[string]any{}
		for k, v := range msg {
			start[k] = v
		}
		start["content"], start["stop_reason"] = []any{}, nil
		ev(map[string]any{"type": "message_start", "message": start})
		for j, raw := range content {
			var b map[string]any
			require.NoError(t, json.Unmarshal(raw, &b))
			var deltas []map[string]any
			half := func(s string) []string { h := len(s) / 2; return []string{s[:h], s[h:]} }
			switch b["type"] {
			case "text":
				for _, p := range half(b["text"].(string)) {
					deltas = append(deltas, map[string]any{"type": "text_delta", "text": p})
				}
				if cs, ok := b["citations"].([]any); ok {
					for _, c := range cs {
						deltas = append(deltas, map[string]any{"type": "citations_delta", "citation": c})
					}
				}
				b["text"], b["citations"] = "", nil
			case "thinking":
				for _, p := range half(b["thinking"].(string)) {
					deltas = append(deltas, map[string]any{"type": "thinking_delta", "thinking": p})
				}
				deltas = append(deltas, map[string]any{"type": "signature_delta", "signature": b["signature"]})
				b["thinking"], b["signature"] = "", ""
			case "tool_use", "server_tool_use":
				in, err := json.Marshal(b["input"])
				require.NoError(t, err)
				for _, p := range half(string(in)) {
					deltas = append(deltas, map[string]any{"type": "input_json_delta", "partial_json": p})
				}
				b["input"] = map[string]any{}
			}
			ev(map[string]any{"type": "content_block_start", "index": j, "content_block": b})
			for _, d := range deltas {
				ev(map[string]any{"type": "content_block_delta", "index": j, "delta": d})
			}
			ev(map[string]any{"type": "content_block_stop", "index": j})
		}
		ev(map[string]any{"type": "ping"})
		ev(map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": st.stop, "stop_sequence": nil, "container": nil}, "usage": usage})
		ev(map[string]any{"type": "message_stop"})
	}))
}

// genLoop is the live loop of a generated conversation: the SDK's own
// types in memory, each call streamed or not as the step says, each
// tool's result recorded as soon as it ran (a writer marked started).
func genLoop(t *testing.T, ctx context.Context, client sdk.Client, ps *provider.Session, r *rand.Rand, turns []sdk.MessageParam, steps []step) {
	p := genBase()
	i := 0
	for _, turn := range turns {
		p.Messages = append(p.Messages, turn)
		for {
			var msg sdk.Message
			if steps[i].stream {
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
			i++
			p.Messages = append(p.Messages, msg.ToParam())
			var results []sdk.ContentBlockParamUnion
			for _, b := range msg.Content {
				if b.Type != "tool_use" {
					continue
				}
				if b.Name == "writer" {
					_, err := ps.BeginTool(ctx, b.ID)
					require.NoError(t, err)
				}
				out, isErr := fmt.Sprintf("%s ran: AKIAIOSFODNN7EXAMPLE <&>", b.Name), r.IntN(3) == 0
				require.NoError(t, adapter.RecordResult(ctx, ps, b.ID, out, isErr))
				results = append(results, sdk.NewToolResultBlock(b.ID, out, isErr))
			}
			if len(results) > 0 {
				p.Messages = append(p.Messages, sdk.NewUserMessage(results...))
				continue
			}
			if msg.StopReason != sdk.StopReasonPauseTurn {
				break
			}
		}
	}
	require.Equal(t, len(steps), i)
}

// TestRebuildEqualsWhatWasSentForGeneratedConversations is the property:
// for every generated conversation (every block kind, streamed and not,
// tool loops, paused turns, secrets in thinking and tool results) and
// every seq, the rebuilt request equals, as canonical JSON, what the
// loop that never crashed sent next.
//
// The seeds that run are the first 6 (16 under SESSIONLOG_SWEEPS=full),
// and more until their conversations hold every block kind between them.
func TestRebuildEqualsWhatWasSentForGeneratedConversations(t *testing.T) {
	keys := newKeys(t)
	type conversation struct {
		r     *rand.Rand // as the generator left it: genLoop goes on with it
		turns []sdk.MessageParam
		steps []step
	}
	var convs []conversation
	seen := map[string]bool{}
	for seed := uint64(0); seed < uint64(sweep.Size(6, 16, 64)) || len(seen) < len(samples); seed++ {
		require.Less(t, seed, uint64(64), "64 generated conversations without every block kind: %v", seen)
		r := rand.New(rand.NewPCG(seed, 29))
		turns, steps := genConversation(r)
		convs = append(convs, conversation{r, turns, steps})
		for _, st := range steps {
			for _, b := range st.blocks {
				var k struct{ Type string }
				require.NoError(t, json.Unmarshal([]byte(b), &k))
				require.Contains(t, samples, k.Type)
				seen[k.Type] = true
			}
		}
	}
	seeds := uint64(len(convs))
	for seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			r, turns, steps := convs[seed].r, convs[seed].turns, convs[seed].steps
			srv := scriptServer(t, steps)
			defer srv.Close()
			var sent []string
			var mu sync.Mutex
			rec := func(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
				b, err := req.GetBody()
				if err == nil {
					var v any
					if json.NewDecoder(b).Decode(&v) == nil {
						c, _ := json.Marshal(v)
						mu.Lock()
						sent = append(sent, string(c))
						mu.Unlock()
					}
				}
				return next(req)
			}
			dir := t.TempDir()
			h, err := file.New(afero.NewOsFs(), dir).Create(ctx)
			require.NoError(t, err)
			defer h.Close()
			ps, err := provider.Open(ctx, h, provider.WithKeys(keys))
			require.NoError(t, err)
			client := sdk.NewClient(adapter.Record(ps), option.WithMiddleware(rec), option.WithBaseURL(srv.URL), option.WithAPIKey("k"), option.WithMaxRetries(0))
			genLoop(t, ctx, client, ps, r, turns, steps)
			require.Len(t, sent, len(steps))
			checkEverySeq(t, ctx, h, ps, sent, turns, genBase)
			requireNoClearKey(t, dir)
		})
	}
}
