package file

import (
	"github.com/sessionlog/sessionlog/handle/core"
	"github.com/sessionlog/sessionlog/internal/format/zstdframe"

	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/spf13/afero"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/secrets/seal"
)

// indexStride is how many bytes of log lie between two entries of a
// handle's in-memory seq index, which lets Read start near its first seq.
const indexStride = 1 << 20

// indexEntry says that the row holding seq starts at off.
type indexEntry struct {
	off int64
	seq int64
}

func addIndex(idx []indexEntry, off, seq int64) []indexEntry {
	if off-idx[len(idx)-1].off >= indexStride {
		idx = append(idx, indexEntry{off: off, seq: seq})
	}
	return idx
}

// fileBackend is a Store session's log file under the write core: a
// write writes the rows at the end of the complete rows (raw) or as one
// zstd frame per flush, then fsyncs; a read reads the file from the index
// entry nearest its first seq.
type fileBackend struct {
	store *Store
	enc   *encoding
	hdr   eventlog.Header
	path  string
	f     afero.File
	lock  writerLock // nil for a read-only handle
	// file is the writer's log file as it was opened, to check at every
	// flush that the path still names it (see inPlace); nil when the file
	// system cannot tell files apart (afero's memory files). osPath makes
	// that check one system call, on an OS file system that has it.
	file   fs.FileInfo
	osPath *pathCheck

	mu        sync.Mutex
	size      int64 // bytes of complete rows on disk
	next      int64 // the seq after the last durable event
	index     []indexEntry
	recent    indexEntry // where the last flush's rows start: reads of the newest events start there
	cutTorn   bool       // a torn tail must be cut before the next write
	lastFrame [2]int64   // offset and length of the last data frame (zstd)
	wrote     bool       // frames were written: a zstd log needs a tail frame
	// sinceChecked counts the bytes and frames written since the checked
	// record was last refreshed (zstd; see checkedDue).
	sinceChecked [2]int64

	// A sealed log's head and keyring (nil for a clear log); the
	// writer's Sealer; where the file's key records stand (see
	// envelopesOf), for the checked record.
	sealed *sealedFile
	sealer *seal.Sealer
	keys   [][2]int64

	// Used by Write only (one at a time).
	frameBuf []byte // the compression buffer (zstd)
	sealBuf  []byte // a frame before it is sealed (sealed zstd)
	parts    []int  // the write's parts (see write)
}

// loc returns where b's log is.
func (b *fileBackend) loc() location { return location{path: b.path, enc: b.enc, sealed: b.sealed} }

// newFileBackend returns the backend of the log file f at loc, whose
// complete rows end at size (index: where rows start, nil for a log of
// only its header) and hold the events before next.
func newFileBackend(s *Store, loc location, hdr eventlog.Header, f afero.File, lock writerLock, size, next int64, index []indexEntry) *fileBackend {
	if index == nil {
		index = []indexEntry{{off: size, seq: hdr.FirstSeq()}}
	}
	b := &fileBackend{store: s, enc: loc.enc, hdr: hdr, path: loc.path, f: guardFile(f), lock: lock,
		size: size, next: next, index: index, recent: index[len(index)-1], sealed: loc.sealed}
	b.identify(f)
	return b
}

// identify records the writer's log file f, for inPlace.
func (b *fileBackend) identify(f afero.File) {
	b.file, b.osPath = nil, nil
	if fi, err := f.Stat(); err == nil && b.lock != nil && os.SameFile(fi, fi) {
		b.file = fi // os.SameFile can tell it from another file
		b.osPath = newPathCheck(b.path, f)
	}
}

// inPlace returns an error wrapping ErrDisplaced unless the session's path
// still names the writer's log file (docs/format.md §9: a writer
// acknowledges only what a later open of the session finds).
func (b *fileBackend) inPlace() error {
	var same bool
	var err error
	switch {
	case b.osPath != nil:
		same, err = b.osPath.names()
	case b.file == nil:
		return nil
	default:
		var fi fs.FileInfo
		fi, err = lstat(b.store.fs, b.path)
		same = err == nil && os.SameFile(b.file, fi)
		if errors.Is(err, fs.ErrNotExist) {
			err = nil
		}
	}
	switch {
	case err != nil:
		return fmt.Errorf("checking that %q still names the log file: %w", b.path, err)
	case same:
		return nil
	}
	return fmt.Errorf("%w: %q was unlinked, renamed or replaced while its writer was open; nothing written since is acknowledged (reopen the session)", ErrDisplaced, b.path)
}

// handle returns b and the rest of a handle on its session: the store's
// settings, which the store core replaces by the call's on the handles it
// makes.
func (s *Store) handle(b *fileBackend, torn *eventlog.TornTail) (core.Backend, core.HandleConfig) {
	return b, core.HandleConfig{Store: s.Store, Header: b.hdr, Path: b.path, Writer: b.lock != nil,
		Next: b.next, Torn: torn, Encoder: s.enc, Policy: s.cfg.Policy, Redactor: s.cfg.Redactor, Logger: s.cfg.Logger, Ticker: s.cfg.Ticker}
}

func (b *fileBackend) Write(_ context.Context, rows []byte, first, last int64) (func(), error) {
	b.mu.Lock()
	cut, at := b.cutTorn, b.size
	b.mu.Unlock()
	out, parts, err := b.encode(rows)
	if err != nil {
		return nil, err
	}
	lastPart := parts[len(parts)-1]
	if err := b.write(cut, at, out, parts); err != nil {
		return nil, err
	}
	if err := b.inPlace(); err != nil {
		return nil, err // written, and fsynced, into a file that is not the session's
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.cutTorn = false
	b.index = addIndex(b.index, at, first)
	b.recent = indexEntry{off: at, seq: first}
	b.size += int64(len(out))
	b.next = last + 1
	b.lastFrame = [2]int64{at + int64(lastPart), int64(len(out) - lastPart)}
	b.wrote = true
	if !b.checkedDue(len(out), len(parts)) {
		return nil, nil
	}
	// After the flush's callers are woken: a flush that writes meanwhile
	// makes the record stale, and saveChecked then keeps none.
	sc := b.ownScan()
	return func() { b.store.saveChecked(context.Background(), b.hdr.ID, b.f, nil, sc) }, nil
}

// encode returns rows as the bytes to write and where each part of them
// starts: the rows as they are (raw), or one zstd frame per flush
// (docs/format.md §5): a batch larger than a frame is written as several,
// each frame durable before the next is written, so at most the last
// frame can be torn. A sealed log seals each row (raw) or each frame,
// compressed (zstd; §11). The result is valid until the next call (one
// write at a time).
func (b *fileBackend) encode(rows []byte) ([]byte, []int, error) {
	b.parts = append(b.parts[:0], 0)
	var out []byte
	var err error
	switch {
	case b.enc.z != nil:
		parts := b.parts[:0]
		out = b.frameBuf[:0]
		for rest := rows; len(rest) > 0 && err == nil; {
			n := zstdframe.Cut(rest)
			parts = append(parts, len(out))
			if b.sealer == nil {
				out, _ = b.enc.z.AppendFrames(out, rest[:n])
			} else {
				b.sealBuf, _ = b.enc.z.AppendFrames(b.sealBuf[:0], rest[:n])
				out, err = b.sealer.AppendFrame(out, b.sealBuf)
			}
			rest = rest[n:]
		}
		b.parts = parts
	case b.sealer != nil:
		out, err = b.sealer.AppendRows(b.frameBuf[:0], rows)
	default:
		return rows, b.parts, nil
	}
	b.frameBuf = out
	if cap(b.frameBuf) > 4<<20 {
		b.frameBuf, b.sealBuf = nil, nil // do not pin a large batch's buffers
	}
	if err != nil {
		return nil, nil, fmt.Errorf("sealing rows: %w", err)
	}
	return out, b.parts, nil
}

// WriteAll stores the rows all or nothing (Backend.WriteAll) through a
// copy of the log: the bytes of its complete rows (a torn tail is left
// behind), then the new rows encoded as Write encodes them, to
// <ID>.jsonl[.zst].tmp; fsync, rename over the log, fsync the folder. The
// backend then writes to the new file. Until the rename the session is as
// it was; after the folder's fsync it holds every row. Nothing is copied
// when rows yields none.
func (b *fileBackend) WriteAll(ctx context.Context, rows iter.Seq2[core.Rows, error]) (func(), error) {
	b.mu.Lock()
	at, next, index, lastFrame := b.size, b.next, slices.Clone(b.index), b.lastFrame
	b.mu.Unlock()
	tmp := b.path + tmpExt
	var f afero.File
	fail := func(err error) (func(), error) {
		if f != nil {
			f.Close()
			b.store.fs.Remove(tmp)
		}
		return nil, err
	}
	off, recent := at, indexEntry{}
	for r, err := range rows {
		if err != nil {
			return fail(err)
		}
		if f == nil {
			if f, err = b.copyLog(ctx, tmp, at); err != nil {
				return fail(err)
			}
		}
		out, parts, err := b.encode(r.Bytes)
		if err != nil {
			return fail(fmt.Errorf("handle: append all to %q: %w", b.path, err))
		}
		if _, err := f.WriteAt(out, off); err != nil {
			return fail(fmt.Errorf("handle: append all to %q: writing %q: %w", b.path, tmp, err))
		}
		index, recent = addIndex(index, off, r.First), indexEntry{off: off, seq: r.First}
		last := parts[len(parts)-1]
		lastFrame = [2]int64{off + int64(last), int64(len(out) - last)}
		off, next = off+int64(len(out)), r.Last+1
	}
	if f == nil {
		return nil, nil
	}
	if err := f.Sync(); err != nil {
		return fail(fmt.Errorf("handle: append all to %q: fsync %q: %w", b.path, tmp, err))
	}
	if err := b.store.fs.Rename(tmp, b.path); err != nil {
		return fail(fmt.Errorf("handle: append all to %q: %w", b.path, err))
	}
	b.mu.Lock()
	old := b.f
	b.f = guardFile(f)
	b.identify(f)
	b.size, b.next, b.index, b.recent, b.lastFrame = off, next, index, recent, lastFrame
	b.cutTorn, b.wrote, b.sinceChecked = false, true, [2]int64{}
	b.mu.Unlock()
	old.Close()
	if err := syncDir(b.store.fs, b.store.dir); err != nil {
		// The rename may not survive a power cut: the session holds the
		// batch or not, and the handle is poisoned.
		return nil, fmt.Errorf("handle: append all to %q: sync folder: %w", b.path, err)
	}
	return nil, nil
}

// copyLog creates tmp, read-write, holding the log's first at bytes.
func (b *fileBackend) copyLog(ctx context.Context, tmp string, at int64) (afero.File, error) {
	f, err := openRegular(b.store.fs, tmp, os.O_CREATE|os.O_TRUNC|os.O_RDWR, false)
	if err != nil {
		return nil, fmt.Errorf("handle: append all to %q: %w", b.path, err)
	}
	src := io.NewSectionReader(ctxReaderAt{ctx: ctx, r: b.f}, 0, at)
	if _, err := io.CopyBuffer(f, src, make([]byte, 1<<20)); err != nil {
		f.Close()
		b.store.fs.Remove(tmp)
		return nil, fmt.Errorf("handle: append all to %q: copying the log to %q: %w", b.path, tmp, err)
	}
	return f, nil
}

// write makes rows durable at offset at: cut a torn tail first if needed,
// then write and fsync each part of rows in turn (parts holds where each
// starts: one per zstd frame, one for raw rows).
func (b *fileBackend) write(cut bool, at int64, rows []byte, parts []int) error {
	if cut {
		if err := b.f.Truncate(at); err != nil {
			return fmt.Errorf("cutting the torn tail at offset %d: %w", at, err)
		}
		if err := b.f.Sync(); err != nil {
			return fmt.Errorf("fsync after cutting the torn tail: %w", err)
		}
		b.store.cfg.Logger.Info("torn tail cut", "path", b.path, "offset", at)
	}
	for i, start := range parts {
		end := len(rows)
		if i+1 < len(parts) {
			end = parts[i+1]
		}
		if start == end {
			continue
		}
		off := at + int64(start)
		if _, err := b.f.WriteAt(rows[start:end], off); err != nil {
			return fmt.Errorf("writing %d bytes at offset %d: %w", end-start, off, err)
		}
		if err := b.f.Sync(); err != nil {
			return fmt.Errorf("fsync: %w", err)
		}
	}
	return nil
}

func (b *fileBackend) Read(ctx context.Context, from int64, use func(core.RowReader)) error {
	b.mu.Lock()
	size := b.size
	if b.lock == nil {
		size = 1 << 62 // a reader follows the file to its current end
	}
	start := b.index[0]
	for _, e := range b.index {
		if e.seq <= from {
			start = e
		}
	}
	if b.recent.seq <= from && b.recent.off > start.off {
		start = b.recent
	}
	b.mu.Unlock()
	use(b.loc().reader(ctx, io.NewSectionReader(b.f, start.off, size-start.off), readAt(start.off, start.seq, from)))
	return nil
}

var _ core.Locating = (*fileBackend)(nil)

// LogBytes returns the log file when it holds its rows as they are, raw
// and clear (core.Locating); the rows read stay as they are while it is
// open, since a log is only appended to and a rewrite replaces the file.
func (b *fileBackend) LogBytes() io.ReaderAt {
	if b.enc.z != nil || b.sealed != nil {
		return nil
	}
	return b.f
}

// Tail returns the seq after the last durable event: the writer's lock
// keeps every other writer out.
func (b *fileBackend) Tail(context.Context) (int64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.next, nil
}

// RenewEvery is 0: the writer's lock lasts until Close.
func (b *fileBackend) RenewEvery() time.Duration { return 0 }

// Renew does nothing (see RenewEvery).
func (b *fileBackend) Renew(context.Context) error { return nil }

func (b *fileBackend) Close(ctx context.Context, flushed bool) error {
	var err error
	if flushed && b.lock != nil {
		if err = b.finish(); err == nil {
			b.saveAcked(ctx)
		}
	}
	var own *scanResult
	if flushed && b.lock != nil && err == nil {
		b.mu.Lock()
		sc := b.ownScan()
		b.mu.Unlock()
		own = &sc
	}
	if cerr := b.f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("handle: close %q: %w", b.path, cerr)
	}
	if own != nil && err == nil {
		b.saveOwnChecked(ctx, *own)
	}
	if b.lock != nil {
		if uerr := b.lock.unlock(); err == nil && uerr != nil {
			err = fmt.Errorf("handle: unlock %q: %w", b.path, uerr)
		}
	}
	return err
}

// finish ends a write handle's session: a zstd log that was written to gets
// a tail frame, or a compaction when the store asks for one. Called by
// Close after the last flush, with the lock still held.
func (b *fileBackend) finish() error {
	if b.enc.z == nil || !b.wrote {
		return nil
	}
	if b.store.cfg.CompactOnClose {
		return b.store.rewriteFile(context.Background(), b.hdr.ID, b.loc(), b.enc)
	}
	b.mu.Lock()
	at := b.size
	tail := zstdframe.AppendTail(nil, at, b.lastFrame[0], b.lastFrame[1], b.next)
	b.mu.Unlock()
	if err := b.write(false, at, tail, []int{0}); err != nil {
		return fmt.Errorf("handle: close %q: writing the tail frame: %w", b.path, err)
	}
	b.mu.Lock()
	b.size += int64(len(tail))
	b.mu.Unlock()
	return nil
}
