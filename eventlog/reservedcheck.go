package eventlog

import "fmt"

// Reserved is the parsed data of a reserved event: Checkpoint for a
// checkpoint, Rollback for a rollback, both zero for any other type.
type Reserved struct {
	Checkpoint CheckpointData
	Rollback   RollbackData
}

// ParseReserved parses the data of e when it is of a reserved type. It
// returns a *CorruptError when e is one a writer refuses (docs/format.md
// §7, but for a checkpoint's digest, which only a replay of what precedes
// it can check), whose offset is unknown (-1). Such an event can only come
// from another tool's writer; a salvage cannot cut it (its row is well
// formed), so the fix named is a fork that stops before it.
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
