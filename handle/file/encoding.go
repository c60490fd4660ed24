package file

import (
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/internal/format/logfile"
	"github.com/sessionlog/sessionlog/internal/format/zstdframe"
)

// encoding is what the store does differently per encoding.
type encoding struct {
	name string
	ext  string
	z    *eventlog.ZstdCodec // nil for raw

	// The codec of whole-file rewrites (Compact, Convert, Detach): made on
	// first use, at rewriteLevel. A rewrite runs once, off the append path,
	// so it compresses harder than the per-flush frames, whose level keeps
	// a flush cheap.
	rewriteLevel int
	rewriteOnce  sync.Once
	rewriteZ     *eventlog.ZstdCodec
	rewriteErr   error
}

// defaultRewriteLevel is the zstd level of rewrites when the store sets
// none (Config.ZstdLevel): klauspost's "better" level, which in frames of
// FrameTarget makes a session smaller than `zstd -3` makes its JSONL
// whole (docs/performance.md).
const defaultRewriteLevel = 7

// reader returns a reader of the log in src that ends with ctx's error
// once ctx is done (see ctxReader).
func (e *encoding) reader(ctx context.Context, src io.Reader, opts ...eventlog.ReaderOption) *eventlog.Reader {
	src = ctxReader{ctx: ctx, r: src}
	if e.z != nil {
		return eventlog.NewZstdReader(src, e.z, opts...)
	}
	return eventlog.NewReader(src, opts...)
}

// frames appends rows to dst as the encoding stores them; last is where
// the last frame starts in out (zstd).
func (e *encoding) frames(dst, rows []byte) (out []byte, last int) {
	if e.z != nil {
		return e.z.AppendFrames(dst, rows)
	}
	return append(dst, rows...), len(dst)
}

// rewriteFrames is frames for a whole-file rewrite: zstd at the rewrite
// level.
func (e *encoding) rewriteFrames(dst, rows []byte) (out []byte, last int, err error) {
	if e.z == nil {
		out, last = e.frames(dst, rows)
		return out, last, nil
	}
	z, err := e.rewriteCodec()
	if err != nil {
		return dst, len(dst), err
	}
	out, last = z.AppendFrames(dst, rows)
	return out, last, nil
}

// rewriteCodec returns the codec of whole-file rewrites (nil for raw),
// made on first use.
func (e *encoding) rewriteCodec() (*eventlog.ZstdCodec, error) {
	if e.z == nil {
		return nil, nil
	}
	e.rewriteOnce.Do(func() { e.rewriteZ, e.rewriteErr = eventlog.NewZstdCodec(e.rewriteLevel) })
	return e.rewriteZ, e.rewriteErr
}

// tail reads the header and last event of the log in src; known, when
// not nil, tells a data frame the caller knows of (zstd, asked only when
// needed: see logfile.ReadZstdTailAfter).
func (e *encoding) tail(src io.ReaderAt, size int64, path string, known func() zstdframe.Frame) (logfile.Tail, error) {
	if e.z != nil {
		return logfile.ReadZstdTailAfter(src, size, e.z, path, known)
	}
	return logfile.ReadTail(src, size, path)
}

// encodings returns the store's encodings, raw first.
func (s *Store) encodings() [2]*encoding { return [2]*encoding{&s.raw, &s.zst} }

// encodingNamed returns the encoding called name.
func (s *Store) encodingNamed(name string) (*encoding, error) {
	for _, e := range s.encodings() {
		if e.name == name {
			if e.name == handle.EncodingZstd && s.zerr != nil {
				return nil, s.zerr
			}
			return e, nil
		}
	}
	return nil, fmt.Errorf("handle: unknown encoding %q (want %q or %q)", name, handle.EncodingRaw, handle.EncodingZstd)
}
