package verify_test

import (
	"context"
	"fmt"

	"github.com/spf13/afero"

	"github.com/sessionlog/sessionlog/checkpoint"
	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/ops/verify"
)

// A session checked, then every session of its store: each a Report, a
// failure with its kind.
func ExampleSession() {
	ctx := context.Background()
	fsys := afero.NewMemMapFs()
	store := file.New(fsys, "/sessions")
	h, _ := store.Create(ctx)
	h.Append(ctx, eventlog.Event{Type: "user/message", Data: []byte(`{"text":"hi"}`)})
	checkpoint.Create(ctx, h)
	h.Close()
	id := h.ID()

	rep := verify.Session(ctx, store, id)
	fmt.Println(rep.OK, rep.Events, rep.Checkpoints)

	afero.WriteFile(fsys, "/sessions/01JDX3N0Q3Z8Y6W2D1V5K7M9PA.jsonl", []byte("not a log\n"), 0o600)
	for rep, err := range verify.Store(ctx, store) {
		if err != nil {
			fmt.Println(err)
			return
		}
		if !rep.OK {
			fmt.Println(*rep.ID, rep.Error.Kind)
		}
	}
	// Output:
	// true 2 1
	// 01JDX3N0Q3Z8Y6W2D1V5K7M9PA corrupt
}
