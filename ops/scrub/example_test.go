package scrub_test

import (
	"context"
	"fmt"
	"regexp"

	"github.com/spf13/afero"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/ops/scrub"
)

// A session written without redaction holds an order number and a token;
// redacting it leaves neither, records what it changed, and the copy of
// the log before checks against the log after.
func ExampleSession() {
	ctx := context.Background()
	fsys := afero.NewMemMapFs()
	store := file.New(fsys, "/sessions", handle.Unredacted())
	h, _ := store.Create(ctx)
	h.Append(ctx, eventlog.Event{Type: "user/message", Data: []byte(`{"text":"order ACME-123456, token ghp_` + "aB3daB3daB3daB3daB3daB3daB3daB3daB3d" + `"}`)})
	h.Close()
	id := h.ID()
	path, _ := store.Path(id)
	before, _ := afero.ReadFile(fsys, path)
	old := afero.NewMemMapFs()
	afero.WriteFile(old, path, before, 0o600)
	oldLog, _ := file.New(old, "/sessions").Open(ctx, id, handle.ReadOnly)
	re := regexp.MustCompile(`ACME-[0-9]{6}`)

	res, err := scrub.Session(ctx, store, id, scrub.WithPattern("acme", re))
	fmt.Println(err, res[0].Record.Redacted)
	newLog, _ := store.Open(ctx, id, handle.ReadOnly)
	err = scrub.Check(ctx, oldLog, newLog) // nil: only redactions
	fmt.Println(err)
	for e := range newLog.Read(ctx, 0, 0) {
		fmt.Println(string(e.Data))
	}
	// Output:
	// <nil> [{0 [acme github-token]}]
	// <nil>
	// {"text":"order [REDACTED:acme], token [REDACTED:github-token]","$redacted":[{"path":["text"],"kinds":["acme","github-token"]}]}
}
