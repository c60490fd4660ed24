package eventlog

import "fmt"

// Reserved is the parsed data of a reserved event: Checkpoint for a
// checkpoint, Rollback for a rollback, both zero for any other type.
type Reserved struct {
	Checkpoint CheckpointData
	Rollback   RollbackData
}

// CheckReserved returns nil when e is not of a reserved type or is one a
// writer accepts (docs/format.md §7, but for a checkpoint's digest, which only a
// replay of what precedes it can check); otherwise a *CorruptError for
// the event, whose offset is unknown (-1). Such an event can only come from
// another tool's writer; a salvage cannot cut it (its row is well formed),
// so the fix named is a fork that stops before it.
func CheckReserved(e Event) *CorruptError {
	_, err := ParseReserved(e)
	return err
}

// ParseReserved is CheckReserved that also returns the parsed data, so a
// reader of the log parses a reserved event once.
func ParseReserved(e Event) (Reserved, *CorruptError) {
	var r Reserved
	var reason string
	switch e.Type {
	case TypeCheckpoint:
		cp, err := ParseCheckpoint(e.Data)
		if err != nil {
			reason = fmt.Sprintf("invalid checkpoint: %v", err)
		}
		r.Checkpoint = cp
	case TypeRollback:
		rb, err := ParseRollback(e.Data)
		switch {
		case err != nil:
			reason = fmt.Sprintf("invalid rollback: %v", err)
		case rb.To >= e.Seq:
			reason = fmt.Sprintf("invalid rollback: to seq %d is not before the rollback's own seq", rb.To)
		}
		r.Rollback = rb
	}
	if reason == "" {
		return r, nil
	}
	fix := "a writer would have refused this event; nothing before it can be kept"
	if e.Seq > 0 {
		fix = fmt.Sprintf("a writer would have refused this event; to keep the log before it: logtool fork --at %d", e.Seq-1)
	}
	return Reserved{}, &CorruptError{Offset: -1, Seq: e.Seq, Reason: reason, Fix: fix}
}
