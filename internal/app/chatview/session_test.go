package chatview

import (
	"errors"
	"iter"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
)

// TestSessionOptions: the view of a session as show and serve build it —
// a fork's parent marks its fork point (a child's does not), the forks
// and children are named with their labels in key order, a header without
// a parent is left out, and the rollbacks decide the branches.
func TestSessionOptions(t *testing.T) {
	fork := &eventlog.Parent{ID: "P", Seq: 2, Mode: eventlog.ModeFork}
	child := &eventlog.Parent{ID: "P", Seq: 2, Mode: eventlog.ModeChild, Call: "c1"}
	kids := []eventlog.Header{
		{ID: "F", Parent: &eventlog.Parent{ID: "S", Seq: 4, Mode: eventlog.ModeFork}, Labels: map[string]string{"title": "t", "agent": "a"}},
		{ID: "C", Parent: &eventlog.Parent{ID: "S", Seq: 5, Mode: eventlog.ModeChild, Call: "k"}},
		{ID: "X"}, // no parent: not related
	}
	tests := []struct {
		name     string
		in       Session
		fork     *eventlog.Parent
		related  []Related
		firstTrn int
	}{
		{name: "a root", in: Session{Header: eventlog.Header{ID: "S"}, Last: 6}, related: []Related{}},
		{name: "a fork", in: Session{Header: eventlog.Header{ID: "S", Parent: fork}, Last: 6, FirstTurn: 1}, fork: fork, related: []Related{}, firstTrn: 1},
		{name: "a child", in: Session{Header: eventlog.Header{ID: "S", Parent: child}, Last: 6}, related: []Related{}},
		{name: "with forks and children", in: Session{Header: eventlog.Header{ID: "S"}, Children: kids, Last: 6}, related: []Related{
			{ID: "F", Mode: eventlog.ModeFork, Seq: 4, Label: "agent=a title=t"},
			{ID: "C", Mode: eventlog.ModeChild, Seq: 5, Call: "k"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := SessionOptions(tt.in)
			require.Equal(t, tt.fork, o.Fork)
			require.Equal(t, tt.related, o.Related)
			require.Equal(t, tt.firstTrn, o.FirstTurn)
		})
	}

	// The branches: the rollback at 5 abandons 3 and 4.
	o := SessionOptions(Session{Last: 6, Rollbacks: []Rollback{{Seq: 5, To: 2}}})
	for seq, want := range map[int64]bool{2: false, 3: true, 4: true, 5: false, 6: false} {
		_, abandoned := o.Branches.AbandonedBy(seq)
		require.Equal(t, want, abandoned, "seq %d", seq)
	}
}

// TestRollbacks: RollbackOf reads rollback events only, and only
// well-formed ones; Rollbacks collects them and stops at an error.
func TestRollbacks(t *testing.T) {
	evs := events(t, `user/message {"text":"a"}`, `rollback {"to":0}`, `rollback {"to":"x"}`, `user/message {"text":"b"}`, `rollback {"to":3}`)
	seq := func(fail error) iter.Seq2[eventlog.Event, error] {
		return func(yield func(eventlog.Event, error) bool) {
			for _, e := range evs {
				if !yield(e, nil) {
					return
				}
			}
			if fail != nil {
				yield(eventlog.Event{}, fail)
			}
		}
	}
	got, err := Rollbacks(seq(nil))
	require.NoError(t, err)
	require.Equal(t, []Rollback{{Seq: 1, To: 0}, {Seq: 4, To: 3}}, got)
	_, ok := RollbackOf(evs[0])
	require.False(t, ok, "not a rollback")
	_, ok = RollbackOf(evs[2])
	require.False(t, ok, "a rollback that does not parse")

	boom := errors.New("boom")
	_, err = Rollbacks(seq(boom))
	require.ErrorIs(t, err, boom)
}

func TestLabelWords(t *testing.T) {
	require.Equal(t, "", LabelWords(nil))
	require.Equal(t, "a=1 b=x y", LabelWords(map[string]string{"b": "x y", "a": "1"}))
}
