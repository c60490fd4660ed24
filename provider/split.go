package provider

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/sessionlog/sessionlog/secrets/redact"
)

// DeltaRef names one piece of a streamed text: the string at Path in the
// data of the stream's event Event.
type DeltaRef struct {
	Event int
	Path  []string
}

// splitSecrets finds the secrets that a stream sent in pieces: for each
// text the codec says its deltas join into, the secrets of the joined
// text that no one piece holds whole. Each piece that holds part of one
// is escrowed whole, and stands redacted as the joined text is: the
// marker where the secret starts, the rest of the secret gone, so that
// the pieces joined read as the text redacted whole.
func splitSecrets(red *redact.Redactor, groups [][]DeltaRef, stream []SSEEvent) []redact.At {
	var at []redact.At
	for _, g := range groups {
		if len(g) < 2 {
			continue
		}
		var joined []byte
		bounds := make([]int, 0, len(g)+1) // where each piece starts in joined
		for _, ref := range g {
			bounds = append(bounds, len(joined))
			joined = append(joined, rawString(stream, ref)...)
		}
		bounds = append(bounds, len(joined))
		spans := red.Find(joined)
		split := map[int][]string{} // piece → kinds of the split secrets it holds part of
		for _, sp := range spans {
			first, last := piece(bounds, sp.Start), piece(bounds, sp.End-1)
			if first == last {
				continue // one piece holds it whole: its own scan finds it
			}
			for k := first; k <= last; k++ {
				split[k] = append(split[k], sp.Kind)
			}
		}
		for k, ref := range g {
			kinds, ok := split[k]
			if !ok {
				continue
			}
			path := append([]string{"stream", strconv.Itoa(ref.Event), "data"}, ref.Path...)
			at = append(at, redact.At{Path: path, Kinds: kinds, Body: redactedPiece(joined, bounds[k], bounds[k+1], spans)})
		}
	}
	return at
}

// piece returns which piece holds byte i of the joined text.
func piece(bounds []int, i int) int {
	for k := 0; k+1 < len(bounds); k++ {
		if i < bounds[k+1] {
			return k
		}
	}
	return len(bounds) - 2
}

// redactedPiece returns joined[a:b] with the spans applied as the joined
// text is redacted: each span's marker where it starts, its bytes gone.
func redactedPiece(joined []byte, a, b int, spans []redact.Span) []byte {
	out := []byte{}
	i := a
	for _, sp := range spans {
		if sp.End <= i || sp.Start >= b {
			continue
		}
		out = append(out, joined[i:max(i, sp.Start)]...)
		if sp.Start >= a {
			out = append(out, redact.Marker(sp.Kind)...)
		}
		i = min(b, sp.End)
	}
	return append(out, joined[i:b]...)
}

// rawString returns the raw body (between the quotes) of the JSON string
// a ref names, or nothing when it names no string.
func rawString(stream []SSEEvent, ref DeltaRef) []byte {
	if ref.Event < 0 || ref.Event >= len(stream) {
		return nil
	}
	v := []byte(stream[ref.Event].Data)
	for _, step := range ref.Path {
		if len(v) > 0 && v[0] == '[' {
			n, err := strconv.Atoi(step)
			els, jerr := elements(v)
			if err != nil || jerr != nil || n < 0 || n >= len(els) {
				return nil
			}
			v = els[n]
			continue
		}
		m, ok := getMember(v, step)
		if !ok {
			return nil
		}
		v = m
	}
	if len(v) < 2 || v[0] != '"' || !json.Valid(v) {
		return nil
	}
	return v[1 : len(v)-1]
}

// groupDeltas groups stream events' delta strings by a key the codec
// computes per event (empty: not a delta), keeping stream order.
func groupDeltas(stream []SSEEvent, key func(data json.RawMessage) (string, []string)) [][]DeltaRef {
	index := map[string]int{}
	var groups [][]DeltaRef
	for i, e := range stream {
		k, path := key(e.Data)
		if k == "" {
			continue
		}
		g, ok := index[k]
		if !ok {
			g = len(groups)
			index[k] = g
			groups = append(groups, nil)
		}
		groups[g] = append(groups[g], DeltaRef{Event: i, Path: path})
	}
	return groups
}

// Deltas groups an Anthropic stream's text, thinking and tool-input
// deltas by content block.
func (AnthropicMessages) Deltas(r *Response) [][]DeltaRef {
	return groupDeltas(r.Stream, func(d json.RawMessage) (string, []string) {
		if str(d, "type") != "content_block_delta" {
			return "", nil
		}
		delta, _ := getMember(d, "delta")
		key := map[string]string{"text_delta": "text", "thinking_delta": "thinking", "input_json_delta": "partial_json"}[str(delta, "type")]
		if key == "" {
			return "", nil
		}
		idx, _ := getMember(d, "index")
		return fmt.Sprintf("%s/%s", idx, key), []string{"delta", key}
	})
}

// Deltas groups a Responses stream's *.delta events by their item, part
// and event type.
func (OpenAIResponses) Deltas(r *Response) [][]DeltaRef {
	return groupDeltas(r.Stream, func(d json.RawMessage) (string, []string) {
		typ := str(d, "type")
		if len(typ) < 6 || typ[len(typ)-6:] != ".delta" {
			return "", nil
		}
		if v, ok := getMember(d, "delta"); !ok || len(v) == 0 || v[0] != '"' {
			return "", nil
		}
		var parts []string
		for _, k := range []string{"item_id", "output_index", "content_index", "summary_index"} {
			v, _ := getMember(d, k)
			parts = append(parts, string(v))
		}
		return fmt.Sprint(typ, parts), []string{"delta"}
	})
}

// Deltas groups a Chat Completions stream's content and tool-argument
// deltas by choice and tool call.
func (OpenAIChat) Deltas(r *Response) [][]DeltaRef {
	var refs []struct {
		key string
		ref DeltaRef
	}
	for i, e := range r.Stream {
		ch, _ := getMember(e.Data, "choices")
		choices, _ := elements(ch)
		for c, choice := range choices {
			delta, _ := getMember(choice, "delta")
			for _, k := range []string{"content", "reasoning_content"} {
				if v, ok := getMember(delta, k); ok && len(v) > 0 && v[0] == '"' {
					refs = append(refs, struct {
						key string
						ref DeltaRef
					}{fmt.Sprint(c, k), DeltaRef{i, []string{"choices", strconv.Itoa(c), "delta", k}}})
				}
			}
			tc, _ := getMember(delta, "tool_calls")
			tcs, _ := elements(tc)
			for j, t := range tcs {
				idx, _ := getMember(t, "index")
				refs = append(refs, struct {
					key string
					ref DeltaRef
				}{fmt.Sprint(c, "tool", string(idx)), DeltaRef{i, []string{"choices", strconv.Itoa(c), "delta", "tool_calls", strconv.Itoa(j), "function", "arguments"}}})
			}
		}
	}
	index := map[string]int{}
	var groups [][]DeltaRef
	for _, r := range refs {
		g, ok := index[r.key]
		if !ok {
			g = len(groups)
			index[r.key] = g
			groups = append(groups, nil)
		}
		groups[g] = append(groups[g], r.ref)
	}
	return groups
}
