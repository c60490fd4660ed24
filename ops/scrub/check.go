package scrub

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/replay"
	"github.com/sessionlog/sessionlog/secrets/redact"
)

// ErrMismatch is wrapped by *MismatchError.
var ErrMismatch = errors.New("scrub: the log is not the redaction of the log before")

// MismatchError says where a log is not what redacting the log before
// makes: at seq Seq (-1: the record), and why.
type MismatchError struct {
	Seq    int64
	Reason string
}

func (e *MismatchError) Error() string {
	if e.Seq < 0 {
		return "scrub: the redaction record: " + e.Reason
	}
	return fmt.Sprintf("scrub: seq %d: %s", e.Seq, e.Reason)
}

// Unwrap returns ErrMismatch.
func (e *MismatchError) Unwrap() error { return ErrMismatch }

// Check checks that after, a session's logical log as a redaction left
// it, holds exactly what before (the logical log as it was) held but for
// what the redaction record says: after's event at before's next seq is
// the redact/rewrite record, whose digest and length are before's; each
// event before it is before's of that seq with its data redacted by the
// record's detectors and patterns (a checkpoint: its label redacted, its
// log digest the new log's, its state naming the same projection or
// none); and the events it lists are exactly those of the session's own
// rows whose data changed, with the kinds replaced. Events after the record (appended since) are
// not looked at. It returns a *MismatchError, or an error of a read.
// (Whether after's state digests are right is verify's to check.)
func Check(ctx context.Context, before, after replay.Source) error {
	n := before.Seq() + 1
	var rec Record
	found := false
	for e, err := range after.Read(ctx, n, n) {
		if err != nil {
			return err
		}
		if e.Type != TypeRewrite {
			return &MismatchError{Seq: n, Reason: fmt.Sprintf("a %s event where the redaction record was expected", e.Type)}
		}
		d := json.NewDecoder(bytes.NewReader(e.Data))
		d.DisallowUnknownFields()
		if err := d.Decode(&rec); err != nil {
			return &MismatchError{Seq: -1, Reason: err.Error()}
		}
		found = true
	}
	if !found {
		return &MismatchError{Seq: n, Reason: "no redaction record: the log ends before"}
	}
	if rec.Detectors != redact.DetectorsVersion {
		return &MismatchError{Seq: -1, Reason: fmt.Sprintf("made with detectors %q; this build has %q", rec.Detectors, redact.DetectorsVersion)}
	}
	if rec.Events != n {
		return &MismatchError{Seq: -1, Reason: fmt.Sprintf("it says the log before had %d events; it has %d", rec.Events, n)}
	}
	red, err := redactorOf(rec.Patterns)
	if err != nil {
		return &MismatchError{Seq: -1, Reason: err.Error()}
	}
	old := eventlog.NewDigest()
	nd := eventlog.NewDigest()
	var changed []Redacted
	nextNew, stop := iter.Pull2(after.Read(ctx, 0, n-1))
	defer stop()
	for o, err := range before.Read(ctx, 0, n-1) {
		if err != nil {
			return err
		}
		e, err, ok := nextNew()
		if err != nil {
			return err
		}
		if !ok {
			return &MismatchError{Seq: o.Seq, Reason: "missing"}
		}
		if e.Seq != o.Seq || e.Type != o.Type || e.Time != o.Time {
			return &MismatchError{Seq: o.Seq, Reason: fmt.Sprintf("seq, type or time changed (%d %s %d, was %d %s %d)", e.Seq, e.Type, e.Time, o.Seq, o.Type, o.Time)}
		}
		var kinds []string
		if o.Type == eventlog.TypeCheckpoint {
			if kinds, err = sameCheckpoint(red, o, e, nd); err != nil {
				return err
			}
		} else {
			var want []byte
			want, kinds, _ = red.Redact(o.Data)
			if !bytes.Equal(want, e.Data) {
				return &MismatchError{Seq: o.Seq, Reason: "its data is not the data before, redacted"}
			}
		}
		if len(kinds) > 0 && o.Seq >= rec.From {
			changed = append(changed, Redacted{Seq: o.Seq, Kinds: kinds})
		}
		old.Add(o)
		nd.Add(e)
	}
	if old.Next() != n {
		return &MismatchError{Seq: old.Next(), Reason: "the log before ends early"}
	}
	if old.String() != rec.Before {
		return &MismatchError{Seq: -1, Reason: fmt.Sprintf("it says the log before had digest %s; it has %s", rec.Before, old.String())}
	}
	if !slices.EqualFunc(changed, rec.Redacted, func(a, b Redacted) bool { return a.Seq == b.Seq && slices.Equal(a.Kinds, b.Kinds) }) {
		return &MismatchError{Seq: -1, Reason: fmt.Sprintf("it lists %d events redacted; redacting the log before changes %d (%v)", len(rec.Redacted), len(changed), changed)}
	}
	return nil
}

// sameCheckpoint checks the checkpoint e of the new log against o, the
// one before; d is the digest of the new log before it. It returns the
// kinds redacted in its label.
func sameCheckpoint(red *redact.Redactor, o, e eventlog.Event, d *eventlog.Digest) ([]string, error) {
	oc, err := eventlog.ParseCheckpoint(o.Data)
	if err != nil {
		return nil, err
	}
	nc, err := eventlog.ParseCheckpoint(e.Data)
	if err != nil {
		return nil, &MismatchError{Seq: e.Seq, Reason: err.Error()}
	}
	label, kinds := redactString(red, oc.Label)
	switch {
	case nc.Label != label:
		return nil, &MismatchError{Seq: e.Seq, Reason: "the checkpoint's label is not the label before, redacted"}
	case nc.Log != d.String():
		return nil, &MismatchError{Seq: e.Seq, Reason: "the checkpoint's log digest is not the new log's"}
	case nc.State != nil && (oc.State == nil || nc.State.Projection != oc.State.Projection):
		return nil, &MismatchError{Seq: e.Seq, Reason: "the checkpoint names a state it did not name before"}
	}
	return kinds, nil
}
