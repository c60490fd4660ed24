package provider_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/provider"
)

// genConversation makes a random tool-loop conversation of Anthropic
// messages, with secrets in user text, tool results and thinking, some
// items that are no object, and occasional edits of earlier items (so a
// request's base keeps fewer items than the previous request had).
func genConversation(r *rand.Rand) []string {
	secret := func() string {
		if r.IntN(3) == 0 {
			return " AKIA" + strings.Repeat(string(rune('A'+r.IntN(26))), 16)
		}
		return ""
	}
	var bodies []string
	var msgs []string
	for step := 0; step < 2+r.IntN(6); step++ {
		switch r.IntN(4) {
		case 0:
			msgs = append(msgs, fmt.Sprintf(`{"role":"user","content":%q}`, "ask"+secret()))
		case 1:
			msgs = append(msgs, fmt.Sprintf(`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t%d","content":%q}]}`, step, "out"+secret()))
		case 2:
			msgs = append(msgs, fmt.Sprintf(`{"role":"assistant","content":[{"type":"thinking","thinking":%q,"signature":"s%d"},{"type":"tool_use","id":"t%d","name":"x","input":{"a":%q},"caller":{"type":"direct"}}]}`, "think"+secret(), step, step, secret()))
		case 3:
			if len(msgs) > 0 {
				msgs[r.IntN(len(msgs))] = fmt.Sprintf(`{"role":"user","content":%q}`, "edited"+secret())
			}
		}
		sys := `"system":"sys` + secret() + `",`
		bodies = append(bodies, `{"model":"m",`+sys+`"messages":[`+strings.Join(msgs, ",")+`],"max_tokens":5}`)
	}
	return bodies
}

// For every generated conversation and every request of it, the request
// read back at its seq is byte for byte the one sent, and no secret is in
// clear in the store.
func TestRebuiltRequestEqualsSent(t *testing.T) {
	ctx := context.Background()
	for seed := range uint64(40) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 1))
			h, ps, store := newSession(t)
			var seqs []int64
			bodies := genConversation(r)
			for _, b := range bodies {
				seq, err := ps.Request(ctx, provider.Request{Provider: "anthropic", API: "messages", Path: "/v1/messages", Body: []byte(b)})
				require.NoError(t, err)
				_, err = ps.Response(ctx, provider.Response{Request: seq, Status: 200, Body: []byte(reply("ok", "end_turn"))})
				require.NoError(t, err)
				seqs = append(seqs, seq)
			}
			for i, seq := range seqs {
				c, err := provider.At(ctx, h, seq, ps.Keys())
				require.NoError(t, err)
				require.Equal(t, bodies[i], string(c.Request.Body), "request %d at seq %d", i, seq)
				require.True(t, json.Valid(c.Request.Body))
			}
			require.NoError(t, h.Flush(ctx))
			// The generated keys repeat one letter 16 times: none is in
			// any file (sealed text has no run that long).
			for c := 'A'; c <= 'Z'; c++ {
				requireNotInStore(t, store.Dir(), "AKIA"+strings.Repeat(string(c), 16))
			}
		})
	}
}
