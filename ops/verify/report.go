package verify

import (
	"errors"
	"fmt"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/replay"
	"github.com/sessionlog/sessionlog/secrets/redact"
	"github.com/sessionlog/sessionlog/secrets/seal"
)

// The kinds of failure (docs/cli.md, verify).
const (
	// KindCorrupt: damage in the file — a bad row, frame or header, a
	// reserved event no writer accepts, a session stored twice with
	// different logs.
	KindCorrupt = "corrupt"
	// KindVersion: a header of a format version this build does not read.
	KindVersion = "version"
	// KindDigest: a checkpoint whose log or state digest does not match.
	KindDigest = "digest"
	// KindLineage: a fork whose parent is missing or does not hold the
	// fork point.
	KindLineage = "lineage"
	// KindIO: an I/O error, or a file refused as not a regular file.
	KindIO = "io"
	// KindKey: a sealed session no identity given opens (docs/format.md
	// §11): its framing alone was checked, and found sound; its content
	// could not be.
	KindKey = "key"
)

// Report is what a check found in one session or file. Its JSON is one
// line of logtool verify --json.
type Report struct {
	// Path names the log: its file, the store's name for it, or the ID
	// when not even that could be learnt.
	Path string  `json:"path"`
	ID   *string `json:"id"` // nil when neither the header nor the name tells
	OK   bool    `json:"ok"`
	// Events counts the logical log checked (a fork's inherited events
	// included, as stat and ls count it; up to the damage for a bad log),
	// FileEvents the session's own events among them.
	Events      int64    `json:"events"`
	FileEvents  int64    `json:"fileEvents"`
	Torn        *Torn    `json:"torn"`
	Checkpoints int64    `json:"checkpoints"` // checkpoints met
	Unchecked   int64    `json:"unchecked"`   // of those, the ones whose state names a projection not known
	Error       *Failure `json:"error"`       // nil when OK
	// Protection says what keeps the session's secrets out of its file
	// (sealed, strings redacted, originals sealed to the agent's key);
	// nil when the log could not be read.
	Protection *redact.Protection `json:"protection"`
}

// Torn is where a torn tail starts and how long it is.
type Torn struct {
	Offset int64 `json:"offset"`
	Bytes  int64 `json:"bytes"`
}

// Failure is why a check failed.
type Failure struct {
	Kind    string `json:"kind"`   // one of the Kind constants
	Seq     *int64 `json:"seq"`    // the seq the damaged row should hold, the checkpoint's; nil when unknown
	Offset  *int64 `json:"offset"` // nil when unknown
	Message string `json:"message"`
	// Err is the error the check ended on, for errors.Is and errors.As.
	Err error `json:"-"`
}

func tornOf(t *eventlog.TornTail) *Torn {
	if t == nil {
		return nil
	}
	return &Torn{Offset: t.Offset, Bytes: t.Bytes}
}

// Classify names the kind of failure err is, with the seq and offset it
// carries.
func Classify(err error) *Failure {
	var ce *eventlog.CorruptError
	var ve *eventlog.VersionError
	var de *replay.DigestError
	f := &Failure{Kind: KindIO, Message: err.Error(), Err: err}
	switch {
	case errors.As(err, &de):
		f.Kind, f.Seq = KindDigest, &de.Seq
	case errors.Is(err, handle.ErrLineage):
		f.Kind = KindLineage
	case errors.As(err, &ce):
		f.Kind = KindCorrupt
		if ce.Offset >= 0 {
			f.Offset = &ce.Offset
		}
		if ce.Seq >= 0 {
			f.Seq = &ce.Seq
		}
	case errors.As(err, &ve):
		zero := int64(0)
		f.Kind, f.Offset = KindVersion, &zero
	case errors.Is(err, file.ErrDuplicate):
		f.Kind = KindCorrupt
	case errors.Is(err, seal.ErrNoKey):
		f.Kind = KindKey
	}
	// Anything else — I/O errors, a file refused as not regular
	// (file.ErrNotRegular) — is io.
	return f
}

// fail records err as the report's failure.
func (r *Report) fail(err error) {
	r.OK, r.Error = false, Classify(err)
}

// failFraming records err, a sealed log's want of a key, as the report's
// failure, saying what the framing check found (fr: sound).
func (r *Report) failFraming(err error, fr *seal.Framing) {
	r.fail(err)
	r.Error.Message = fmt.Sprintf("%s; without it only the framing was checked, and it is sound (%d sealed records, %d key records); nothing more could be", err, fr.Records, len(fr.Envelopes))
}
