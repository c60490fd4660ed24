package core

import (
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/internal/lineage"

	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"

	"github.com/sessionlog/sessionlog/eventlog"
)

// The derived data the write core keeps of a session (Store.PutDerived):
// DigestKey its saved digest state, whose "next" is the seq after the
// events it covers (so a store may take it as evidence of what was
// durable), and DigestsKey the states at its checkpoints (maxMarks at
// most).
const (
	DigestKey  = "digest"
	DigestsKey = "digests"
)

const maxMarks = 256

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
func (h *writeCore) LogDigest(ctx context.Context) (string, int64, error) {
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

// initDigest builds the running digest if it is not there yet (see
// digestUpTo). Events appended meanwhile are caught up before it is
// installed.
func (h *writeCore) initDigest(ctx context.Context) error {
	h.digMu.Lock()
	defer h.digMu.Unlock()
	h.mu.Lock()
	ready, next := h.dig != nil, h.next
	h.mu.Unlock()
	if ready {
		return nil
	}
	d, err := h.digestUpTo(ctx, next-1, 0)
	if err != nil {
		return err
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
		if err := h.digestOn(ctx, d, next-1); err != nil {
			return err
		}
	}
}

// digestUpTo returns the running digest of the logical log up to and
// including seq upto. It starts from the latest saved state at or before
// upto that matches the log (the one a writer's Close saved, or one kept
// at a checkpoint); a fork with none starts from its parent's digest at
// the fork point, found the same way; only then from the first event. So
// a fork at its parent's last seq costs what reading one state and one
// event does, and one at an earlier seq what hashing the events since the
// nearest checkpoint before it does.
func (h *writeCore) digestUpTo(ctx context.Context, upto int64, depth int) (*eventlog.Digest, error) {
	for _, sd := range h.savedStates(ctx, upto) {
		d, err := h.digestFrom(ctx, sd, upto)
		if err != nil || d != nil {
			return d, err
		}
	}
	d := eventlog.NewDigest()
	if p := h.hdr.Parent; p != nil && p.Mode == eventlog.ModeFork {
		if depth >= lineage.MaxDepth {
			return nil, tooDeep(h.path, *p)
		}
		ph, err := h.parentHandle(ctx, *p)
		if err != nil {
			return nil, err
		}
		if d, err = ph.digestUpTo(ctx, min(upto, p.Seq), depth+1); err != nil {
			return nil, err
		}
	}
	if err := h.digestOn(ctx, d, upto); err != nil {
		return nil, err
	}
	return d, nil
}

// digestOn adds the events d.Next()..upto to d.
func (h *writeCore) digestOn(ctx context.Context, d *eventlog.Digest, upto int64) error {
	for e, err := range h.Read(ctx, d.Next(), upto) {
		if err != nil {
			return fmt.Errorf("handle: computing the log digest of %q: %w", h.path, err)
		}
		d.Add(e)
	}
	if d.Next() != upto+1 {
		return fmt.Errorf("handle: computing the log digest of %q: the log ends at seq %d, before %d", h.path, d.Next()-1, upto)
	}
	return nil
}

// savedStates returns the saved digest states at or before seq upto
// (Next <= upto+1), latest first: the one a writer's Close saved and those
// kept at checkpoints.
func (h *writeCore) savedStates(ctx context.Context, upto int64) []savedDigest {
	cands := h.loadMarks(ctx)
	if b, err := h.store.GetDerived(ctx, h.hdr.ID, DigestKey); err == nil {
		var sd savedDigest
		if json.Unmarshal(b, &sd) == nil {
			cands = append(cands, sd)
		}
	}
	cands = slices.DeleteFunc(cands, func(sd savedDigest) bool { return sd.Next <= 0 || sd.Next > upto+1 })
	slices.SortFunc(cands, func(a, b savedDigest) int { return cmp.Compare(b.Next, a.Next) })
	return cands
}

// digestFrom returns the digest up to and including upto, from the saved
// state sd, in one read from sd's last event; nil when sd does not match
// the log (its event Next-1 is not there, the same).
func (h *writeCore) digestFrom(ctx context.Context, sd savedDigest, upto int64) (*eventlog.Digest, error) {
	d := eventlog.NewDigest()
	if d.UnmarshalBinary(sd.State) != nil || d.Next() != sd.Next {
		return nil, nil
	}
	matched := false
	for e, err := range h.Read(ctx, sd.Next-1, upto) {
		switch {
		case err != nil:
			return nil, fmt.Errorf("handle: computing the log digest of %q: %w", h.path, err)
		case !matched && canonSum(e) != sd.Last:
			return nil, nil
		case !matched:
			matched = true
		default:
			d.Add(e)
		}
	}
	if !matched {
		return nil, nil
	}
	if d.Next() != upto+1 {
		return nil, fmt.Errorf("handle: computing the log digest of %q: the log ends at seq %d, before %d", h.path, d.Next()-1, upto)
	}
	return d, nil
}

// loadMarks returns the digest states kept at the session's checkpoints,
// oldest first (nil when there are none, or they do not read).
func (h *writeCore) loadMarks(ctx context.Context) []savedDigest {
	return loadMarks(ctx, h.store, h.hdr.ID)
}

func loadMarks(ctx context.Context, st handle.Store, id string) []savedDigest {
	b, err := st.GetDerived(ctx, id, DigestsKey)
	if err != nil {
		return nil
	}
	var marks []savedDigest
	if json.Unmarshal(b, &marks) != nil {
		return nil
	}
	return marks
}

// mark returns the saved state of d, which has just added the checkpoint
// e.
func mark(e eventlog.Event, d *eventlog.Digest) savedDigest {
	state, _ := d.MarshalBinary()
	return savedDigest{Next: e.Seq + 1, Last: canonSum(e), State: state}
}

// saveDigest keeps the running digest's state in the derived cache, and
// the states at the checkpoints this handle appended; a failure only costs
// a later writer (or fork) hashing part of the log again.
func (h *writeCore) saveDigest(ctx context.Context) {
	h.mu.Lock()
	marks := h.marks
	h.marks = nil
	if h.dig == nil || h.dig.Next() == 0 {
		h.mu.Unlock()
		return
	}
	d := h.dig.Clone()
	h.mu.Unlock()
	var last *eventlog.Event
	for e, err := range h.Read(ctx, d.Next()-1, d.Next()-1) {
		if err != nil {
			break
		}
		last = &e
	}
	saveDigests(ctx, h.store, h.hdr.ID, h.log, d, last, marks)
}

// saveDigests adds marks (states at checkpoints) to those kept for
// session id and, when last (d's last event) is known, keeps the state of
// d as its saved digest: what a writer's Close leaves, and CreateFrom too.
func saveDigests(ctx context.Context, st handle.Store, id string, log *slog.Logger, d *eventlog.Digest, last *eventlog.Event, marks []savedDigest) {
	if len(marks) > 0 {
		saveMarks(ctx, st, id, log, marks)
	}
	if last == nil {
		return
	}
	state, err := d.MarshalBinary()
	if err != nil {
		return
	}
	b, _ := json.Marshal(savedDigest{Next: d.Next(), Last: canonSum(*last), State: state})
	if err := st.PutDerived(ctx, id, DigestKey, b); err != nil {
		log.Debug("saving the digest state failed", "id", id, "err", err)
	}
}

// saveMarks adds marks (states at checkpoints, oldest first) to those kept
// for session id: the kept ones past the first of marks are another log's
// (it was cut and written again) and go. Past maxMarks, every other state
// of the older half goes: forks far back cost more hashing, the derived
// file stays small.
func saveMarks(ctx context.Context, st handle.Store, id string, log *slog.Logger, marks []savedDigest) {
	kept := loadMarks(ctx, st, id)
	kept = slices.DeleteFunc(kept, func(m savedDigest) bool { return m.Next >= marks[0].Next })
	kept = append(kept, marks...)
	for len(kept) > maxMarks {
		half := len(kept) / 2
		thin := kept[:0:0]
		for i, m := range kept[:half] {
			if i%2 == 0 {
				thin = append(thin, m)
			}
		}
		kept = append(thin, kept[half:]...)
	}
	b, _ := json.Marshal(kept)
	if err := st.PutDerived(ctx, id, DigestsKey, b); err != nil {
		log.Debug("saving the checkpoints' digest states failed", "id", id, "err", err)
	}
}

// checkReserved validates the reserved events of a batch whose seqs are
// assigned (docs/format.md §7): a rollback's "to" below its own seq, a checkpoint's
// log digest equal to the digest of everything before it. It returns the
// digest to install after the batch; dig is the digest before it (nil when
// not yet known: checkpoints are then checked when it is built). tails,
// when not nil, holds the canon bytes after its seq of each event that is
// not packed (see prepareBatch), which the digest hashes without encoding
// the event again. The state after each checkpoint is added to marks, when
// not nil.
func checkReserved(path string, batch []eventlog.Event, tails [][]byte, dig *eventlog.Digest, hasCheckpoint bool, marks *[]savedDigest) (*eventlog.Digest, error) {
	for i, e := range batch {
		if e.Type == eventlog.TypeRollback {
			rb, _ := eventlog.ParseRollback(e.Data) // parsed in prepare
			if rb.To >= e.Seq {
				return nil, &handle.EventError{Path: path, Index: i, Seq: e.Seq,
					Err: fmt.Errorf("%w: rollback to %d is not below its own seq %d", eventlog.ErrInvalidEvent, rb.To, e.Seq)}
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
				return nil, &handle.EventError{Path: path, Index: i, Seq: e.Seq, Err: fmt.Errorf("%w: %w", eventlog.ErrInvalidEvent, err)}
			}
		}
		if tails != nil && tails[i] != nil {
			d.AddTail(e.Seq, tails[i])
		} else {
			d.Add(e)
		}
		if e.Type == eventlog.TypeCheckpoint && marks != nil {
			*marks = append(*marks, mark(e, d))
		}
	}
	return d, nil
}
