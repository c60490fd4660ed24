package file

import (
	"github.com/sessionlog/sessionlog/handle/core"

	"context"
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/sessionlog/sessionlog/eventlog"
)

// A torn tail is what a crash can leave (docs/format.md, Torn tail or
// corruption): the remains of a write no Flush acknowledged. Damage at the
// end of a log often looks like one (a flipped bit in the last frame, in
// the last row's '\n'), and a writer
// cuts a torn tail before its next append, so before a tail is called torn
// it is checked against what the store knows was durable: a tail holding a
// seq the store has evidence was acknowledged is corruption. The evidence
// is derived (the saved digest state, the record a writer leaves on
// Close), sealed with a sum, and only ever turns a torn tail into
// corruption: it is never a reason to drop data. A file without evidence
// (copied alone, or whose writers never closed) is judged by its bytes.

// ackedKey is the derived-cache key of the record a writer leaves on
// Close: the seq that follows the last event it acknowledged.
const ackedKey = "acked"

// ackedRecord is the data of an ackedKey file.
type ackedRecord struct {
	Next int64 `json:"next"`
}

// saveAcked records that every event before b's next seq is durable, so
// that damage which would pass for a torn tail is found later. It is
// called by Close after the last flush; a failure only loses evidence.
func (b *fileBackend) saveAcked(ctx context.Context) {
	b.mu.Lock()
	next, wrote := b.next, b.wrote
	b.mu.Unlock()
	if wrote {
		b.store.saveAcked(ctx, b.hdr, next)
	}
}

// saveAcked records that every event of the session whose header is hdr
// before seq next is durable (see fileBackend.saveAcked).
func (s *Store) saveAcked(ctx context.Context, hdr eventlog.Header, next int64) {
	if next <= hdr.FirstSeq() {
		return
	}
	bs, _ := json.Marshal(ackedRecord{Next: next})
	if err := s.PutDerived(ctx, hdr.ID, ackedKey, bs); err != nil {
		s.cfg.Logger.Debug("saving the acknowledged seq failed", "id", hdr.ID, "err", err)
	}
}

// knownDurable returns the seq that follows the last event the store has
// evidence was durable in session id's log, or -1 when it has none (or id
// is ""). Callers read it before they read the log: the evidence only
// grows after the rows it names are in the file, so a reader racing a
// writer's Close never sees evidence ahead of the log it read.
func (s *Store) knownDurable(ctx context.Context, id string) int64 {
	known := int64(-1)
	if id == "" {
		return known
	}
	for _, key := range []string{core.DigestKey, ackedKey} {
		b, err := s.GetDerived(ctx, id, key)
		if err != nil {
			continue
		}
		var rec ackedRecord // a saved digest state has the same "next"
		if json.Unmarshal(eventlog.ExactKeys(b, "next"), &rec) == nil {
			known = max(known, rec.Next)
		}
	}
	return known
}

// checkAcked returns a *CorruptError when the torn tail a read of the log
// at path ended on (the rows before it end before seq next) holds a seq
// the store knows was acknowledged (known, from knownDurable); nil
// otherwise. A log that ends cleanly is left alone: evidence turns a torn
// tail into corruption, and a derived file that does not match the log
// (stale, or another session's) never fails a log that reads clean.
func checkAcked(known int64, path string, next int64, torn *eventlog.TornTail) error {
	if torn == nil || known <= next {
		return nil
	}
	return &eventlog.CorruptError{Path: path, Offset: torn.Offset, Seq: next,
		Reason: fmt.Sprintf("the log ends in %d bytes that would pass for a torn tail, but events up to seq %d were acknowledged (the store's saved state says so): a crash cannot lose them", torn.Bytes, known-1)}
}

// storeID returns the session ID that path names when it is a session
// file of this store's folder, else "": the store's evidence is about its
// own sessions only.
func (s *Store) storeID(path, nameID string) string {
	if nameID == "" || filepath.Clean(filepath.Dir(path)) != filepath.Clean(s.dir) {
		return ""
	}
	return nameID
}
