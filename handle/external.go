package handle

import (
	"maps"

	"github.com/sessionlog/sessionlog/eventlog"
)

// This file is what a Store implemented outside this package (the
// JetStream store in handle/jetstream, say) needs so that it behaves as the
// file store does: the options' values and the checks every append makes.

// CheckID returns an error wrapping ErrInvalidID unless id is an
// upper-case ULID.
func CheckID(id string) error { return checkID(id) }

// CreateParams is what a list of CreateOptions says.
type CreateParams struct {
	ID        string // set when IDSet
	IDSet     bool
	CreatedAt *int64 // nil: now
	Labels    map[string]string
	Parent    *eventlog.Parent
	Encoding  string // "" unless WithSessionEncoding was given
}

// ResolveCreate applies CreateOptions.
func ResolveCreate(opts ...CreateOption) CreateParams {
	var c createConfig
	for _, o := range opts {
		o(&c)
	}
	return CreateParams{ID: c.id, IDSet: c.idSet, CreatedAt: c.createdAt, Labels: maps.Clone(c.labels),
		Parent: c.parent, Encoding: c.encoding}
}

// ListParams is what a list of ListOptions says.
type ListParams struct {
	cfg listConfig
}

// ResolveList applies ListOptions.
func ResolveList(opts ...ListOption) ListParams {
	var p ListParams
	for _, o := range opts {
		o(&p.cfg)
	}
	return p
}

// Match reports whether a session with this header passes the filters.
func (p ListParams) Match(h eventlog.Header) bool { return p.cfg.match(h) }

// Broken returns the SkipBroken callback, or nil when List must fail on a
// session it cannot describe.
func (p ListParams) Broken() func(id string, err error) { return p.cfg.broken }

// DeleteParams is what a list of DeleteOptions says.
type DeleteParams struct {
	Detach, Cascade bool
}

// ResolveDelete applies DeleteOptions.
func ResolveDelete(opts ...DeleteOption) DeleteParams {
	var c deleteConfig
	for _, o := range opts {
		o(&c)
	}
	return DeleteParams{Detach: c.detach, Cascade: c.cascade}
}

// PrepareBatch checks every event of a batch appended to the log at path
// (a refused event gives an *EventError naming its index) and returns
// copies whose data are compacted and owned by the caller, and whether the
// batch holds a checkpoint.
func PrepareBatch(path string, events []eventlog.Event) (batch []eventlog.Event, hasCheckpoint bool, err error) {
	return prepareBatch(path, events)
}

// CheckReservedBatch validates the reserved events of a batch whose seqs
// are assigned (SPEC §7): a rollback's "to" below its own seq, a
// checkpoint's log digest equal to dig, the digest of everything before
// it. It returns the digest to keep after the batch (nil when dig is nil:
// the caller then checks checkpoints once its digest is known). dig is not
// modified when the batch holds a checkpoint.
func CheckReservedBatch(path string, batch []eventlog.Event, dig *eventlog.Digest, hasCheckpoint bool) (*eventlog.Digest, error) {
	return checkReserved(path, batch, dig, hasCheckpoint)
}
