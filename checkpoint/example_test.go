package checkpoint_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"

	"github.com/spf13/afero"

	"github.com/sessionlog/sessionlog/checkpoint"
	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/projection"
)

// A checkpoint before a risky change, and a rollback to it: the events in
// between stay in the log as an abandoned branch, and verify checks the
// checkpoint's digest.
func ExampleRollbackTo() {
	ctx := context.Background()
	store := file.New(afero.NewMemMapFs(), "sessions")
	h, err := store.Create(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer h.Close()
	memory := func(v string) eventlog.Event {
		return eventlog.Event{Type: "memory/set", Data: json.RawMessage(`{"key":"plan","value":"` + v + `"}`)}
	}
	if _, err := h.Append(ctx, memory("small steps")); err != nil {
		log.Fatal(err)
	}

	info, err := checkpoint.Create(ctx, h, checkpoint.WithLabel("before-refactor"))
	if err != nil {
		log.Fatal(err)
	}
	if _, err := h.Append(ctx, memory("rewrite it all")); err != nil {
		log.Fatal(err)
	}
	seq, err := checkpoint.RollbackTo(ctx, h, "before-refactor")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("checkpoint at seq %d, rollback at seq %d\n", info.Seq, seq)

	res, err := checkpoint.Verify(ctx, h, projection.NewAgent())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("checkpoints:", res.Checkpoints, "rollbacks:", res.Rollbacks)
	// Output:
	// checkpoint at seq 1, rollback at seq 3
	// checkpoints: 1 rollbacks: 1
}
