package follow_test

import (
	"context"
	"fmt"

	"github.com/spf13/afero"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/ops/follow"
)

// A page that follows a session (serve's live view, say) looks once per
// tick and sends what each look yields, then flushes.
func ExampleFollower() {
	ctx := context.Background()
	st := file.New(afero.NewMemMapFs(), "/sessions")
	w, _ := st.Create(ctx)
	w.Append(ctx, eventlog.Event{Type: "user/message", Data: []byte(`{"text":"hi"}`)})
	w.Flush(ctx)

	f, err := follow.Open(ctx, follow.Session(st, w.ID()), follow.From(0),
		follow.WithNotes(func(n follow.Note) { fmt.Println("note:", n) }))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer f.Close()
	look := func() {
		for e, err := range f.Poll(ctx) {
			if err != nil {
				fmt.Println(err)
				return
			}
			fmt.Println(e.Seq, e.Type)
		}
		fmt.Println("-- flush")
	}
	look() // the first look: the log from seq 0
	w.Append(ctx, eventlog.Event{Type: "assistant/message", Data: []byte(`{"text":"hello"}`)})
	w.Flush(ctx)
	look() // what was appended since
	w.Close()
	// Output:
	// 0 user/message
	// -- flush
	// 1 assistant/message
	// -- flush
}
