package anthropic_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/stretchr/testify/require"
)

// paramSamples holds the content blocks only a request holds (a user's
// blocks), every field set, in the form the SDK sends them: the kinds of
// ContentBlockParamUnion that are no response block's param.
var paramSamples = map[string][]string{
	"text": {`{"type":"text","text":"see these","cache_control":{"type":"ephemeral","ttl":"5m"},"citations":[{"type":"char_location","cited_text":"a","document_index":0,"document_title":"d","end_char_index":1,"start_char_index":0}]}`},
	"image": {
		`{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="},"cache_control":{"type":"ephemeral"}}`,
		`{"type":"image","source":{"type":"url","url":"https://example.com/a.png"}}`,
	},
	"document": {
		`{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"JVBERi0="},"title":"t","context":"c","citations":{"enabled":true},"cache_control":{"type":"ephemeral","ttl":"1h"}}`,
		`{"type":"document","source":{"type":"text","media_type":"text/plain","data":"plain AKIAIOSFODNN7EXAMPLE"}}`,
		`{"type":"document","source":{"type":"content","content":[{"type":"text","text":"x"}]}}`,
		`{"type":"document","source":{"type":"url","url":"https://example.com/a.pdf"}}`,
	},
	"search_result": {`{"type":"search_result","source":"s","title":"t","content":[{"type":"text","text":"r"}],"citations":{"enabled":true},"cache_control":{"type":"ephemeral"}}`},
	"tool_result": {
		`{"type":"tool_result","tool_use_id":"toolu_p","content":[{"type":"text","text":"out"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}],"is_error":false,"cache_control":{"type":"ephemeral"}}`,
	},
}

// TestParamSamplesCoverEverySDKParamKind takes the kinds of request
// content blocks from the SDK's ContentBlockParamUnion (its Of<Variant>
// fields) and checks that each is generated, either as a response
// block's param (samples) or as a user's block (paramSamples), and that
// every user sample goes through the SDK's param types unchanged: what a
// rebuild unmarshals is what was sent.
func TestParamSamplesCoverEverySDKParamKind(t *testing.T) {
	ty := reflect.TypeOf(sdk.ContentBlockParamUnion{})
	for i := range ty.NumField() {
		f := ty.Field(i)
		if !strings.HasPrefix(f.Name, "Of") {
			continue
		}
		kind := snake(strings.TrimPrefix(f.Name, "Of"))
		require.True(t, len(samples[kind]) > 0 || len(paramSamples[kind]) > 0, "no generated block of kind %s", kind)
		for _, raw := range paramSamples[kind] {
			var b sdk.ContentBlockParamUnion
			require.NoError(t, json.Unmarshal([]byte(raw), &b), raw)
			require.False(t, reflect.ValueOf(b).Field(i).IsNil(), "%s decodes to another variant", raw)
			out, err := json.Marshal(b)
			require.NoError(t, err)
			require.JSONEq(t, raw, string(out), "the SDK's param keeps every field")
		}
	}
}
