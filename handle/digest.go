package handle

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/sessionlog/sessionlog/eventlog"
)

// digestKey is the derived-cache key of a session's saved digest state.
const digestKey = "digest"

// savedDigest is the running digest's state at seq Next, saved beside the
// log so that a writer that reopens continues it without hashing the log
// again. Last is the sha256 of canon(e) of the event Next-1: the saved
// state is used only if that event is still there, the same.
type savedDigest struct {
	Next  int64           `json:"next"`
	Last  string          `json:"last"`
	State json.RawMessage `json:"state"`
}

func canonSum(e eventlog.Event) string {
	sum := sha256.Sum256(eventlog.AppendCanon(nil, e))
	return hex.EncodeToString(sum[:])
}

// LogDigest returns the log digest (docs/format.md §6) of every event appended so
// far and the seq of the next event: the digest a checkpoint appended next
// must carry. The first call may read the log (from a saved state, or once
// from the start); afterwards Append keeps the digest current.
func (h *fileHandle) LogDigest(ctx context.Context) (string, int64, error) {
	if err := h.initDigest(ctx); err != nil {
		return "", 0, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.usable(false); err != nil {
		return "", 0, err
	}
	return h.dig.String(), h.dig.Next(), nil
}

// initDigest builds the running digest if it is not there yet: from the
// saved state when it matches the log, else from the first event. Events
// appended meanwhile are caught up before it is installed.
func (h *fileHandle) initDigest(ctx context.Context) error {
	h.digMu.Lock()
	defer h.digMu.Unlock()
	h.mu.Lock()
	ready := h.dig != nil
	h.mu.Unlock()
	if ready {
		return nil
	}
	d := h.loadDigest(ctx)
	if d == nil {
		d = eventlog.NewDigest()
	}
	for {
		h.mu.Lock()
		if next := h.next; d.Next() >= next {
			h.dig = d
			h.mu.Unlock()
			return nil
		}
		next := h.next
		h.mu.Unlock()
		for e, err := range h.Read(ctx, d.Next(), next-1) {
			if err != nil {
				return fmt.Errorf("handle: computing the log digest of %q: %w", h.path, err)
			}
			d.Add(e)
		}
		if d.Next() < next {
			return fmt.Errorf("handle: computing the log digest of %q: the log ends at seq %d, before %d", h.path, d.Next(), next)
		}
	}
}

// digestUpTo returns the running digest of the logical log up to and
// including seq upto: from the saved state when it matches the log and
// does not pass upto, else from the first event.
func (h *fileHandle) digestUpTo(ctx context.Context, upto int64) (*eventlog.Digest, error) {
	d := h.loadDigest(ctx)
	if d == nil || d.Next() > upto+1 {
		d = eventlog.NewDigest()
	}
	for e, err := range h.Read(ctx, d.Next(), upto) {
		if err != nil {
			return nil, fmt.Errorf("handle: computing the log digest of %q: %w", h.path, err)
		}
		d.Add(e)
	}
	if d.Next() != upto+1 {
		return nil, fmt.Errorf("handle: computing the log digest of %q: the log ends at seq %d, before %d", h.path, d.Next()-1, upto)
	}
	return d, nil
}

// loadDigest returns the saved digest state if it matches the log, else
// nil.
func (h *fileHandle) loadDigest(ctx context.Context) *eventlog.Digest {
	b, err := h.store.GetDerived(ctx, h.hdr.ID, digestKey)
	if err != nil {
		return nil
	}
	var sd savedDigest
	if json.Unmarshal(b, &sd) != nil || sd.Next <= 0 || sd.Next > h.Seq()+1 {
		return nil
	}
	var last *eventlog.Event
	for e, err := range h.Read(ctx, sd.Next-1, sd.Next-1) {
		if err != nil {
			return nil
		}
		last = &e
	}
	if last == nil || canonSum(*last) != sd.Last {
		return nil
	}
	d := eventlog.NewDigest()
	if d.UnmarshalBinary(sd.State) != nil || d.Next() != sd.Next {
		return nil
	}
	return d
}

// saveDigest keeps the running digest's state in the derived cache; a
// failure only costs a later writer one pass over the log.
func (h *fileHandle) saveDigest(ctx context.Context) {
	h.mu.Lock()
	if h.dig == nil || h.dig.Next() == 0 {
		h.mu.Unlock()
		return
	}
	d := h.dig.Clone()
	h.mu.Unlock()
	var last *eventlog.Event
	for e, err := range h.Read(ctx, d.Next()-1, d.Next()-1) {
		if err != nil {
			return
		}
		last = &e
	}
	state, err := d.MarshalBinary()
	if err != nil || last == nil {
		return
	}
	b, _ := json.Marshal(savedDigest{Next: d.Next(), Last: canonSum(*last), State: state})
	if err := h.store.PutDerived(ctx, h.hdr.ID, digestKey, b); err != nil {
		h.store.cfg.log.Debug("saving the digest state failed", "path", h.path, "err", err)
	}
}

// checkReserved validates the reserved events of a batch whose seqs are
// assigned (docs/format.md §7): a rollback's "to" below its own seq, a checkpoint's
// log digest equal to the digest of everything before it. It returns the
// digest to install after the batch; dig is the digest before it (nil when
// not yet known: checkpoints are then checked when it is built).
func checkReserved(path string, batch []eventlog.Event, dig *eventlog.Digest, hasCheckpoint bool) (*eventlog.Digest, error) {
	for i, e := range batch {
		if e.Type == eventlog.TypeRollback {
			rb, _ := eventlog.ParseRollback(e.Data) // parsed in prepare
			if rb.To >= e.Seq {
				return nil, &EventError{Path: path, Index: i, Seq: e.Seq,
					Err: fmt.Errorf("%w: rollback to %d is not below its own seq %d", ErrInvalidEvent, rb.To, e.Seq)}
			}
		}
	}
	if dig == nil {
		return nil, nil
	}
	d := dig
	if hasCheckpoint {
		d = d.Clone()
	}
	for i, e := range batch {
		if e.Type == eventlog.TypeCheckpoint {
			cp, _ := eventlog.ParseCheckpoint(e.Data)
			if err := d.CheckCheckpoint(e.Seq, cp); err != nil {
				return nil, &EventError{Path: path, Index: i, Seq: e.Seq, Err: fmt.Errorf("%w: %w", ErrInvalidEvent, err)}
			}
		}
		d.Add(e)
	}
	return d, nil
}
