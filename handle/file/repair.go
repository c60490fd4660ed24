package file

import (
	"github.com/sessionlog/sessionlog/handle"

	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/afero"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/secrets/seal"
)

// Salvage is SalvagePath for session id's log file (handle.Salvager).
func (s *Store) Salvage(ctx context.Context, id string, yield func(eventlog.Event) bool) (eventlog.SalvageResult, error) {
	path, err := s.Path(id)
	if err != nil {
		return eventlog.SalvageResult{}, err
	}
	return s.SalvagePath(ctx, path, yield)
}

// SalvagePath reads the log file at path past damage, for inspection (see
// eventlog.Salvage): every event it can decode goes to yield, and the
// result lists each damaged range with the seqs lost. A fork's inherited
// events come first, read from its parent in the store's folder; they are
// not salvaged (a damaged parent fails with its error: salvage the parent
// first). It changes nothing.
func (s *Store) SalvagePath(ctx context.Context, path string, yield func(eventlog.Event) bool) (eventlog.SalvageResult, error) {
	if err := ctx.Err(); err != nil {
		return eventlog.SalvageResult{}, err
	}
	loc, _, err := s.pathLocation(path)
	if err != nil {
		return eventlog.SalvageResult{}, err
	}
	// A header that cannot be read is reported by Salvage itself.
	if hdr, err := s.readHeaderAt(loc); err == nil && hdr.Parent != nil && hdr.Parent.Mode == eventlog.ModeFork {
		more, err := s.inherited(ctx, path, *hdr.Parent, yield)
		if err != nil || !more {
			return eventlog.SalvageResult{Header: hdr}, err
		}
	}
	f, err := s.openLog(ctx, &loc, os.O_RDONLY)
	if err != nil {
		return eventlog.SalvageResult{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return eventlog.SalvageResult{}, fmt.Errorf("handle: stat %q: %w", path, err)
	}
	return s.salvage(ctx, loc, f, fi.Size(), yield)
}

// salvage reads the log f at loc (size bytes) past damage (see
// eventlog.Salvage); a sealed log restarts at its next record.
func (s *Store) salvage(ctx context.Context, loc location, f io.ReaderAt, size int64, yield func(eventlog.Event) bool) (eventlog.SalvageResult, error) {
	src := ctxReaderAt{ctx: ctx, r: f}
	if loc.sealed == nil {
		return eventlog.Salvage(src, size, loc.enc.z, loc.path, yield)
	}
	open := func(off int64) eventlog.SalvageReader {
		o := readOpts{}
		if off > 0 {
			o = readAt(off, eventlog.AnySeq, 0)
		}
		return loc.reader(ctx, io.NewSectionReader(src, off, size-off), o)
	}
	next := func(off int64) (int64, bool, error) { return seal.NextRecord(src, size, off, loc.sealed.layout()) }
	return eventlog.SalvageWith(open, next, size, loc.path, yield)
}

// inherited yields the events the fork at path inherits (its parent's
// logical log up to the fork point); more is false when yield stopped.
func (s *Store) inherited(ctx context.Context, path string, p eventlog.Parent, yield func(eventlog.Event) bool) (more bool, err error) {
	h, err := s.Open(ctx, p.ID, handle.ReadOnly)
	if err != nil {
		return false, fmt.Errorf("handle: %q forks from %s: %w", path, p.ID, err)
	}
	defer h.Close()
	next := int64(0)
	for e, err := range h.Read(ctx, 0, p.Seq) {
		if err != nil {
			return false, fmt.Errorf("handle: %q forks from %s: %w", path, p.ID, err)
		}
		if !yield(e) {
			return false, nil
		}
		next = e.Seq + 1
	}
	if next <= p.Seq {
		return false, &handle.LineageError{Path: path, Parent: p.ID, Seq: p.Seq, Reason: fmt.Sprintf("the parent ends at seq %d", next-1)}
	}
	return true, nil
}

// Repair makes a session's log clean, under its writer lock: a torn tail
// is cut off (truncate, fsync); with salvage, a corrupt log is cut at its
// first damage. The bytes cut are first copied to a side file beside the
// log (<file>.torn-<offset> or <file>.salvaged-<offset>, with a suffix .N
// when a side file of that name exists; fsynced), so nothing is destroyed, and the report names the seqs lost. Without
// salvage a corrupt log is left untouched and its *CorruptError returned.
// Repair is never run automatically.
func (s *Store) Repair(ctx context.Context, id string, salvage bool) (handle.RepairReport, error) {
	rep := handle.RepairReport{FirstLost: 1}
	if _, err := s.existing(ctx, id); err != nil {
		return rep, err
	}
	lock, err := s.lockMarked(id)
	if err != nil {
		return rep, err
	}
	defer lock.unlock()
	loc, err := s.locate(ctx, id)
	if err != nil {
		return rep, err
	}
	f, err := s.openLog(ctx, &loc, os.O_RDWR)
	if err != nil {
		return rep, fmt.Errorf("handle: repair: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return rep, fmt.Errorf("handle: repair %q: %w", loc.path, err)
	}
	size := fi.Size()
	known := s.knownDurable(ctx, id)
	sc, err := scanLog(ctx, loc, f)
	if err == nil {
		// A tail that holds acknowledged seqs is corruption: only a
		// salvage cuts it.
		err = checkAcked(known, loc.path, sc.next, sc.torn)
	}
	var ce *eventlog.CorruptError
	switch {
	case err == nil && sc.torn == nil:
		rep.Events = sc.next - sc.hdr.FirstSeq()
		return rep, nil
	case err == nil:
		cut, err := s.cutAt(f, loc.path, "torn", sc.torn.Offset, size)
		if err != nil {
			return rep, err
		}
		rep.Torn = cut
		rep.Events = sc.next - sc.hdr.FirstSeq()
	case errors.As(err, &ce) && salvage && ce.Offset > 0:
		// What a salvage read finds from the damage on is what the cut
		// loses.
		var lastSeen int64 = -1
		res, serr := s.salvage(ctx, loc, f, size, func(e eventlog.Event) bool {
			lastSeen = e.Seq
			return true
		})
		if serr != nil {
			return rep, serr
		}
		cut, err := s.cutAt(f, loc.path, "salvaged", ce.Offset, size)
		if err != nil {
			return rep, err
		}
		rep.Salvaged = cut
		rep.FirstLost, rep.LastLost = ce.Seq, max(lastSeen, ce.Seq)
		if len(res.Skips) > 0 && res.Skips[len(res.Skips)-1].LastLost > rep.LastLost {
			rep.LastLost = res.Skips[len(res.Skips)-1].LastLost
		}
		rep.Events = ce.Seq - res.Header.FirstSeq()
	default:
		return rep, err
	}
	s.dropDerived(id)
	s.cfg.Logger.Info("session repaired", "id", id, "torn", rep.Torn, "salvaged", rep.Salvaged)
	return rep, nil
}

// maxSideFiles bounds the side files of one log cut at one offset.
const maxSideFiles = 1000

// cutAt copies bytes [off, size) of f to a new side file (fsynced, folder
// fsynced), then truncates f at off and fsyncs it.
func (s *Store) cutAt(f interface {
	io.ReaderAt
	Truncate(int64) error
	Sync() error
}, path, kind string, off, size int64) (*handle.Cut, error) {
	// A side file is never overwritten: a later repair may cut at the
	// same offset (appends go on from a cut), and each keeps its bytes.
	side := fmt.Sprintf("%s.%s-%d", path, kind, off)
	var out afero.File
	var err error
	for n := 1; ; n++ {
		out, err = openRegular(s.fs, side, os.O_CREATE|os.O_EXCL|os.O_WRONLY, false)
		if !errors.Is(err, fs.ErrExist) || n > maxSideFiles {
			break
		}
		side = fmt.Sprintf("%s.%s-%d.%d", path, kind, off, n)
	}
	if err != nil {
		return nil, fmt.Errorf("handle: repair %q: side file: %w", path, err)
	}
	_, err = io.Copy(out, io.NewSectionReader(f, off, size-off))
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = syncDir(s.fs, filepath.Dir(side))
	}
	if err != nil {
		s.fs.Remove(side) // a partial copy is no evidence; the log is untouched
		return nil, fmt.Errorf("handle: repair %q: side file: %w", path, err)
	}
	if err := f.Truncate(off); err != nil {
		return nil, fmt.Errorf("handle: repair %q: truncate at %d: %w", path, off, err)
	}
	if err := f.Sync(); err != nil {
		return nil, fmt.Errorf("handle: repair %q: fsync: %w", path, err)
	}
	return &handle.Cut{Offset: off, Bytes: size - off, Side: side}, nil
}
