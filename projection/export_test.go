package projection

import (
	"fmt"
	"reflect"
)

// CheckIndexes reports whether the indexes t keeps up to date event by
// event equal the ones reindex derives from its messages, and whether its
// hash chain equals one computed afresh.
func CheckIndexes(t *Transcript) error {
	t.sync()
	u := &Transcript{s: t.s}
	u.s.Messages = append([]Message(nil), t.s.Messages...)
	u.reindex()
	switch {
	case !reflect.DeepEqual(t.callAt, u.callAt):
		return fmt.Errorf("callAt %v, derived %v", t.callAt, u.callAt)
	case !reflect.DeepEqual(t.resultAt, u.resultAt):
		return fmt.Errorf("resultAt %v, derived %v", t.resultAt, u.resultAt)
	case !reflect.DeepEqual(t.results, u.results):
		return fmt.Errorf("results %v, derived %v", t.results, u.results)
	case t.last != u.last:
		return fmt.Errorf("last %d, derived %d", t.last, u.last)
	case t.streaming != u.streaming:
		return fmt.Errorf("streaming %d, derived %d", t.streaming, u.streaming)
	case t.streaming >= 0 && string(t.streamText) != t.s.Messages[t.streaming].Text:
		return fmt.Errorf("streamText %q, message %q", t.streamText, t.s.Messages[t.streaming].Text)
	}
	t.hash()
	u.hash()
	if !reflect.DeepEqual(t.chain, u.chain) {
		return fmt.Errorf("hash chain differs from a fresh one")
	}
	return nil
}
