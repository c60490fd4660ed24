package file

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"slices"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/internal/format/logfile"
	"github.com/sessionlog/sessionlog/internal/format/zstdframe"
	"github.com/sessionlog/sessionlog/secrets/seal"
	"github.com/spf13/afero"
)

// Opening a session checks its whole log (docs/format.md §9: corruption is
// found at open), which costs a read of every row: seconds for a log of a
// gigabyte. Most opens are of a log that has not changed since this store
// last checked it (an agent resuming the session it closed), so the store
// keeps, beside each log, the result of its last check: the "checked"
// record. It names the file it was taken of (its identity: size,
// modification time and, on Linux, device, inode and change time) and the
// sum of its last bytes, and holds what the check found (where the rows
// end, the next seq, the seq index, the last zstd frame).
//
// An open whose file has exactly that identity and those last bytes uses
// the record instead of reading the log: no write through the file system
// has touched the file since it was checked (any write changes the change
// time, which no program can set back). Damage that bypasses the file
// system — a disk returning other bytes for an unchanged file — is found by
// verify and by every read that reaches it, never skipped. Any other open
// (the file changed, was copied, restored, or its writer crashed before it
// closed) reads the whole log, as before; a writer's open then saves a new
// record (a reader writes nothing into the store).
//
// The record is derived (sealed with a sum, not fsynced, deleted with the
// cache): a missing, damaged or stale record costs one full check, never
// a wrong answer. Records are kept only for logs that end cleanly (no torn
// tail).
//
// A zstd log without a tail frame at its end (its writer is still open, or
// crashed) has its last frame found by walking frame headers. The record
// bounds that walk: when the file still holds the bytes the record was
// taken of (same device and inode, size at least the record's, same last
// bytes there), Stat walks only the frames after it. A writer refreshes
// the record after every checkedStride bytes or checkedFrames frames it
// writes, so that walk stays bounded while it runs.

// checkedKey is the derived-cache key of the checked record.
const checkedKey = "checked"

// checkedMin: a log shorter than this keeps no checked record. Its full
// check reads no more than an open that trusts a record (the record, the
// log's head and its last bytes) and costs no more (BenchmarkOpenClosed),
// so a small session leaves no file beside its log and its lock.
const checkedMin = 32 << 10

// checkedTail is how many of a file's last bytes (before the record's
// size) the record sums.
const checkedTail = 4096

// A writer refreshes its log's checked record (zstd only) once it has
// written this many bytes or frames since the last one.
const (
	checkedStride = 1 << 20
	checkedFrames = 256
)

// fileIdentity is what tells a file and its state apart without reading
// it.
type fileIdentity struct {
	Size    int64  `json:"size"`
	ModTime int64  `json:"mtime"`           // Unix nanoseconds
	Dev     uint64 `json:"dev,omitempty"`   // Linux only
	Ino     uint64 `json:"ino,omitempty"`   // Linux only
	CTime   int64  `json:"ctime,omitempty"` // Unix nanoseconds, Linux only
}

func identityOf(fi fs.FileInfo) fileIdentity {
	id := fileIdentity{Size: fi.Size(), ModTime: fi.ModTime().UnixNano()}
	sysIdentity(fi, &id)
	return id
}

// sameFile reports whether a and b are the identities of one file (the
// same device and inode, where known).
func (a fileIdentity) sameFile(b fileIdentity) bool {
	return a.Dev == b.Dev && a.Ino == b.Ino
}

// checkedRecord is the data of a checkedKey file.
type checkedRecord struct {
	File      fileIdentity `json:"file"`
	Tail      string       `json:"tail"`      // hex sha256 of the last checkedTail bytes before File.Size
	Next      int64        `json:"next"`      // seq that follows the last event
	LastFrame [2]int64     `json:"lastFrame"` // zstd: offset and length of the last data frame
	Index     [][2]int64   `json:"index"`     // the seq index: {offset, seq}
	// Keys locate a sealed log's key records ({offset, length}): an open
	// that trusts the record reads them, to read from any index entry
	// and to write under the newest key.
	Keys [][2]int64 `json:"keys,omitempty"`
}

// tailSum returns the hex sha256 of the last checkedTail bytes before
// size in f.
func tailSum(f io.ReaderAt, size int64) (string, error) {
	from := max(0, size-checkedTail)
	b := make([]byte, size-from)
	if _, err := f.ReadAt(b, from); err != nil && !(err == io.EOF && len(b) == 0) {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// loadChecked returns session id's checked record, or false when there is
// none that is well formed, or the log is small (none is kept, and one an
// older version left is not read).
func (s *Store) loadChecked(ctx context.Context, id string, small bool) (checkedRecord, bool) {
	var rec checkedRecord
	if id == "" || small {
		return rec, false
	}
	b, err := s.GetDerived(ctx, id, checkedKey)
	if err != nil {
		return rec, false
	}
	return decodeChecked(b)
}

// decodeChecked parses a checked record and checks that it is coherent:
// an index that grows, entries and the last frame within the file. (That
// the index starts after the header is checked against the header, by
// checkLog.)
func decodeChecked(b []byte) (checkedRecord, bool) {
	var rec checkedRecord
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if d.Decode(&rec) != nil || d.More() {
		return rec, false
	}
	size := rec.File.Size
	if size <= 0 || rec.Next < 0 || len(rec.Index) == 0 || len(rec.Tail) != 2*sha256.Size {
		return rec, false
	}
	for i, e := range rec.Index {
		if e[0] <= 0 || e[0] > size || e[1] < 0 || e[1] > rec.Next ||
			i > 0 && (e[0] <= rec.Index[i-1][0] || e[1] < rec.Index[i-1][1]) {
			return rec, false
		}
	}
	if lf := rec.LastFrame; lf[0] < 0 || lf[1] < 0 || lf[0]+lf[1] > size {
		return rec, false
	}
	for _, k := range rec.Keys {
		if k[0] <= 0 || k[1] <= 0 || k[0]+k[1] > size {
			return rec, false
		}
	}
	return rec, true
}

// matches reports whether the log file f, whose identity is now, is the
// file rec was taken of, unchanged.
func (rec checkedRecord) matches(f io.ReaderAt, now fileIdentity) bool {
	return now == rec.File && rec.holdsPrefix(f, now)
}

// holdsPrefix reports whether the log file f, whose identity is now, still
// holds the bytes rec was taken of, perhaps followed by more: the same
// file, at least as long, with the same bytes before the record's size.
// It is a hint for finding the last frame, never a check of the log.
func (rec checkedRecord) holdsPrefix(f io.ReaderAt, now fileIdentity) bool {
	if !now.sameFile(rec.File) || now.Size < rec.File.Size {
		return false
	}
	sum, err := tailSum(f, rec.File.Size)
	return err == nil && sum == rec.Tail
}

// lastFrame returns the last data frame rec names, for a read of the
// log's tail (see logfile.ReadZstdTailAfter).
func (rec checkedRecord) lastFrame() zstdframe.Frame {
	return zstdframe.Frame{Offset: rec.LastFrame[0], Len: rec.LastFrame[1]}
}

// scan returns what rec says a full read of the log would find; hdr is
// the log's header, envs its key records (a sealed log's).
func (rec checkedRecord) scan(hdr eventlog.Header, envs []seal.Envelope) scanResult {
	sc := scanResult{hdr: hdr, end: rec.File.Size, next: rec.Next, lastFrame: rec.LastFrame, envs: envs}
	sc.index = make([]indexEntry, len(rec.Index))
	for i, e := range rec.Index {
		sc.index[i] = indexEntry{off: e[0], seq: e[1]}
	}
	return sc
}

// saveChecked keeps the checked record of session id's log file f, which
// a check (or this store's writer) found to end cleanly at sc.end; was,
// when not nil, is the file's identity before that check began. Nothing is
// saved when the file changed meanwhile or holds more than sc says. A
// failure only costs a later open one full check.
func (s *Store) saveChecked(ctx context.Context, id string, f afero.File, was *fileIdentity, sc scanResult) {
	if id == "" || sc.torn != nil || sc.end <= 0 {
		return
	}
	if sc.end < checkedMin {
		s.DeleteDerived(ctx, id, checkedKey) // an older version's
		return
	}
	fi, err := f.Stat()
	if err != nil {
		return
	}
	now := identityOf(fi)
	if was != nil && now != *was || now.Size != sc.end {
		return
	}
	sum, err := tailSum(f, now.Size)
	if err != nil {
		return
	}
	rec := checkedRecord{File: now, Tail: sum, Next: sc.next, LastFrame: sc.lastFrame,
		Index: make([][2]int64, len(sc.index)), Keys: sc.keySpans()}
	for i, e := range sc.index {
		rec.Index[i] = [2]int64{e.off, e.seq}
	}
	b, _ := json.Marshal(rec)
	if err := s.PutDerived(ctx, id, checkedKey, b); err != nil {
		s.cfg.Logger.Debug("saving the checked record failed", "id", id, "err", err)
	}
}

// checkLog returns what a full check of the log file f at loc finds,
// from its checked record when that names f unchanged, else by reading
// every row (and then, for a writer, saving a record: a reader writes
// nothing into the store). id is the session's ID in this store, or "" for
// a file outside it (no record is kept); nameID is the ID the file's name
// says, if any, which the header must match.
func (s *Store) checkLog(ctx context.Context, loc location, f afero.File, id, nameID string, writer bool) (scanResult, error) {
	var was *fileIdentity // nil: no identity, so no record is used or kept
	if fi, err := f.Stat(); err == nil {
		id := identityOf(fi)
		was = &id
	}
	small := was == nil || was.Size < checkedMin
	if rec, ok := s.loadChecked(ctx, id, small); ok && rec.matches(f, *was) && (loc.sealed != nil) == (rec.Keys != nil) {
		// The header and the last event, a bounded read, must agree with
		// the record: a record is trusted with the rest. A sealed log's
		// key records come first: the last row may be sealed with a key
		// whose records stand past the head.
		src := ctxReaderAt{ctx: ctx, r: f}
		var envs []seal.Envelope
		var err error
		if loc.sealed != nil {
			envs, err = loc.readEnvelopes(src, rec.Keys)
		}
		var t logfile.Tail
		if err == nil {
			t, err = loc.tail(src, was.Size, rec.lastFrame)
		}
		next := t.Header.FirstSeq()
		if t.Found {
			next = t.Last.Seq + 1
		}
		if err == nil && t.Header.ID == nameID && next == rec.Next && rec.Index[0][1] >= t.Header.FirstSeq() {
			return rec.scan(t.Header, envs), nil
		}
	}
	sc, err := scanLog(ctx, loc, f)
	if err == nil {
		sc, err = s.judgeTorn(ctx, id, loc, f, sc)
	}
	if err == nil && nameID != "" && sc.hdr.ID != nameID {
		err = &eventlog.CorruptError{Path: loc.path, Seq: -1, Reason: "header id " + sc.hdr.ID + " does not match the file name", Fix: idMismatchFix}
	}
	if err != nil {
		return sc, err
	}
	if writer && was != nil {
		s.saveChecked(ctx, id, f, was, sc)
	}
	return sc, nil
}

// ownScan returns what a full check of b's log would find: where its
// flushed rows end, the seq after the last durable event. Callers hold mu.
func (b *fileBackend) ownScan() scanResult {
	return scanResult{hdr: b.hdr, end: b.size, next: b.next, index: slices.Clone(b.index), lastFrame: b.lastFrame, keys: slices.Clone(b.keys)}
}

// saveOwnChecked saves the checked record of the log b wrote (sc, from
// ownScan), so that the next open need not read it. Called by Close after
// the last flush and the tail frame, once b's file is closed (closing a
// file may set its modification time) and with the lock still held.
func (b *fileBackend) saveOwnChecked(ctx context.Context, sc scanResult) {
	if b.cutTorn || b.store.cfg.CompactOnClose && b.wrote {
		return // the file still ends in a torn tail, or was rewritten
	}
	loc := b.loc()
	f, err := b.store.openLog(ctx, &loc, os.O_RDONLY)
	if err != nil {
		return
	}
	defer f.Close()
	b.store.saveChecked(ctx, b.hdr.ID, f, nil, sc)
}

// checkedDue reports whether a zstd writer's checked record is due for a
// refresh after a flush of n bytes in frames frames, so that a Stat while
// the writer runs walks a bounded number of frames (see checkedStride).
// Callers hold mu.
func (b *fileBackend) checkedDue(n, frames int) bool {
	if b.enc.z == nil {
		return false
	}
	b.sinceChecked[0] += int64(n)
	b.sinceChecked[1] += int64(frames)
	if b.sinceChecked[0] < checkedStride && b.sinceChecked[1] < checkedFrames {
		return false
	}
	b.sinceChecked = [2]int64{}
	return true
}

// saveWritten leaves beside the log the store just wrote whole at loc
// (CreateFrom, a rewrite) the derived records a writer's Close leaves: the
// checked record (sc says what a full check of it finds) and the evidence
// of its acknowledged seqs (the store core saves the digest's states).
// Called once the
// file has its name (a rename sets its change time); a failure only costs
// a later open, checkpoint or fork a pass over the log.
func (s *Store) saveWritten(ctx context.Context, loc location, sc scanResult) {
	s.saveAcked(ctx, sc.hdr, sc.next)
	f, err := s.openLog(ctx, &loc, os.O_RDONLY)
	if err != nil {
		return
	}
	defer f.Close()
	s.saveChecked(ctx, sc.hdr.ID, f, nil, sc)
}
