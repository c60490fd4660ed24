package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// traceImport is what one real trace's import into the shared store gave.
type traceImport struct {
	src   string // the file imported: the trace, or a trajectory's copy
	res   result
	lines []imported
}

// sharedTraces is the store every foreignTraces file is imported into
// once, for the tests that only read what an import made (import checks,
// conversation, show, serve): under the race detector an import of the
// largest trace costs seconds, and each such test imported them all again.
// The tests that share it run in parallel: none writes to the store but
// its caches (derived data, which concurrent stores on one folder keep
// safely, as processes do), and mu guards the import lines parsed on
// first use.
var sharedTraces struct {
	once    sync.Once
	mu      sync.Mutex
	root    string // removed when the tests end (traceFixtureM)
	dir     string
	imports []traceImport
	err     error
}

// importedTraces returns the shared store's folder and the import of each
// of foreignTraces, in that order. A trajectory (swe-agent) is imported
// from a copy whose modification time, where its session is placed, is
// fixed (the trajectories' last commit), so that what shows it is the
// same anywhere.
func importedTraces(t *testing.T) (string, []traceImport) {
	t.Helper()
	traces := tracesDir(t)
	s := &sharedTraces
	s.once.Do(func() {
		s.root, s.err = os.MkdirTemp("", "logtool-traces-")
		if s.err != nil {
			return
		}
		s.dir = filepath.Join(s.root, "store")
		for i, tr := range foreignTraces() {
			src := filepath.Join(traces, tr.file)
			if tr.from == "swe-agent" {
				copied := filepath.Join(s.root, "src", strconv.Itoa(i), filepath.Base(tr.file))
				if s.err = os.MkdirAll(filepath.Dir(copied), 0o700); s.err != nil {
					return
				}
				if s.err = copyFile(src, copied); s.err != nil {
					return
				}
				at := time.Date(2025, 5, 22, 0, 0, 0, 0, time.UTC)
				if s.err = os.Chtimes(copied, at, at); s.err != nil {
					return
				}
				src = copied
			}
			var out, errOut bytes.Buffer
			code := run(context.Background(), []string{"--dir", s.dir, "import", "--from", tr.from, src}, strings.NewReader(""), &out, &errOut, func(string) string { return "" })
			s.imports = append(s.imports, traceImport{src: src, res: result{code: code, stdout: out.String(), stderr: errOut.String()}})
		}
	})
	require.NoError(t, s.err, "the shared store of the real traces")
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.imports {
		if s.imports[i].res.code == 0 && s.imports[i].lines == nil {
			s.imports[i].lines = importLines(t, s.imports[i].res.stdout)
		}
	}
	return s.dir, slices.Clone(s.imports)
}

// traceFixtureM runs the tests, then removes the shared store.
type traceFixtureM struct{ m *testing.M }

func (f traceFixtureM) Run() int {
	code := f.m.Run()
	if sharedTraces.root != "" {
		os.RemoveAll(sharedTraces.root)
	}
	return code
}
