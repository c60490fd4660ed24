package handle

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/oklog/ulid/v2"
	"github.com/spf13/afero"

	"github.com/sessionlog/sessionlog/eventlog"
)

// File name endings.
const (
	rawExt  = ".jsonl"
	lockExt = ".lock"
	tmpExt  = ".tmp"
)

// Encodings a session may be stored in.
const (
	EncodingRaw = "raw"
)

// FileStore keeps sessions as files in one folder of an afero.Fs: the
// embedded default. <dir>/<ID>.jsonl holds a session's log, <dir>/<ID>.lock
// its writer lock (derived; deletable while no process uses the store).
// A FileStore is safe for concurrent use.
type FileStore struct {
	fs  afero.Fs
	dir string
	cfg config
	enc *eventlog.Encoder

	idMu    sync.Mutex // ulid's monotonic entropy is not safe for concurrent use
	entropy io.Reader
}

var _ Store = (*FileStore)(nil)

// NewFileStore returns a store of the sessions in dir on fsys (use
// afero.NewOsFs() for real files). The folder is created, mode 0700, on the
// first Create.
func NewFileStore(fsys afero.Fs, dir string, opts ...Option) *FileStore {
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	return &FileStore{
		fs:      fsys,
		dir:     filepath.Clean(dir),
		cfg:     cfg,
		enc:     eventlog.NewEncoder(cfg.packTypes),
		entropy: ulid.Monotonic(rand.Reader, 0),
	}
}

// Dir returns the store's folder.
func (s *FileStore) Dir() string { return s.dir }

// Fs returns the store's file system.
func (s *FileStore) Fs() afero.Fs { return s.fs }

// Path returns the file of session id (which need not exist). It fails
// with ErrInvalidID for an ID that is not an upper-case ULID, so no path is
// ever built from other text.
func (s *FileStore) Path(id string) (string, error) {
	if !eventlog.ValidID(id) {
		return "", fmt.Errorf("%w: %q (want 26 upper-case Crockford base32 characters)", ErrInvalidID, id)
	}
	return filepath.Join(s.dir, id+rawExt), nil
}

func (s *FileStore) newID() (string, error) {
	s.idMu.Lock()
	defer s.idMu.Unlock()
	id, err := ulid.New(ulid.Timestamp(s.cfg.now()), s.entropy)
	if err != nil {
		return "", fmt.Errorf("handle: new session ID: %w", err)
	}
	return id.String(), nil
}

// Create makes a new session and returns a write handle on it. The header
// is written to a temp file, fsynced, renamed into place and the folder
// fsynced, so a half-written header never exists.
func (s *FileStore) Create(ctx context.Context, opts ...CreateOption) (Handle, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var cc createConfig
	for _, o := range opts {
		o(&cc)
	}
	id := cc.id
	if !cc.idSet {
		var err error
		if id, err = s.newID(); err != nil {
			return nil, err
		}
	}
	path, err := s.Path(id)
	if err != nil {
		return nil, err
	}
	hdr := eventlog.NewHeader(id, s.cfg.now().UnixMilli())
	hdr.Labels, hdr.Parent = cc.labels, cc.parent
	line, err := eventlog.EncodeHeader(hdr)
	if err != nil {
		return nil, fmt.Errorf("handle: create %q: %w", path, err)
	}
	line = append(line, '\n')
	if err := s.fs.MkdirAll(s.dir, 0o700); err != nil {
		return nil, fmt.Errorf("handle: create folder %q: %w", s.dir, err)
	}
	lock, err := lockFile(s.fs, s.lockPath(id))
	if err != nil {
		return nil, err
	}
	if _, err := s.fs.Stat(path); err == nil {
		lock.unlock()
		return nil, fmt.Errorf("%w: %q", ErrExists, path)
	}
	if err := s.writeAtomic(path, line); err != nil {
		lock.unlock()
		return nil, fmt.Errorf("handle: create %q: %w", path, err)
	}
	f, err := s.fs.OpenFile(path, os.O_RDWR, 0o600)
	if err != nil {
		lock.unlock()
		return nil, fmt.Errorf("handle: open %q: %w", path, err)
	}
	s.cfg.log.Debug("session created", "id", id, "path", path)
	return newFileHandle(s, hdr, path, f, lock, int64(len(line)), nil), nil
}

// writeAtomic writes data to path through a temp file: write, fsync,
// rename, fsync the folder.
func (s *FileStore) writeAtomic(path string, data []byte) error {
	tmp := path + tmpExt
	f, err := s.fs.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = s.fs.Rename(tmp, path)
	}
	if err != nil {
		s.fs.Remove(tmp)
		return err
	}
	return syncDir(s.fs, filepath.Dir(path))
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

func (s *FileStore) lockPath(id string) string { return filepath.Join(s.dir, id+lockExt) }

// existing returns the path of session id, or ErrNotFound.
func (s *FileStore) existing(id string) (string, error) {
	path, err := s.Path(id)
	if err != nil {
		return "", err
	}
	if _, err := s.fs.Stat(path); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("%w: %s in %q", ErrNotFound, id, s.dir)
		}
		return "", fmt.Errorf("handle: %q: %w", path, err)
	}
	return path, nil
}

// Open opens session id. See Store.Open.
func (s *FileStore) Open(ctx context.Context, id string, mode Mode) (Handle, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	path, err := s.existing(id)
	if err != nil {
		return nil, err
	}
	var lock writerLock
	flag := os.O_RDONLY
	if mode == ReadWrite {
		if lock, err = lockFile(s.fs, s.lockPath(id)); err != nil {
			return nil, err
		}
		flag = os.O_RDWR
	}
	h, err := s.open(ctx, id, path, flag, lock)
	if err != nil && lock != nil {
		lock.unlock()
	}
	return h, err
}

func (s *FileStore) open(ctx context.Context, id, path string, flag int, lock writerLock) (*fileHandle, error) {
	f, err := s.fs.OpenFile(path, flag, 0o600)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s in %q", ErrNotFound, id, s.dir)
		}
		return nil, fmt.Errorf("handle: open %q: %w", path, err)
	}
	sc, err := scanLog(ctx, f, path)
	if err == nil && sc.hdr.ID != id {
		err = &CorruptError{Path: path, Seq: -1, Reason: fmt.Sprintf("header id %s does not match the file name", sc.hdr.ID)}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	h := newFileHandle(s, sc.hdr, path, f, lock, sc.end, sc.index)
	h.next, h.durable = sc.next, sc.next-1
	h.recovery = Recovery{Torn: sc.torn}
	h.cutTorn = sc.torn != nil && lock != nil
	if sc.torn != nil {
		s.cfg.log.Info("torn tail found", "path", path, "offset", sc.torn.Offset, "bytes", sc.torn.Bytes)
	}
	return h, nil
}

// scanResult is what a full read of a log found.
type scanResult struct {
	hdr   eventlog.Header
	end   int64 // offset past the last good row
	next  int64 // seq of the next row
	torn  *eventlog.TornTail
	index []indexEntry
}

// scanLog reads a whole log, checking every row, without keeping events.
func scanLog(ctx context.Context, f afero.File, path string) (scanResult, error) {
	var sc scanResult
	r := eventlog.NewReader(io.NewSectionReader(f, 0, 1<<62), eventlog.WithPath(path))
	hdr, err := r.Header()
	if err != nil {
		return sc, err
	}
	sc.hdr = hdr
	sc.index = []indexEntry{{off: r.End(), seq: r.NextSeq()}}
	for rows := 1; r.SkipRow(); rows++ {
		if rows%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return sc, err
			}
		}
		sc.index = addIndex(sc.index, r.End(), r.NextSeq())
	}
	if err := r.Err(); err != nil {
		return sc, err
	}
	sc.end, sc.next, sc.torn = r.End(), r.NextSeq(), r.Torn()
	return sc, nil
}

// Stat describes session id from its header and its last row. See
// Store.Stat.
func (s *FileStore) Stat(ctx context.Context, id string) (Info, error) {
	if err := ctx.Err(); err != nil {
		return Info{}, err
	}
	path, err := s.existing(id)
	if err != nil {
		return Info{}, err
	}
	return s.statPath(id, path)
}

func (s *FileStore) statPath(id, path string) (Info, error) {
	f, err := s.fs.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return Info{}, fmt.Errorf("%w: %s in %q", ErrNotFound, id, s.dir)
		}
		return Info{}, fmt.Errorf("handle: stat %q: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return Info{}, fmt.Errorf("handle: stat %q: %w", path, err)
	}
	size := fi.Size()
	hdr, headerEnd, err := eventlog.ReadHeader(f, path)
	if err != nil {
		return Info{}, err
	}
	info := Info{ID: id, Path: path, Encoding: EncodingRaw, Header: hdr, SizeBytes: size,
		LastSeq: hdr.FirstSeq() - 1, Events: hdr.FirstSeq()}
	last, found, err := eventlog.LastEvent(f, size, headerEnd)
	if err != nil {
		return Info{}, fmt.Errorf("handle: stat %q: %w", path, err)
	}
	if found {
		info.LastSeq, info.LastType, info.LastTime, info.Events = last.Seq, last.Type, last.Time, last.Seq+1
	}
	return info, nil
}

// List describes the store's sessions, newest first. See Store.List.
func (s *FileStore) List(ctx context.Context, opts ...ListOption) ([]Info, error) {
	var lc listConfig
	for _, o := range opts {
		o(&lc)
	}
	entries, err := afero.ReadDir(s.fs, s.dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("handle: list %q: %w", s.dir, err)
	}
	var out []Info
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		id, ok := strings.CutSuffix(e.Name(), rawExt)
		if !ok || e.IsDir() || !eventlog.ValidID(id) {
			continue
		}
		info, err := s.statPath(id, filepath.Join(s.dir, e.Name()))
		if errors.Is(err, ErrNotFound) {
			continue // deleted meanwhile
		}
		if err != nil {
			return nil, err
		}
		if lc.match(info.Header) {
			out = append(out, info)
		}
	}
	slices.SortFunc(out, func(a, b Info) int {
		return cmp.Or(cmp.Compare(b.Header.CreatedAt, a.Header.CreatedAt), strings.Compare(b.ID, a.ID))
	})
	return out, nil
}

// Delete removes session id; ErrLocked while a writer holds it.
func (s *FileStore) Delete(ctx context.Context, id string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	path, err := s.existing(id)
	if err != nil {
		return err
	}
	lock, err := lockFile(s.fs, s.lockPath(id))
	if err != nil {
		return err
	}
	defer lock.unlock()
	if err := s.fs.Remove(path); err != nil {
		return fmt.Errorf("handle: delete %q: %w", path, err)
	}
	if err := syncDir(s.fs, s.dir); err != nil {
		return fmt.Errorf("handle: delete %q: sync folder: %w", path, err)
	}
	s.fs.Remove(s.lockPath(id))
	s.cfg.log.Debug("session deleted", "id", id, "path", path)
	return nil
}
