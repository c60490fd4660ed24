package redact_test

import (
	"encoding/json"
	"fmt"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/secrets/redact"
)

// A write path redacts a batch before it validates and digests it: what is
// stored is the redacted form, and the data says which fields changed.
func ExampleRedactor_Events() {
	// Built at run time, so that no file of the repository holds a
	// credential's shape.
	url := "postgres://app:" + "hunter2" + "@db.internal:5432/prod"
	batch := []eventlog.Event{
		{Type: "tool/result", Data: json.RawMessage(`{"id":"c1","output":"` + url + `"}`)},
		{Type: "user/message", Data: json.RawMessage(`{"text":"hi"}`)},
	}
	r := redact.New()
	n := r.Events(batch) // before validation and digests
	fmt.Println(n, "of", len(batch), "events changed")
	fmt.Println(string(batch[0].Data))
	fields, _ := redact.Fields(batch[0].Data)
	fmt.Println(fields[0].Pointer(), fields[0].Kinds)
	// Output:
	// 1 of 2 events changed
	// {"id":"c1","output":"postgres://app:[REDACTED:url-password]@db.internal:5432/prod","$redacted":[{"path":["output"],"kinds":["url-password"]}]}
	// /output [url-password]
}
