package file

import (
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/internal/format/zstdframe"

	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"iter"
	"os"
	"path/filepath"
	"slices"

	"github.com/sessionlog/sessionlog/eventlog"
)

// Convert rewrites session id in the given encoding (handle.EncodingRaw or
// handle.EncodingZstd), atomically: the new log is written to a temp file,
// fsynced and read back, and replaces the old one only if its logical log
// is byte-identical in canonical form (so every digest is kept); then
// rename, fsync the folder, remove the old file (the name changes with the
// encoding), fsync the folder. A crash at any moment leaves the old file,
// or the new one, or both with the same log (resolved on open, docs/format.md §2).
// A zstd log is written in frames of about zstdframe.Target bytes, so
// converting zstd to zstd compacts it. A torn tail is not carried over.
// Convert takes the writer lock: ErrLocked while a writer holds the session.
func (s *Store) Convert(ctx context.Context, id, encodingName string) error {
	dst, err := s.encodingNamed(encodingName)
	if err != nil {
		return err
	}
	if _, err := s.existing(ctx, id); err != nil {
		return err
	}
	lock, err := s.lockMarked(id)
	if err != nil {
		return err
	}
	defer lock.unlock()
	loc, err := s.locate(ctx, id)
	if err != nil {
		return err
	}
	return s.rewriteFile(ctx, id, loc, dst)
}

// Compact rewrites a session's zstd frames into large ones (see Convert);
// small per-flush frames compress poorly.
func (s *Store) Compact(ctx context.Context, id string) error {
	return s.Convert(ctx, id, handle.EncodingZstd)
}

// rewriteFile rewrites the file at loc, as it is, in encoding dst. The
// caller holds the writer lock.
func (s *Store) rewriteFile(ctx context.Context, id string, loc location, dst *encoding) error {
	in, err := s.openLog(ctx, &loc, os.O_RDONLY)
	if err != nil {
		return fmt.Errorf("handle: rewrite: %w", err)
	}
	defer in.Close()
	r := loc.reader(ctx, in, readOpts{})
	hdr, err := r.Header()
	if err != nil {
		return err
	}
	plan, err := s.rewritePlan(ctx, loc, hdr, dst)
	if err != nil {
		return err
	}
	return s.rewrite(ctx, id, loc, dst, hdr, plan, r.All())
}

// rewritePlan returns how a rewrite into dst of the log at loc, whose new
// header is hdr, is sealed: as the log is (the same key records, rows
// under its newest key, which a read of its framing finds), or nil for a
// clear log.
func (s *Store) rewritePlan(ctx context.Context, loc location, hdr eventlog.Header, dst *encoding) (*sealPlan, error) {
	fr, err := s.framingAt(ctx, &loc)
	if err != nil || fr == nil {
		return nil, err
	}
	for _, e := range fr.Envelopes {
		loc.sealed.kr.Add(e)
	}
	return sealPlanFrom(hdr, dst, fr.Envelopes, loc.sealed.kr, loc.path)
}

// rewrite writes hdr and events as session id's new log in encoding dst,
// sealed as plan says (nil: clear), through a temp file that is fsynced
// and read back; it replaces the file at loc only if the temp file holds
// exactly the events given (compared by the digest of their canonical
// lines), then removes the old file if the name changed. The caller holds
// the writer lock.
func (s *Store) rewrite(ctx context.Context, id string, loc location, dst *encoding, hdr eventlog.Header, plan *sealPlan, events iter.Seq2[eventlog.Event, error]) error {
	dstPath := filepath.Join(s.dir, id+dst.ext)
	tmp := dstPath + tmpExt
	want, sc, err := s.writeCopy(ctx, hdr, events, dst, plan, tmp)
	if err == nil {
		var got []byte
		got, err = s.logDigest(ctx, location{path: tmp, enc: dst})
		if err == nil && !bytes.Equal(got, want) {
			err = fmt.Errorf("handle: rewrite %q: the rewritten log differs from the original; nothing replaced", loc.path)
		}
	}
	if err == nil {
		err = s.fs.Rename(tmp, dstPath)
	}
	if err != nil {
		s.fs.Remove(tmp)
		return err
	}
	if err := syncDir(s.fs, s.dir); err != nil {
		return fmt.Errorf("handle: rewrite %q: sync folder: %w", loc.path, err)
	}
	for _, p := range []string{loc.path, loc.stale} {
		if p != "" && p != dstPath {
			if err := s.removeDurably(p); err != nil {
				return err
			}
		}
	}
	s.saveWritten(ctx, location{path: dstPath, enc: dst}, sc)
	s.cfg.Logger.Info("session rewritten", "id", id, "from", loc.enc.name, "to", dst.name)
	return nil
}

// writeCopy streams hdr and events into tmp in encoding dst, sealed as
// plan says (nil: clear; its data key is kept for reading tmp back),
// fsyncs it, and returns the digest of the events' canonical lines and
// what a full check of the file would find (for its checked record).
func (s *Store) writeCopy(ctx context.Context, hdr eventlog.Header, events iter.Seq2[eventlog.Event, error], dst *encoding, plan *sealPlan, tmp string) ([]byte, scanResult, error) {
	if plan != nil {
		s.remember(plan)
	}
	out, err := openRegular(s.fs, tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, false)
	if err != nil {
		return nil, scanResult{}, fmt.Errorf("handle: writing %q: %w", tmp, err)
	}
	w := &copyWriter{f: out, dst: dst, enc: s.enc, plan: plan}
	sum, err := w.copyLog(ctx, hdr, events)
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return nil, scanResult{}, fmt.Errorf("handle: writing %q: %w", tmp, err)
	}
	sc := scanResult{hdr: hdr, end: w.off, next: w.next, index: w.index, lastFrame: w.lastFrame}
	if plan != nil {
		sc.envs = plan.Head.Envelopes
	}
	return sum, sc, nil
}

// copyWriter writes a log in an encoding, the header alone first, then
// the rows in writes of about zstdframe.Target bytes (zstd: each its
// frames) or of the seq index's stride (raw), and keeps the seq index a
// full check of the file would build.
type copyWriter struct {
	f         io.Writer
	dst       *encoding
	enc       *eventlog.Encoder
	plan      *sealPlan // nil: a clear log
	off       int64
	next      int64 // the seq after the last event written
	index     []indexEntry
	lastFrame [2]int64
	rows, out []byte
	scratch   []byte // a frame before it is sealed
}

func (w *copyWriter) write(rows []byte) error {
	var last int
	var err error
	if w.plan != nil {
		var z *eventlog.ZstdCodec
		if z, err = w.dst.rewriteCodec(); err == nil {
			w.out, last, err = w.plan.seal(w.out[:0], rows, z, &w.scratch)
		}
	} else {
		w.out, last, err = w.dst.rewriteFrames(w.out[:0], rows)
	}
	if err != nil {
		return err
	}
	if _, err := w.f.Write(w.out); err != nil {
		return err
	}
	w.lastFrame = [2]int64{w.off + int64(last), int64(len(w.out) - last)}
	w.off += int64(len(w.out))
	return nil
}

// copyLog writes the header and the events (whose seqs must follow on
// from the header's first seq) and returns the digest of their canonical
// lines.
func (w *copyWriter) copyLog(ctx context.Context, hdr eventlog.Header, events iter.Seq2[eventlog.Event, error]) ([]byte, error) {
	line, err := eventlog.EncodeHeader(hdr)
	if err != nil {
		return nil, err
	}
	if w.plan != nil {
		// The clear header and the key records, then rows sealed.
		if _, err := w.f.Write(w.plan.Records); err != nil {
			return nil, err
		}
		w.off += int64(len(w.plan.Records))
	}
	if err := w.write(append(line, '\n')); err != nil {
		return nil, err
	}
	sum := sha256.New()
	var batch []eventlog.Event
	size := 0
	next := hdr.FirstSeq()
	w.index, w.next = []indexEntry{{off: w.off, seq: next}}, next
	target := zstdframe.Target
	if w.dst.z == nil {
		target = indexStride
	}
	flush := func() error {
		w.index = addIndex(w.index, w.off, batch[0].Seq)
		w.rows = w.enc.AppendRows(w.rows[:0], batch)
		batch, size = batch[:0], 0
		return w.write(w.rows)
	}
	for e, err := range events {
		if err != nil {
			return nil, err
		}
		if e.Seq != next {
			return nil, fmt.Errorf("seq %d where %d was expected", e.Seq, next)
		}
		next++
		writeCanon(sum, e)
		// A write of about target bytes: flush before the row that would
		// pass it.
		if rs := eventlog.RowSize(e); size > 0 && size+rs > target {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if err := flush(); err != nil {
				return nil, err
			}
		}
		batch = append(batch, e)
		size += eventlog.RowSize(e)
	}
	if w.dst.z != nil && size > 2*zstdframe.LastTarget {
		// The last rows in a small frame of their own: a tail read decodes
		// that frame (zstdframe.LastTarget), not FrameTarget's worth.
		i, last := len(batch)-1, eventlog.RowSize(batch[len(batch)-1])
		for i > 0 && last+eventlog.RowSize(batch[i-1]) <= zstdframe.LastTarget {
			i--
			last += eventlog.RowSize(batch[i])
		}
		tail := slices.Clone(batch[i:])
		batch = batch[:i]
		if err := flush(); err != nil {
			return nil, err
		}
		batch = append(batch, tail...)
	}
	if len(batch) > 0 {
		if err := flush(); err != nil {
			return nil, err
		}
	}
	w.next = next
	if w.dst.z != nil {
		tail := zstdframe.AppendTail(nil, w.off, w.lastFrame[0], w.lastFrame[1], next)
		if _, err := w.f.Write(tail); err != nil {
			return nil, err
		}
		w.off += int64(len(tail))
	}
	return sum.Sum(nil), nil
}

func writeCanon(h hash.Hash, e eventlog.Event) {
	var buf [512]byte
	b := append(eventlog.AppendCanon(buf[:0], e), '\n')
	h.Write(b)
}

// logDigest reads a whole log and returns the sha256 of its canonical
// event lines; a torn tail is left out, corruption is an error.
func (s *Store) logDigest(ctx context.Context, loc location) ([]byte, error) {
	f, err := s.openLog(ctx, &loc, os.O_RDONLY)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := loc.reader(ctx, f, readOpts{})
	if _, err := r.Header(); err != nil {
		return nil, err
	}
	sum := sha256.New()
	for r.Next() {
		writeCanon(sum, r.Event())
	}
	if err := r.Err(); err != nil {
		return nil, err
	}
	return sum.Sum(nil), nil
}

// sameLog reports whether two files hold the same logical log.
func (s *Store) sameLog(ctx context.Context, a, b location) (bool, error) {
	da, err := s.logDigest(ctx, a)
	if err != nil {
		return false, errors.Join(fmt.Errorf("%w: %q and %q both exist", ErrDuplicate, a.path, b.path), err)
	}
	db, err := s.logDigest(ctx, b)
	if err != nil {
		return false, errors.Join(fmt.Errorf("%w: %q and %q both exist", ErrDuplicate, a.path, b.path), err)
	}
	return bytes.Equal(da, db), nil
}
