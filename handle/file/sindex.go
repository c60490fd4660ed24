package file

import (
	"github.com/sessionlog/sessionlog/handle"

	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/sessionlog/sessionlog/eventlog"
)

// The file store's session index (docs/design.md, "The session index"):
// a snapshot (sindexfile.go) and the marks of the sessions that changed
// since (sindexmarks.go). A view is the two read together, checked
// against each other: the answer of every cross-session query.

// sindexCache is what a Store keeps between opens of its index: the
// posts it read (a post never changes once named).
type sindexCache struct {
	// foldAt, when set (tests), replaces deltaAt and the least of
	// compactAt.
	foldAt [2]int
	mu     sync.Mutex
	posts  map[string]post
	read   int // posts read from their files since the posts file was written
}

// keep caches post name.
func (c *sindexCache) keep(name string, p post) {
	if c.posts == nil || len(c.posts) > 1<<16 {
		c.posts = map[string]post{}
	}
	c.posts[name] = p
}

// deltaAt is how many marks an open leaves before it folds them into the
// snapshot's delta: every open lists them all, and reads the posts a
// query needs; a fold of the delta rewrites the delta.
const deltaAt = 256

// compactAt is how many sessions the delta and the marks hold before an
// open folds them into a new snapshot, of n sessions: a fold rewrites
// the snapshot.
func compactAt(n int64) int { return int(max(1024, n/256)) }

func (s *Store) deltaPath() string { return filepath.Join(s.dir, cacheDir, sindexDelta) }

// openDelta opens the delta of snapshot sn: nil when there is none, or
// it changes another snapshot (a fold wrote sn and was stopped before it
// removed the delta); errSindexDamaged when its head does not check.
func (s *Store) openDelta(sn *snapshot) (*snapshot, error) {
	dl, err := openSnapshot(s.fs, s.deltaPath())
	if dl == nil || err != nil {
		return nil, err
	}
	if dl.base() != sn.gen || sn.base() != "" {
		dl.close()
		return nil, nil
	}
	return dl, nil
}

// view is the store's sessions as the index has them: the snapshot's
// entries (sn, nil when there is none), overridden by the marked
// sessions: dyn, those described afresh or from a post, and posted, those
// whose newest post stands for them, not decoded yet (take decodes one
// when a query needs it).
type view struct {
	s      *Store
	sn     *snapshot
	dl     *snapshot // the snapshot's delta (nil: none): overrides it
	dyn    map[string]described
	posted map[string]post
	// inDl holds the delta's IDs once a query asks inDelta of many (a
	// page); nil until then.
	inDl  map[string]bool
	asked int
}

// snaps returns the view's snapshot and delta, those there are.
func (v *view) snaps() []*snapshot {
	var out []*snapshot
	for _, sn := range []*snapshot{v.sn, v.dl} {
		if sn != nil {
			out = append(out, sn)
		}
	}
	return out
}

// lookup returns session id's entry in sn (nil: a delta says it is gone);
// found is false when sn has no line for it.
func lookup(sn *snapshot, id string) (e *sessEntry, found bool, err error) {
	for ln, err := range sn.from(secID, id) {
		if err != nil || ln.key != id {
			return nil, false, err
		}
		e, err := entryOf(ln, secID)
		return e, err == nil, err
	}
	return nil, false, nil
}

// inDelta reports whether the delta holds session id (which overrides
// the snapshot's entry).
func (v *view) inDelta(id string) (bool, error) {
	if v.dl == nil {
		return false, nil
	}
	v.asked++
	if v.inDl == nil && v.asked > 4 {
		// Many asked (a page): every ID of the delta, once, rather than
		// a bisection each.
		ids, err := v.dl.keys(secID)
		if err != nil {
			return false, err
		}
		v.inDl = ids
	}
	if v.inDl != nil {
		return v.inDl[id], nil
	}
	_, found, err := lookup(v.dl, id)
	return found, err
}

// overridden reports whether the entry of session id in sn is not the
// view's: the session is marked, or sn is the snapshot and its delta
// holds the session.
func (v *view) overridden(sn *snapshot, id string) (bool, error) {
	if v.marked(id) {
		return true, nil
	}
	if sn == v.sn {
		return v.inDelta(id)
	}
	return false, nil
}

// marked reports whether the view holds session id apart from its
// snapshot.
func (v *view) marked(id string) bool {
	_, ok := v.dyn[id]
	if !ok {
		_, ok = v.posted[id]
	}
	return ok
}

// take returns marked session id's description, decoding its post when
// it is still posted (the post's log identity is checked when used:
// fresh); ok is false when it is not marked.
func (v *view) take(id string) (described, bool) {
	if d, ok := v.dyn[id]; ok {
		return d, true
	}
	p, ok := v.posted[id]
	if !ok {
		return described{}, false
	}
	d := p.described(v.s.dir, id)
	d.ident = p.ident
	delete(v.posted, id)
	v.dyn[id] = d
	return d, true
}

func (v *view) close() {
	for _, sn := range v.snaps() {
		sn.close()
	}
}

// errRetry: the snapshot changed while an open read the marks.
var errRetry = errors.New("handle: session index changed while read")

// index opens the store's index. It rebuilds a snapshot that is missing,
// damaged, or older than the store's folder, and folds the marks into it
// when there are many; where it cannot write (a read-only file system),
// it reads every log instead.
func (s *Store) index(ctx context.Context) (*view, error) {
	for range 4 {
		v, err := s.openView(ctx)
		if errors.Is(err, errRetry) {
			continue
		}
		return v, err
	}
	return s.scanView(ctx)
}

// openView is one try of index.
func (s *Store) openView(ctx context.Context) (*view, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if !s.cacheUsable() {
		return s.scanView(ctx) // nothing kept there is trusted
	}
	snapPath := filepath.Join(s.dir, cacheDir, sindexName)
	sn, err := openSnapshot(s.fs, snapPath)
	if sn == nil {
		if err != nil && !errors.Is(err, errSindexDamaged) {
			return nil, err
		}
		if _, err := s.fs.Stat(s.dir); errors.Is(err, fs.ErrNotExist) {
			return &view{s: s, dyn: map[string]described{}}, nil // no store yet
		}
		return s.rebuilt(ctx, true)
	}
	v := &view{s: s, sn: sn, dyn: map[string]described{}}
	if v.dl, err = s.openDelta(sn); err != nil {
		v.close()
		return nil, s.damaged(ctx, err)
	}
	marks, n, err := s.marks()
	if err != nil {
		v.close()
		return nil, err
	}
	v.posted = make(map[string]post, len(marks))
	s.loadPosts(marks)
	known, open := sn.folder, false
	if v.dl != nil {
		known = max(known, v.dl.folder)
	}
	for _, id := range slices.Sorted(mapKeys(marks)) {
		names := marks[id]
		k, o, err := v.applyMarks(ctx, id, names)
		if err != nil {
			v.close()
			return nil, err
		}
		known, open = max(known, k), open || o
	}
	s.savePosts(marks)
	for _, sn := range v.snaps() {
		for ln, err := range sn.lines(secLive, sn.off[secLive]) {
			if err == nil && eventlog.ValidID(ln.key) {
				var over bool
				if over, err = v.overridden(sn, ln.key); err == nil && !over {
					v.dyn[ln.key], err = s.describe(ctx, ln.key)
				}
			}
			if err != nil {
				v.close()
				return nil, s.damaged(ctx, err)
			}
		}
	}
	// The snapshot and its delta must be those the marks were read
	// against: a fold in between removed marks they hold and these do
	// not.
	again, err := openSnapshot(s.fs, snapPath)
	var dl *snapshot
	if again != nil && err == nil {
		dl, err = s.openDelta(again)
	}
	same := again != nil && err == nil && again.gen == sn.gen && (dl == nil) == (v.dl == nil) && (dl == nil || dl.gen == v.dl.gen)
	for _, sn := range []*snapshot{again, dl} {
		if sn != nil {
			sn.close()
		}
	}
	if !same {
		v.close()
		return nil, errRetry
	}
	// A log added or removed by hand: the folder changed after every
	// change the index knows of (and none is under way to explain it).
	if !open && s.folderTime() > known {
		s.cfg.Logger.Debug("session index older than its folder: rebuilt", "dir", s.dir)
		v.close()
		return s.rebuilt(ctx, true)
	}
	deltaAt, compactAt := deltaAt, compactAt(sn.count)
	if at := s.six.foldAt; at[0] > 0 {
		deltaAt, compactAt = at[0], max(at[1], int(sn.count/256))
	}
	if n > deltaAt {
		// Into the delta, or when the delta has grown, into a new
		// snapshot.
		fold := s.foldDelta
		if v.dl != nil && int(v.dl.count)+n > compactAt {
			fold = func(ctx context.Context) error { return s.fold(ctx, false) }
		}
		if err := fold(ctx); err == nil {
			v.close()
			return nil, errRetry
		}
		// Not now (another process folds, a read-only store): this view
		// is right, only slower.
	}
	return v, nil
}

// applyMarks sets dyn[id] from the marks of session id: from its newest
// post when no change of it is under way and the post's log identity is
// the log's now, else from its log. It returns the latest folder time
// its posts account for, and whether a change of it is under way (a pre
// without its post).
func (v *view) applyMarks(ctx context.Context, id string, names []string) (known int64, open bool, err error) {
	s := v.s
	if len(names) == 1 && id != folderMark {
		// The common case: one post, no change under way.
		if _, _, kind, _ := parseMark(names[0]); kind == "post" {
			p, ok, err := s.readPost(names[0])
			if err != nil {
				return 0, false, err
			}
			if ok && p.ident != "" {
				v.posted[id] = p // decoded when a query needs it (take)
				return p.folder, false, nil
			}
		}
	}
	pres, posts := splitMarks(names)
	var unresolved []string
	for _, nonce := range slices.Sorted(mapKeys(pres)) {
		if _, ok := posts[nonce]; !ok {
			unresolved = append(unresolved, nonce)
		}
	}
	var newest *post
	for _, nonce := range slices.Sorted(mapKeys(posts)) {
		p, ok, err := s.readPost(posts[nonce])
		if err != nil {
			return 0, false, err
		}
		if ok { // else a fold removed it: the log says
			known = max(known, p.folder)
			newest = &p
		}
	}
	if id == folderMark {
		return known, false, nil
	}
	if len(unresolved) == 0 && newest != nil && newest.ident != "" {
		v.posted[id] = *newest
		return known, false, nil
	}
	// A change under way or cut short: the log says. When no writer
	// holds the lock (asked first), the pres' changes are over: their
	// posts say what the log now is.
	free := !s.lockedNow(id)
	d, err := s.describe(ctx, id)
	if err != nil {
		return 0, false, err
	}
	v.dyn[id] = d
	if free && len(unresolved) > 0 && s.oweSweep() == nil {
		// A change cut short may have left files: GC sweeps (sweep.go).
		for _, nonce := range unresolved {
			s.markPost(id, nonce, d, -1) // a writer killed: the evidence before it stands
		}
	}
	return known, len(unresolved) > 0, nil
}

// cutShort reports whether the marks names hold a pre without its post.
func cutShort(names []string) bool {
	posts := map[string]bool{}
	for _, nm := range names {
		if _, nonce, kind, _ := parseMark(nm); kind == "post" {
			posts[nonce] = true
		}
	}
	for _, nm := range names {
		if _, nonce, kind, _ := parseMark(nm); kind == "pre" && !posts[nonce] {
			return true
		}
	}
	return false
}

// splitMarks splits a session's marks (names) by nonce: the nonces of
// its pres, and its posts' names.
func splitMarks(names []string) (pres map[string]bool, posts map[string]string) {
	pres, posts = map[string]bool{}, map[string]string{}
	for _, nm := range names {
		switch _, nonce, kind, _ := parseMark(nm); kind {
		case "pre":
			pres[nonce] = true
		case "post":
			posts[nonce] = nm
		}
	}
	return pres, posts
}

// standingPost returns session id's description from its newest post
// (names are its marks) when that post stands for its log: no change of
// it is under way or was cut short (a pre without its post), the post
// describes it fully (not live), and the log has the identity the post
// names.
func (s *Store) standingPost(id string, names []string) (described, bool) {
	pres, posts := splitMarks(names)
	for nonce := range pres {
		if _, ok := posts[nonce]; !ok {
			return described{}, false
		}
	}
	var newest *post
	for _, nonce := range slices.Sorted(mapKeys(posts)) {
		p, ok, err := s.readPost(posts[nonce])
		if err != nil || !ok {
			return described{}, false
		}
		newest = &p
	}
	if newest == nil || newest.ident == "" || newest.ident != s.logIdentity(id) {
		return described{}, false
	}
	d := newest.described(s.dir, id)
	if errors.Is(d.err, errLive) {
		return described{}, false
	}
	return d, true
}

// readPost reads the post mark name (cached: a post never changes); ok
// is false when it is gone (a fold removed it). A post that does not
// check has no identity: its session is described from its log.
func (s *Store) readPost(name string) (p post, ok bool, err error) {
	c := &s.six
	c.mu.Lock()
	p, ok = c.posts[name]
	c.mu.Unlock()
	if ok {
		return p, true, nil
	}
	b, err := readRegular(s.fs, filepath.Join(s.marksDir(), name))
	if errors.Is(err, fs.ErrNotExist) {
		return post{}, false, nil
	}
	if errors.Is(err, ErrNotRegular) {
		return post{}, true, nil // not a post: the log says
	}
	if err != nil {
		return post{}, false, err
	}
	if len(b) > 0 && b[len(b)-1] == '\n' {
		p, ok = parsePost(b[:len(b)-1])
	}
	if !ok {
		return post{}, true, nil
	}
	c.mu.Lock()
	c.keep(name, p)
	c.read++
	c.mu.Unlock()
	return p, true, nil
}

// described returns what post p says of its session id.
func (p post) described(dir, id string) described {
	e, ok := p.entry()
	if !ok || e != nil && e.ID != id {
		// Not a description of id: the log says.
		return described{present: true, info: handle.Info{ID: id, LastSeq: -1}, err: errLive}
	}
	if e == nil {
		return described{info: handle.Info{ID: id}}
	}
	if e.Live {
		// Not trusted for a description: a live session is described
		// afresh.
		return described{present: true, info: handle.Info{ID: e.ID, LastSeq: -1}, hdr: e.Header, err: errLive}
	}
	return described{present: true, info: e.info(dir), hdr: e.Header}
}

// errLive marks a description a view must replace by a fresh one.
var errLive = errors.New("handle: described afresh")

// damaged turns errSindexDamaged into a rebuild on the next open.
func (s *Store) damaged(ctx context.Context, err error) error {
	if errors.Is(err, errSindexDamaged) {
		s.fs.Remove(filepath.Join(s.dir, cacheDir, sindexName))
		return errRetry
	}
	return err
}

// rebuilt writes a new snapshot — from every log when full, else the old
// one with the marks folded in — and opens the index again. Another
// process folding meanwhile, or a store that cannot be written, leaves
// this open to read every log itself.
func (s *Store) rebuilt(ctx context.Context, full bool) (*view, error) {
	switch err := s.fold(ctx, full); {
	case err == nil:
		return nil, errRetry
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case errors.As(err, new(*describeError)):
		return nil, err
	default:
		// Another process folds, the store cannot be written, a log
		// cannot be read (scanView says which).
		s.cfg.Logger.Debug("session index not written", "dir", s.dir, "err", err)
		return s.scanView(ctx)
	}
}

// scanView describes every session from its log: the index of a store
// it cannot write.
func (s *Store) scanView(ctx context.Context) (*view, error) {
	ids, err := s.ids()
	if err != nil {
		return nil, err
	}
	v := &view{s: s, dyn: make(map[string]described, len(ids))}
	for _, id := range ids {
		if v.dyn[id], err = s.describe(ctx, id); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// lockIndex takes the index lock (ErrLocked while another process
// folds).
func (s *Store) lockIndex() (writerLock, error) {
	lock, err := lockFile(s.fs, filepath.Join(s.dir, cacheDir, sindexLockNm))
	if errors.Is(err, fs.ErrNotExist) {
		if err = s.fs.MkdirAll(filepath.Join(s.dir, cacheDir), 0o700); err == nil {
			lock, err = lockFile(s.fs, filepath.Join(s.dir, cacheDir, sindexLockNm))
		}
	}
	return lock, err
}

// fold writes a new snapshot under the index lock (ErrLocked while
// another process folds): the old snapshot merged with its delta and the
// marks (mergeFold), or when full (or there is none, or it is damaged)
// every log described, then every session with marks; it removes the
// delta, and the marks of the sessions no writer held.
func (s *Store) fold(ctx context.Context, full bool) error {
	lock, err := s.lockIndex()
	if err != nil {
		return err
	}
	defer lock.unlock()
	return s.foldLocked(ctx, full)
}

func (s *Store) foldLocked(ctx context.Context, full bool) error {
	snapPath := filepath.Join(s.dir, cacheDir, sindexName)
	if !full {
		old, err := openSnapshot(s.fs, snapPath)
		if err != nil && !errors.Is(err, errSindexDamaged) {
			return err
		}
		if old != nil {
			err := s.mergeFold(ctx, old)
			old.close()
			if errors.Is(err, errSindexDamaged) {
				// From the logs, with the evidence old's lines hold.
				if err = s.foldLocked(ctx, true); err != nil {
					s.fs.Remove(snapPath)
				}
			}
			return err
		}
	}
	folder := s.folderTime()
	marks, _, err := s.marks()
	if err != nil {
		return err
	}
	entries := map[string]*sessEntry{}
	ids, err := s.ids()
	if err != nil {
		return err
	}
	for _, id := range ids {
		if _, marked := marks[id]; marked {
			continue // described below, after its lock is probed
		}
		d, err := s.describe(ctx, id)
		if err != nil {
			return err
		}
		if e := d.entry(); e != nil {
			entries[id] = e
		}
	}
	acked := s.foldAcked(snapPath, marks) // the logs do not hold it
	consumed, f, err := s.foldMarks(ctx, marks, true, func(id string, e *sessEntry) {
		if e != nil {
			entries[id] = e
		} else {
			delete(entries, id)
		}
	})
	if err != nil {
		return err
	}
	if err := writeSnapshot(ctx, s.fs, snapPath, entries, acked, max(folder, f), ""); err != nil {
		return err
	}
	s.fs.Remove(s.deltaPath()) // of the old snapshot: read no more
	for _, nm := range consumed {
		s.fs.Remove(filepath.Join(s.marksDir(), nm))
	}
	s.cfg.Logger.Debug("session index written", "dir", s.dir, "sessions", len(entries), "full", true, "marks", len(consumed))
	return nil
}

// foldDelta writes a new delta of the snapshot under the index lock: the
// old delta's entries, then every session with marks described; it
// removes the marks of the sessions no writer held. Without a snapshot
// it folds.
func (s *Store) foldDelta(ctx context.Context) error {
	lock, err := s.lockIndex()
	if err != nil {
		return err
	}
	defer lock.unlock()
	folder := s.folderTime()
	marks, _, err := s.marks()
	if err != nil {
		return err
	}
	sn, err := openSnapshot(s.fs, filepath.Join(s.dir, cacheDir, sindexName))
	if err != nil && !errors.Is(err, errSindexDamaged) {
		return err
	}
	if sn == nil {
		return s.foldLocked(ctx, true)
	}
	defer sn.close()
	entries := map[string]*sessEntry{}
	dl, err := s.openDelta(sn)
	if err != nil {
		return s.foldLocked(ctx, false)
	}
	if dl != nil {
		defer dl.close()
		var f int64
		if entries, f, err = dl.entries(); err != nil {
			return s.foldLocked(ctx, false)
		}
		folder = max(folder, f)
	}
	consumed, f, err := s.foldMarks(ctx, marks, false, func(id string, e *sessEntry) { entries[id] = e })
	if err != nil {
		return err
	}
	acked := map[string]int64{} // the old delta's, then the marks'
	if err := readAcked(dl, acked); err != nil {
		return s.foldLocked(ctx, false)
	}
	s.marksAcked(acked, marks)
	if err := writeSnapshot(ctx, s.fs, s.deltaPath(), entries, acked, max(folder, sn.folder, f), sn.gen); err != nil {
		return err
	}
	for _, nm := range consumed {
		s.fs.Remove(filepath.Join(s.marksDir(), nm))
	}
	s.cfg.Logger.Debug("session index delta written", "dir", s.dir, "sessions", len(entries), "marks", len(consumed))
	return nil
}

// foldMarks describes every session with marks to set (nil: gone), from
// its standing post or its log, and returns the marks of those no writer
// holds (to remove once written), the latest folder time their posts
// account for. A rebuild, or a change cut short whose pre goes, may have
// left files: GC owes a sweep then (sweep.go).
func (s *Store) foldMarks(ctx context.Context, marks map[string][]string, rebuild bool, set func(id string, e *sessEntry)) (consumed []string, folder int64, err error) {
	owe := rebuild
	for _, id := range slices.Sorted(mapKeys(marks)) {
		names := marks[id]
		if id == folderMark {
			consumed = append(consumed, names...)
			continue
		}
		held := s.lockedNow(id) // before describing: see applyMarks
		owe = owe || !held && cutShort(names)
		d, ok := s.standingPost(id, names)
		if !ok {
			// What a standing post says is what the log is: else it is read.
			if d, err = s.describe(ctx, id); err != nil {
				return nil, 0, err
			}
		}
		set(id, d.entry())
		if !held {
			consumed = append(consumed, names...)
		}
	}
	for _, nm := range consumed {
		if _, _, kind, _ := parseMark(nm); kind == "post" {
			if p, ok, err := s.readPost(nm); err == nil && ok {
				folder = max(folder, p.folder)
			}
		}
	}
	if owe {
		if err := s.oweSweep(); err != nil {
			return nil, 0, err
		}
	}
	return consumed, folder, nil
}

// RebuildIndex rebuilds the store's session index from its logs
// (docs/design.md, "The session index"): what to do after changing the
// store's folder by hand while processes used it. Nothing but derived
// data is written.
func (s *Store) RebuildIndex(ctx context.Context) error { return s.fold(ctx, true) }

// entryOf decodes the entry of a line of section sec (secID, secActive):
// nil for a session a delta says is gone.
func entryOf(ln sline, sec int) (*sessEntry, error) {
	if sec == secID && ln.value == "null" {
		return nil, nil
	}
	var e sessEntry
	if err := json.Unmarshal([]byte(ln.value), &e); err != nil {
		return nil, errSindexDamaged
	}
	if sec == secID && e.ID != ln.key || sec == secActive && ln.key != activeKey(e.lastActive(), e.ID) {
		return nil, errSindexDamaged
	}
	return &e, nil
}

// get returns session id as the view has it; ok is false when absent.
func (v *view) get(ctx context.Context, id string) (described, bool, error) {
	if d, ok := v.take(id); ok {
		d, err := v.fresh(ctx, d)
		return d, d.present, err
	}
	for _, sn := range []*snapshot{v.dl, v.sn} { // the delta first
		if sn == nil {
			continue
		}
		e, found, err := lookup(sn, id)
		if err != nil || found {
			return v.fromEntry(e), e != nil && err == nil, err
		}
	}
	return described{}, false, nil
}

func (v *view) fromEntry(e *sessEntry) described {
	if e == nil {
		return described{}
	}
	return described{present: true, info: e.info(v.s.dir), hdr: e.Header}
}

// each calls fn for every session of section sec of the snapshot, then
// of its delta, from the first line whose key is at least target, while
// match holds for the key (the ID is the line's value, or its key in
// secID), leaving out those the view holds otherwise (overridden); fn's
// false stops the section of one file.
func (v *view) each(sec int, target string, match func(key string) bool, fn func(d described) (bool, error)) error {
	for _, sn := range v.snaps() {
		if err := v.eachIn(sn, sec, target, match, fn); err != nil {
			return err
		}
	}
	return nil
}

func (v *view) eachIn(sn *snapshot, sec int, target string, match func(key string) bool, fn func(d described) (bool, error)) error {
	for ln, err := range sn.from(sec, target) {
		if err != nil {
			return err
		}
		if !match(ln.key) {
			return nil
		}
		var d described
		switch sec {
		case secID, secActive:
			e, err := entryOf(ln, sec)
			if err != nil {
				return err
			}
			if e == nil {
				continue // gone (a delta's)
			}
			if over, err := v.overridden(sn, e.ID); err != nil || over {
				if err != nil {
					return err
				}
				continue
			}
			d = v.fromEntry(e)
		default:
			id := ln.value
			if over, err := v.overridden(sn, id); err != nil || over {
				if err != nil {
					return err
				}
				continue
			}
			e, found, err := lookup(sn, id)
			if err != nil {
				return err
			} else if !found || e == nil {
				return errSindexDamaged // a line naming no entry
			}
			d = v.fromEntry(e)
		}
		if more, err := fn(d); err != nil || !more {
			return err
		}
	}
	return nil
}

func hasPrefix(p string) func(string) bool {
	return func(k string) bool { return strings.HasPrefix(k, p) }
}
func equals(p string) func(string) bool { return func(k string) bool { return k == p } }
func always(string) bool                { return true }

// dynamic calls fn for every present marked session, in ID order,
// leaving out the posted ones maybe says cannot matter (nil: none).
func (v *view) dynamic(maybe func(id string, p post) bool, fn func(d described) error) error {
	ids := slices.AppendSeq(make([]string, 0, len(v.dyn)), mapKeys(v.dyn))
	for id, p := range v.posted {
		if maybe == nil || maybe(id, p) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		if d, _ := v.take(id); d.present {
			if err := fn(d); err != nil {
				return err
			}
		}
	}
	return nil
}

// mayKeep returns whether List lc may keep the session a post p
// describes, from its raw text: false only when it cannot — its ID
// lacks lc's prefix, or its entry's JSON lacks a label of lc or lc's
// parent. A live session's post is not its description (fresh): it may.
func mayKeep(lc handle.ListQuery) func(id string, p post) bool {
	var needles [][]byte
	for k, val := range lc.Labels {
		// The entry is written by json.Marshal, which writes a label as
		// these bytes (key and value escaped alike).
		mk, err1 := json.Marshal(k)
		mv, err2 := json.Marshal(val)
		if err1 != nil || err2 != nil {
			return func(string, post) bool { return true }
		}
		needles = append(needles, slices.Concat(mk, []byte(":"), mv))
	}
	if lc.Parent != "" {
		needles = append(needles, []byte(`"`+lc.Parent+`"`)) // an ID: nothing to escape
	}
	return func(id string, p post) bool {
		if !strings.HasPrefix(id, lc.Prefix) {
			return false
		}
		if p.active < 0 {
			return true // live (described afresh) or gone (skipped)
		}
		for _, n := range needles {
			if !bytes.Contains(p.js, n) {
				return false
			}
		}
		return true
	}
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// fresh replaces a description a post gave but cannot stand for (a
// live session's) by the log's.
func (v *view) fresh(ctx context.Context, d described) (described, error) {
	if d.ident != "" {
		if d.ident == v.s.logIdentity(d.info.ID) {
			d.ident = ""
			v.dyn[d.info.ID] = d
		} else {
			d.err = errLive // the log changed since: described afresh
		}
	}
	if !errors.Is(d.err, errLive) {
		return d, nil
	}
	nd, err := v.s.describe(ctx, d.info.ID)
	if err == nil {
		v.dyn[d.info.ID] = nd
	}
	return nd, err
}

// list answers List from the view (see storeCore.List for the rules).
func (v *view) list(ctx context.Context, lc handle.ListQuery) ([]handle.Info, error) {
	var out []handle.Info
	add := func(d described) error {
		d, err := v.fresh(ctx, d)
		switch {
		case err != nil:
			return err
		case !d.present:
			return nil
		case d.err != nil:
			if lc.Broken == nil {
				return d.err
			}
			if lc.Prefix == "" || strings.HasPrefix(d.info.ID, lc.Prefix) {
				lc.Broken(d.info.ID, d.err)
			}
			return nil
		}
		if lc.Keeps(d.info) {
			out = append(out, d.info)
		}
		return nil
	}
	sieved, flush := v.sieve(lc, add)
	maybe := mayKeep(lc)
	if lc.ByActivity && lc.Limit > 0 {
		if err := v.dynamic(func(id string, p post) bool { return p.active < 0 && maybe(id, p) }, sieved); err != nil {
			return nil, err
		}
		if err := v.postedPage(lc, maybe, sieved); err != nil {
			return nil, err
		}
	} else if err := v.dynamic(maybe, sieved); err != nil {
		return nil, err
	}
	if err := flush(); err != nil {
		return nil, err
	}
	var err error
	all := func(d described) (bool, error) { return true, add(d) }
	switch {
	case lc.Prefix != "":
		err = v.each(secID, lc.Prefix, hasPrefix(lc.Prefix), all)
	case len(lc.Labels) > 0:
		k := slices.Min(slices.Collect(mapKeys(lc.Labels)))
		key := labelKey(k, lc.Labels[k])
		err = v.each(secLabel, key, equals(key), all)
	case lc.Parent != "":
		err = v.each(secParent, lc.Parent, equals(lc.Parent), all)
	case lc.ByActivity:
		// Newest first after the cursor: the first limit of the
		// snapshot's, to be merged with dyn's by finish.
		from := ""
		if lc.Before != nil {
			from = activeKey(lc.Before.LastActive, lc.Before.ID) + "\x00"
		}
		for _, sn := range v.snaps() {
			n := 0
			err = v.eachIn(sn, secActive, from, always, func(d described) (bool, error) {
				n++
				return lc.Limit <= 0 || n < lc.Limit, add(d)
			})
			if err != nil {
				break
			}
		}
	default:
		err = v.each(secID, "", always, all)
	}
	if err != nil {
		return nil, err
	}
	return lc.Page(out), nil
}

// postedPage passes to sieved the posted sessions with a known activity
// that can enter page lc: those after lc's cursor that maybe keeps, newest
// first, decoded until Limit of them are kept — the rest come after
// those. (A post's activity is its entry's.)
func (v *view) postedPage(lc handle.ListQuery, maybe func(string, post) bool, sieved func(described) error) error {
	type cand struct {
		id     string
		active int64
	}
	var cs []cand
	for id, p := range v.posted {
		if p.active < 0 || !maybe(id, p) {
			continue
		}
		if b := lc.Before; b != nil && cmp.Or(cmp.Compare(p.active, b.LastActive), strings.Compare(id, b.ID)) >= 0 {
			continue
		}
		cs = append(cs, cand{id, p.active})
	}
	slices.SortFunc(cs, func(a, b cand) int { return cmp.Or(cmp.Compare(b.active, a.active), strings.Compare(b.id, a.id)) })
	kept := 0
	for _, c := range cs {
		if kept == lc.Limit {
			break
		}
		d, _ := v.take(c.id)
		if d.err == nil && d.present && lc.Keeps(d.info) {
			kept++
		}
		if err := sieved(d); err != nil {
			return err
		}
	}
	return nil
}

// sieve wraps add, which checks a description against its log (an lstat
// at least), for the marked sessions of a List: one that its post says
// cannot be on the page is not checked — an ID and a header's labels
// never change, and any other change of a session leaves a newer mark —
// and of a page by activity only the first Limit are, in the order their
// posts give, added by flush.
func (v *view) sieve(lc handle.ListQuery, add func(described) error) (func(described) error, func() error) {
	known := func(d described) bool { return d.err == nil }
	if !lc.ByActivity || lc.Limit <= 0 {
		return func(d described) error {
			if known(d) && !lc.Keeps(d.info) {
				return nil
			}
			return add(d)
		}, func() error { return nil }
	}
	var cands []described
	fn := func(d described) error {
		switch {
		case !known(d):
			return add(d)
		case lc.Keeps(d.info) && (lc.Before == nil || cmp.Or(cmp.Compare(d.info.LastActive(), lc.Before.LastActive), strings.Compare(d.info.ID, lc.Before.ID)) < 0):
			cands = append(cands, d)
		}
		return nil
	}
	flush := func() error {
		slices.SortFunc(cands, func(a, b described) int {
			return cmp.Or(cmp.Compare(b.info.LastActive(), a.info.LastActive()), strings.Compare(b.info.ID, a.info.ID))
		})
		for _, c := range cands[:min(len(cands), lc.Limit)] {
			if err := add(c); err != nil {
				return err
			}
		}
		return nil
	}
	return fn, flush
}

// children returns the sessions whose header names parent as theirs.
func (v *view) children(ctx context.Context, parent string) ([]described, error) {
	var out []described
	names := func(d described) bool {
		p := headerOf(d)
		return d.present && p != nil && p.Parent != nil && p.Parent.ID == parent
	}
	keep := func(d described) error {
		if names(d) {
			out = append(out, d)
		}
		return nil
	}
	needle := []byte(`"` + parent + `"`) // an ID: nothing to escape
	maybe := func(_ string, p post) bool { return bytes.Contains(p.js, needle) }
	err := v.dynamic(maybe, func(d described) error {
		if !names(d) {
			return nil // a header's parent never changes but to none (Detach)
		}
		d, err := v.fresh(ctx, d)
		if err != nil {
			return err
		}
		return keep(d)
	})
	if err != nil {
		return nil, err
	}
	err = v.each(secParent, parent, equals(parent), func(d described) (bool, error) { return true, keep(d) })
	slices.SortFunc(out, func(a, b described) int { return strings.Compare(a.info.ID, b.info.ID) })
	return out, err
}

// headerOf is d's header as far as it is known.
func headerOf(d described) *eventlog.Header {
	if d.hdr != nil {
		return d.hdr
	}
	if d.err == nil {
		return &d.info.Header
	}
	return nil
}

// older returns the sessions last active before cutoff (ms), described,
// leaving out those that cannot be.
func (v *view) older(ctx context.Context, cutoff int64) ([]handle.Info, error) {
	var out []handle.Info
	add := func(d described) error {
		d, err := v.fresh(ctx, d)
		if err != nil || !d.present || d.err != nil {
			return err
		}
		if d.info.LastActive() < cutoff {
			out = append(out, d.info)
		}
		return nil
	}
	maybe := func(_ string, p post) bool { return p.active < cutoff } // live: -1
	if err := v.dynamic(maybe, add); err != nil {
		return nil, err
	}
	// Keys from activeKey(cutoff-1, "") on are those active before cutoff.
	err := v.each(secActive, activeKey(cutoff-1, ""), always, func(d described) (bool, error) { return true, add(d) })
	return out, err
}

// sortActive orders infos as ls does: the last active first, then the
// greater ID.
func sortActive(infos []handle.Info) {
	slices.SortFunc(infos, func(a, b handle.Info) int {
		return cmp.Or(cmp.Compare(b.LastActive(), a.LastActive()), strings.Compare(b.ID, a.ID))
	})
}
