package eventlog

import (
	"fmt"
)

// LogDigestError reports a checkpoint whose log digest is not the digest
// of the events before it (docs/format.md §6).
type LogDigestError struct {
	Seq  int64  // the checkpoint's seq
	Want string // the log digest the checkpoint carries
	Got  string // the digest of the events before it
}

// Error implements error.
func (e *LogDigestError) Error() string {
	return fmt.Sprintf("eventlog: checkpoint at seq %d: its log digest %s does not match the events before it (%s)", e.Seq, e.Want, e.Got)
}

// CheckCheckpoint checks the log digest of cp, the data of a checkpoint at
// seq, against d, which must cover exactly the events before it
// (d.Next() == seq): a *LogDigestError when they differ. It is the one
// check of a checkpoint's log digest — a writer's on append, a replay's
// and a reader's that checks what it passes — so that all of them agree.
func (d *Digest) CheckCheckpoint(seq int64, cp CheckpointData) error {
	if d.next != seq {
		return fmt.Errorf("eventlog: checkpoint at seq %d checked against the digest of events 0 to %d", seq, d.next-1)
	}
	if got := d.String(); got != cp.Log {
		return &LogDigestError{Seq: seq, Want: cp.Log, Got: got}
	}
	return nil
}

// AddChecked adds e, the next event of the log, after checking it when it
// is a checkpoint: its data must parse (a *CorruptError otherwise, as a
// reader reports a reserved event no writer accepts) and its log digest
// must match (a *LogDigestError otherwise). e is added either way, so that
// a reader can report every bad checkpoint of a log in one pass.
func (d *Digest) AddChecked(e Event) error {
	var err error
	if e.Type == TypeCheckpoint {
		r, cerr := ParseReserved(e)
		if cerr != nil {
			err = cerr
		} else {
			err = d.CheckCheckpoint(e.Seq, r.Checkpoint)
		}
	}
	d.Add(e)
	return err
}
