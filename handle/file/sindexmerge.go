package file

import (
	"bufio"
	"bytes"
	"context"
	"hash/crc32"
	"io"
	"path/filepath"
	"strconv"
	"time"

	"github.com/spf13/afero"
)

// The fold into a new snapshot (docs/design.md, "The session index")
// merges: each section of the old snapshot is streamed to the new one
// line by line, its lines copied as they are (their sums checked, their
// entries not decoded), but those of the sessions that changed since,
// whose lines are merged in at their places. It reads and writes the
// snapshot once and describes only what changed: the delta's sessions,
// the marked ones and the live ones.

// mergeFold folds the delta of snapshot old and the marks into a new
// snapshot, under the index lock. errSindexDamaged: old or its delta does
// not read whole, in order (the caller rebuilds from the logs).
func (s *Store) mergeFold(ctx context.Context, old *snapshot) error {
	folder := max(s.folderTime(), old.folder)
	marks, _, err := s.marks()
	if err != nil {
		return err
	}
	changes := map[string]*sessEntry{} // nil: gone
	acked := map[string]int64{}        // evidence said since old (0: none)
	dl, err := s.openDelta(old)
	if err != nil {
		return err
	}
	if dl != nil {
		defer dl.close()
		delta, f, err := dl.entries()
		if err != nil {
			return err
		}
		folder = max(folder, f)
		for id, e := range delta {
			if _, marked := marks[id]; !marked {
				changes[id] = e
			}
		}
		if err := readAcked(dl, acked); err != nil {
			return err
		}
	}
	describe := func(id string) error {
		d, err := s.describe(ctx, id)
		if err == nil {
			changes[id] = d.entry()
		}
		return err
	}
	for id, e := range changes {
		if e != nil && e.Live {
			if err := describe(id); err != nil {
				return err
			}
		}
	}
	for ln, err := range old.lines(secLive, old.off[secLive]) {
		if err != nil {
			return err
		}
		_, marked := marks[ln.key]
		if _, changed := changes[ln.key]; !marked && !changed {
			if err := describe(ln.key); err != nil {
				return err
			}
		}
	}
	consumed, f, err := s.foldMarks(ctx, marks, false, func(id string, e *sessEntry) { changes[id] = e })
	if err != nil {
		return err
	}
	s.marksAcked(acked, marks)
	count, err := writeMerged(ctx, s.fs, filepath.Join(s.dir, cacheDir, sindexName), old, changes, acked, max(folder, f))
	if err != nil {
		return err
	}
	s.fs.Remove(s.deltaPath()) // of the old snapshot: read no more
	for _, nm := range consumed {
		s.fs.Remove(filepath.Join(s.marksDir(), nm))
	}
	s.cfg.Logger.Debug("session index written", "dir", s.dir, "sessions", count, "changed", len(changes), "marks", len(consumed))
	return nil
}

// writeMerged writes to path the snapshot old with changes (by ID; nil:
// gone) and the evidence said since (acked: for a changed session, 0 for
// none; of the others, old's stands), folder the folder time it accounts
// for. It returns the count of sessions written.
func writeMerged(ctx context.Context, fsys afero.Fs, path string, old *snapshot, changes map[string]*sessEntry, acked map[string]int64, folder int64) (int64, error) {
	var add [nSections][]sline
	for id, e := range changes {
		if e != nil {
			if err := addEntry(&add, id, e); err != nil {
				return 0, err
			}
		}
	}
	for id, n := range acked {
		if n > 0 && changes[id] != nil {
			add[secAcked] = append(add[secAcked], sline{id, strconv.FormatInt(n, 10)})
		}
	}
	drop := func(id []byte) bool { _, ok := changes[string(id)]; return ok }
	dropAcked := func(id []byte) bool {
		e, ok := changes[string(id)]
		_, said := acked[string(id)]
		return ok && (e == nil || said)
	}
	gen := strconv.FormatInt(time.Now().UnixNano(), 36)
	var off [nSections + 1]int64
	var count int64
	write := func(w io.Writer) error {
		head := headLine(gen, folder, 0, off, true) // rewritten once known
		if _, err := w.Write(head); err != nil {
			return err
		}
		at := int64(len(head))
		for sec := range nSections {
			sortLines(add[sec])
			dr := drop
			if sec == secAcked {
				dr = dropAcked
			}
			off[sec] = at
			n, lines, err := mergeSection(ctx, w, old, sec, dr, add[sec])
			if err != nil {
				return err
			}
			at += n
			if sec == secID {
				count = lines
			}
		}
		off[nSections] = at
		return nil
	}
	err := writeIndexFile(fsys, path, write, func() []byte { return headLine(gen, folder, count, off, true) })
	return count, err
}

// mergeSection writes to w the lines of section sec of sn but those of
// the sessions drop names, merged in order (by key, then value: cmpLine)
// with add, sorted. It returns the bytes and the lines written;
// errSindexDamaged when a line of sn does not check or is out of order.
func mergeSection(ctx context.Context, w io.Writer, sn *snapshot, sec int, drop func(id []byte) bool, add []sline) (written, lines int64, err error) {
	emit := func(b []byte) error {
		n, err := w.Write(b)
		written += int64(n)
		lines++
		return err
	}
	type mline struct{ key, value, line []byte }
	adds := make([]mline, len(add))
	for i, ln := range add {
		adds[i] = mline{[]byte(ln.key), []byte(ln.value), appendLine(nil, ln.key, ln.value)}
	}
	j := 0
	// flush writes the lines of add that come before key and value (all
	// when key is nil).
	flush := func(key, value []byte) error {
		for ; j < len(adds); j++ {
			if key != nil && cmpLine(adds[j].key, adds[j].value, key, value) >= 0 {
				return nil
			}
			if err := emit(adds[j].line); err != nil {
				return err
			}
		}
		return nil
	}
	start, end := sn.off[sec], sn.off[sec+1]
	br := bufio.NewReaderSize(io.NewSectionReader(sn.f, start, end-start), 256<<10)
	var prev, long, inv []byte // prev: the last line's key, then its value
	pk := 0
	for i := 0; ; i++ {
		if i%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return 0, 0, err
			}
		}
		b, err := readIndexLine(br, &long)
		if err != nil {
			return 0, 0, err
		}
		if b == nil {
			break
		}
		body := b[:len(b)-1]
		t, k := bytes.LastIndexByte(body, '\t'), bytes.IndexByte(body, '\t')
		if k < 0 || t <= k || !sumIs(body[t+1:], crc32.ChecksumIEEE(body[:t])) {
			return 0, 0, errSindexDamaged
		}
		key, value := body[:k], body[k+1:t]
		if i > 0 && cmpLine(key, value, prev[:pk], prev[pk:]) < 0 {
			return 0, 0, errSindexDamaged
		}
		prev, pk = append(append(prev[:0], key...), value...), len(key)
		if err := flush(key, value); err != nil {
			return 0, 0, err
		}
		var id []byte
		switch sec {
		case secLabel, secParent:
			id = value
		case secActive:
			// activeKey: 16 hex digits, then the ID inverted.
			if len(key) < 16 {
				return 0, 0, errSindexDamaged
			}
			inv = inv[:0]
			for _, c := range key[16:] {
				inv = append(inv, 'Z'+'0'-c)
			}
			id = inv
		default:
			id = key
		}
		if drop(id) {
			continue
		}
		if err := emit(b); err != nil {
			return 0, 0, err
		}
	}
	err = flush(nil, nil)
	return written, lines, err
}

// cmpLine orders lines as a section's: by key, then value.
func cmpLine(k1, v1, k2, v2 []byte) int {
	if c := bytes.Compare(k1, k2); c != 0 {
		return c
	}
	return bytes.Compare(v1, v2)
}
