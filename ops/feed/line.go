package feed

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/sessionlog/sessionlog/eventlog"
)

// MaxLine bounds one input line: a row's limit plus room for the keys.
const MaxLine = eventlog.MaxRowSize + 4096

// ParseLine decodes one input object {"type","time"?,"data"?,"seq"?}:
// time (Unix milliseconds; 0 is a time) is now's when absent, data any
// JSON value (null is none). seq is -1 when absent. Unknown or repeated
// keys, a time or seq that is not a JSON integer >= 0, anything after the
// object and an event the log would refuse (eventlog.Event.Validate) are
// errors, whose message says why.
func ParseLine(line []byte, now time.Time) (e eventlog.Event, seq int64, err error) {
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
			if e.Time, err = nonNegInt(raw, "time"); err != nil {
				return e, seq, err
			}
		case "seq":
			if seq, err = nonNegInt(raw, "seq"); err != nil {
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
		e.Time = now.UnixMilli()
	}
	if err := e.Validate(); err != nil {
		return e, seq, err
	}
	return e, seq, nil
}

// nonNegInt reads a JSON integer >= 0 (no fraction, no exponent).
func nonNegInt(raw json.RawMessage, key string) (int64, error) {
	v, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("%q is %s, want an integer >= 0", key, raw)
	}
	return v, nil
}

// errLineTooLong is a line over MaxLine.
var errLineTooLong = fmt.Errorf("line longer than %d bytes", MaxLine)

// readLine returns the next line with its '\n' (the last line may lack
// it, with io.EOF). It never holds more than limit bytes: a longer line is
// errLineTooLong.
func readLine(in *bufio.Reader, limit int) ([]byte, error) {
	var line []byte
	for {
		frag, err := in.ReadSlice('\n')
		if len(line)+len(frag) > limit {
			return nil, errLineTooLong
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
