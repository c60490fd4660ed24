package file

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/sessionlog/sessionlog/handle/core"
)

// CheckedMin is the size below which a log keeps no checked record.
const CheckedMin = checkedMin

// SealDerived returns the content of a derived file holding data (tests
// only): its sum line, then data.
func SealDerived(data []byte) []byte { return append(sealDerived(data), data...) }

// ForgetAcknowledged removes the store's evidence of what session id's
// writers acknowledged (tests only), as if its last write had never been
// acknowledged: tests that tear a write after closing its writer use it.
func ForgetAcknowledged(s *Store, id string) {
	for _, key := range []string{core.DigestKey, ackedKey} {
		_ = s.DeleteDerived(context.Background(), id, key)
	}
	if l, err := s.lockMarked(id); err == nil {
		s.noteAcked(id, 0) // the index's: a post that resets it
		l.unlock()
	}
}

// CheckedRecord reports whether session id has a checked record that
// names its log file as it is now (tests only), and, when it does, an
// error unless the record says what a full check of the log finds: the
// end of its rows, the next seq, the last zstd frame, and index entries
// that are each the start of the row holding their seq.
func CheckedRecord(ctx context.Context, s *Store, id string) (bool, error) {
	rec, ok := s.loadChecked(ctx, id, false)
	if !ok {
		return false, nil
	}
	loc, err := s.locate(ctx, id)
	if err != nil {
		return false, err
	}
	f, err := s.openLog(ctx, &loc, os.O_RDONLY)
	if err != nil {
		return false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return false, err
	}
	if !rec.matches(f, identityOf(fi)) {
		return false, nil
	}
	sc, err := scanLog(ctx, loc, f)
	if err != nil {
		return true, err
	}
	if rec.Next != sc.next || rec.File.Size != sc.end || loc.enc.z != nil && rec.LastFrame != sc.lastFrame {
		return true, fmt.Errorf("record next %d, end %d, last frame %v; the log: %d, %d, %v",
			rec.Next, rec.File.Size, rec.LastFrame, sc.next, sc.end, sc.lastFrame)
	}
	if keys := keysOf(sc.envs); !slices.Equal(rec.Keys, keys) {
		return true, fmt.Errorf("record's key records %v; the log's: %v", rec.Keys, keys)
	}
	for _, e := range rec.Index {
		r := loc.reader(ctx, io.NewSectionReader(f, e[0], sc.end-e[0]), readAt(e[0], e[1], 0))
		for ev, err := range r.All() {
			if err != nil {
				return true, fmt.Errorf("index entry %v: %w", e, err)
			}
			if ev.Seq != e[1] {
				return true, fmt.Errorf("index entry %v: the row there holds seq %d", e, ev.Seq)
			}
			break
		}
	}
	return true, nil
}

// FoldIndex folds the marks of the store's session index into a new
// snapshot (tests only): from the logs when full, as RebuildIndex does.
func FoldIndex(ctx context.Context, s *Store, full bool) error { return s.fold(ctx, full) }

// SetIndexFoldAt makes an open of st's session index fold the marks into
// the delta past delta marks, and into a new snapshot past snapshot
// sessions in the delta and the marks (tests only): folds then happen
// among few changes.
func SetIndexFoldAt(st *Store, delta, snapshot int) { st.six.foldAt = [2]int{delta, snapshot} }

// FoldIndexDelta folds the marks of the store's session index into the
// snapshot's delta (tests only).
func FoldIndexDelta(ctx context.Context, s *Store) error { return s.foldDelta(ctx) }
