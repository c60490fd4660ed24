package file_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/spf13/afero"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
)

// A session written through a write handle and read back, by the writer
// and by a second, read-only handle. The README's library quick start is
// this example.
func ExampleNew() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "sessions")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	store := file.New(afero.NewOsFs(), dir)
	h, err := store.Create(ctx, handle.WithLabels(map[string]string{"agent": "coder"}))
	if err != nil {
		log.Fatal(err)
	}
	defer h.Close()

	// Append assigns seqs; the whole batch is validated first (nothing is
	// written if any event is refused).
	last, err := h.Append(ctx,
		eventlog.Event{Type: "user/message", Time: time.Now().UnixMilli(), Data: json.RawMessage(`{"text":"hi"}`)},
		eventlog.Event{Type: "step/start", Time: time.Now().UnixMilli()},
	)
	if err != nil {
		log.Fatal(err)
	}
	// Flush is the durability barrier. Concurrent Append+Flush callers
	// share one write and one fsync (group commit).
	if err := h.Flush(ctx); err != nil {
		log.Fatal(err)
	}

	// Read yields events as an iter.Seq2; a writer sees its own unflushed
	// appends.
	for e, err := range h.Read(ctx, 0, handle.End) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(e.Seq, e.Type)
	}

	// Another process (or goroutine) can read while the writer appends:
	r, err := store.Open(ctx, h.ID(), handle.ReadOnly)
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()
	fmt.Println("appended up to", last, "- the reader sees up to", r.Seq())
	// Output:
	// 0 user/message
	// 1 step/start
	// appended up to 1 - the reader sees up to 1
}
