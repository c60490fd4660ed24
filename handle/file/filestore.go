package file

import (
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/core"
	"github.com/sessionlog/sessionlog/internal/format/logfile"
	"github.com/sessionlog/sessionlog/internal/format/zstdframe"

	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/spf13/afero"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle/internal/sealing"
	"github.com/sessionlog/sessionlog/secrets/seal"
)

// File name endings.
const (
	rawExt  = ".jsonl"
	zstExt  = ".jsonl.zst"
	lockExt = ".lock"
	tmpExt  = ".tmp"
)

// Store keeps sessions as files in one folder of an afero.Fs: the
// embedded default. <dir>/<ID>.jsonl (raw) or <dir>/<ID>.jsonl.zst (zstd)
// holds a session's log, <dir>/<ID>.lock its writer lock (derived;
// deletable while no process uses the store). A Store is safe for
// concurrent use.
type Store struct {
	fs  afero.Fs
	dir string
	cfg handle.Config
	enc *eventlog.Encoder

	raw, zst encoding
	zerr     error // why zstd is unavailable, if it is

	*core.Store             // the Store methods' decisions, over fileEngine
	six         sindexCache // the session index's posts read (sindex.go)
	held        heldMarks   // the marked locks it holds (evidence.go)

	keys *sealing.Keys // the keyrings of sealed sessions (sealed.go)
}

var (
	_ handle.Store          = (*Store)(nil)
	_ handle.Converter      = (*Store)(nil)
	_ handle.Repairer       = (*Store)(nil)
	_ handle.Shredder       = (*Store)(nil)
	_ handle.Rekeyer        = (*Store)(nil)
	_ handle.SealedExporter = (*Store)(nil)
	_ handle.Salvager       = (*Store)(nil)
)

// New returns a store of the sessions in dir on fsys (use
// afero.NewOsFs() for real files). The folder is created, mode 0700, on the
// first Create.
func New(fsys afero.Fs, dir string, opts ...handle.Option) *Store {
	cfg := core.NewConfig(opts...)
	s := &Store{
		fs:  fsys,
		dir: filepath.Clean(dir),
		cfg: cfg,
		enc: eventlog.NewEncoder(cfg.PackTypes),
		raw: encoding{name: handle.EncodingRaw, ext: rawExt},
		zst: encoding{name: handle.EncodingZstd, ext: zstExt},
	}
	s.keys = sealing.NewKeys(cfg.Identities)
	s.Store = core.NewStore(fileEngine{s}, opts...)
	s.zst.z, s.zerr = eventlog.NewZstdCodec(cfg.ZstdLevel)
	s.zst.rewriteLevel = cfg.ZstdLevel
	if s.zst.rewriteLevel == 0 {
		s.zst.rewriteLevel = defaultRewriteLevel
	}
	return s
}

// Dir returns the store's folder.
func (s *Store) Dir() string { return s.dir }

// Fs returns the store's file system.
func (s *Store) Fs() afero.Fs { return s.fs }

// Path returns the file that holds session id: the existing one, or for a
// session that does not exist, where a raw log would be. It fails with
// ErrInvalidID for an ID that is not an upper-case ULID, so no path is ever
// built from other text, and with ErrDuplicate, ErrNotRegular (or an I/O
// error) when the session exists but the store would refuse to open it.
func (s *Store) Path(id string) (string, error) {
	if err := checkID(id); err != nil {
		return "", err
	}
	loc, err := s.locate(context.Background(), id)
	switch {
	case err == nil:
		return loc.path, nil
	case errors.Is(err, handle.ErrNotFound):
		return filepath.Join(s.dir, id+rawExt), nil
	}
	return "", err
}

// create is fileEngine.Create.
func (s *Store) create(ctx context.Context, ns core.NewSession) (core.Backend, core.HandleConfig, error) {
	hdr := ns.Header
	enc, plan, err := s.newLayout(ns)
	if err != nil {
		return nil, core.HandleConfig{}, err
	}
	id := hdr.ID
	path := filepath.Join(s.dir, id+enc.ext)
	line, err := eventlog.EncodeHeader(hdr)
	if err != nil {
		return nil, core.HandleConfig{}, fmt.Errorf("handle: create %q: %w", path, err)
	}
	data, lastAt := enc.frames(nil, append(line, '\n'))
	if plan != nil {
		// Sealed: the clear header and key records, then the header row
		// sealed (docs/format.md §11).
		var scratch []byte
		if data, lastAt, err = plan.seal(plan.Records, append(line, '\n'), enc.z, &scratch); err != nil {
			return nil, core.HandleConfig{}, fmt.Errorf("handle: create %q: %w", path, err)
		}
	}
	if err := s.makeDir(); err != nil {
		return nil, core.HandleConfig{}, err
	}
	lock, err := s.lockMarked(id)
	if err != nil {
		return nil, core.HandleConfig{}, err
	}
	if _, err := s.locate(ctx, id); !errors.Is(err, handle.ErrNotFound) {
		lock.unlock()
		if errors.Is(err, ErrNotRegular) {
			return nil, core.HandleConfig{}, err // what is there is not a session
		}
		return nil, core.HandleConfig{}, fmt.Errorf("%w: %s in %q", handle.ErrExists, id, s.dir)
	}
	// A failed create leaves nothing behind: no header, no lock file (its
	// holder may remove it, see lockFile).
	abandon := func(err error) (core.Backend, core.HandleConfig, error) {
		s.fs.Remove(path)
		s.fs.Remove(s.lockPath(id))
		lock.unlock()
		return nil, core.HandleConfig{}, err
	}
	if err := s.writeAtomic(path, data); err != nil {
		// When only the folder fsync failed the header is at its name, but
		// the name may not survive a power cut: remove it, or the session
		// could be opened and flushed and then vanish with its events.
		return abandon(fmt.Errorf("handle: create %q: %w", path, err))
	}
	loc := location{path: path, enc: enc}
	if plan != nil {
		s.remember(plan) // before the open: it finds the key kept
	}
	f, err := s.openLog(ctx, &loc, os.O_RDWR)
	if err != nil {
		return abandon(err)
	}
	s.cfg.Logger.Debug("session created", "id", id, "path", path, "encoding", enc.name, "sealed", plan != nil)
	b := newFileBackend(s, loc, hdr, f, lock, int64(len(data)), hdr.FirstSeq(), nil)
	b.lastFrame = [2]int64{int64(lastAt), int64(len(data) - lastAt)}
	if plan != nil {
		b.sealer, b.keys = plan.Sealer, keysOf(plan.Head.Envelopes)
	}
	hb, hc := s.handle(b, nil)
	return hb, hc, nil
}

// newLayout returns the encoding of the session ns describes and, for a
// sealed one, its seal plan, once its parent's event at the fork or spawn
// point is durable: its writer may have written it and not yet fsynced
// it, and nothing may build on it before it is.
func (s *Store) newLayout(ns core.NewSession) (*encoding, *sealPlan, error) {
	name := ns.Encoding
	if name == "" {
		name = s.cfg.Encoding
	}
	enc, err := s.encodingNamed(name)
	if err != nil {
		return nil, nil, err
	}
	hdr := ns.Header
	parentSealed := false
	if p := ns.Parent; p != nil {
		if err := syncFile(s.fs, p.Path); err != nil {
			return nil, nil, fmt.Errorf("handle: create with parent %s: %w", p.ID, err)
		}
		parentSealed = p.Sealed && hdr.Parent.Mode == eventlog.ModeFork
	}
	if sl := ns.SealAs; sl != nil {
		if sl.ID != hdr.ID {
			return enc, nil, fmt.Errorf("handle: create %s sealed as %s: an envelope is bound to its session", hdr.ID, sl.ID)
		}
		plan, err := planWith(hdr, enc, sl.Envelopes, sl.Key)
		return enc, plan, err
	}
	rs, err := s.sealFor(ns, parentSealed)
	if err != nil || rs == nil {
		return enc, nil, err
	}
	plan, err := newSealPlan(hdr, enc, rs)
	return enc, plan, err
}

// writeAtomic writes data to path through a temp file: write, fsync,
// rename, fsync the folder.
func (s *Store) writeAtomic(path string, data []byte) error {
	return WriteFileAtomic(s.fs, path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// WriteFileAtomic writes a file at path through write, so that path holds
// either what it held before or the whole new content, even after a power
// cut: write into <path>.tmp (mode 0600), fsync, rename to path, fsync the
// folder. On an error the temp file is removed and path is untouched.
func WriteFileAtomic(fsys afero.Fs, path string, write func(io.Writer) error) error {
	tmp := path + tmpExt
	f, err := openRegular(fsys, tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, false)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(f, 256<<10)
	err = write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fsys.Rename(tmp, path)
	}
	if err != nil {
		fsys.Remove(tmp)
		return err
	}
	return syncDir(fsys, filepath.Dir(path))
}

// makeDir creates the store's folder (mode 0700) if it is missing, and
// then fsyncs its parent, so that the folder itself survives a power cut.
func (s *Store) makeDir() error {
	if _, err := s.fs.Stat(s.dir); err == nil {
		return nil
	}
	if err := s.fs.MkdirAll(s.dir, 0o700); err != nil {
		return fmt.Errorf("handle: create folder %q: %w", s.dir, err)
	}
	if err := syncDir(s.fs, filepath.Dir(s.dir)); err != nil {
		return fmt.Errorf("handle: create folder %q: sync its parent: %w", s.dir, err)
	}
	return nil
}

// syncFile fsyncs a file.
func syncFile(fsys afero.Fs, path string) error {
	f, err := openRegular(fsys, path, os.O_RDWR, false)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// syncDir fsyncs a folder so that creates, renames and removes in it are
// durable.
func syncDir(fsys afero.Fs, dir string) error {
	d, err := fsys.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if errors.Is(err, syscall.EINVAL) { // file systems that cannot sync a folder
		return nil
	}
	return err
}

func (s *Store) lockPath(id string) string { return filepath.Join(s.dir, id+lockExt) }

// location is where a session's log is.
type location struct {
	path   string
	enc    *encoding
	stale  string // the other encoding's file, left by a crashed convert
	follow bool   // a freely named file (an export): a link to it is followed
	// sealed is the head and keyring of a sealed log, nil for a clear
	// one: set by openLog, from the file's first bytes.
	sealed *sealedFile
}

// locate finds session id's file. When both encodings exist (a convert
// that crashed after its rename, before removing the old file), the newer
// is kept if both hold the same logical log (docs/format.md §2); otherwise the
// session is refused with ErrDuplicate.
func (s *Store) locate(ctx context.Context, id string) (location, error) {
	var found []location
	var infos []fs.FileInfo
	for _, e := range s.encodings() {
		p := filepath.Join(s.dir, id+e.ext)
		fi, err := lstat(s.fs, p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return location{}, fmt.Errorf("handle: %q: %w", p, err)
		}
		if !fi.Mode().IsRegular() {
			return location{}, notRegular(p, fi.Mode())
		}
		found = append(found, location{path: p, enc: e})
		infos = append(infos, fi)
	}
	switch len(found) {
	case 0:
		return location{}, fmt.Errorf("%w: %s in %q", handle.ErrNotFound, id, s.dir)
	case 1:
		return found[0], nil
	}
	if found[1].enc.z == nil {
		return location{}, s.zerr
	}
	same, err := s.sameLog(ctx, found[0], found[1])
	if err != nil {
		return location{}, err
	}
	if !same {
		return location{}, fmt.Errorf("%w: %q and %q hold different logs; keep the right one and delete the other",
			ErrDuplicate, found[0].path, found[1].path)
	}
	keep, other := found[1], found[0] // zstd on a tie
	if infos[0].ModTime().After(infos[1].ModTime()) {
		keep, other = found[0], found[1]
	}
	keep.stale = other.path
	return keep, nil
}

// existing returns where session id is, or ErrNotFound.
func (s *Store) existing(ctx context.Context, id string) (location, error) {
	if err := checkID(id); err != nil {
		return location{}, err
	}
	return s.locate(ctx, id)
}

// openMode is fileEngine.Open.
func (s *Store) openMode(ctx context.Context, id string, mode handle.Mode) (core.Backend, core.HandleConfig, error) {
	if _, err := s.existing(ctx, id); err != nil {
		return nil, core.HandleConfig{}, err
	}
	var lock writerLock
	flag := os.O_RDONLY
	if mode == handle.ReadWrite {
		var err error
		if lock, err = s.lockMarked(id); err != nil {
			return nil, core.HandleConfig{}, err
		}
		flag = os.O_RDWR
	}
	b, sc, err := s.openBackend(ctx, id, flag, lock)
	if err != nil {
		if lock != nil {
			lock.unlock()
		}
		return nil, core.HandleConfig{}, err
	}
	hb, hc := s.handle(b, sc.torn)
	return hb, hc, nil
}

// openBackend opens session id's log with flag, for writing when lock (the
// writer lock, taken by the caller) is not nil, recovers it and returns
// its backend and what the open found.
func (s *Store) openBackend(ctx context.Context, id string, flag int, lock writerLock) (*fileBackend, scanResult, error) {
	loc, err := s.locate(ctx, id) // again: under the lock, a convert may have run
	if err != nil {
		return nil, scanResult{}, err
	}
	if lock != nil {
		// A writer acknowledges appends to the file at this name: make the
		// name durable first. A rewrite whose folder fsync failed (Detach,
		// Compact) left its new file at the name, not durably; a power cut
		// would bring the old file back without the appends.
		if loc.stale != "" {
			err = s.removeDurably(loc.stale)
		} else if err = syncDir(s.fs, s.dir); err != nil {
			err = fmt.Errorf("handle: open %q: sync folder: %w", loc.path, err)
		}
		if err != nil {
			return nil, scanResult{}, err
		}
	}
	f, err := s.openLog(ctx, &loc, flag)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, scanResult{}, fmt.Errorf("%w: %s in %q", handle.ErrNotFound, id, s.dir)
		}
		return nil, scanResult{}, err
	}
	if lock != nil {
		// Rows a killed writer wrote but never fsynced are in the page
		// cache: make them durable before they count as such (readers,
		// forks and the next appends build on them).
		if err := f.Sync(); err != nil {
			f.Close()
			return nil, scanResult{}, fmt.Errorf("handle: open %q: fsync: %w", loc.path, err)
		}
	}
	sc, err := s.checkLog(ctx, loc, f, id, id, lock != nil)
	if err != nil {
		f.Close()
		return nil, scanResult{}, err
	}
	b := newFileBackend(s, loc, sc.hdr, f, lock, sc.end, sc.next, sc.index)
	b.lastFrame, b.keys = sc.lastFrame, keysOf(sc.envs)
	b.cutTorn = sc.torn != nil && lock != nil
	if loc.sealed != nil && lock != nil {
		if b.sealer, err = loc.sealerFor(sc.envs, sc.end); err != nil {
			f.Close()
			return nil, scanResult{}, err
		}
	}
	if sc.torn != nil {
		s.cfg.Logger.Info("torn tail found", "path", loc.path, "offset", sc.torn.Offset, "bytes", sc.torn.Bytes)
	}
	return b, sc, nil
}

// removeDurably removes a file and fsyncs its folder.
func (s *Store) removeDurably(path string) error {
	if err := s.fs.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("handle: remove %q: %w", path, err)
	}
	if err := syncDir(s.fs, filepath.Dir(path)); err != nil {
		return fmt.Errorf("handle: remove %q: sync folder: %w", path, err)
	}
	return nil
}

// scanResult is what a full read of a log found.
type scanResult struct {
	hdr       eventlog.Header
	end       int64 // offset past the last good row or frame
	next      int64 // seq of the next row
	torn      *eventlog.TornTail
	index     []indexEntry
	lastFrame [2]int64 // offset and length of the last data frame (zstd)
	// envs are a sealed log's key records (before end), nil for a clear
	// log; keys says where they stand when a writer, which wrote them,
	// has no envelopes at hand (see keySpans).
	envs []seal.Envelope
	keys [][2]int64
}

// keySpans returns where the key records of the log sc describes stand:
// {offset, length}, nil for a clear log.
func (sc scanResult) keySpans() [][2]int64 {
	if sc.keys != nil {
		return sc.keys
	}
	return keysOf(sc.envs)
}

// keysOf returns where the key records envs stand: {offset, length}.
func keysOf(envs []seal.Envelope) [][2]int64 {
	var out [][2]int64
	for _, e := range envs {
		out = append(out, [2]int64{e.Offset, e.Len})
	}
	return out
}

// scanLog reads a whole log, checking every row, without keeping events.
func scanLog(ctx context.Context, loc location, f afero.File) (scanResult, error) {
	var sc scanResult
	r := loc.reader(ctx, io.NewSectionReader(f, 0, 1<<62), readOpts{})
	hdr, err := r.Header()
	if err != nil {
		return sc, err
	}
	sc.hdr = hdr
	off, seq := r.Resume()
	sc.index = []indexEntry{{off: off, seq: seq}}
	for rows := 1; r.SkipRow(); rows++ {
		if rows%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return sc, err
			}
		}
		off, seq := r.Resume()
		sc.index = addIndex(sc.index, off, seq)
	}
	if err := r.Err(); err != nil {
		return sc, err
	}
	sc.end, sc.next, sc.torn = r.End(), r.NextSeq(), r.Torn()
	sc.lastFrame[0], sc.lastFrame[1] = r.LastFrame()
	sc.envs = envelopesOf(r)
	return sc, nil
}

// stat is fileEngine.Stat.
func (s *Store) stat(ctx context.Context, id string) (handle.Info, error) {
	loc, err := s.existing(ctx, id)
	if err != nil {
		return handle.Info{}, err
	}
	return s.statPath(ctx, id, loc)
}

func (s *Store) statPath(ctx context.Context, id string, loc location) (handle.Info, error) {
	f, err := s.openLog(ctx, &loc, os.O_RDONLY)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return handle.Info{}, fmt.Errorf("%w: %s in %q", handle.ErrNotFound, id, s.dir)
		}
		return handle.Info{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return handle.Info{}, fmt.Errorf("handle: stat %q: %w", loc.path, err)
	}
	size := fi.Size()
	src := ctxReaderAt{ctx: ctx, r: f}
	small := size < checkedMin
	known := func() zstdframe.Frame { // asked only when no tail frame ends the log
		if rec, ok := s.loadChecked(ctx, id, small); ok && rec.holdsPrefix(src, identityOf(fi)) {
			return rec.lastFrame()
		}
		return zstdframe.Frame{}
	}
	t, err := loc.tail(src, size, known)
	if errors.Is(err, seal.ErrNoKey) && s.laterKeys(ctx, id, loc, src, fi) {
		t, err = loc.tail(src, size, known)
	}
	if err != nil {
		return handle.Info{}, err
	}
	return infoOf(id, loc, size, t), nil
}

// laterKeys adds to the keyring of the sealed log at loc (src holds it,
// fi is its file's) the key records that may stand past its head (a
// rotation), as the checked record names them, else as a check of the
// log's framing finds them (the read of the whole file a lost record
// costs); it reports whether it added any.
func (s *Store) laterKeys(ctx context.Context, id string, loc location, src io.ReaderAt, fi fs.FileInfo) bool {
	if rec, ok := s.loadChecked(ctx, id, fi.Size() < checkedMin); ok && rec.holdsPrefix(src, identityOf(fi)) && rec.Keys != nil {
		_, err := loc.readEnvelopes(src, rec.Keys)
		return err == nil
	}
	fr, err := seal.Check(ctxReader{ctx: ctx, r: io.NewSectionReader(src, 0, fi.Size())}, loc.sealed.layout(), loc.path)
	if err != nil {
		return false
	}
	for _, e := range fr.Envelopes {
		loc.sealed.kr.Add(e)
	}
	return len(fr.Envelopes) > 0
}

// infoOf describes session id, whose log at loc of size bytes has the
// header and last event t.
func infoOf(id string, loc location, size int64, t logfile.Tail) handle.Info {
	hdr := t.Header
	info := handle.Info{ID: id, Path: loc.path, Encoding: loc.enc.name, Header: hdr, SizeBytes: size,
		LastSeq: hdr.FirstSeq() - 1, Events: hdr.FirstSeq(), Sealed: loc.sealed != nil}
	if t.Found {
		info.LastSeq, info.LastType, info.LastTime, info.Events = t.Last.Seq, t.Last.Type, t.Last.Time, t.Last.Seq+1
	}
	return info
}

// ids returns the IDs that the files in the store's folder are named
// for, each once: fileEngine.IDs. A folder named like a session is among
// them: locate reports it.
func (s *Store) ids() ([]string, error) {
	entries, err := afero.ReadDir(s.fs, s.dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("handle: list %q: %w", s.dir, err)
	}
	var ids []string
	seen := map[string]bool{}
	for _, e := range entries {
		if id, _, ok := ParseFileName(e.Name()); ok && !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// removeLog removes session id's files, durably, then its derived files
// and its lock file. The caller holds its writer lock: only a holder may
// remove a lock file (see lockFile).
func (s *Store) removeLog(id string) error {
	removed := false
	for _, e := range s.encodings() {
		p := filepath.Join(s.dir, id+e.ext)
		if err := s.fs.Remove(p); err == nil {
			removed = true
		} else if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("handle: delete %q: %w", p, err)
		}
	}
	if !removed {
		return fmt.Errorf("%w: %s in %q", handle.ErrNotFound, id, s.dir)
	}
	if err := syncDir(s.fs, s.dir); err != nil {
		return fmt.Errorf("handle: delete %s: sync folder: %w", id, err)
	}
	s.dropKnownDerived(id)
	s.fs.Remove(s.lockPath(id))
	s.cfg.Logger.Debug("session deleted", "id", id)
	return nil
}
