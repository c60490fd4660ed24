package verify_test

import (
	"encoding/json"
	"errors"
	"github.com/sessionlog/sessionlog/secrets/redact"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/ops/verify"
)

// TestReportJSON pins the JSON of a Report, key for key and in order:
// what verify --json prints a session (docs/cli.md) and serve's
// /api/verify answers.
func TestReportJSON(t *testing.T) {
	id := "01JDX3N0Q3Z8Y6W2D1V5K7M9PA"
	seq, off := int64(7), int64(4242)
	tests := []struct {
		name string
		rep  verify.Report
		want string
	}{
		{"clean, with a torn tail", verify.Report{Path: "/s/" + id + ".jsonl", ID: &id, OK: true, Events: 12, FileEvents: 5,
			Torn: &verify.Torn{Offset: 900, Bytes: 31}, Checkpoints: 2, Unchecked: 1, Protection: &redact.Protection{Sealed: true, Redacted: 3, Escrowed: 2}},
			`{"path":"/s/` + id + `.jsonl","id":"` + id + `","ok":true,"events":12,"fileEvents":5,"torn":{"offset":900,"bytes":31},` +
				`"checkpoints":2,"unchecked":1,"error":null,"protection":{"sealed":true,"redacted":3,"escrowed":2}}`},
		{"failed, no ID known", verify.Report{Path: "/x/export.jsonl", Events: 7, FileEvents: 7,
			Error: &verify.Failure{Kind: verify.KindCorrupt, Seq: &seq, Offset: &off, Message: "bad row", Err: errors.New("not shown")}},
			`{"path":"/x/export.jsonl","id":null,"ok":false,"events":7,"fileEvents":7,"torn":null,"checkpoints":0,"unchecked":0,` +
				`"error":{"kind":"corrupt","seq":7,"offset":4242,"message":"bad row"},"protection":null}`},
		{"failed where neither seq nor offset is known", verify.Report{Path: "p", Error: &verify.Failure{Kind: verify.KindKey, Message: "no key"}},
			`{"path":"p","id":null,"ok":false,"events":0,"fileEvents":0,"torn":null,"checkpoints":0,"unchecked":0,` +
				`"error":{"kind":"key","seq":null,"offset":null,"message":"no key"},"protection":null}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.rep)
			require.NoError(t, err)
			require.Equal(t, tt.want, string(b))
		})
	}
}
