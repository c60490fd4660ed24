package slopenai_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"

	"filippo.io/age"
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

// outputKinds returns the type of every output item variant the SDK
// defines: the `default` tag of the Type field of the type each
// ResponseOutputItemUnion.As* method returns.
func outputKinds(t testing.TB) []string {
	var kinds []string
	ut := reflect.TypeOf(responses.ResponseOutputItemUnion{})
	for i := range ut.NumMethod() {
		m := ut.Method(i)
		if !strings.HasPrefix(m.Name, "As") || m.Name == "AsAny" {
			continue
		}
		f, ok := m.Type.Out(0).FieldByName("Type")
		require.True(t, ok, m.Name)
		k := f.Tag.Get("default")
		if k == "" { // an enum type: the method's name says it
			k = snake(strings.TrimPrefix(m.Name, "As"))
		}
		// The SDK decodes an item of that type as that variant.
		var u responses.ResponseOutputItemUnion
		require.NoError(t, json.Unmarshal([]byte(`{"type":"`+k+`"}`), &u))
		require.Equal(t, m.Type.Out(0), reflect.TypeOf(u.AsAny()), k)
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	return slices.Compact(kinds)
}

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

// inputKinds returns the type of every input item variant the SDK
// defines (ResponseInputItemUnionParam's Of* fields).
func inputKinds(t testing.TB) []string {
	var kinds []string
	ut := reflect.TypeOf(responses.ResponseInputItemUnionParam{})
	for i := range ut.NumField() {
		f := ut.Field(i)
		if !strings.HasPrefix(f.Name, "Of") {
			continue
		}
		k := snake(strings.TrimPrefix(f.Name, "Of"))
		if strings.HasSuffix(f.Name, "Message") {
			k = "message" // easy, input and output messages
		}
		if tf, ok := f.Type.Elem().FieldByName("Type"); ok && tf.Tag.Get("default") != "" {
			k = tf.Tag.Get("default")
		}
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	return slices.Compact(kinds)
}

// gen generates conversations: the items of the first request (every
// input kind), and the replies (every output kind, random fields,
// unknown fields, keys in texts).
type gen struct {
	r    *rand.Rand
	n    int
	seal func(id string, summary json.RawMessage) string
}

func (g *gen) id(prefix string) string {
	g.n++
	return fmt.Sprintf("%s_%d", prefix, g.n)
}

func (g *gen) text() string {
	words := []string{"alpha", "beta", "<tag>", "é", "line\nbreak", "\"quoted\"", "🙂", "&amp;"}
	var b strings.Builder
	if g.r.IntN(40) == 0 {
		b.WriteString("key " + akia + " ")
	}
	for range 1 + g.r.IntN(4) {
		b.WriteString(words[g.r.IntN(len(words))])
		b.WriteByte(' ')
	}
	return b.String()
}

// value is a random JSON value, for fields the adapter does not know.
func (g *gen) value(depth int) any {
	switch k := g.r.IntN(6); {
	case k == 0 || depth == 0:
		return g.text()
	case k == 1:
		return g.r.IntN(1000)
	case k == 2:
		return g.r.IntN(2) == 0
	case k == 3:
		return nil
	case k == 4:
		return []any{g.value(depth - 1), g.value(depth - 1)}
	default:
		return map[string]any{"a": g.value(depth - 1), "z_unknown": g.value(depth - 1)}
	}
}

func (g *gen) extra(it map[string]any) map[string]any {
	for i := range g.r.IntN(3) {
		it[fmt.Sprintf("x_future_%d", i)] = g.value(2)
	}
	return it
}

// item returns an item of kind (output items; input items share the
// shapes), with callID for call kinds and their outputs.
func (g *gen) item(kind, callID string) map[string]any {
	it := map[string]any{"type": kind, "id": g.id(strings.SplitN(kind, "_", 2)[0])}
	switch {
	case kind == "message":
		it["role"], it["status"] = "assistant", "completed"
		it["content"] = []any{map[string]any{"type": "output_text", "text": g.text(), "annotations": []any{}}}
	case kind == "reasoning":
		it["summary"] = []any{map[string]any{"type": "summary_text", "text": g.text()}}
	case kind == "custom_tool_call":
		it["call_id"], it["name"], it["input"] = callID, g.toolName(), g.text()
	case fakeCallKinds[kind] != "":
		it["call_id"], it["name"], it["arguments"] = callID, g.toolName(), fmt.Sprintf(`{"q":%q}`, g.text())
		it["status"] = "completed"
	case isFakeCallOutput(kind):
		it["call_id"], it["output"] = callID, g.text()
	default:
		it["status"] = "completed"
		it["result"] = g.text()
	}
	return g.extra(it)
}

func (g *gen) toolName() string {
	if g.r.IntN(2) == 0 {
		return "write_" + fmt.Sprint(g.r.IntN(3))
	}
	return "read_" + fmt.Sprint(g.r.IntN(3))
}

// outputOf returns the type that answers a call kind ("" for none).
func outputOf(kind string) string { return fakeCallKinds[kind] }

// callOf returns the call kind an output kind answers ("" for none).
func callOf(kind string) string {
	for c, o := range fakeCallKinds {
		if o == kind {
			return c
		}
	}
	return ""
}

// reply returns a response's output items: kinds in order (an output
// kind comes right after its call, answered in the response); with
// calls, the loop answers those left.
func (g *gen) reply(kinds []string) []map[string]any {
	var out []map[string]any
	for _, k := range kinds {
		if c := callOf(k); c != "" {
			id := g.id("call")
			out = append(out, g.item(c, id), g.item(k, id))
			continue
		}
		out = append(out, g.item(k, g.id("call")))
	}
	return out
}

// conversation is a generated run: the first request's items, later
// user turns, the replies in request order, and whether it streams.
type conversation struct {
	first   []map[string]any
	turns   []string
	replies [][]map[string]any
	stream  bool
}

func (g *gen) conversation(all, inKinds []string, everyKind bool) conversation {
	var c conversation
	c.stream = g.r.IntN(2) == 0
	// The first request: every input kind once (calls with their outputs)
	// when everyKind, else a user message.
	c.first = []map[string]any{{"role": "user", "content": g.text()}}
	if everyKind {
		for _, k := range inKinds {
			switch {
			case k == "message":
				c.first = append(c.first,
					map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": g.text()}}},
					g.item("message", ""))
			case outputOf(k) != "":
				id := g.id("call")
				c.first = append(c.first, g.item(k, id), g.item(outputOf(k), id))
			case callOf(k) != "":
				// with its call, above
			case k == "reasoning":
				it := g.item(k, "")
				s, _ := json.Marshal(it["summary"])
				it["encrypted_content"] = g.seal(it["id"].(string), s)
				c.first = append(c.first, it)
			default:
				c.first = append(c.first, g.item(k, g.id("call")))
			}
		}
	}
	var plain []string // kinds that ask nothing of the loop
	var calls []string
	for _, k := range all {
		if outputOf(k) != "" {
			calls = append(calls, k)
		} else {
			plain = append(plain, k)
		}
	}
	pick := func(from []string, max int) []string {
		var ks []string
		for range g.r.IntN(max + 1) {
			ks = append(ks, from[g.r.IntN(len(from))])
		}
		return ks
	}
	nTurns := 1 + g.r.IntN(3)
	for t := range nTurns {
		if t > 0 {
			c.turns = append(c.turns, g.text())
		}
		rounds := g.r.IntN(3)
		if everyKind && t == 0 {
			// Every output kind in the first reply, calls too.
			c.replies = append(c.replies, g.reply(append(slices.Clone(all), "function_call")))
			rounds = 0
		}
		for range rounds {
			ks := append(pick(plain, 3), pick(calls, 2)...)
			ks = append(ks, calls[g.r.IntN(len(calls))])
			g.r.Shuffle(len(ks), func(i, j int) { ks[i], ks[j] = ks[j], ks[i] })
			c.replies = append(c.replies, g.reply(ks))
		}
		c.replies = append(c.replies, g.reply(append([]string{"reasoning"}, append(pick(plain, 3), "message")...)))
	}
	return c
}

// genLoop is the uncrashed loop of a generated conversation, on the real
// client: it sends the whole conversation each time, turns output items
// into input items as the SDK's README does, answers each call not
// answered in the response (a write_ tool marked started first) and
// records its output as soon as it has it.
func genLoop(ctx context.Context, t *testing.T, client openai.Client, ps *provider.Session, c conversation) {
	params := responses.ResponseNewParams{Model: "fake-model", Store: openai.Bool(false), MaxOutputTokens: openai.Int(1000),
		Include: []responses.ResponseIncludable{responses.ResponseIncludableReasoningEncryptedContent}}
	params.SetExtraFields(map[string]any{"x_request_future": map[string]any{"k": 1}})
	var input responses.ResponseInputParam
	for _, it := range c.first {
		input = append(input, param.Override[responses.ResponseInputItemUnionParam](it))
	}
	turn := 0
	for {
		params.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: input}
		var resp *responses.Response
		if c.stream {
			s := client.Responses.NewStreaming(ctx, params)
			for s.Next() {
				if ev := s.Current(); ev.Type == "response.completed" {
					r := ev.Response
					resp = &r
				}
			}
			require.NoError(t, s.Err())
			require.NoError(t, s.Close())
		} else {
			var err error
			resp, err = client.Responses.New(ctx, params)
			require.NoError(t, err)
		}
		answered := map[string]bool{}
		for _, item := range resp.Output {
			input = append(input, param.Override[responses.ResponseInputItemUnionParam](json.RawMessage(item.RawJSON())))
			if callOf(item.Type) != "" {
				answered[item.CallID] = true
			}
		}
		calls := 0
		for _, item := range resp.Output {
			out := outputOf(item.Type)
			if out == "" || answered[item.CallID] {
				continue
			}
			calls++
			if strings.HasPrefix(item.Name, "write_") {
				_, err := ps.BeginTool(ctx, item.CallID)
				require.NoError(t, err)
			}
			o := param.Override[responses.ResponseInputItemUnionParam](map[string]any{"type": out, "call_id": item.CallID, "output": "ran " + item.CallID + " " + akia})
			require.NoError(t, slopenai.RecordOutput(ctx, ps, o))
			input = append(input, o)
		}
		if calls == 0 {
			if turn == len(c.turns) {
				return
			}
			input = append(input, user(c.turns[turn]))
			turn++
		}
	}
}

func canon(t testing.TB, v any) string {
	b, err := json.Marshal(v)
	require.NoError(t, err)
	c, err := slopenai.Canonical(b)
	require.NoError(t, err)
	return string(c)
}

// withoutMember returns a JSON object's canonical form without key, and
// the member's elements.
func withoutMember(t testing.TB, obj []byte, key string) (string, []json.RawMessage) {
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(obj, &m))
	var items []json.RawMessage
	if v, ok := m[key]; ok {
		require.NoError(t, json.Unmarshal(v, &items))
	}
	delete(m, key)
	delete(m, "stream")
	return canon(t, m), items
}

// TestRebuildEqualsUncrashedLoopAtEverySeq: for generated conversations
// (every input and output item kind of the SDK, unknown fields, keys in
// texts, streamed or not, escrow on), at every seq of the log the rebuilt
// params are what the uncrashed loop sent next, as canonical JSON: the
// request asked again when its response is not recorded, else the next
// request less the outputs of the Pending calls (Started exactly when the
// loop marked them) or, when Done, less the next user message.
func TestRebuildEqualsUncrashedLoopAtEverySeq(t *testing.T) {
	ctx := context.Background()
	all, inKinds := outputKinds(t), inputKinds(t)
	require.Len(t, all, 28, "the SDK's output item kinds")
	require.Len(t, inKinds, 31, "the SDK's input item kinds (three of them messages)")
	require.Contains(t, inKinds, "item_reference")
	id, err := age.GenerateX25519Identity()
	require.NoError(t, err)
	keys := provider.NewKeys(id)
	r := rand.New(rand.NewPCG(29, 1))
	seenOut := map[string]bool{}
	for ci := range 6 {
		fake := &fakeResponses{key: []byte("gen-key")}
		g := &gen{r: r, seal: fake.seal}
		c := g.conversation(all, inKinds, ci == 0)
		fake.replies = c.replies
		for _, rep := range c.replies {
			for _, it := range rep {
				seenOut[it["type"].(string)] = true
			}
		}
		srv := httptest.NewServer(fake)
		store := file.New(afero.NewMemMapFs(), "/store")
		h, err := store.Create(ctx)
		require.NoError(t, err)
		ps, err := provider.Open(ctx, h, provider.WithKeys(keys))
		require.NoError(t, err)
		client := openai.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("sk-test"), option.WithMaxRetries(0), slopenai.Record(ps))
		genLoop(ctx, t, client, ps, c)
		srv.Close()
		checkEverySeq(ctx, t, h, keys, fake.bodies, responsesAPI)
		require.NoError(t, h.Close())
	}
	for _, k := range all {
		require.True(t, seenOut[k], "output kind %s generated", k)
	}
}

// rebuilt is what an API's rebuild (Responses, Chat) says the loop does
// next, in the shape checkEverySeq reads.
type rebuilt struct {
	Params                any
	AskAgain, Done, Empty bool
	Pending               []slopenai.Call
}

// rebuildAPI is what checkEverySeq needs of one API.
type rebuildAPI struct {
	member string // the request's list of items: "input", "messages"
	next   func(provider.Conversation) (rebuilt, error)
	// pending checks the item the loop sends for pending call c (the
	// request after the rebuilt one holds it).
	pending func(t *testing.T, s int64, item json.RawMessage, c slopenai.Call)
}

var responsesAPI = rebuildAPI{
	member: "input",
	next: func(conv provider.Conversation) (rebuilt, error) {
		n, err := slopenai.Responses(conv)
		return rebuilt{n.Params, n.AskAgain, n.Done, n.Empty, n.Pending}, err
	},
	pending: func(t *testing.T, s int64, item json.RawMessage, c slopenai.Call) {
		var o struct {
			Type   string `json:"type"`
			CallID string `json:"call_id"`
		}
		require.NoError(t, json.Unmarshal(item, &o))
		require.Equal(t, o.CallID, c.CallID, "seq %d", s)
		require.Equal(t, o.Type, outputOf(c.Type), "seq %d", s)
	},
}

// checkEverySeq checks api's rebuild at every seq of h's log against
// bodies, the requests the uncrashed loop sent: before the first request
// there is nothing to do; while a request has no complete response, it
// is asked again; after one, the rebuilt request is the next one sent, up
// to what is left to do (the outputs of the pending calls, or the next
// user message when the turn is answered).
func checkEverySeq(ctx context.Context, t *testing.T, h handle.Handle, keys *provider.Keys, bodies [][]byte, api rebuildAPI) {
	var reqs, resps []int64
	started := map[string]int64{}
	var events []eventlog.Event
	for e, err := range h.Read(ctx, h.Header().FirstSeq(), h.Seq()) {
		require.NoError(t, err)
		events = append(events, e)
		switch e.Type {
		case provider.TypeRequest:
			reqs = append(reqs, e.Seq)
		case provider.TypeResponse:
			resps = append(resps, e.Seq)
		case "tool/approval":
			var a struct{ ID string }
			require.NoError(t, json.Unmarshal(e.Data, &a))
			started[a.ID] = e.Seq
		}
	}
	require.Len(t, reqs, len(bodies))
	require.Len(t, resps, len(bodies))
	// The projection folded event by event is provider.At at each seq
	// (no rollback here); At itself is checked at some seqs.
	p := provider.NewProjection()
	var conv provider.Conversation
	var err error
	for i, e := range events {
		s := e.Seq
		p.Apply(e)
		if folds(e.Type) || i == 0 {
			// Other events leave the projection as it was (At, checked
			// below at some seqs, says so too).
			conv, err = p.Conversation(keys)
			require.NoError(t, err)
		}
		if i%10 == 0 || i == len(events)-1 {
			at, err := provider.At(ctx, h, s, keys)
			require.NoError(t, err)
			c := conv
			c.Seq = at.Seq
			require.Equal(t, at, c, "seq %d", s)
		}
		n, err := api.next(conv)
		require.NoError(t, err, "seq %d", s)
		k := 0
		for k < len(reqs) && reqs[k] <= s {
			k++
		}
		if k == 0 {
			require.True(t, n.Empty, "seq %d", s)
			continue
		}
		gotRest, got := withoutMember(t, mustJSON(t, n.Params), api.member)
		if resps[k-1] > s {
			require.True(t, n.AskAgain, "seq %d", s)
			wantRest, want := withoutMember(t, bodies[k-1], api.member)
			require.Equal(t, wantRest, gotRest, "seq %d", s)
			require.Equal(t, canonAll(t, want), canonAll(t, got), "seq %d: the request asked again", s)
			continue
		}
		require.False(t, n.AskAgain, "seq %d", s)
		if k == len(bodies) {
			require.True(t, n.Done, "seq %d: the last reply answers the last turn", s)
			require.Empty(t, n.Pending)
			continue
		}
		wantRest, want := withoutMember(t, bodies[k], api.member)
		require.Equal(t, wantRest, gotRest, "seq %d", s)
		require.GreaterOrEqual(t, len(want), len(got), "seq %d", s)
		require.Equal(t, canonAll(t, want[:len(got)]), canonAll(t, got), "seq %d: the rebuilt %s are what the loop sent next, up to what is left to do", s, api.member)
		rest := want[len(got):]
		if n.Done {
			require.Len(t, rest, 1, "seq %d: the next user message", s)
			var m struct{ Role string }
			require.NoError(t, json.Unmarshal(rest[0], &m))
			require.Equal(t, "user", m.Role)
			require.Empty(t, n.Pending)
			continue
		}
		require.Len(t, n.Pending, len(rest), "seq %d: an item per pending call still to send: %s", s, rest)
		for i, pc := range n.Pending {
			api.pending(t, s, rest[i], pc)
			st, ok := started[pc.CallID]
			require.Equal(t, ok && st <= s, pc.Started, "seq %d: call %s started", s, pc.CallID)
		}
	}
}

// folds reports whether the provider projection folds events of type typ.
func folds(typ string) bool {
	switch typ {
	case provider.TypeRequest, provider.TypeResponse, provider.TypeInput,
		"tool/call", "tool/approval", "tool/result", "turn/start", "turn/end":
		return true
	}
	return false
}

func mustJSON(t testing.TB, v any) []byte {
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

func canonAll(t testing.TB, items []json.RawMessage) []string {
	out := make([]string, len(items))
	for i, it := range items {
		c, err := slopenai.Canonical(it)
		require.NoError(t, err)
		out[i] = string(c)
	}
	return out
}
