package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
)

// maxLineSize bounds one input line of append: a row's limit plus room for
// the keys. A longer line is refused without being held.
const maxLineSize = eventlog.MaxRowSize + 4096

func (a *app) newAppendCmd() *cobra.Command {
	var every int
	cmd := &cobra.Command{
		Use:   "append [--flush-every N] SESSION",
		Short: "Append event objects read from stdin, one a line, and print acks",
		Long: `Append reads event objects {"type","time"?,"data"?,"seq"?}, one a line,
from stdin. time (Unix milliseconds; 0 is a time) defaults to now; data is
any JSON value, stored compacted; a seq that is not the next one is a
conflict. Any other key, a repeated key, a time or seq that is not an
integer >= 0, or text after the object makes the line invalid; blank lines
are skipped.

It flushes (write, fsync) every N events with --flush-every, whenever stdin
holds no further complete line (an ack never waits for more input) and at
the end of input; after each flush it prints {"acked":S}, S the last
durable seq, so a program that pipes events in may wait for each ack. On a
conflict or an invalid line it flushes what came before, prints the ack and
{"error":{"kind":"conflict"|"invalid","line":N,"message":"..."}} (N counts
stdin's lines from 1), writes nothing of that line or after it, and exits
1. A session another writer holds exits 1 at once; one whose file is
unlinked, renamed or replaced under it stops at the next flush (exit 2).
On SIGINT or SIGTERM, also while it waits on stdin, it flushes what it
appended, prints the ack and exits 130 or 143.`,
		Example: `  $ printf '%s\n' '{"type":"user/message","data":{"text":"hi"}}' | logtool append agent=coder
  {"acked":0}
  $ echo '{"type":"x","seq":9}' | logtool append agent=coder
  {"acked":0}
  {"error":{"kind":"conflict","line":1,"message":"seq 9 is not the next seq 1"}}`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if every < 0 {
				return usageErrorf("--flush-every %d: want N >= 0", every)
			}
			return a.runAppend(cmd.Context(), args[0], every)
		},
	}
	cmd.Flags().IntVar(&every, "flush-every", 0, "flush after every `N` events (0: only when stdin is drained and at its end)")
	return cmd
}

func (a *app) runAppend(ctx context.Context, arg string, every int) (err error) {
	s, err := a.resolve(arg)
	if err != nil {
		return err
	}
	st := s.writeStore()
	if st == nil {
		return usageErrorf("%q: append writes to a session of a store, a file named <ID>%s", s.path, rawExt)
	}
	h, err := st.Open(ctx, s.id, handle.ReadWrite)
	if err != nil {
		return err
	}
	a.reportTorn(h, "cut before the first append")
	defer func() {
		if cerr := h.Close(); err == nil && cerr != nil {
			err = cerr
		}
	}()
	ap := &appender{h: h, out: a.stdout, every: every, now: a.now}
	return ap.run(ctx, bufio.NewReaderSize(a.stdin, 64<<10))
}

// appender feeds lines of stdin to a write handle and acknowledges what
// became durable.
type appender struct {
	h       handle.Handle
	out     io.Writer
	every   int
	now     func() time.Time
	pending int // events appended since the last flush
}

func (ap *appender) run(ctx context.Context, in *bufio.Reader) error {
	done := make(chan struct{})
	defer close(done)
	lines := readLines(ctx, done, in)
	for n := 1; ; n++ {
		var l inputLine
		var ok bool
		select {
		case l, ok = <-lines:
		case <-ctx.Done():
		}
		if !ok || ctx.Err() != nil {
			return ap.interrupted(ctx)
		}
		line, rerr := l.line, l.err
		var tooLong *lineTooLongError
		switch {
		case errors.As(rerr, &tooLong):
			return ap.fail(ctx, "invalid", n, tooLong.Error())
		case rerr != nil && !errors.Is(rerr, io.EOF):
			if err := ap.flush(ctx); err != nil {
				return err
			}
			return fmt.Errorf("reading stdin: %w", rerr)
		}
		if line = bytes.TrimSpace(line); len(line) > 0 {
			if err := ap.add(ctx, n, line); err != nil {
				return err
			}
		}
		if rerr != nil { // io.EOF
			return ap.flush(ctx)
		}
		// Flush before a read that may block, so no ack waits for input.
		if ap.pending > 0 && !l.buffered {
			if err := ap.flush(ctx); err != nil {
				return err
			}
		}
	}
}

// inputLine is a line of stdin, or the error that ended it; buffered is
// whether another complete line was buffered when it was read (reading it
// will not block).
type inputLine struct {
	line     []byte
	err      error
	buffered bool
}

// readLines reads in line by line in a goroutine of its own, so that the
// appender can stop on ctx while a read of stdin blocks (a read of a pipe
// or terminal cannot be interrupted). It reads a line only once the one
// before was taken, so buffered means what it meant when the line was read.
// The goroutine ends at the first error, when ctx is done or when done is
// closed; one blocked in a read ends with the process (or its input).
func readLines(ctx context.Context, done <-chan struct{}, in *bufio.Reader) <-chan inputLine {
	ch := make(chan inputLine)
	go func() {
		defer close(ch)
		for {
			line, err := readLine(in, maxLineSize)
			select {
			case ch <- inputLine{line: line, err: err, buffered: err == nil && lineBuffered(in)}:
			case <-ctx.Done():
				return
			case <-done:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return ch
}

// interrupted ends the input on ctx (a signal): what was appended is
// flushed and acknowledged, so that the last ack says exactly what is
// durable; then ctx's error.
func (ap *appender) interrupted(ctx context.Context) error {
	if err := ap.flush(context.WithoutCancel(ctx)); err != nil {
		return err
	}
	return ctx.Err()
}

// add appends the event of input line n.
func (ap *appender) add(ctx context.Context, n int, line []byte) error {
	e, seq, err := parseEventLine(line, ap.now)
	if err != nil {
		return ap.fail(ctx, "invalid", n, err.Error())
	}
	if seq >= 0 {
		_, err = ap.h.AppendAt(ctx, seq, e)
	} else {
		_, err = ap.h.Append(ctx, e)
	}
	var conflict *handle.ConflictError
	var refused *handle.EventError
	switch {
	case errors.As(err, &conflict):
		return ap.fail(ctx, "conflict", n, fmt.Sprintf("seq %d is not the next seq %d", conflict.Expected, conflict.Next))
	case errors.As(err, &refused):
		return ap.fail(ctx, "invalid", n, refused.Err.Error())
	case err != nil:
		return err
	}
	ap.pending++
	if ap.every > 0 && ap.pending >= ap.every {
		return ap.flush(ctx)
	}
	return nil
}

// flush makes the pending events durable and acknowledges them.
func (ap *appender) flush(ctx context.Context) error {
	if ap.pending == 0 {
		return nil
	}
	if err := ap.h.Flush(ctx); err != nil {
		return err
	}
	ap.pending = 0
	return ap.ack()
}

func (ap *appender) ack() error {
	return writeJSON(ap.out, ackLine{Acked: ap.h.DurableSeq()})
}

// fail ends the input at line n: what came before is flushed and acked,
// then the error object is printed.
func (ap *appender) fail(ctx context.Context, kind string, n int, msg string) error {
	if ap.pending > 0 {
		if err := ap.flush(ctx); err != nil {
			return err
		}
	} else if err := ap.ack(); err != nil {
		return err
	}
	if err := writeJSON(ap.out, errorLine{Error: errorBody{Kind: kind, Line: n, Message: msg}}); err != nil {
		return err
	}
	return failedf("line %d: %s: %s", n, kind, msg)
}

// ackLine is printed after each durable flush.
type ackLine struct {
	Acked int64 `json:"acked"`
}

// errorLine is printed when append stops at a bad line.
type errorLine struct {
	Error errorBody `json:"error"`
}

type errorBody struct {
	Kind    string `json:"kind"` // conflict or invalid
	Line    int    `json:"line"` // 1-based line of stdin
	Message string `json:"message"`
}

// lineTooLongError is a line of stdin over maxLineSize.
type lineTooLongError struct{ limit int }

func (e *lineTooLongError) Error() string {
	return fmt.Sprintf("line longer than %d bytes", e.limit)
}

// readLine returns the next line with its '\n' (the last line may lack
// it, with io.EOF). It never holds more than limit bytes.
func readLine(in *bufio.Reader, limit int) ([]byte, error) {
	var line []byte
	for {
		frag, err := in.ReadSlice('\n')
		if len(line)+len(frag) > limit {
			return nil, &lineTooLongError{limit: limit}
		}
		line = append(line, frag...)
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, err
		}
	}
}

// lineBuffered reports whether a complete line waits in the buffer, so
// that reading it will not block.
func lineBuffered(in *bufio.Reader) bool {
	buf, _ := in.Peek(in.Buffered())
	return bytes.IndexByte(buf, '\n') >= 0
}

// parseEventLine decodes one input object {"type","time"?,"data"?,"seq"?}.
// seq is -1 when absent. Unknown or repeated keys, a time or seq that is
// not a JSON integer >= 0, and anything after the object are refused.
func parseEventLine(line []byte, now func() time.Time) (e eventlog.Event, seq int64, err error) {
	seq = -1
	dec := json.NewDecoder(bytes.NewReader(line))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return e, seq, errors.New("not a JSON object")
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return e, seq, fmt.Errorf("not valid JSON: %v", err)
		}
		key, _ := tok.(string)
		if seen[key] {
			return e, seq, fmt.Errorf("key %q repeated", key)
		}
		seen[key] = true
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return e, seq, fmt.Errorf("not valid JSON (value of %q): %v", key, err)
		}
		switch key {
		case "type":
			if err := json.Unmarshal(raw, &e.Type); err != nil {
				return e, seq, errors.New(`"type" is not a string`)
			}
		case "time":
			if e.Time, err = parseNonNegInt(raw, "time"); err != nil {
				return e, seq, err
			}
		case "seq":
			if seq, err = parseNonNegInt(raw, "seq"); err != nil {
				return e, -1, err
			}
		case "data":
			if string(raw) != "null" {
				e.Data = raw
			}
		default:
			return e, seq, fmt.Errorf("unknown key %q (want type, time, data, seq)", key)
		}
	}
	if _, err := dec.Token(); err != nil { // the closing '}'
		return e, seq, fmt.Errorf("not valid JSON: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return e, seq, errors.New("more after the object (one object a line)")
	}
	if !seen["type"] {
		return e, seq, errors.New(`"type" is missing`)
	}
	if !seen["time"] {
		e.Time = now().UnixMilli()
	}
	if err := e.Validate(); err != nil {
		return e, seq, err
	}
	return e, seq, nil
}

// parseNonNegInt reads a JSON integer >= 0 (no fraction, no exponent).
func parseNonNegInt(raw json.RawMessage, key string) (int64, error) {
	v, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("%q is %s, want an integer >= 0", key, raw)
	}
	return v, nil
}
