package ingest_test

import (
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/ops/ingest"
)

// hugeLine is the length of the long line of TestImportHugeLine: 25 times
// the longest record a log takes.
const hugeLine = 400 << 20

// maxRSS is the most memory an import of it may take.
const maxRSS = 128 << 20

// hugeSources are a file of each format whose second record is one line of
// hugeLine bytes (a one-document format: an entry of that size): a
// prefix, the line's filler, a suffix.
var hugeSources = map[string][2]string{
	"claude": {`{"type":"user","uuid":"u1","sessionId":"S","message":{"role":"user","content":"hi"}}` + "\n" +
		`{"type":"user","uuid":"u2","sessionId":"S","message":{"role":"user","content":"`, `"}}` + "\n"},
	"codex": {`{"timestamp":"2026-01-01T00:00:00Z","type":"session_meta","payload":{"id":"T"}}` + "\n" +
		`{"timestamp":"2026-01-01T00:00:01Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"`, `"}]}}` + "\n"},
	"dsh": {`{"type":"session","version":0,"id":"x","createdAt":1}` + "\n" +
		`{"type":"user/message","data":{"text":"`, `"}}` + "\n"},
	"swe-agent": {`{"environment":"e","trajectory":[],"history":[{"role":"user","content":"`, `"}],"info":{}}`},
	"sessionlog": {`{"format":"sessionlog","version":1,"id":"01JDX3N0Q3Z8Y6W2D1V5K7M9PA","createdAt":1}` + "\n" +
		`{"seq":0,"type":"a","time":1}` + "\n" + `{"seq":1,"type":"a","time":1,"data":"`, `"}` + "\n"},
}

// TestImportHugeLine imports, in a child process, a file of each format
// holding a 400 MB line, found by its content: the line is refused, the
// records before it imported, the source read hardly past the limit once
// it was crossed, and the child's peak RSS (the kernel's count, from its
// rusage) within 128 MB. The source is made as it is read, so the test
// writes no 400 MB file.
func TestImportHugeLine(t *testing.T) {
	if os.Getenv("SESSIONLOG_HUGE_FORMAT") != "" {
		t.Skip("the child's test")
	}
	if testing.Short() {
		t.Skip("reads 400 MB per format")
	}
	if raceEnabled {
		t.Skip("peak RSS under the race detector is its shadow memory's; scripts/figures.sh runs this test without it")
	}
	for _, format := range []string{"claude", "codex", "dsh", "swe-agent", "sessionlog"} {
		t.Run(format, func(t *testing.T) {
			cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestImportHugeLineChild$", "-test.count=1")
			cmd.Env = append(os.Environ(), "SESSIONLOG_HUGE_FORMAT="+format, "GOMAXPROCS=2")
			var out strings.Builder
			cmd.Stdout, cmd.Stderr = &out, &out
			require.NoError(t, cmd.Run(), out.String())
			var rep childReport
			i := strings.Index(out.String(), "REPORT ")
			require.GreaterOrEqual(t, i, 0, out.String())
			require.NoError(t, json.NewDecoder(strings.NewReader(out.String()[i+len("REPORT "):])).Decode(&rep))
			ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
			require.True(t, ok)
			rss := ru.Maxrss << 10 // KiB on Linux
			t.Logf("figure: import of a 400 MB line, %s: %s, read %d MiB, peak RSS %d MiB", format, rep.Status, rep.Read>>20, rss>>20)
			require.LessOrEqual(t, rss, int64(maxRSS), "peak RSS")
			require.NotEqual(t, "failed", rep.Status, rep.Reason)
			require.Equal(t, rep.Events, rep.Want, "the records before the line")
			if format != "swe-agent" && format != "sessionlog" {
				require.Less(t, rep.Read, int64(eventlog.MaxRowSize+4<<20), "refused once the limit was crossed")
				require.Equal(t, 2, rep.Partial, "cut before the long line")
			}
		})
	}
}

type childReport struct {
	Status, Reason string
	Partial        int
	Events, Want   int64
	Read           int64 // bytes read of the source, at most
}

// TestImportHugeLineChild is TestImportHugeLine's child.
func TestImportHugeLineChild(t *testing.T) {
	format := os.Getenv("SESSIONLOG_HUGE_FORMAT")
	if format == "" {
		t.Skip("run by TestImportHugeLine")
	}
	parts := hugeSources[format]
	src := &hugeFs{Fs: afero.NewMemMapFs(), path: "/huge/trace", prefix: parts[0], suffix: parts[1], n: hugeLine}
	st := file.New(afero.NewMemMapFs(), "/store")
	sum, err := ingest.Import(t.Context(), st, []string{src.path}, ingest.WithFs(src))
	require.NoError(t, err)
	require.Len(t, sum.Results, 1)
	r := sum.Results[0]
	rep := childReport{Status: string(r.Status), Reason: r.Reason, Events: r.Events, Read: src.max.Load()}
	if r.Partial != nil {
		rep.Partial = r.Partial.Line
	}
	// What the records before the line make, but for the sessionlog log (a
	// corrupt row: nothing) and the trajectory (one document: refused).
	rep.Want = map[string]int64{"claude": 3, "codex": 1, "dsh": 1}[format] // claude: the prompt in its turn, closed
	switch format {
	case "sessionlog", "swe-agent":
		rep.Status, rep.Want = "refused as expected", r.Events
		if r.Status != ingest.Failed {
			rep.Status = "failed" // the line was taken: an error
		}
	}
	b, err := json.Marshal(rep)
	require.NoError(t, err)
	os.Stdout.WriteString("REPORT " + string(b) + "\n")
}

// hugeFs holds one file, at path, made as it is read: prefix, n bytes of
// 'a', suffix. It counts the furthest offset read.
type hugeFs struct {
	afero.Fs
	path           string
	prefix, suffix string
	n              int64
	max            atomic.Int64
}

func (h *hugeFs) size() int64 { return int64(len(h.prefix)) + h.n + int64(len(h.suffix)) }

func (h *hugeFs) Open(name string) (afero.File, error) {
	if name == h.path {
		return &hugeFile{fs: h}, nil
	}
	return h.Fs.Open(name)
}

func (h *hugeFs) OpenFile(name string, flag int, perm os.FileMode) (afero.File, error) {
	if name == h.path {
		if flag&(os.O_WRONLY|os.O_RDWR) != 0 {
			return nil, errors.New("read only")
		}
		return &hugeFile{fs: h}, nil
	}
	return h.Fs.OpenFile(name, flag, perm)
}

func (h *hugeFs) Stat(name string) (fs.FileInfo, error) {
	if name == h.path {
		return hugeInfo{h.size()}, nil
	}
	return h.Fs.Stat(name)
}

func (h *hugeFs) LstatIfPossible(name string) (fs.FileInfo, bool, error) {
	fi, err := h.Stat(name)
	return fi, false, err
}

type hugeInfo struct{ size int64 }

func (i hugeInfo) Name() string       { return "trace" }
func (i hugeInfo) Size() int64        { return i.size }
func (i hugeInfo) Mode() fs.FileMode  { return 0o600 }
func (i hugeInfo) ModTime() time.Time { return time.Unix(0, 0) }
func (i hugeInfo) IsDir() bool        { return false }
func (i hugeInfo) Sys() any           { return nil }

// hugeFile reads a hugeFs's file.
type hugeFile struct {
	afero.File // nil: the methods not below are not used
	fs         *hugeFs
	off        int64
}

func (f *hugeFile) ReadAt(p []byte, off int64) (int, error) {
	size := f.fs.size()
	if off >= size {
		return 0, io.EOF
	}
	n := 0
	for n < len(p) && off < size {
		switch pre := int64(len(f.fs.prefix)); {
		case off < pre:
			c := copy(p[n:], f.fs.prefix[off:])
			n, off = n+c, off+int64(c)
		case off < pre+f.fs.n:
			c := min(int64(len(p)-n), pre+f.fs.n-off)
			for i := range c {
				p[n+int(i)] = 'a'
			}
			n, off = n+int(c), off+c
		default:
			c := copy(p[n:], f.fs.suffix[off-pre-f.fs.n:])
			n, off = n+c, off+int64(c)
		}
	}
	for {
		m := f.fs.max.Load()
		if off <= m || f.fs.max.CompareAndSwap(m, off) {
			break
		}
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (f *hugeFile) Read(p []byte) (int, error) {
	n, err := f.ReadAt(p, f.off)
	f.off += int64(n)
	return n, err
}

func (f *hugeFile) Seek(off int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
		f.off = off
	case io.SeekCurrent:
		f.off += off
	case io.SeekEnd:
		f.off = f.fs.size() + off
	}
	return f.off, nil
}

func (f *hugeFile) Stat() (fs.FileInfo, error) { return hugeInfo{f.fs.size()}, nil }
func (f *hugeFile) Close() error               { return nil }
func (f *hugeFile) Name() string               { return f.fs.path }
