package importer_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/importer"
)

// A record the builder drops leaves the state as that record found it; a
// record kept leaves what it did, and a drop after it goes back only to
// it. Settle runs as a converter runs it: as each record begins, and once
// after the last.
func TestUndoPutsBackWhatADroppedRecordChanged(t *testing.T) {
	b := importer.NewBuilder(importer.Config{}, func(eventlog.Event) error { return nil })
	u := importer.NewUndo[int](b)
	state := 0
	settle := func(inRecord bool) {
		u.Settle(inRecord, func(int) int { return state }, func(s int) { state = s })
	}
	want := 0 // the state the next record finds
	for _, step := range []struct {
		set  int
		drop bool
	}{{1, false}, {2, true}, {3, true}, {4, false}, {5, true}} {
		b.Record(1, []byte(`{}`))
		settle(true)
		require.Equal(t, want, state, "the record setting %d finds", step.set)
		state = step.set
		if step.drop {
			b.Drop()
		} else {
			want = step.set
		}
	}
	settle(false)
	require.Equal(t, 4, state, "the last record kept set 4; the one after it was dropped")
}
