package handle

import (
	"context"
	"io"

	"filippo.io/age"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/secrets/seal"
)

// What only some stores can do is asked of a Store by interface, never by
// the store's type: a caller type-asserts the capability it needs and
// refuses when the store has none (the file store has them all; a stream
// holds neither zstd frames nor torn tails to cut). Each is one store's
// engine at work, under the session's writer hold.

// Converter rewrites a session's log whole, atomically: in another
// encoding (Convert; EncodingRaw, EncodingZstd), or compacted in its own
// (Compact). The logical log, and so every digest, is unchanged.
type Converter interface {
	Convert(ctx context.Context, id, encoding string) error
	Compact(ctx context.Context, id string) error
}

// Repairer cuts a session's torn tail — and with salvage, the damaged rest
// after its last good row — keeping what it cuts beside the log.
type Repairer interface {
	Repair(ctx context.Context, id string, salvage bool) (RepairReport, error)
}

// Shredder destroys every key record of a sealed session, so that no
// identity reads it again (docs/format.md §11, "Shredding"); with
// descendants its forks and children too, which a fork of it requires.
type Shredder interface {
	Shred(ctx context.Context, id string, descendants bool) (ShredReport, error)
}

// Rekeyer changes who reads a sealed session: AddRecipients wraps its data
// keys for more recipients, RotateKey seals what follows under a new key
// for the recipients given.
type Rekeyer interface {
	AddRecipients(ctx context.Context, id string, rs ...age.Recipient) error
	RotateKey(ctx context.Context, id string, rs ...age.Recipient) error
}

// Salvager reads a session's log past damage, for inspection: every event
// it can decode goes to yield, a fork's inherited events first, and the
// result lists each damaged range with the seqs lost. It changes nothing.
type Salvager interface {
	Salvage(ctx context.Context, id string, yield func(eventlog.Event) bool) (eventlog.SalvageResult, error)
}

// SealedExporter tells how a sealed session is sealed (SealingOf, for
// Config.SealAs; nil for a clear session), checks its framing without
// opening a record (Framing: what can be checked without its key; nil for
// a clear session, a damaged framing an *eventlog.CorruptError), and
// writes its logical log, events 0..to, as a standalone sealed raw log
// under the same key records (ExportSealed), returning how many events it
// wrote.
type SealedExporter interface {
	SealingOf(ctx context.Context, id string) (*Sealing, error)
	Framing(ctx context.Context, id string) (*seal.Framing, error)
	ExportSealed(ctx context.Context, id string, w io.Writer, to int64) (int64, error)
}

// Cut is a range repair removed from a log, kept in a side file.
type Cut struct {
	Offset int64  `json:"offset"`
	Bytes  int64  `json:"bytes"`
	Side   string `json:"side"` // the side file holding the bytes cut
}

// RepairReport says what Repair did.
type RepairReport struct {
	// Torn is the torn tail cut off, or nil.
	Torn *Cut `json:"torn"`
	// Salvaged is the damaged rest cut off by a salvage, or nil.
	Salvaged *Cut `json:"salvaged"`
	// FirstLost and LastLost are the seqs a salvage removed from the log
	// (the damaged row and everything after it); FirstLost > LastLost when
	// none. LastLost is the last seq a salvage read found in the rest.
	FirstLost int64 `json:"firstLost"`
	LastLost  int64 `json:"lastLost"`
	// Events is the number of events of the file's own rows after repair.
	Events int64 `json:"events"`
}

// ShredReport says what Shred did.
type ShredReport struct {
	// Shredded lists the sessions shredded: the one asked for, then (with
	// ShredDescendants) its forks and children, and theirs.
	Shredded []string `json:"shredded"`
	// Envelopes counts the key records destroyed.
	Envelopes int `json:"envelopes"`
}
