package feed

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/sessionlog/sessionlog/handle"
)

// The kinds of a LineError.
const (
	KindConflict = "conflict" // the line's seq is not the log's next
	KindInvalid  = "invalid"  // the line is not a valid event object (or is too long)
)

// LineError is the line that ended the input; its JSON is the body of the
// protocol's error line.
type LineError struct {
	Kind    string `json:"kind"` // KindConflict or KindInvalid
	Line    int    `json:"line"` // 1-based line of the input
	Message string `json:"message"`
}

func (e *LineError) Error() string {
	return fmt.Sprintf("line %d: %s: %s", e.Line, e.Kind, e.Message)
}

// Ack is the line written after each durable flush: the last durable seq.
type Ack struct {
	Acked int64 `json:"acked"`
}

// ErrorLine is the line written when a line ends the input.
type ErrorLine struct {
	Error *LineError `json:"error"`
}

type config struct {
	every int
	now   func() time.Time
}

// Option configures Run.
type Option func(*config)

// FlushEvery flushes after every n events too (0, the default: only when
// the input holds no further complete line, and at its end).
func FlushEvery(n int) Option { return func(c *config) { c.every = n } }

// WithClock sets the clock of events given without a time (default
// time.Now).
func WithClock(now func() time.Time) Option { return func(c *config) { c.now = now } }

// Run reads event objects from in, one a line, appends them to h (a write
// handle) and writes to out an Ack after each durable flush. It returns
// nil at the end of the input, everything flushed and acknowledged; a
// *LineError when a line ended it (after the ack of what came before and
// the ErrorLine); ctx's error when ctx ended it, also while a read of in
// blocks, after flushing and acknowledging what was appended (so the last
// ack says exactly what is durable); any other error of h, in or out as it
// is. Blank lines are skipped.
//
// A read of in that blocks cannot be interrupted: when ctx ends it, Run
// returns and leaves one goroutine in that read, which ends when the read
// returns. Run closes neither h nor in.
func Run(ctx context.Context, h handle.Handle, in io.Reader, out io.Writer, opts ...Option) error {
	c := config{now: time.Now}
	for _, o := range opts {
		o(&c)
	}
	if c.every < 0 {
		return fmt.Errorf("feed: FlushEvery(%d): want n >= 0", c.every)
	}
	f := &feeder{h: h, out: json.NewEncoder(out), cfg: c}
	f.out.SetEscapeHTML(false)
	return f.run(ctx, bufio.NewReaderSize(in, 64<<10))
}

// feeder feeds lines of the input to a write handle and acknowledges what
// became durable.
type feeder struct {
	h       handle.Handle
	out     *json.Encoder
	cfg     config
	pending int // events appended since the last flush
}

func (f *feeder) run(ctx context.Context, in *bufio.Reader) error {
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
			return f.interrupted(ctx)
		}
		line, rerr := l.line, l.err
		switch {
		case errors.Is(rerr, errLineTooLong):
			return f.fail(ctx, KindInvalid, n, rerr.Error())
		case rerr != nil && !errors.Is(rerr, io.EOF):
			if err := f.flush(ctx); err != nil {
				return err
			}
			return fmt.Errorf("feed: reading the input: %w", rerr)
		}
		if line = bytes.TrimSpace(line); len(line) > 0 {
			if err := f.add(ctx, n, line); err != nil {
				return err
			}
		}
		if rerr != nil { // io.EOF
			return f.flush(ctx)
		}
		// Flush before a read that may block, so no ack waits for input.
		if f.pending > 0 && !l.buffered {
			if err := f.flush(ctx); err != nil {
				return err
			}
		}
	}
}

// inputLine is a line of the input, or the error that ended it; buffered
// is whether another complete line was buffered when it was read (reading
// it will not block).
type inputLine struct {
	line     []byte
	err      error
	buffered bool
}

// readLines reads in line by line in a goroutine of its own, so that Run
// can stop on ctx while a read blocks (a read of a pipe or terminal cannot
// be interrupted). It reads a line only once the one before was taken, so
// buffered means what it meant when the line was read. The goroutine ends
// at the first error, when ctx is done or when done is closed; one blocked
// in a read ends when the read returns.
func readLines(ctx context.Context, done <-chan struct{}, in *bufio.Reader) <-chan inputLine {
	ch := make(chan inputLine)
	go func() {
		defer close(ch)
		for {
			line, err := readLine(in, MaxLine)
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

// interrupted ends the input on ctx: what was appended is flushed and
// acknowledged, then ctx's error.
func (f *feeder) interrupted(ctx context.Context) error {
	if err := f.flush(context.WithoutCancel(ctx)); err != nil {
		return err
	}
	return ctx.Err()
}

// add appends the event of input line n.
func (f *feeder) add(ctx context.Context, n int, line []byte) error {
	e, seq, err := ParseLine(line, f.cfg.now())
	if err != nil {
		return f.fail(ctx, KindInvalid, n, err.Error())
	}
	if seq >= 0 {
		_, err = f.h.AppendAt(ctx, seq, e)
	} else {
		_, err = f.h.Append(ctx, e)
	}
	var conflict *handle.ConflictError
	var refused *handle.EventError
	switch {
	case errors.As(err, &conflict):
		return f.fail(ctx, KindConflict, n, fmt.Sprintf("seq %d is not the next seq %d", conflict.Expected, conflict.Next))
	case errors.As(err, &refused):
		return f.fail(ctx, KindInvalid, n, refused.Err.Error())
	case err != nil:
		return err
	}
	f.pending++
	if f.cfg.every > 0 && f.pending >= f.cfg.every {
		return f.flush(ctx)
	}
	return nil
}

// flush makes the pending events durable and acknowledges them.
func (f *feeder) flush(ctx context.Context) error {
	if f.pending == 0 {
		return nil
	}
	if err := f.h.Flush(ctx); err != nil {
		return err
	}
	f.pending = 0
	return f.ack()
}

func (f *feeder) ack() error { return f.out.Encode(Ack{Acked: f.h.DurableSeq()}) }

// fail ends the input at line n: what came before is flushed and acked
// (the log as it is acked again when nothing came since the last ack, so
// that the error line always follows its ack), then the error line is
// written.
func (f *feeder) fail(ctx context.Context, kind string, n int, msg string) error {
	if f.pending > 0 {
		if err := f.flush(ctx); err != nil {
			return err
		}
	} else if err := f.ack(); err != nil {
		return err
	}
	le := &LineError{Kind: kind, Line: n, Message: msg}
	if err := f.out.Encode(ErrorLine{Error: le}); err != nil {
		return err
	}
	return le
}
