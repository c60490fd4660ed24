package core

import (
	"github.com/sessionlog/sessionlog/handle"

	"context"
	"encoding/json"
	"strconv"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/secrets/redact"
)

// The append path (docs/design.md, "Group commit"). An Append prepares its
// rows in its own goroutine, before the handle's mutex: every event is
// checked, its data compacted, and the bytes of its row that follow the
// seq (eventlog.AppendCanonTail) are built, so concurrent appenders do that
// CPU in parallel, also while a flush's fsync runs. Under the mutex it
// only takes seqs, checks the reserved events that need them, feeds the
// running digest those bytes, and queues the events with their prepared
// bytes, by reference. The leader of a flush concatenates them into rows
// ({"seq":N, then the prepared bytes) and writes them.
//
// Runs of packed types (assistant/chunk) are packed across appends, as one
// Encoder.AppendRows of the whole queue would pack them: the recorder
// appends chunks one at a time, and a chunk stored alone repeats its
// row's keys (about 60 bytes a chunk). So the rows are built by the
// leader of the flush that takes the events, outside the mutex: a run of
// packed events encoded together, the other rows from their prepared
// bytes.

// append prepares the batch, then queues it; expected < 0 means any next
// seq.
func (h *writeCore) append(ctx context.Context, expected int64, events []eventlog.Event) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	// A one-event batch, the common case, is not allocated.
	var one [1]eventlog.Event
	var oneTail [1][]byte
	batch, tails := one[:], oneTail[:]
	if len(events) != 1 {
		batch, tails = make([]eventlog.Event, len(events)), make([][]byte, len(events))
	}
	hasCheckpoint, err := prepareBatch(h.path, h.enc, h.red, events, batch, tails)
	if err != nil {
		return 0, err
	}
	if hasCheckpoint {
		if err := h.initDigest(ctx); err != nil {
			return 0, err
		}
	}
	h.mu.Lock()
	if err := h.usable(true); err != nil {
		h.mu.Unlock()
		return 0, err
	}
	if expected >= 0 && expected != h.next {
		next := h.next
		h.mu.Unlock()
		return 0, &handle.ConflictError{Path: h.path, Expected: expected, Next: next}
	}
	for i := range batch {
		batch[i].Seq = h.next + int64(i)
	}
	var marks []savedDigest
	dig, err := checkReserved(h.path, batch, tails, h.dig, hasCheckpoint, &marks)
	if err != nil {
		h.mu.Unlock()
		return 0, err
	}
	h.dig = dig
	h.marks = append(h.marks, marks...)
	h.queue(batch, tails)
	h.next += int64(len(batch))
	last := h.next - 1
	flush := h.policy.Every > 0 && len(h.pending) >= h.policy.Every
	h.mu.Unlock()
	if flush {
		return last, h.Flush(ctx)
	}
	return last, nil
}

// prepareBatch is an Append's prepare step, in the appender's goroutine:
// it checks every event of a batch and sets batch[i] to a copy whose data
// is compacted and owned by the handle (one allocation for the batch). For
// an event that is not packed it sets tails[i] to the bytes of its row
// after the seq, the copy's data lying inside them; a packed event's row is
// encoded with its run (see queue), its tails[i] is nil. It reports whether
// the batch holds a checkpoint.
//
// Redaction (docs/format.md §11; red, when not nil) comes first, before
// Storable: what is validated, stored, digested and read back — by replay,
// by a Recorder — is its output. The caller's events are not changed.
func prepareBatch(path string, enc *eventlog.Encoder, red *redact.Redactor, events, batch []eventlog.Event, tails [][]byte) (hasCheckpoint bool, err error) {
	total := 0
	for i, e := range events {
		if red != nil {
			e.Data, _ = red.Data(e.Data)
		}
		e, err := eventlog.Storable(e)
		if err != nil {
			return false, &handle.EventError{Path: path, Index: i, Seq: -1, Err: err}
		}
		hasCheckpoint = hasCheckpoint || e.Type == eventlog.TypeCheckpoint
		batch[i] = e
		total += eventlog.RowSize(e)
	}
	arena := make([]byte, 0, total)
	for i := range batch {
		e := &batch[i]
		if enc.Packs(*e) {
			if e.Data != nil {
				arena = append(arena, e.Data...)
				e.Data = json.RawMessage(arena[len(arena)-len(e.Data) : len(arena) : len(arena)])
			}
			tails[i] = nil
			continue
		}
		start := len(arena)
		arena = eventlog.AppendCanonTail(arena, *e)
		tails[i] = arena[start:len(arena):len(arena)]
		if d := e.Data; d != nil {
			end := len(arena) - 1 // the data ends before the tail's '}'
			e.Data = json.RawMessage(arena[end-len(d) : end : end])
		}
	}
	return hasCheckpoint, nil
}

// queue adds a prepared batch, its seqs assigned, to pending and the
// bytes of its rows after the seq (nil for a packed event) to tails: by
// reference, so that the mutex is held for two appends of slice headers;
// the leader of the flush that takes them builds the rows (see rows).
// Called with mu held.
func (h *writeCore) queue(batch []eventlog.Event, tails [][]byte) {
	h.pending = append(h.pending, batch...)
	h.tails = append(h.tails, tails...)
}

// rows appends to dst the rows of batch, a flush's events, as one
// Encoder.AppendRows of them would: {"seq":N and the prepared bytes of an
// event that is not packed, one AppendRows of each run of a packed type
// (packed across appends and appenders). Called by the flush's leader,
// outside mu.
func (h *writeCore) rows(dst []byte, batch []eventlog.Event, tails [][]byte) []byte {
	for i := 0; i < len(batch); {
		if tails[i] != nil {
			dst = strconv.AppendInt(append(dst, `{"seq":`...), batch[i].Seq, 10)
			dst = append(append(dst, tails[i]...), '\n')
			i++
			continue
		}
		j := i + 1
		for j < len(batch) && tails[j] == nil && batch[j].Type == batch[i].Type {
			j++
		}
		dst = h.enc.AppendRows(dst, batch[i:j])
		i = j
	}
	return dst
}
