package eventlog

import "fmt"

// CheckReserved returns nil when e is not of a reserved type or is one a
// writer accepts (SPEC §7, but for a checkpoint's digest, which only a
// replay of what precedes it can check); otherwise a *CorruptError for
// the event, whose offset is unknown (-1). Such an event can only come from
// another tool's writer; a salvage cannot cut it (its row is well formed),
// so the fix named is a fork that stops before it.
func CheckReserved(e Event) *CorruptError {
	var reason string
	switch e.Type {
	case TypeCheckpoint:
		if _, err := ParseCheckpoint(e.Data); err != nil {
			reason = fmt.Sprintf("invalid checkpoint: %v", err)
		}
	case TypeRollback:
		rb, err := ParseRollback(e.Data)
		switch {
		case err != nil:
			reason = fmt.Sprintf("invalid rollback: %v", err)
		case rb.To >= e.Seq:
			reason = fmt.Sprintf("invalid rollback: to seq %d is not before the rollback's own seq", rb.To)
		}
	}
	if reason == "" {
		return nil
	}
	fix := "a writer would have refused this event; nothing before it can be kept"
	if e.Seq > 0 {
		fix = fmt.Sprintf("a writer would have refused this event; to keep the log before it: logtool fork --at %d", e.Seq-1)
	}
	return &CorruptError{Offset: -1, Seq: e.Seq, Reason: reason, Fix: fix}
}
