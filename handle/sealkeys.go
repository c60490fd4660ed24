package handle

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"filippo.io/age"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/seal"
)

// The data keys of a sealed session (docs/format.md §11) change only by
// appending key records: a recipient added gets an envelope of every data
// key, and a rotation a new key for the rows after it. Both run between
// writers, under the session's writer lock; a writer that opens next
// seals under the newest key. Shredding destroys every envelope.

// ErrNotSealed is returned by the operations of sealed sessions
// (AddRecipients, RotateKey, Shred) on a session that is not sealed.
var ErrNotSealed = errors.New("handle: the session is not sealed")

// AddRecipients wraps every data key of sealed session id for rs and
// appends the key records, durably, under the session's writer lock
// (ErrLocked while a writer holds it): the new recipients read the whole
// log, its derived data included. The store must hold every key of the
// session (its identities open them, or it made them).
func (s *FileStore) AddRecipients(ctx context.Context, id string, rs ...age.Recipient) error {
	return s.appendKeys(ctx, id, func(b *fileBackend, envs []seal.Envelope) ([]byte, error) {
		var recs []byte
		for _, k := range keyIDs(envs) {
			key, err := b.sealed.kr.Key(k)
			if err != nil {
				return nil, noKey(err, b.path)
			}
			wrapped, err := seal.Wrap(id, key, rs...)
			if err != nil {
				return nil, err
			}
			for _, w := range wrapped {
				recs = seal.AppendKeyRecord(recs, b.sealed.layout(), k, w)
			}
		}
		return recs, nil
	})
}

// RotateKey starts a new data key for sealed session id, wrapped for rs,
// and appends its key records durably, under the session's writer lock:
// the rows appended after it are sealed with it (and the session's
// derived data), the rows before keep theirs. Use it before a key has
// sealed seal.MaxRecordsPerKey records, or to give the rows to come to
// other recipients than those before (the old recipients keep reading
// the old rows). The store reads the session first (its identities must
// open its keys).
func (s *FileStore) RotateKey(ctx context.Context, id string, rs ...age.Recipient) error {
	return s.appendKeys(ctx, id, func(b *fileBackend, envs []seal.Envelope) ([]byte, error) {
		ks := keyIDs(envs)
		next := ks[len(ks)-1] + 1
		key, err := seal.NewKey(next)
		if err != nil {
			return nil, err
		}
		wrapped, err := seal.Wrap(id, key, rs...)
		if err != nil {
			return nil, err
		}
		var recs []byte
		for _, w := range wrapped {
			recs = seal.AppendKeyRecord(recs, b.sealed.layout(), next, w)
		}
		b.sealed.kr.AddKey(key) // this process writes under it next
		return recs, nil
	})
}

// appendKeys opens sealed session id for writing (which recovers it, and
// reads its key records), appends the key records records makes, and
// closes it.
func (s *FileStore) appendKeys(ctx context.Context, id string, records func(b *fileBackend, envs []seal.Envelope) ([]byte, error)) error {
	if _, err := s.existing(ctx, id); err != nil {
		return err
	}
	lock, err := lockFile(s.fs, s.lockPath(id))
	if err != nil {
		return err
	}
	b, sc, err := s.openBackend(ctx, id, os.O_RDWR, lock)
	if err != nil {
		lock.unlock()
		return err
	}
	err = func() error {
		if b.sealed == nil {
			return fmt.Errorf("%w: %s", ErrNotSealed, b.path)
		}
		recs, err := records(b, sc.envs)
		if err != nil {
			return err
		}
		return b.appendRecords(recs)
	}()
	if cerr := b.Close(ctx, err == nil); err == nil {
		err = cerr
	}
	return err
}

// keyIDs returns the numbers of the data keys envs wrap, sorted.
func keyIDs(envs []seal.Envelope) []uint32 {
	var out []uint32
	for _, e := range envs {
		if !slices.Contains(out, e.Key) {
			out = append(out, e.Key)
		}
	}
	slices.Sort(out)
	return out
}

// noKey adds the path to a *seal.KeyError.
func noKey(err error, path string) error {
	var ke *seal.KeyError
	if errors.As(err, &ke) {
		ke.Path = path
	}
	return err
}

// appendRecords writes key records at the end of the log, durably (a
// torn tail is cut first), where a writer's next rows go: records of a
// key precede the rows it seals.
func (b *fileBackend) appendRecords(recs []byte) error {
	b.mu.Lock()
	cut, at := b.cutTorn, b.size
	b.mu.Unlock()
	if err := b.write(cut, at, recs, []int{0}); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.cutTorn = false
	b.keys = append(b.keys, recordSpans(at, recs, b.sealed.layout())...)
	b.size += int64(len(recs))
	b.wrote = true // a zstd log gets a tail frame after them
	return nil
}

// recordSpans returns where the key records recs, written at offset at,
// stand: {offset, length}, as envelopesOf gives them.
func recordSpans(at int64, recs []byte, layout seal.Encoding) [][2]int64 {
	var out [][2]int64
	for off := 0; off < len(recs); {
		n := 0
		if layout == seal.Zstd {
			n = 8 + int(uint32(recs[off+4])|uint32(recs[off+5])<<8|uint32(recs[off+6])<<16|uint32(recs[off+7])<<24)
			out = append(out, [2]int64{at + int64(off), int64(n)})
		} else {
			for recs[off+n] != '\n' {
				n++
			}
			out = append(out, [2]int64{at + int64(off), int64(n)})
			n++
		}
		off += n
	}
	return out
}

// ShredReport says what Shred did.
type ShredReport struct {
	// Shredded lists the sessions shredded: the one asked for, then (with
	// ShredDescendants) its forks and children, and theirs.
	Shredded []string `json:"shredded"`
	// Envelopes counts the key records destroyed.
	Envelopes int `json:"envelopes"`
}

// ShredOption changes what Shred does with the sessions under the one
// shredded.
type ShredOption func(*shredConfig)

type shredConfig struct{ descendants bool }

// ShredDescendants shreds the session's forks and children too, and
// theirs: a fork reads its parent's rows (it would be left unreadable),
// and a child holds the rest of its parent's conversation.
func ShredDescendants() ShredOption { return func(c *shredConfig) { c.descendants = true } }

// Shred destroys every key record of sealed session id, so that its
// content cannot be read with any identity (docs/format.md §11,
// "Shredding"): under its writer lock, the file is rewritten through a
// temp file and an atomic rename with every key record replaced by one of
// the same length that holds nothing of its key; then the key records of
// the old file are overwritten where they stood (best effort: see the
// doc), its derived data removed, and the keys this store kept
// forgotten. The session stays, unreadable: its ID, createdAt and parent
// are in clear. Sessions forked from it are refused with a
// *DependentsError unless ShredDescendants is given (children, which
// inherit nothing, are shredded with it only then). Shredding a session
// that is not sealed is refused (ErrNotSealed): nothing could be
// destroyed.
func (s *FileStore) Shred(ctx context.Context, id string, opts ...ShredOption) (ShredReport, error) {
	var c shredConfig
	for _, o := range opts {
		o(&c)
	}
	var rep ShredReport
	err := s.shred(ctx, id, c, map[string]bool{}, &rep)
	return rep, err
}

func (s *FileStore) shred(ctx context.Context, id string, c shredConfig, visited map[string]bool, rep *ShredReport) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if _, err := s.existing(ctx, id); err != nil {
		return err
	}
	if visited[id] {
		return fmt.Errorf("%w: %s is its own ancestor", ErrLineage, id)
	}
	visited[id] = true
	lock, err := lockFile(s.fs, s.lockPath(id))
	if err != nil {
		return err
	}
	defer lock.unlock()
	children, err := s.Children(ctx, id)
	if err != nil {
		return err
	}
	var forks []string
	for _, h := range children {
		if h.Parent.Mode == eventlog.ModeFork {
			forks = append(forks, h.ID)
		}
	}
	if len(forks) > 0 && !c.descendants {
		return &DependentsError{ID: id, Dependents: forks}
	}
	n, err := s.shredFile(ctx, id)
	if err != nil {
		return err
	}
	rep.Shredded = append(rep.Shredded, id)
	rep.Envelopes += n
	if c.descendants {
		for _, h := range children {
			if err := s.shred(ctx, h.ID, c, visited, rep); err != nil && !errors.Is(err, ErrNotSealed) {
				return err
			}
		}
	}
	return nil
}

// shredFile shreds session id's file (the caller holds its writer lock)
// and returns how many key records it destroyed.
func (s *FileStore) shredFile(ctx context.Context, id string) (int, error) {
	loc, err := s.locate(ctx, id)
	if err != nil {
		return 0, err
	}
	old, err := s.openLog(ctx, &loc, os.O_RDWR)
	if err != nil {
		return 0, err
	}
	defer old.Close()
	if loc.sealed == nil {
		return 0, fmt.Errorf("%w: %s", ErrNotSealed, loc.path)
	}
	fi, err := old.Stat()
	if err != nil {
		return 0, fmt.Errorf("handle: shred %q: %w", loc.path, err)
	}
	size := fi.Size()
	// Every key record, wherever it stands: the framing alone says (a
	// damaged tail is copied as it is, and holds no key record).
	fr, err := seal.Check(ctxReader{ctx: ctx, r: io.NewSectionReader(old, 0, size)}, loc.sealed.layout(), loc.path)
	if err != nil {
		return 0, err
	}
	type patch struct {
		off int64
		b   []byte
	}
	var patches []patch
	for _, e := range fr.Envelopes {
		if e.Shredded {
			continue
		}
		rec := make([]byte, e.Len)
		if _, err := old.ReadAt(rec, e.Offset); err != nil {
			return 0, fmt.Errorf("handle: shred %q: %w", loc.path, err)
		}
		b, err := seal.Shred(loc.sealed.layout(), rec)
		if err != nil {
			return 0, fmt.Errorf("handle: shred %q at offset %d: %w", loc.path, e.Offset, err)
		}
		patches = append(patches, patch{e.Offset, b})
	}
	// A torn tail is cut, as a writer would: it may hold a key record cut
	// short, its envelope whole.
	if fr.Torn != nil {
		size = fr.Torn.Offset
	}
	// The whole file through a temp file and an atomic rename, as every
	// rewrite: a crash leaves the old file or the shredded one.
	err = WriteFileAtomic(s.fs, loc.path, func(w io.Writer) error {
		at := int64(0)
		for _, p := range patches {
			if _, err := io.Copy(w, io.NewSectionReader(old, at, p.off-at)); err != nil {
				return err
			}
			if _, err := w.Write(p.b); err != nil {
				return err
			}
			at = p.off + int64(len(p.b))
		}
		_, err := io.Copy(w, io.NewSectionReader(old, at, size-at))
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("handle: shred %q: %w", loc.path, err)
	}
	s.forgetKeys(id)
	s.dropDerived(id)
	s.removeCopies(id, loc.path)
	// The old file is no session's any more: overwrite its key records
	// where they stood, so that its blocks do not keep them (on a file
	// system that writes in place; see the doc).
	for _, p := range patches {
		if _, err := old.WriteAt(p.b, p.off); err != nil {
			s.cfg.log.Warn("overwriting the old file's key records failed", "path", loc.path, "err", err)
			break
		}
	}
	if err := old.Sync(); err != nil {
		s.cfg.log.Warn("fsync of the old file's overwritten key records failed", "path", loc.path, "err", err)
	}
	s.cfg.log.Info("session shredded", "id", id, "envelopes", len(patches))
	return len(patches), nil
}

// removeCopies removes what the store keeps of session id's log beside
// it, which may hold its key records: the side files of its repairs
// (<file>.torn-N, <file>.salvaged-N) and the temp files of its
// interrupted rewrites (<ID>.jsonl[.zst].tmp). The caller holds its writer
// lock: no rewrite of it runs.
func (s *FileStore) removeCopies(id, path string) {
	var names []string
	for _, pat := range []string{path + ".torn-*", path + ".salvaged-*", filepath.Join(s.dir, id+".*"+tmpExt)} {
		m, _ := filepathGlob(s, pat)
		names = append(names, m...)
	}
	for _, n := range names {
		if err := s.fs.Remove(n); err != nil {
			s.cfg.log.Warn("removing a copy of a shredded session failed", "path", n, "err", err)
		}
	}
	if len(names) > 0 {
		syncDir(s.fs, s.dir)
	}
}

// ExportSealed writes sealed session id's logical log, events 0..to, to w
// as a standalone sealed raw log (as transfer.Export writes a clear one:
// no parent, a fork's inherited events its own rows, its canonical lines
// the session's): the same key records, so the same identities read it,
// and every row sealed under the session's newest data key. Nothing of
// the content is written in clear. It returns how many events it wrote;
// a session that is not sealed is refused (ErrNotSealed).
func (s *FileStore) ExportSealed(ctx context.Context, id string, w io.Writer, to int64) (int64, error) {
	h, err := s.Open(ctx, id, ReadOnly)
	if err != nil {
		return 0, err
	}
	defer h.Close()
	loc, err := s.locate(ctx, id)
	if err != nil {
		return 0, err
	}
	hdr := h.Header()
	hdr.Parent = nil
	plan, err := s.rewritePlan(ctx, loc, hdr, &s.raw)
	if err != nil {
		return 0, err
	}
	if plan == nil {
		return 0, fmt.Errorf("%w: %s", ErrNotSealed, h.Path())
	}
	n := int64(0)
	events := func(yield func(eventlog.Event, error) bool) {
		for e, err := range h.Read(ctx, 0, to) {
			if err == nil && e.Seq != n {
				err = fmt.Errorf("handle: export %s: event %d where %d was expected", h.Path(), e.Seq, n)
			}
			if err != nil {
				yield(eventlog.Event{}, err)
				return
			}
			n++
			if !yield(e, nil) {
				return
			}
		}
		if n != to+1 {
			yield(eventlog.Event{}, fmt.Errorf("handle: export %s: the log ended at seq %d, before seq %d", h.Path(), n-1, to))
		}
	}
	cw := &copyWriter{f: w, dst: &s.raw, enc: s.enc, plan: plan}
	if _, err := cw.copyLog(ctx, hdr, events); err != nil {
		return n, err
	}
	return n, nil
}
