package file

import (
	"github.com/sessionlog/sessionlog/handle/core"

	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"sync"

	"github.com/spf13/afero"

	"github.com/sessionlog/sessionlog/eventlog"
)

// A torn tail is what a crash can leave (docs/format.md, Torn tail or
// corruption): the remains of a write no Flush acknowledged. Damage at the
// end of a log often looks like one (a flipped bit in the last frame, in
// the last row's '\n'), and a writer
// cuts a torn tail before its next append, so before a tail is called torn
// it is checked against what the store knows was durable: a tail holding a
// seq the store has evidence was acknowledged is corruption. The evidence
// is derived (the saved digest state, the seq a writer's Close saw
// acknowledged), and only ever turns a torn tail into corruption: it is
// never a reason to drop data. A file without evidence (copied alone, or
// whose writers never closed) is judged by its bytes.
//
// What a writer acknowledged rides in the session index, in no file of
// its own (docs/design.md, "Per-session records"): the post of its change
// says it, and a fold keeps each session's newest in the snapshot
// (secAcked). A post that says nothing (a writer killed, a change that
// wrote no events) leaves the evidence before it standing; a post of a
// session gone ends it, and a change that cuts or rewrites the log
// (dropDerived) resets it. It is read only when a read of a log ends in a
// torn tail: an open of a clean log pays nothing for it.

// ackedKey is the derived-cache key of the record an older version's
// writer left on Close, still read: the seq that follows the last event
// it acknowledged.
const ackedKey = "acked"

// ackedRecord is the data of an ackedKey file.
type ackedRecord struct {
	Next int64 `json:"next"`
}

// heldMarks is the marked locks a Store holds, by session ID: the
// evidence a change made under one notes (noteAcked) goes into its post.
type heldMarks struct {
	mu sync.Mutex
	m  map[string]*markedLock
}

func (h *heldMarks) add(m *markedLock) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m == nil {
		h.m = map[string]*markedLock{}
	}
	h.m[m.id] = m
}

// remove forgets m and returns the evidence noted under it.
func (h *heldMarks) remove(m *markedLock) int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m[m.id] == m {
		delete(h.m, m.id)
	}
	return m.acked
}

// noteAcked sets the evidence that the post of the change this store is
// making to session id (under its marked lock) carries: next, the seq
// after the last event acknowledged, or 0 when the change leaves none.
func (s *Store) noteAcked(id string, next int64) {
	s.held.mu.Lock()
	defer s.held.mu.Unlock()
	if m := s.held.m[id]; m != nil {
		m.acked = next
	}
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
// before seq next is durable (see fileBackend.saveAcked): in the post of
// the change under way, which supersedes an older version's file.
func (s *Store) saveAcked(ctx context.Context, hdr eventlog.Header, next int64) {
	if next <= hdr.FirstSeq() {
		return
	}
	s.noteAcked(hdr.ID, next)
	if err := s.DeleteDerived(ctx, hdr.ID, ackedKey); err != nil {
		s.cfg.Logger.Debug("removing an older acknowledged seq failed", "id", hdr.ID, "err", err)
	}
}

// knownDurable returns the seq that follows the last event the store has
// evidence was durable in session id's log, or -1 when it has none (or id
// is ""). A caller that reads it after the log reads the log again when
// it says more than that read found (judgeTorn): the evidence only grows
// after the rows it names are in the file, so a reader racing a writer's
// Close then finds them.
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
	return max(known, s.ackedInIndex(id))
}

// ackedInIndex returns the evidence the session index holds for session
// id: its newest post that says, else its delta's, else the snapshot's;
// -1 for none. It lists the marks and bisects the delta and the
// snapshot, O(marks + log n): paid only by a read that found a torn tail.
func (s *Store) ackedInIndex(id string) int64 {
	if !s.cacheUsable() {
		return -1
	}
	snapPath := filepath.Join(s.dir, cacheDir, sindexName)
	for range 4 {
		sn, dl, err := s.openIndexFiles(snapPath)
		if err != nil {
			return -1 // damaged: no evidence, which is never wrong
		}
		marks, _, err := s.marks()
		n, said, gone := int64(-1), false, false
		if err == nil {
			n, said, gone = s.ackedInPosts(marks[id])
		}
		if err == nil && !said && !gone && dl != nil {
			n, said, err = dl.deltaAcked(id)
		}
		if err == nil && !said && !gone && sn != nil {
			var ok bool
			if n, ok, err = sn.acked(id); !ok {
				n = -1
			}
		}
		// A fold in between moved posts into another snapshot or delta:
		// again.
		sn2, dl2, err2 := s.openIndexFiles(snapPath)
		same := err2 == nil && sameGen(sn, sn2) && sameGen(dl, dl2)
		for _, x := range []*snapshot{sn, dl, sn2, dl2} {
			if x != nil {
				x.close()
			}
		}
		switch {
		case err != nil:
			return -1
		case same && !gone:
			return max(n, -1)
		}
	}
	return -1
}

// openIndexFiles opens the snapshot at snapPath and its delta, those
// there are.
func (s *Store) openIndexFiles(snapPath string) (sn, dl *snapshot, err error) {
	if sn, err = openSnapshot(s.fs, snapPath); sn == nil || err != nil {
		return nil, nil, err
	}
	if dl, err = s.openDelta(sn); err != nil {
		sn.close()
		return nil, nil, err
	}
	return sn, dl, nil
}

// sameGen reports whether a and b are the same file: both none, or of
// one gen.
func sameGen(a, b *snapshot) bool {
	return (a == nil) == (b == nil) && (a == nil || a.gen == b.gen)
}

// deltaAcked returns the evidence delta dl holds for session id, and
// whether it holds the session, which overrides the snapshot's: none
// (-1) when it says the session is gone or its evidence is 0; said is
// false when the delta has no line for id in secAcked or is silent
// (then the snapshot's stands).
func (dl *snapshot) deltaAcked(id string) (n int64, said bool, err error) {
	e, found, err := lookup(dl, id)
	if err != nil || !found {
		return -1, false, err
	}
	if e == nil {
		return -1, true, nil // gone: its evidence ended
	}
	n, said, err = dl.acked(id)
	if n == 0 {
		n = -1
	}
	return n, said, err
}

// ackedInPosts returns the evidence that the newest of a session's marks
// (names) that says any says (-1 for a session gone), and whether one
// says; gone is true when a post listed is gone (a fold removed it).
func (s *Store) ackedInPosts(names []string) (n int64, said, gone bool) {
	_, posts := splitMarks(names)
	nonces := slices.Sorted(mapKeys(posts))
	for i := len(nonces) - 1; i >= 0; i-- {
		p, ok, err := s.readPost(posts[nonces[i]])
		switch {
		case err != nil:
			return -1, false, false
		case !ok:
			return -1, false, true
		case p.ident == "":
			continue // unreadable: it says nothing
		case p.gone():
			return -1, true, false // the session was gone
		case p.acked >= 0:
			return p.acked, true, false
		}
	}
	return -1, false, false
}

// foldAcked returns the evidence a rebuild from the logs keeps (they do
// not hold it): that of the snapshot at snapPath, changed by its delta's
// (readAcked), then for each session with marks what the newest of them
// that says says (marksAcked). An index that does not read whole keeps
// none: no evidence is never wrong. (mergeFold keeps the old snapshot's
// lines as they are.)
func (s *Store) foldAcked(snapPath string, marks map[string][]string) map[string]int64 {
	acked := map[string]int64{}
	if sn, dl, err := s.openIndexFiles(snapPath); err == nil && sn != nil {
		err = readAcked(sn, acked)
		if err == nil {
			err = readAcked(dl, acked)
		}
		if err != nil {
			clear(acked)
		}
		for _, x := range []*snapshot{sn, dl} {
			if x != nil {
				x.close()
			}
		}
	}
	s.marksAcked(acked, marks)
	return acked
}

// readAcked sets in acked the evidence sn keeps (nil: none); a delta's
// also ends that of each session it says is gone (0: none).
func readAcked(sn *snapshot, acked map[string]int64) error {
	if sn == nil {
		return nil
	}
	if sn.base() != "" {
		for ln, err := range sn.lines(secID, sn.off[secID]) {
			if err != nil {
				return err
			}
			if ln.value == "null" {
				acked[ln.key] = 0
			}
		}
	}
	for ln, err := range sn.lines(secAcked, sn.off[secAcked]) {
		if err != nil {
			return err
		}
		n, ok := parseDecimal([]byte(ln.value))
		if !ok {
			return errSindexDamaged
		}
		acked[ln.key] = n
	}
	return nil
}

// marksAcked sets in acked, for each session with marks, what the newest
// of them that says says (0: none, the session was gone).
func (s *Store) marksAcked(acked map[string]int64, marks map[string][]string) {
	for id, names := range marks {
		if n, said, _ := s.ackedInPosts(names); said {
			acked[id] = max(n, 0)
		}
	}
}

// judgeTorn returns what the read sc of the log at loc (file f, session
// id) found, judged against the evidence when it ends in a torn tail
// (checkAcked). The evidence is read after the log, so when it says more
// than sc holds the log is read again: a writer may have completed its
// flush and closed meanwhile.
func (s *Store) judgeTorn(ctx context.Context, id string, loc location, f afero.File, sc scanResult) (scanResult, error) {
	if sc.torn == nil || id == "" {
		return sc, nil
	}
	known := s.knownDurable(ctx, id)
	if checkAcked(known, loc.path, sc.next, sc.torn) == nil {
		return sc, nil
	}
	again, err := scanLog(ctx, loc, f)
	if err != nil {
		return again, err
	}
	return again, checkAcked(known, loc.path, again.next, again.torn)
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
