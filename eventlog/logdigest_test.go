package eventlog_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
)

// digestOf is the log digest of events, recomputed by definition
// (docs/format.md §6), for the checker to be held against.
func digestOf(t *testing.T, events []eventlog.Event) string {
	t.Helper()
	d := eventlog.NewDigest()
	for _, e := range events {
		d.Add(e)
	}
	return d.String()
}

func checkpointEv(seq int64, data string) eventlog.Event {
	return ev(seq, eventlog.TypeCheckpoint, 1, data)
}

// AddChecked reports each bad checkpoint of a log, by its kind, and goes
// on hashing every event so that one pass finds them all.
func TestDigestAddChecked(t *testing.T) {
	base := rowsEvents(0, 3)
	good := digestOf(t, base)
	zero := "sha256:" + fmt.Sprintf("%064d", 0)
	tests := []struct {
		name string
		cp   string
		want func(t *testing.T, err error)
	}{
		{"matching digest", `{"log":"` + good + `"}`, func(t *testing.T, err error) { require.NoError(t, err) }},
		{"another log's digest", `{"log":"` + zero + `"}`, func(t *testing.T, err error) {
			var le *eventlog.LogDigestError
			require.ErrorAs(t, err, &le)
			require.Equal(t, &eventlog.LogDigestError{Seq: 3, Want: zero, Got: good}, le)
			require.Contains(t, err.Error(), "checkpoint at seq 3: its log digest "+zero+" does not match the events before it ("+good+")")
		}},
		{"data no writer accepts", `{"log":"md5:x"}`, func(t *testing.T, err error) {
			var ce *eventlog.CorruptError
			require.ErrorAs(t, err, &ce)
			require.Equal(t, int64(3), ce.Seq)
			var le *eventlog.LogDigestError
			require.False(t, errors.As(err, &le))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log := append(append([]eventlog.Event{}, base...), checkpointEv(3, tt.cp), rowsEvents(4, 1)[0])
			d := eventlog.NewDigest()
			var errs []error
			for _, e := range log {
				if err := d.AddChecked(e); err != nil {
					errs = append(errs, err)
				}
			}
			require.LessOrEqual(t, len(errs), 1)
			var err error
			if len(errs) == 1 {
				err = errs[0]
			}
			tt.want(t, err)
			require.Equal(t, digestOf(t, log), d.String(), "every event hashed, the bad checkpoint too")
			require.Equal(t, int64(5), d.Next())
		})
	}
}

// CheckCheckpoint checks only against the digest of exactly the events
// before the checkpoint: a digest at another seq is an error, never a
// verdict on the checkpoint.
func TestDigestCheckCheckpointPosition(t *testing.T) {
	d := eventlog.NewDigest()
	for _, e := range rowsEvents(0, 3) {
		d.Add(e)
	}
	cp := eventlog.CheckpointData{Log: d.String()}
	require.NoError(t, d.CheckCheckpoint(3, cp))
	for _, seq := range []int64{2, 4} {
		err := d.CheckCheckpoint(seq, cp)
		require.Error(t, err)
		var le *eventlog.LogDigestError
		require.False(t, errors.As(err, &le))
		require.Contains(t, err.Error(), "checked against the digest of events 0 to 2")
	}
}
