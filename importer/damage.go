package importer

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/afero"
)

// Damage is reported, never fatal to what precedes it. A JSONL trace
// whose line N cannot be read (or converted) is imported up to line N-1,
// the session marked Partial with the line's error; with SkipBad the
// import goes on past every such line, each one reported in Skipped (a
// bad line is no record: it is left out, and the session keeps every
// other). A last line without a newline that is not JSON is a torn tail —
// what a writer cut off mid-line leaves — left out and reported as Torn.
// A file whose first line is bad is not of the format: it is refused
// whole.

// RecordError is a source record (a line) that cannot be imported. It
// wraps the reason; errors.Is(err, ErrFormat) holds.
type RecordError struct {
	Path string // the file, when known
	Line int    // from 1
	Err  error
}

func (e *RecordError) Error() string {
	if e.Path != "" {
		return fmt.Sprintf("%s: line %d: %v", e.Path, e.Line, e.Err)
	}
	return fmt.Sprintf("line %d: %v", e.Line, e.Err)
}

// Unwrap returns the reason.
func (e *RecordError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrFormat) hold.
func (e *RecordError) Is(target error) bool { return target == ErrFormat }

// Torn is a torn last line: its number, offset and length in bytes.
type Torn struct {
	Line   int
	Offset int64
	Bytes  int64
}

// SkipBad makes Convert import past bad lines, each reported in
// Session.Skipped, instead of stopping before the first.
func SkipBad() Option { return func(c *Config) { c.SkipBad = true } }

// LineBased is implemented by importers of JSONL formats, whose records
// are lines (Format: those without a RecordsFunc). Convert cuts their
// damage at a line; a file of another format is read whole or refused.
type LineBased interface{ LineBased() bool }

// LineBased reports whether f's records are lines.
func (f Format) LineBased() bool { return f.RecordsFunc == nil }

// tornTail returns data without a torn last line, and the line.
func tornTail(data []byte) ([]byte, *Torn) {
	if len(data) == 0 || data[len(data)-1] == '\n' {
		return data, nil
	}
	start := bytes.LastIndexByte(data, '\n') + 1
	last := data[start:]
	if len(bytes.TrimSpace(last)) == 0 || json.Valid(bytes.TrimSuffix(last, []byte("\r"))) {
		return data, nil
	}
	return data[:start], &Torn{Line: bytes.Count(data[:start], []byte("\n")) + 1, Offset: int64(start), Bytes: int64(len(last))}
}

// lineStart returns the offset of line n (from 1) in data.
func lineStart(data []byte, n int) int {
	off := 0
	for i := 1; i < n; i++ {
		j := bytes.IndexByte(data[off:], '\n')
		if j < 0 {
			return len(data)
		}
		off += j + 1
	}
	return off
}

// blank returns a copy of data with line n emptied (its newline kept, so
// the lines after keep their numbers).
func blank(data []byte, n int) []byte {
	start := lineStart(data, n)
	end := start + bytes.IndexByte(data[start:], '\n')
	if end < start {
		end = len(data)
	}
	out := append([]byte{}, data[:start]...)
	return append(out, data[end:]...)
}

// parseFile reads and converts one file, cutting damage as the comment
// above says. The session's Bytes and Digest are those of what was read.
func parseFile(ctx context.Context, fsys afero.Fs, f Importer, path string, cfg Config) (Session, error) {
	file, err := fsys.Open(path)
	if err != nil {
		return Session{}, err
	}
	data, err := io.ReadAll(file)
	file.Close()
	if err != nil {
		return Session{}, fmt.Errorf("%s: %w", path, err)
	}
	lines, ok := f.(LineBased)
	if !ok || !lines.LineBased() {
		s, err := f.Parse(ctx, bytes.NewReader(data), path, cfg)
		if err != nil {
			return Session{}, fmt.Errorf("%s: %w", path, err)
		}
		return sourced(s, data), nil
	}
	data, torn := tornTail(data)
	read := data // what was read: the source, not the copy with bad lines blanked
	var skipped []*RecordError
	for {
		s, err := f.Parse(ctx, bytes.NewReader(data), path, cfg)
		var re *RecordError
		switch {
		case err == nil:
			s.Torn, s.Skipped = torn, skipped
			return sourced(s, read), nil
		case !errors.As(err, &re) || re.Line <= 1:
			return Session{}, fmt.Errorf("%s: %w", path, err)
		}
		re.Path = path
		if cfg.SkipBad {
			skipped = append(skipped, re)
			data = blank(data, re.Line)
			continue
		}
		prefix := data[:lineStart(data, re.Line)]
		s, perr := f.Parse(ctx, bytes.NewReader(prefix), path, cfg)
		if perr != nil {
			return Session{}, fmt.Errorf("%s: %w", path, err)
		}
		s.Partial, s.Skipped = re, skipped
		return sourced(s, prefix), nil
	}
}

// sourced sets s's Bytes and Digest from the bytes it was read from.
func sourced(s Session, data []byte) Session {
	sum := sha256.Sum256(data)
	s.Bytes, s.Digest = int64(len(data)), "sha256:"+hex.EncodeToString(sum[:])
	return s
}
