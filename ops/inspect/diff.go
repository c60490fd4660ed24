package inspect

import (
	"bytes"
	"context"
	"iter"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/replay"
)

// Difference is where two logical logs first differ (logtool diff).
type Difference struct {
	// Seq is the first seq whose events differ as canonical bytes
	// (docs/format.md §6), or -1 when the logs are identical.
	Seq int64
	// A and B are the events each log holds at Seq; nil when that log
	// ends before it (and when the logs are identical).
	A, B *eventlog.Event
	// LenA and LenB are how many events each log held when the
	// comparison began.
	LenA, LenB int64
}

// Diff reads the logical logs of a and b (a fork's inherited events
// included) in step, up to the last seq each held when Diff began, and
// returns their first difference. Headers are not compared.
func Diff(ctx context.Context, a, b replay.Source) (Difference, error) {
	lastA, lastB := a.Seq(), b.Seq()
	d := Difference{Seq: -1, LenA: lastA + 1, LenB: lastB + 1}
	nextA, stopA := iter.Pull2(a.Read(ctx, 0, lastA))
	defer stopA()
	nextB, stopB := iter.Pull2(b.Read(ctx, 0, lastB))
	defer stopB()
	var ca, cb []byte
	for seq := int64(0); ; seq++ {
		ea, errA, okA := nextA()
		if okA && errA != nil {
			return d, errA
		}
		eb, errB, okB := nextB()
		if okB && errB != nil {
			return d, errB
		}
		switch {
		case !okA && !okB:
			return d, nil
		case !okA:
			d.Seq, d.B = seq, &eb
			return d, nil
		case !okB:
			d.Seq, d.A = seq, &ea
			return d, nil
		}
		ca, cb = eventlog.AppendCanon(ca[:0], ea), eventlog.AppendCanon(cb[:0], eb)
		if !bytes.Equal(ca, cb) {
			d.Seq, d.A, d.B = seq, &ea, &eb
			return d, nil
		}
	}
}
