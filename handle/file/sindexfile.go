package file

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"iter"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/afero"
)

// The session index's snapshot (docs/format.md §2): a file of sorted
// lines in sections, each line "<key>\t<value>\t<crc32 hex>\n", searched
// by bisection on byte offsets, so that a query reads O(log n) lines and
// then its answer, never the whole file. Its first line holds the
// sections' offsets.
const (
	sindexName   = "sessions.idx"
	sindexMagic  = "sessionlog-sessions 1"
	sindexDelta  = "sessions.delta" // the sessions changed since the snapshot, folded from marks
	sindexMarks  = "sessions.d"     // the marks folder (sindexmarks.go)
	sindexLockNm = "sessions.lock"  // held while the snapshot is rewritten
)

// The sections of a snapshot, in file order.
const (
	secID     = iota // ID → the entry (JSON)
	secLabel         // esc(key)=esc(value) → ID
	secParent        // parent ID → ID
	secActive        // activeKey(last activity, ID) → the entry, newest first
	secLive          // ID → "": sessions described afresh at every open
	secAcked         // ID → the seq after those a writer acknowledged (evidence.go)
	nSections
)

// errSindexDamaged: a snapshot line or its head does not match its sum,
// or the file ends early: it is rebuilt from the logs.
var errSindexDamaged = errors.New("handle: session index damaged")

// sline is a line of a section.
type sline struct{ key, value string }

// lineSum is the sum a snapshot line ends in.
func lineSum(b []byte) string { return fmt.Sprintf("%08x", crc32.ChecksumIEEE(b)) }

// parseLine checks and splits a line without its "\n".
func parseLine(b []byte) (sline, bool) {
	i := bytes.LastIndexByte(b, '\t')
	if i < 0 || !sumIs(b[i+1:], crc32.ChecksumIEEE(b[:i])) {
		return sline{}, false
	}
	k, v, ok := bytes.Cut(b[:i], []byte{'\t'})
	if !ok {
		return sline{}, false
	}
	return sline{string(k), string(v)}, true
}

// sumIs reports whether hex is sum as lineSum writes it (8 lower-case
// hex digits), without formatting it: every open checks many lines.
func sumIs(hex []byte, sum uint32) bool {
	const digits = "0123456789abcdef"
	if len(hex) != 8 {
		return false
	}
	for i := 7; i >= 0; i-- {
		if hex[i] != digits[sum&0xf] {
			return false
		}
		sum >>= 4
	}
	return true
}

// appendLine appends a line holding key and value.
func appendLine(buf []byte, key, value string) []byte {
	start := len(buf)
	buf = append(buf, key...)
	buf = append(buf, '\t')
	buf = append(buf, value...)
	sum := lineSum(buf[start:])
	buf = append(buf, '\t')
	buf = append(buf, sum...)
	return append(buf, '\n')
}

// escLabel escapes a label's key or value for a label line: "%", tab,
// newline and "=" as %XX, so that "k=v" names one pair.
func escLabel(s string) string {
	if !strings.ContainsAny(s, "%\t\n\r=") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '%', '\t', '\n', '\r', '=':
			fmt.Fprintf(&b, "%%%02X", c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// labelKey is the key of label k=v's line.
func labelKey(k, v string) string { return escLabel(k) + "=" + escLabel(v) }

// activeKey orders sessions as ls does: the last active first, then the
// greater ID first (each ID character c is written as 'Z'+'0'-c).
func activeKey(lastActive int64, id string) string {
	inv := []byte(id)
	for i, c := range inv {
		inv[i] = 'Z' + '0' - c
	}
	return fmt.Sprintf("%016x", uint64(math.MaxInt64-lastActive)) + string(inv)
}

// snapshot is an open snapshot file.
type snapshot struct {
	f      afero.File
	blocks map[int64][]byte // 4 KiB blocks read by bisection (the file never changes)
	gen    string
	folder int64 // the store folder's modification time it accounts for (ns)
	count  int64
	off    [nSections + 1]int64
}

// openSnapshot opens the snapshot at path: nil with no error when there
// is none, errSindexDamaged when its head does not check.
func openSnapshot(fsys afero.Fs, path string) (*snapshot, error) {
	f, err := openRegular(fsys, path, os.O_RDONLY, false)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	sn := &snapshot{f: f, blocks: map[int64][]byte{}}
	if err := sn.readHead(); err != nil {
		f.Close()
		return nil, err
	}
	return sn, nil
}

func (sn *snapshot) close() { sn.f.Close() }

// base is the gen of the snapshot a delta changes ("" for a snapshot).
func (sn *snapshot) base() string {
	_, b, _ := strings.Cut(sn.gen, ".")
	return b
}

// keys returns the keys of section sec, each line checked, without
// keeping or decoding its value.
func (sn *snapshot) keys(sec int) (map[string]bool, error) {
	out := map[string]bool{}
	end := sn.off[sec+1]
	br := bufio.NewReaderSize(io.NewSectionReader(sn.f, sn.off[sec], end-sn.off[sec]), 64<<10)
	var long []byte
	for {
		b, err := readIndexLine(br, &long)
		if err != nil {
			return nil, err
		}
		if b == nil {
			return out, nil
		}
		b = b[:len(b)-1]
		i, k := bytes.LastIndexByte(b, '\t'), bytes.IndexByte(b, '\t')
		if k < 0 || i <= k || !sumIs(b[i+1:], crc32.ChecksumIEEE(b[:i])) {
			return nil, errSindexDamaged
		}
		out[string(b[:k])] = true
	}
}

// entries reads a delta's entries (nil: gone) and the folder time it
// accounts for.
func (sn *snapshot) entries() (map[string]*sessEntry, int64, error) {
	out := make(map[string]*sessEntry, sn.count)
	for ln, err := range sn.lines(secID, sn.off[secID]) {
		if err != nil {
			return nil, 0, err
		}
		e, err := entryOf(ln, secID)
		if err != nil {
			return nil, 0, err
		}
		out[ln.key] = e
	}
	return out, sn.folder, nil
}

// blockSize is the unit of the bisection's reads.
const blockSize = 4096

// ReadAt reads through the block cache: the last steps of a bisection,
// and the look-ups that follow it, fall in blocks read already.
func (sn *snapshot) ReadAt(p []byte, off int64) (int, error) {
	n := 0
	for n < len(p) {
		bi := (off + int64(n)) / blockSize
		blk, ok := sn.blocks[bi]
		if !ok {
			blk = make([]byte, blockSize)
			m, err := sn.f.ReadAt(blk, bi*blockSize)
			if err != nil && !errors.Is(err, io.EOF) {
				return n, err
			}
			blk = blk[:m]
			if len(sn.blocks) > 4096 {
				clear(sn.blocks)
			}
			sn.blocks[bi] = blk
		}
		in := off + int64(n) - bi*blockSize
		if in >= int64(len(blk)) {
			return n, io.EOF
		}
		n += copy(p[n:], blk[in:])
	}
	return n, nil
}

func (sn *snapshot) readHead() error {
	b, err := readUntilNL(sn, 0, 4096)
	if err != nil {
		return err
	}
	ln, ok := parseLine(b[:len(b)-1])
	if !ok || ln.key != sindexMagic {
		return errSindexDamaged
	}
	f := strings.Split(ln.value, " ")
	secs := len(f) - 4 // an older snapshot has no secAcked: it reads as empty
	if secs != nSections && secs != secAcked {
		return errSindexDamaged
	}
	sn.gen = f[0]
	var nums [2 + nSections + 1]int64
	for i, s := range f[1:] {
		if nums[i], err = strconv.ParseInt(s, 10, 64); err != nil {
			return errSindexDamaged
		}
	}
	sn.folder, sn.count = nums[0], nums[1]
	copy(sn.off[:], nums[2:3+secs])
	for i := secs + 1; i <= nSections; i++ {
		sn.off[i] = sn.off[secs]
	}
	fi, err := sn.f.Stat()
	if err != nil {
		return err
	}
	if sn.off[0] != int64(len(b)) || !slices.IsSorted(sn.off[:]) || fi.Size() != sn.off[nSections] {
		return errSindexDamaged
	}
	return nil
}

// readUntilNL returns the bytes of r from off through the next "\n",
// reading at most max bytes (errSindexDamaged when there is none).
func readUntilNL(r io.ReaderAt, off, max int64) ([]byte, error) {
	var out []byte
	buf := make([]byte, 512)
	for int64(len(out)) < max {
		n, err := r.ReadAt(buf, off+int64(len(out)))
		if i := bytes.IndexByte(buf[:n], '\n'); i >= 0 {
			return append(out, buf[:i+1]...), nil
		}
		out = append(out, buf[:n]...)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil, errSindexDamaged
			}
			return nil, err
		}
		if len(buf) < 64<<10 {
			buf = make([]byte, 2*len(buf))
		}
	}
	return nil, errSindexDamaged
}

// maxIndexLine bounds a snapshot line (an entry holds a header).
const maxIndexLine = 16 << 20

// lineFrom returns the first line of section sec that starts at or after
// p, and its offset; at the section's end, ok is false.
func (sn *snapshot) lineFrom(sec int, p int64) (start int64, ln sline, ok bool, err error) {
	lo, hi := sn.off[sec], sn.off[sec+1]
	start = p
	if p > lo {
		b, err := readUntilNL(sn, p-1, hi-p+1)
		if err != nil {
			return 0, sline{}, false, err
		}
		start = p - 1 + int64(len(b))
	}
	if start >= hi {
		return hi, sline{}, false, nil
	}
	b, err := readUntilNL(sn, start, min(hi-start, maxIndexLine))
	if err != nil {
		return 0, sline{}, false, err
	}
	if ln, ok = parseLine(b[:len(b)-1]); !ok {
		return 0, sline{}, false, errSindexDamaged
	}
	return start, ln, true, nil
}

// seek returns the offset of the first line of section sec whose key is
// at least target (the section's end when there is none).
func (sn *snapshot) seek(sec int, target string) (int64, error) {
	lo, hi := sn.off[sec], sn.off[sec+1]
	if target == "" {
		return lo, nil
	}
	for lo < hi {
		mid := lo + (hi-lo)/2
		start, ln, ok, err := sn.lineFrom(sec, mid)
		if err != nil {
			return 0, err
		}
		if !ok || ln.key >= target {
			hi = mid
		} else {
			lo = start + 1
		}
	}
	start, _, _, err := sn.lineFrom(sec, lo)
	return start, err
}

// lines yields the lines of section sec from offset from (a line start)
// to the section's end.
func (sn *snapshot) lines(sec int, from int64) iter.Seq2[sline, error] {
	return func(yield func(sline, error) bool) {
		end := sn.off[sec+1]
		if from >= end {
			return
		}
		br := bufio.NewReaderSize(io.NewSectionReader(sn.f, from, end-from), 8<<10)
		var long []byte
		for {
			b, err := readIndexLine(br, &long)
			if err != nil {
				yield(sline{}, err)
				return
			}
			if b == nil {
				return
			}
			ln, ok := parseLine(b[:len(b)-1])
			if !ok {
				yield(sline{}, errSindexDamaged)
				return
			}
			if !yield(ln, nil) {
				return
			}
		}
	}
}

// from yields the lines of section sec whose key is at least target.
func (sn *snapshot) from(sec int, target string) iter.Seq2[sline, error] {
	return func(yield func(sline, error) bool) {
		off, err := sn.seek(sec, target)
		if err != nil {
			yield(sline{}, err)
			return
		}
		for ln, err := range sn.lines(sec, off) {
			if !yield(ln, err) || err != nil {
				return
			}
		}
	}
}

// writeSnapshot writes the snapshot of entries (by ID) and of acked (the
// evidence of their acknowledged seqs) to path, through a temp file and a
// rename; folder is the store folder's modification time the entries
// account for. It is not fsynced: it is derived. A delta names the gen of
// the snapshot it changes (base; "" for a snapshot), a session gone since
// by a nil entry, "null" in the ID section, and a session whose evidence
// ended by 0 in secAcked.
func writeSnapshot(ctx context.Context, fsys afero.Fs, path string, entries map[string]*sessEntry, acked map[string]int64, folder int64, base string) error {
	var secs [nSections][]sline
	for id, n := range acked {
		if entries[id] != nil && (n > 0 || n == 0 && base != "") {
			secs[secAcked] = append(secs[secAcked], sline{id, strconv.FormatInt(n, 10)})
		}
	}
	for id, e := range entries {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := addEntry(&secs, id, e); err != nil {
			return err
		}
	}
	var body []byte
	var off [nSections + 1]int64
	for i := range secs {
		sortLines(secs[i])
		off[i] = int64(len(body))
		for _, ln := range secs[i] {
			body = appendLine(body, ln.key, ln.value)
		}
	}
	off[nSections] = int64(len(body))
	gen := strconv.FormatInt(time.Now().UnixNano(), 36)
	if base != "" {
		gen += "." + base
	}
	// The head's length depends on the offsets it holds: grow until fixed.
	var head []byte
	for hl := 0; ; {
		var at [nSections + 1]int64
		for i, o := range off {
			at[i] = o + int64(hl)
		}
		head = headLine(gen, folder, int64(len(entries)), at, false)
		if len(head) == hl {
			break
		}
		hl = len(head)
	}
	return writeIndexFile(fsys, path, func(w io.Writer) error {
		_, err := w.Write(head)
		if err == nil {
			_, err = w.Write(body)
		}
		return err
	}, nil)
}

// addEntry adds to secs the lines of session id, whose entry is e (nil:
// gone, a delta's "null" line).
func addEntry(secs *[nSections][]sline, id string, e *sessEntry) error {
	b, err := e.marshal()
	if err != nil {
		return err
	}
	secs[secID] = append(secs[secID], sline{id, string(b)})
	if e == nil {
		return nil
	}
	if e.Header != nil && e.Header.Parent != nil {
		secs[secParent] = append(secs[secParent], sline{e.Header.Parent.ID, id})
	}
	if e.Live {
		secs[secLive] = append(secs[secLive], sline{id, ""})
		return nil
	}
	if e.Header != nil {
		for k, v := range e.Header.Labels {
			secs[secLabel] = append(secs[secLabel], sline{labelKey(k, v), id})
		}
	}
	secs[secActive] = append(secs[secActive], sline{activeKey(e.lastActive(), id), string(b)})
	return nil
}

// sortLines sorts a section's lines by key, then value.
func sortLines(lines []sline) {
	slices.SortFunc(lines, func(a, b sline) int {
		if c := strings.Compare(a.key, b.key); c != 0 {
			return c
		}
		return strings.Compare(a.value, b.value)
	})
}

// headLine is a snapshot's first line: its gen, the folder time, the
// count of sessions and the sections' offsets (padded: each number
// written in 19 digits, so that the line's length does not depend on
// them; a reader parses either).
func headLine(gen string, folder, count int64, off [nSections + 1]int64, padded bool) []byte {
	num := func(n int64) string {
		if padded {
			return fmt.Sprintf("%019d", n)
		}
		return strconv.FormatInt(n, 10)
	}
	fields := []string{gen, strconv.FormatInt(folder, 10), num(count)}
	for _, o := range off {
		fields = append(fields, num(o))
	}
	return appendLine(nil, sindexMagic, strings.Join(fields, " "))
}

// writeIndexFile writes a file of the index to path through a temp file
// and a rename: write writes its content; then, when head is not nil, the
// temp file's first bytes are overwritten by what it returns. It is not
// fsynced: it is derived.
func writeIndexFile(fsys afero.Fs, path string, write func(w io.Writer) error, head func() []byte) error {
	if err := checkFolder(fsys, filepath.Dir(path)); err != nil {
		return err
	}
	if err := fsys.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	// One name, reused: the caller holds the index lock, and a temp file
	// a killed fold left is overwritten by the next, not left to GC.
	tmp := path + tmpExt
	f, err := openRegular(fsys, tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, false)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	err = write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil && head != nil {
		_, err = f.WriteAt(head(), 0)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fsys.Rename(tmp, path)
	}
	if err != nil {
		fsys.Remove(tmp)
	}
	return err
}

// acked returns the evidence the snapshot keeps for session id, and
// whether it keeps any (a bisection: O(log n) blocks).
func (sn *snapshot) acked(id string) (int64, bool, error) {
	for ln, err := range sn.from(secAcked, id) {
		if err != nil || ln.key != id {
			return 0, false, err
		}
		n, ok := parseDecimal([]byte(ln.value))
		if !ok {
			return 0, false, errSindexDamaged
		}
		return n, true, nil
	}
	return 0, false, nil
}

// readIndexLine reads the next line of a snapshot section from br, with
// its '\n'; a line longer than br's buffer is gathered into *long (reused)
// up to maxIndexLine. At the section's end it returns nil, nil; a line
// without its '\n', or longer than maxIndexLine, is errSindexDamaged.
func readIndexLine(br *bufio.Reader, long *[]byte) ([]byte, error) {
	b, err := br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		*long = append((*long)[:0], b...)
		for errors.Is(err, bufio.ErrBufferFull) && len(*long) < maxIndexLine {
			b, err = br.ReadSlice('\n')
			*long = append(*long, b...)
		}
		b = *long
	}
	if errors.Is(err, io.EOF) && len(b) == 0 {
		return nil, nil
	}
	if errors.Is(err, io.EOF) || errors.Is(err, bufio.ErrBufferFull) {
		return nil, errSindexDamaged
	}
	return b, err
}
