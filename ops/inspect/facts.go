package inspect

import (
	"context"

	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/recorder"
)

// Facts describes the session as Stat does and reads its stop facts from
// the end of its log (recorder.ReadFacts: the last turn of the live
// branch), through a Tail: on the file store neither the rest of the log
// is read nor checked (verify checks it), so stat of a gigabyte log costs
// what its last turn costs. The facts record ReadFacts leaves goes to the
// session's store (none for a freely named file).
func Facts(ctx context.Context, l Log) (handle.Info, recorder.Facts, error) {
	t, err := l.OpenTail(ctx)
	if err != nil {
		return handle.Info{}, recorder.Facts{}, err
	}
	defer t.Close()
	facts, err := recorder.ReadFacts(ctx, t, l.cache())
	return t.Info(), facts, err
}
