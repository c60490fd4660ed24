package file

import (
	"github.com/sessionlog/sessionlog/handle"

	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/secrets/seal"
)

// A mark says that a session changed since the snapshot (docs/design.md,
// "The session index"). Whoever takes a session's writer lock creates
// <ID>.<nonce>.pre in the marks folder before it changes anything, and
// before it lets the lock go writes what the session now is into that
// file and renames it <ID>.<nonce>.post. A pre without its post is a
// change under way, or one whose process died: an open describes that
// session from its log, and when no writer holds its lock any more turns
// the pre into a post. A session whose marks are one post is what the
// post says. So whatever instant a process dies, the next open finds
// every session that changed.

// sessEntry is what the index holds of a session: Stat's Info but the
// path, or (Live) only what its file shows in clear.
type sessEntry struct {
	ID       string           `json:"id"`
	Encoding string           `json:"enc,omitempty"`
	Header   *eventlog.Header `json:"hdr,omitempty"`
	Events   int64            `json:"events,omitempty"`
	LastSeq  int64            `json:"lastSeq"`
	LastType string           `json:"lastType,omitempty"`
	LastTime int64            `json:"lastTime,omitempty"`
	Size     int64            `json:"size,omitempty"`
	// Live: a sealed session (its labels and events are not written in
	// clear) or one Stat cannot describe; every open describes it again.
	Live bool `json:"live,omitempty"`
}

func (e *sessEntry) marshal() ([]byte, error) { return json.Marshal(e) }

func (e *sessEntry) lastActive() int64 { return e.info("").LastActive() }

// info returns the entry as Stat's Info of a store in folder dir.
func (e *sessEntry) info(dir string) handle.Info {
	in := handle.Info{ID: e.ID, Encoding: e.Encoding, Events: e.Events, LastSeq: e.LastSeq, LastType: e.LastType,
		LastTime: e.LastTime, SizeBytes: e.Size}
	if e.Header != nil {
		in.Header = *e.Header
	}
	if dir != "" {
		ext := rawExt
		if e.Encoding == handle.EncodingZstd {
			ext = zstExt
		}
		in.Path = filepath.Join(dir, e.ID+ext)
	}
	return in
}

// described is a session as its log describes it now.
type described struct {
	present bool
	info    handle.Info      // Stat's; for a broken one its ID, LastSeq -1
	err     error            // Stat's error: the session cannot be described
	hdr     *eventlog.Header // its header, what it shows in clear when sealed; nil when unreadable
	// ident, when set, is the log identity a post gave: the description
	// stands once the log is found to have it (view.fresh).
	ident string
}

// entry returns what the index keeps of d (nil when absent).
func (d described) entry() *sessEntry {
	if !d.present {
		return nil
	}
	in := d.info
	if d.err != nil || in.Sealed {
		return &sessEntry{ID: in.ID, Encoding: in.Encoding, Header: d.hdr, LastSeq: -1, Live: true}
	}
	h := in.Header
	return &sessEntry{ID: in.ID, Encoding: in.Encoding, Header: &h, Events: in.Events, LastSeq: in.LastSeq,
		LastType: in.LastType, LastTime: in.LastTime, Size: in.SizeBytes}
}

// describe describes session id from its log: absent, its Info, or the
// error Stat gives with what its header shows. An error other than the
// log's own (I/O, ctx) fails it: it says nothing about the session.
func (s *Store) describe(ctx context.Context, id string) (described, error) {
	loc, err := s.locate(ctx, id)
	if errors.Is(err, handle.ErrNotFound) {
		return described{}, nil
	}
	d := described{present: true, info: handle.Info{ID: id, LastSeq: -1}}
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return d, cerr
		}
		d.err = err // stored twice, not a regular file
		return d, nil
	}
	info, err := s.statPath(ctx, id, loc)
	if errors.Is(err, handle.ErrNotFound) {
		return described{}, nil
	}
	if cerr := ctx.Err(); cerr != nil {
		return d, cerr
	}
	if err != nil && !isVerdict(err) {
		// As Headers: an I/O error says nothing about the session, and
		// leaving it out would hide a fork from Delete.
		return d, &describeError{id: id, err: err}
	}
	if err == nil && !info.Sealed {
		d.info, d.hdr = info, &info.Header
		return d, nil
	}
	if err == nil {
		d.info = info
	} else {
		d.err = err
		d.info.Encoding = loc.enc.name
	}
	hdr, herr := s.readHeaderAt(loc)
	switch {
	case herr == nil:
		d.hdr = &hdr
	case errors.Is(herr, fs.ErrNotExist):
		return described{}, nil
	case errors.Is(herr, eventlog.ErrCorrupt), errors.Is(herr, eventlog.ErrVersion), errors.Is(herr, ErrNotRegular), errors.Is(herr, ErrDuplicate):
	default:
		// As Headers: skipping a header that could not be read would
		// hide a fork from Delete, which would then delete its parent.
		return d, &describeError{id: id, err: herr}
	}
	return d, nil
}

// describeError: a log could not be read (I/O), which says nothing
// about its session. No index is opened then.
type describeError struct {
	id  string
	err error
}

func (e *describeError) Error() string { return fmt.Sprintf("handle: reading %s: %v", e.id, e.err) }
func (e *describeError) Unwrap() error { return e.err }

// isVerdict reports whether err is a judgement of a log (it is corrupt,
// of another version, sealed for keys not at hand…), not a failure to
// read it.
func isVerdict(err error) bool {
	for _, v := range []error{eventlog.ErrCorrupt, eventlog.ErrVersion, ErrNotRegular, ErrDuplicate, handle.ErrSealed, handle.ErrLineage, seal.ErrNoKey, seal.ErrBlob} {
		if errors.Is(err, v) {
			return true
		}
	}
	return false
}

// markName is the name of a mark: <ID>.<nonce>.<pre|post>.
func markName(id, nonce, kind string) string { return id + "." + nonce + "." + kind }

// parseMark splits a mark's name; ok is false for any other file.
func parseMark(name string) (id, nonce, kind string, ok bool) {
	id, rest, ok1 := strings.Cut(name, ".")
	nonce, kind, ok2 := strings.Cut(rest, ".")
	if !ok1 || !ok2 || (kind != "pre" && kind != "post") || nonce == "" {
		return "", "", "", false
	}
	if id != folderMark && !eventlog.ValidID(id) {
		return "", "", "", false
	}
	return id, nonce, kind, true
}

// folderMark stands for the ID of a post that changes no session but
// accounts for a change of the store's folder (GC removed leftovers).
const folderMark = "_"

// cacheUsable reports whether the cache folder is a folder (or absent),
// not a link: the index is kept there, and trusted, only then.
func (s *Store) cacheUsable() bool {
	return checkFolder(s.fs, filepath.Join(s.dir, cacheDir)) == nil && checkFolder(s.fs, s.marksDir()) == nil
}

func (s *Store) marksDir() string { return filepath.Join(s.dir, cacheDir, sindexMarks) }

// folderTime returns the store folder's modification time (ns), 0 when
// it cannot be read.
func (s *Store) folderTime() int64 {
	fi, err := s.fs.Stat(s.dir)
	if err != nil {
		return 0
	}
	return fi.ModTime().UnixNano()
}

// markPre creates a pre mark for session id and returns its nonce. When
// it cannot, the change must not be made: no mark would announce it.
func (s *Store) markPre(id string) (string, error) {
	// The nonce orders the marks of a session: the changes of one session
	// are made one at a time, under its lock, by a clock that runs
	// forward (a post is checked against the log before it is trusted).
	nonce := randomNonce()
	dir := s.marksDir()
	if !s.cacheUsable() {
		return "", nil // no index is kept, none trusted (openView)
	}
	p := filepath.Join(dir, markName(id, nonce, "pre"))
	f, err := openRegular(s.fs, p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, false)
	if errors.Is(err, fs.ErrNotExist) {
		if err = checkFolder(s.fs, filepath.Join(s.dir, cacheDir)); err == nil {
			if err = checkFolder(s.fs, dir); err == nil {
				if err = s.fs.MkdirAll(dir, 0o700); err == nil {
					f, err = openRegular(s.fs, p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, false)
				}
			}
		}
	}
	if err != nil {
		return "", fmt.Errorf("handle: session index mark: %w", err)
	}
	return nonce, f.Close()
}

// randomNonce is a mark's nonce: the time (ns) and a random number, in
// hex, ordered by time.
func randomNonce() string { return fmt.Sprintf("%016x%08x", time.Now().UnixNano(), rand.Uint32()) }

// markPost turns session id's pre mark nonce into a post saying what d
// describes and, when acked is not -1, the evidence of acknowledged seqs
// the change left (evidence.go) (best effort: a pre left behind is
// resolved by the next open).
func (s *Store) markPost(id, nonce string, d described, acked int64) {
	if nonce == "" {
		return
	}
	line, err := postLine(s.folderTime(), s.logIdentity(id), d.entry(), acked)
	if err != nil {
		return
	}
	pre := filepath.Join(s.marksDir(), markName(id, nonce, "pre"))
	f, err := openRegular(s.fs, pre, os.O_WRONLY|os.O_TRUNC, false)
	if err != nil {
		return
	}
	_, err = f.Write(line)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		s.fs.Rename(pre, filepath.Join(s.marksDir(), markName(id, nonce, "post")))
	}
}

// notePost writes a post that accounts for a change of the store's
// folder that changed no session (GC's leftovers).
func (s *Store) noteFolder() {
	if nonce, err := s.markPre(folderMark); err == nil {
		s.markPost(folderMark, nonce, described{}, -1)
	}
}

// postLine is a post's content: the folder's modification time after
// the change, the log file's identity (logIdentity), the entry ("null"
// when the session is gone) and, unless acked is -1, acked. The entry of
// a session described (not live) begins with its last activity, "active"
// (ms, when not negative), which decoding ignores: a page of ls picks the
// posts that can enter it without decoding the others.
func postLine(folder int64, ident string, e *sessEntry, acked int64) ([]byte, error) {
	b, err := json.Marshal(e)
	if err != nil {
		return nil, err
	}
	if e != nil && !e.Live && e.lastActive() >= 0 {
		b = append([]byte(activePrefix+strconv.FormatInt(e.lastActive(), 10)+","), b[1:]...)
	}
	v := ident + "\t" + string(b)
	if acked >= 0 {
		v += "\t" + strconv.FormatInt(acked, 10)
	}
	return appendLine(nil, strconv.FormatInt(folder, 10), v), nil
}

// activePrefix starts the entry of a post that tells its activity.
const activePrefix = `{"active":`

// post is a post mark's content. Its entry is decoded only when a query
// needs it (entry): an open in a new process reads thousands of posts,
// and a query needs few. js and raw share the bytes the post was read
// from, never written to.
type post struct {
	folder int64
	active int64 // the session's last activity; -1 when not told (gone, live)
	ident  string
	js     []byte // the entry, JSON
	raw    []byte // the post's line without its "\n", for the posts file
	acked  int64  // the evidence the change left (evidence.go); -1: none said
}

// entry decodes the post's entry: nil when the session is gone; ok is
// false when it does not decode.
func (p post) entry() (e *sessEntry, ok bool) {
	if json.Unmarshal(p.js, &e) != nil {
		return nil, false
	}
	return e, true
}

// gone reports whether the post says its session is gone ("null"),
// without decoding its entry.
func (p post) gone() bool { return string(bytes.TrimSpace(p.js)) == "null" }

// parsePost parses a post's line b (without its "\n"), checked, all but
// its entry; the post keeps slices of b.
func parsePost(b []byte) (post, bool) {
	i := bytes.LastIndexByte(b, '\t')
	if i < 0 || !sumIs(b[i+1:], crc32.ChecksumIEEE(b[:i])) {
		return post{}, false
	}
	key, value, ok1 := bytes.Cut(b[:i], []byte{'\t'})
	ident, js, ok2 := bytes.Cut(value, []byte{'\t'})
	js, ack, said := bytes.Cut(js, []byte{'\t'}) // JSON holds no tab
	folder, ok3 := parseDecimal(key)
	if !ok1 || !ok2 || !ok3 || len(js) == 0 {
		return post{}, false
	}
	acked := int64(-1)
	if said {
		var ok bool
		if acked, ok = parseDecimal(ack); !ok {
			return post{}, false
		}
	}
	active := int64(-1)
	if rest, ok := bytes.CutPrefix(js, []byte(activePrefix)); ok {
		n, _, _ := bytes.Cut(rest, []byte{','})
		if active, ok = parseDecimal(n); !ok {
			return post{}, false
		}
	}
	return post{folder: folder, active: active, ident: string(ident), js: js, raw: b, acked: acked}, true
}

// parseDecimal parses b, a non-negative decimal number as
// strconv.FormatInt writes it, without allocating.
func parseDecimal(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 1 && b[0] == '0' {
		return 0, false
	}
	var n int64
	for _, c := range b {
		d := int64(c - '0')
		if c < '0' || c > '9' || n > (math.MaxInt64-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	return n, true
}

// logIdentity says which file holds session id's log now, cheaply (an
// lstat a layout): "-" for none, "<ext> <size> <mtime ns>" for one
// regular file, "" when that cannot be told (both layouts, an error). A
// post whose identity is the log's now tells what the log holds.
func (s *Store) logIdentity(id string) string {
	out := "-"
	for _, e := range s.encodings() {
		fi, err := lstat(s.fs, filepath.Join(s.dir, id+e.ext))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil || !fi.Mode().IsRegular() || out != "-":
			return ""
		}
		out = fmt.Sprintf("%s %d %d", e.ext, fi.Size(), fi.ModTime().UnixNano())
	}
	return out
}

// markedLock is a session's writer lock taken through lockMarked: its
// unlock writes the post mark first.
type markedLock struct {
	s       *Store
	l       writerLock
	id      string
	nonce   string
	existed bool   // a log of the session was there when the lock was taken
	ident   string // that log's identity then (logIdentity)
	acked   int64  // the evidence its post carries (noteAcked), -1 for none; under s.held.mu
}

// lockMarked takes session id's writer lock and marks the session as
// changing (see markPre). Every change of a session's files is made under
// a lock taken here.
func (s *Store) lockMarked(id string) (writerLock, error) {
	l, err := lockFile(s.fs, s.lockPath(id))
	if err != nil {
		return nil, err
	}
	nonce, err := s.markPre(id)
	if err != nil {
		l.unlock()
		return nil, err
	}
	ident := s.logIdentity(id)
	m := &markedLock{s: s, l: l, id: id, nonce: nonce, existed: ident != "-", ident: ident, acked: -1}
	s.held.add(m)
	return m, nil
}

func (m *markedLock) unlock() error {
	acked := m.s.held.remove(m)
	pre := filepath.Join(m.s.marksDir(), markName(m.id, m.nonce, "pre"))
	if m.nonce != "" && m.ident != "" && m.ident != "-" && acked < 0 && m.s.logIdentity(m.id) == m.ident {
		// The log is the file it was, unchanged (a writer that appended
		// nothing, an append refused): nothing to announce, and the
		// store's files stay as they were.
		m.s.fs.Remove(pre)
		return m.l.unlock()
	}
	if d, err := m.s.describe(context.Background(), m.id); err == nil {
		if !d.present && !m.existed && m.nonce != "" {
			// Absent before and after (a create that failed): nothing to
			// announce.
			m.s.fs.Remove(pre)
		} else {
			m.s.markPost(m.id, m.nonce, d, acked)
		}
	}
	return m.l.unlock()
}

// marks lists the marks folder: by session ID, the names of its marks.
func (s *Store) marks() (map[string][]string, int, error) {
	// Names only: every open lists the marks, and a stat of each would
	// double its cost. A mark that is not a regular file is not read
	// (readPost), so its session is described from its log.
	f, err := s.fs.Open(s.marksDir())
	var names []string
	if err == nil {
		names, err = f.Readdirnames(-1)
		f.Close()
	}
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("handle: session index marks: %w", err)
	}
	out := make(map[string][]string, len(names))
	n := 0
	for _, nm := range names {
		if id, _, _, ok := parseMark(nm); ok {
			out[id] = append(out[id], nm)
			n++
		}
	}
	return out, n, nil
}
