package slopenai_test

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"
	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	slopenai "github.com/sessionlog/sessionlog/adapters/openai"
	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/provider"
)

const akia = "AKIAIOSFODNN7EXAMPLE"

// toolScript is the fake model of the tool loop: turn 1 reads a file
// (whose content holds a key, which the next reasoning summary quotes)
// and writes one; turn 2 reads again.
func toolScript(step int) []map[string]any {
	reasoning := func(id, text string) map[string]any {
		return map[string]any{"type": "reasoning", "id": id, "summary": []any{map[string]any{"type": "summary_text", "text": text}}}
	}
	msg := func(id, text string) map[string]any {
		return map[string]any{"type": "message", "id": id, "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}}}}
	}
	call := func(id, name, args string) map[string]any {
		return map[string]any{"type": "function_call", "id": "fc_" + id, "call_id": "call_" + id, "name": name, "arguments": args, "status": "completed"}
	}
	switch step {
	case 1:
		return []map[string]any{reasoning("rs_1", "I should read the config."), msg("msg_1", "Reading."),
			call("1", "read_file", `{"path":"config"}`), call("2", "write_file", `{"path":"out","text":"x"}`)}
	case 3:
		return []map[string]any{reasoning("rs_3", "The config holds "+akia+"; I must not repeat it."), msg("msg_3", "Done: the config is read.")}
	case 4:
		return []map[string]any{reasoning("rs_4", "Read it again."), call("4", "read_file", `{"path":"config"}`)}
	default:
		return []map[string]any{msg(fmt.Sprintf("msg_%d", step), "OK.")}
	}
}

var turns = []string{"read the config and write out", "read it again"}

// agent is a Responses tool loop on the real openai-go client: read_file
// has a read effect, write_file a write effect (marked started before it
// runs). Its state is in memory; run starts it from a rebuilt Next.
type agent struct {
	client openai.Client
	ps     *provider.Session
	stream bool
	turns  []string
	// instructions and toolOut, when set, change the loop (a fixture
	// test's divergence).
	instructions, toolOut string
}

func (a *agent) tool(c slopenai.Call) string {
	if a.toolOut != "" && c.Name == "read_file" {
		return a.toolOut
	}
	switch c.Name {
	case "read_file":
		return "aws_access_key_id = " + akia
	case "write_file":
		return "wrote out"
	}
	return "no such tool"
}

func (a *agent) base() responses.ResponseNewParams {
	return responses.ResponseNewParams{
		Model:        "fake-model",
		Instructions: openai.String(cmp.Or(a.instructions, "You are a careful agent.")),
		Store:        openai.Bool(false),
		Include:      []responses.ResponseIncludable{responses.ResponseIncludableReasoningEncryptedContent},
		Tools: []responses.ToolUnionParam{
			{OfFunction: &responses.FunctionToolParam{Name: "read_file", Parameters: map[string]any{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}}}},
			{OfFunction: &responses.FunctionToolParam{Name: "write_file", Parameters: map[string]any{"type": "object"}}},
		},
	}
}

func user(text string) responses.ResponseInputItemUnionParam {
	return responses.ResponseInputItemParamOfMessage(text, responses.EasyInputMessageRoleUser)
}

// users counts the user messages of an input list.
func users(t testing.TB, in responses.ResponseInputParam) int {
	n := 0
	for _, it := range in {
		b, err := json.Marshal(it)
		require.NoError(t, err)
		var m struct{ Type, Role string }
		require.NoError(t, json.Unmarshal(b, &m))
		if (m.Type == "" || m.Type == "message") && m.Role == "user" {
			n++
		}
	}
	return n
}

// answer runs (or, when it was started before a crash, gives the
// unknown outcome of) a call, records its output and returns it.
func (a *agent) answer(ctx context.Context, c slopenai.Call, resumed bool) (responses.ResponseInputItemUnionParam, error) {
	out := slopenai.UnknownOutcome
	if !(resumed && c.Started) {
		if c.Name == "write_file" {
			if _, err := a.ps.BeginTool(ctx, c.CallID); err != nil {
				return responses.ResponseInputItemUnionParam{}, err
			}
		}
		out = a.tool(c)
	}
	item := slopenai.OutputFor(c, out)
	return item, slopenai.RecordOutput(ctx, a.ps, item)
}

func (a *agent) send(ctx context.Context, p responses.ResponseNewParams) (*responses.Response, error) {
	if !a.stream {
		return a.client.Responses.New(ctx, p)
	}
	s := a.client.Responses.NewStreaming(ctx, p)
	defer s.Close()
	var final *responses.Response
	for s.Next() {
		if ev := s.Current(); ev.Type == "response.completed" {
			r := ev.Response
			final = &r
		}
	}
	if err := s.Err(); err != nil {
		return nil, err
	}
	if final == nil {
		return nil, errors.New("the stream ended without response.completed")
	}
	return final, nil
}

// run goes on from n (Empty for a fresh session) until every turn is
// answered.
func (a *agent) run(ctx context.Context, t testing.TB, n slopenai.Next) error {
	params := a.base()
	var input responses.ResponseInputParam
	switch {
	case n.Empty:
		input = responses.ResponseInputParam{user(a.turns[0])}
	default:
		params = n.Params
		input = n.Params.Input.OfInputItemList
		for _, c := range n.Pending {
			item, err := a.answer(ctx, c, true)
			if err != nil {
				return err
			}
			input = append(input, item)
		}
		if n.Done {
			k := users(t, input)
			if k == len(a.turns) {
				return nil
			}
			input = append(input, user(a.turns[k]))
		}
	}
	for {
		params.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: input}
		resp, err := a.send(ctx, params)
		if err != nil {
			return err
		}
		var calls []slopenai.Call
		for _, item := range resp.Output {
			input = append(input, param.Override[responses.ResponseInputItemUnionParam](json.RawMessage(item.RawJSON())))
			if item.Type == "function_call" {
				calls = append(calls, slopenai.Call{Type: item.Type, CallID: item.CallID, Name: item.Name, Arguments: item.Arguments.OfString})
			}
		}
		for _, c := range calls {
			item, err := a.answer(ctx, c, false)
			if err != nil {
				return err
			}
			input = append(input, item)
		}
		if len(calls) == 0 {
			k := users(t, input)
			if k == len(a.turns) {
				return nil
			}
			input = append(input, user(a.turns[k]))
		}
	}
}

var errKilled = errors.New("killed")

// killer is a write handle that refuses every append after the first
// allow ones, as if the process had been killed there; last is the type
// of the first event of the last batch it let through.
type killer struct {
	handle.Handle
	allow, n int
	last     string
}

func (k *killer) AppendAt(ctx context.Context, expected int64, evs ...eventlog.Event) (int64, error) {
	if k.allow >= 0 && k.n >= k.allow {
		return 0, errKilled
	}
	k.n++
	k.last = evs[0].Type
	return k.Handle.AppendAt(ctx, expected, evs...)
}

// runKilled runs the tool loop in a new store, killed after allow appends
// (never when allow < 0), then resumed from the store in a fresh Session
// until done. It returns the requests the fake was sent, the killer and
// the store's folder.
func runKilled(t *testing.T, stream bool, allow int) ([]string, *killer, string) {
	ctx := context.Background()
	fake := &fakeResponses{key: []byte("fake-server-key"), script: toolScript}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	dir := t.TempDir()
	store := file.New(afero.NewOsFs(), dir)
	h, err := store.Create(ctx)
	require.NoError(t, err)
	k := &killer{Handle: h, allow: allow}
	ps, err := provider.Open(ctx, k)
	require.NoError(t, err)
	a := &agent{client: openai.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("sk-test"), option.WithMaxRetries(0), slopenai.Record(ps)), ps: ps, stream: stream, turns: turns}
	err = a.run(ctx, t, slopenai.Next{Empty: true})
	if allow < 0 {
		require.NoError(t, err)
	} else if err != nil {
		require.ErrorIs(t, err, errKilled)
	}
	require.NoError(t, h.Close())
	if allow >= 0 {
		// A new process: the store's session, a fresh Session, the
		// default keys.
		h2, err := store.Open(ctx, h.ID(), handle.ReadWrite)
		require.NoError(t, err)
		defer func() { require.NoError(t, h2.Close()) }()
		ps2, err := provider.Open(ctx, h2)
		require.NoError(t, err)
		conv, err := ps2.Conversation(ctx)
		require.NoError(t, err)
		n, err := slopenai.Responses(conv)
		require.NoError(t, err)
		a2 := &agent{client: openai.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("sk-test"), option.WithMaxRetries(0), slopenai.Record(ps2)), ps: ps2, stream: stream, turns: turns}
		require.NoError(t, a2.run(ctx, t, n))
	}
	return fake.sent(), k, dir
}

// eventCounts counts the events of each type of the store's session.
func eventCounts(t *testing.T, dir string) map[string]int {
	ctx := context.Background()
	st := file.New(afero.NewOsFs(), dir)
	infos, err := st.List(ctx)
	require.NoError(t, err)
	require.Len(t, infos, 1)
	h, err := st.Open(ctx, infos[0].ID, handle.ReadOnly)
	require.NoError(t, err)
	defer h.Close()
	n := map[string]int{}
	for e, err := range h.Read(ctx, h.Header().FirstSeq(), h.Seq()) {
		require.NoError(t, err)
		n[e.Type]++
	}
	return n
}

// withUnknownOutcome returns the requests with the write call's output
// replaced by UnknownOutcome.
func withUnknownOutcome(t *testing.T, reqs []string) []string {
	out := make([]string, len(reqs))
	for i, r := range reqs {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(r), &m))
		for _, it := range m["input"].([]any) {
			o := it.(map[string]any)
			if o["type"] == "function_call_output" && o["call_id"] == "call_2" {
				o["output"] = slopenai.UnknownOutcome
			}
		}
		b, err := json.Marshal(m)
		require.NoError(t, err)
		out[i] = string(b)
	}
	return out
}

func requireNoSecretIn(t *testing.T, dir string) {
	n := 0
	require.NoError(t, filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		require.NotContains(t, string(b), akia, path)
		n++
		return nil
	}))
	require.Positive(t, n)
}

// TestToolLoopKilledAtEveryRecorderPoint kills the Responses tool loop
// after each durable write of the uncrashed run (request, response,
// tool start, tool output), streamed and not, with the defaults (escrow
// on, keys from SESSIONLOG_IDENTITY, redaction at write): the resumed
// loop finishes every turn, the fake accepts every request (tool pairing,
// reasoning encrypted_content intact although its summary holds a key),
// every request equals the uncrashed run's (a write tool started and not
// finished gets the unknown outcome), and the key is in clear in no file
// of the store.
func TestToolLoopKilledAtEveryRecorderPoint(t *testing.T) {
	t.Setenv(provider.IdentityEnv, filepath.Join(t.TempDir(), "identity"))
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			want, k, dir := runKilled(t, stream, -1)
			require.Len(t, want, 4, "4 requests: 2 turns of 2 steps")
			require.Contains(t, want[2], akia, "the uncrashed run sent the key (tool output, reasoning)")
			requireNoSecretIn(t, dir)
			wantCounts := eventCounts(t, dir)
			points := k.n
			require.Greater(t, points, 10)
			seen := map[string]bool{}
			for allow := 0; allow < points; allow++ {
				got, kk, dir := runKilled(t, stream, allow)
				seen[kk.last] = true
				exp := want
				if kk.last == "tool/approval" {
					exp = withUnknownOutcome(t, want)
				}
				require.Equal(t, exp, got, "killed after %d appends (last %s)", allow, kk.last)
				requireNoSecretIn(t, dir)
				// The log holds the same records and derived events: a
				// request asked again is not recorded twice.
				require.Equal(t, wantCounts, eventCounts(t, dir), "killed after %d appends (last %s)", allow, kk.last)
			}
			for _, typ := range []string{provider.TypeRequest, provider.TypeResponse, provider.TypeInput, "tool/approval"} {
				require.True(t, seen[typ], "killed after a %s", typ)
			}
		})
	}
}

// TestFakeRejectsAlteredReasoning: the fake refuses a reasoning item
// whose summary was rewritten (as redaction at write would), so the kill
// test's acceptance means the item went back intact.
func TestFakeRejectsAlteredReasoning(t *testing.T) {
	f := &fakeResponses{key: []byte("k"), script: toolScript}
	r := f.response(3)
	item := r["output"].([]map[string]any)[0]
	good, err := json.Marshal(map[string]any{"input": []any{item}})
	require.NoError(t, err)
	_, _, err = f.check(good)
	require.NoError(t, err)
	bad := strings.Replace(string(good), akia, "[REDACTED:aws-access-key-id]", 1)
	_, _, err = f.check([]byte(bad))
	require.ErrorContains(t, err, "could not be verified")
	unpaired, err := json.Marshal(map[string]any{"input": f.response(1)["output"]})
	require.NoError(t, err)
	_, _, err = f.check(unpaired)
	require.ErrorContains(t, err, "no tool output found")
}
