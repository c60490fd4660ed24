package workload

import "strconv"

// A textKind appends at least n bytes of ASCII text of one kind to dst; the
// caller cuts it to n (ASCII, so any cut is valid UTF-8).
type textKind func(r *rng, dst []byte, n int) []byte

var (
	words = []string{
		"the", "a", "test", "handler", "fails", "because", "of", "nil", "pointer",
		"in", "session", "log", "we", "should", "check", "error", "before", "return",
		"value", "config", "is", "not", "loaded", "when", "file", "missing", "then",
		"retry", "with", "backoff", "this", "function", "reads", "rows", "from", "disk",
		"and", "writes", "them", "to", "cache", "so", "next", "call", "faster", "let",
		"me", "look", "at", "package", "first", "it", "seems", "that", "lock", "held",
		"while", "flush", "runs", "I", "will", "fix", "update", "add", "case", "for",
	}
	idents  = []string{"ctx", "err", "buf", "row", "seq", "store", "path", "n", "off", "h", "evs", "cfg"}
	funcs   = []string{"Open", "Append", "Flush", "readRow", "decode", "Close", "parseHeader", "Sync", "newReader", "Stat"}
	dirs    = []string{"internal", "cmd", "pkg", "handle", "eventlog", "server", "api", "util", "testdata"}
	files   = []string{"main.go", "reader.go", "writer.go", "store.go", "handler_test.go", "config.yaml", "README.md", "errors.go"}
	levels  = []string{"info", "info", "info", "debug", "warn", "error"}
	verbs   = []string{"go test ./...", "go build ./...", "git status", "ls -la", "make lint", "go vet ./...", "git diff --stat"}
	domains = []string{"pkg.go.dev", "github.com", "docs.example.org", "stackoverflow.com"}
)

func pick(r *rng, list []string) string { return list[r.intn(len(list))] }

// proseText is markdown-ish prose: sentences, paragraphs, now and then a
// bullet or a code span.
func proseText(r *rng, dst []byte, n int) []byte {
	for start := len(dst); len(dst)-start < n; {
		switch k := r.intn(20); {
		case k == 0:
			dst = append(dst, "\n\n"...)
		case k == 1:
			dst = append(dst, "\n- "...)
		case k == 2:
			dst = append(dst, " `"...)
			dst = append(dst, pick(r, funcs)...)
			dst = append(dst, "()`"...)
		}
		for i, m := 0, r.between(4, 16); i < m; i++ {
			if i > 0 || len(dst) > 0 {
				dst = append(dst, ' ')
			}
			dst = append(dst, pick(r, words)...)
		}
		dst = append(dst, '.')
	}
	return dst
}

// codeText is numbered Go-like source, as a file reader shows it.
func codeText(r *rng, dst []byte, n int) []byte {
	for start, line := len(dst), 1; len(dst)-start < n; line++ {
		dst = append(dst, "   "...)
		dst = strconv.AppendInt(dst, int64(line), 10)
		dst = append(dst, '\t')
		dst = appendCodeLine(r, dst)
		dst = append(dst, '\n')
	}
	return dst
}

func appendCodeLine(r *rng, dst []byte) []byte {
	for range r.intn(3) {
		dst = append(dst, '\t')
	}
	switch r.intn(6) {
	case 0:
		return append(append(append(dst, "func "...), pick(r, funcs)...), "(ctx context.Context) error {"...)
	case 1:
		return append(append(append(dst, "if "...), pick(r, idents)...), " != nil {"...)
	case 2:
		return append(append(append(append(append(dst, pick(r, idents)...), ", err := "...), pick(r, idents)...), '.'), pick(r, funcs)+"()"...)
	case 3:
		return append(dst, "return fmt.Errorf(\"decode: %w\", err)"...)
	case 4:
		return append(append(dst, "// "...), pick(r, words)+" "+pick(r, words)+" "+pick(r, words)...)
	default:
		return append(dst, '}')
	}
}

// grepText is grep hits: path:line: source.
func grepText(r *rng, dst []byte, n int) []byte {
	for start := len(dst); len(dst)-start < n; {
		dst = pathText(r, dst, 0)
		dst = append(dst, ':')
		dst = strconv.AppendInt(dst, int64(r.between(1, 900)), 10)
		dst = append(dst, ": "...)
		dst = appendCodeLine(r, dst)
		dst = append(dst, '\n')
	}
	return dst
}

// pathListText is a folder listing, a path a line.
func pathListText(r *rng, dst []byte, n int) []byte {
	for start := len(dst); len(dst)-start < n; {
		dst = pathText(r, dst, 0)
		dst = append(dst, '\n')
	}
	return dst
}

// logText is test and log output.
func logText(r *rng, dst []byte, n int) []byte {
	for start := len(dst); len(dst)-start < n; {
		switch r.intn(3) {
		case 0:
			name := "Test" + pick(r, funcs)
			dst = append(append(append(dst, "=== RUN   "...), name...), '\n')
			dst = append(append(append(dst, "--- PASS: "...), name...), " (0.0"...)
			dst = strconv.AppendInt(dst, int64(r.intn(10)), 10)
			dst = append(dst, "s)\n"...)
		default:
			dst = append(dst, "2026-01-01T10:"...)
			dst = strconv.AppendInt(dst, int64(10+r.intn(50)), 10)
			dst = append(dst, ":00Z level="...)
			dst = append(dst, pick(r, levels)...)
			dst = append(dst, " msg=\""...)
			for i := range r.between(3, 9) {
				if i > 0 {
					dst = append(dst, ' ')
				}
				dst = append(dst, pick(r, words)...)
			}
			dst = append(dst, "\"\n"...)
		}
	}
	return dst
}

// pathText is a source path (n is a lower bound; 0 for one path).
func pathText(r *rng, dst []byte, n int) []byte {
	for start := len(dst); ; {
		for range r.between(1, 3) {
			dst = append(append(dst, pick(r, dirs)...), '/')
		}
		dst = append(dst, pick(r, files)...)
		if len(dst)-start >= n {
			return dst
		}
		dst = append(dst, ' ')
	}
}

// wordText is words, as a search pattern holds them.
func wordText(r *rng, dst []byte, n int) []byte {
	for start := len(dst); len(dst)-start < n || len(dst) == start; {
		if len(dst) > start {
			dst = append(dst, ' ')
		}
		dst = append(dst, pick(r, words)...)
	}
	return dst
}

// urlText is URLs.
func urlText(r *rng, dst []byte, n int) []byte {
	for start := len(dst); len(dst)-start < n || len(dst) == start; {
		dst = append(append(append(dst, "https://"...), pick(r, domains)...), '/')
		dst = append(append(dst, pick(r, dirs)...), '/')
		dst = append(dst, pick(r, words)...)
	}
	return dst
}

// commandText is shell commands joined with &&.
func commandText(r *rng, dst []byte, n int) []byte {
	for start := len(dst); len(dst)-start < n || len(dst) == start; {
		if len(dst) > start {
			dst = append(dst, " && "...)
		}
		dst = append(dst, pick(r, verbs)...)
	}
	return dst
}
