package eventlog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// row is one decoded row: a single event (n == 1) or a packed run. Its byte
// slices point into the line it was decoded from.
type row struct {
	seq   int64
	typ   []byte // the type as raw bytes (no escapes) or decoded
	n     int
	times []int64
	datas [][]byte // nil element: data absent

	timeSink, dataSink elemSink // a packed row's elements, scanned once
}

const (
	keySeq = 1 << iota
	keyType
	keyTime
	keyData
	keyN
)

// rowError is a reason why a line is not a row.
type rowError struct{ msg string }

func (e *rowError) Error() string { return e.msg }

func rowErrf(format string, args ...any) error { return &rowError{fmt.Sprintf(format, args...)} }

// decodeRow decodes one line (without its '\n') into r, reusing r's slices.
// It checks everything a row alone can break; the seq rule is the reader's.
func decodeRow(line []byte, r *row) error {
	if len(line) > MaxRowSize {
		return rowErrf("row of %d bytes exceeds the limit of %d", len(line), MaxRowSize)
	}
	i := skipWS(line, 0)
	if i >= len(line) || line[i] != '{' {
		return rowErrf("row is not a JSON object")
	}
	i = skipWS(line, i+1)
	var seen int
	var timeSpan, dataSpan []byte
	r.n = 1
	r.typ = nil
	r.timeSink.count, r.dataSink.count = -1, -1 // nothing collected for this row
	for first := true; ; first = false {
		if i < len(line) && line[i] == '}' && first {
			i++
			break
		}
		if i >= len(line) || line[i] != '"' {
			return rowErrf("expected a key at byte %d", i)
		}
		kEnd, kEsc, err := scanString(line, i)
		if err != nil {
			return rowErrf("bad key at byte %d: %v", i, err)
		}
		key := line[i+1 : kEnd-1]
		if kEsc {
			var s string
			if err := json.Unmarshal(line[i:kEnd], &s); err != nil {
				return rowErrf("bad key at byte %d: %v", i, err)
			}
			key = []byte(s)
		}
		i = skipWS(line, kEnd)
		if i >= len(line) || line[i] != ':' {
			return rowErrf("expected ':' at byte %d", i)
		}
		i = skipWS(line, i+1)
		vStart := i
		var vEnd int
		if sink := r.packedSink(key, seen, line, i); sink != nil {
			// n came first, as our writer writes it: collect the
			// elements of the packed time or data while validating.
			vEnd, _, err = scanContainerInto(line, i, 0, sink)
		} else {
			vEnd, _, err = scanValue(line, i)
		}
		if err != nil {
			return rowErrf("bad value of %q at byte %d: %v", key, vStart, err)
		}
		var bit int
		switch string(key) {
		case "seq":
			bit = keySeq
			if r.seq, _, err = scanUint(line, vStart); err != nil {
				return rowErrf("seq: %v", err)
			}
		case "type":
			bit = keyType
			if line[vStart] != '"' {
				return rowErrf("type is not a string")
			}
			if r.typ, err = decodeType(line[vStart:vEnd]); err != nil {
				return err
			}
		case "time":
			bit, timeSpan = keyTime, line[vStart:vEnd]
		case "data":
			bit, dataSpan = keyData, line[vStart:vEnd]
		case "n":
			bit = keyN
			n, _, err := scanUint(line, vStart)
			if err != nil {
				return rowErrf("n: %v", err)
			}
			if n < 2 || n > int64(len(line)) {
				return rowErrf("n is %d: a packed row holds from 2 to as many events as it has bytes", n)
			}
			r.n = int(n)
		default:
			return rowErrf("unknown key %q", key)
		}
		if seen&bit != 0 {
			return rowErrf("repeated key %q", key)
		}
		seen |= bit
		i = skipWS(line, vEnd)
		if i < len(line) && line[i] == ',' {
			i = skipWS(line, i+1)
			continue
		}
		if i < len(line) && line[i] == '}' {
			i++
			break
		}
		return rowErrf("expected ',' or '}' at byte %d", i)
	}
	if skipWS(line, i) != len(line) {
		return rowErrf("unexpected bytes after the row object")
	}
	for _, k := range []struct {
		bit  int
		name string
	}{{keySeq, "seq"}, {keyType, "type"}, {keyTime, "time"}} {
		if seen&k.bit == 0 {
			return rowErrf("missing key %q", k.name)
		}
	}
	r.times = r.times[:0]
	if seen&keyN == 0 {
		r.datas = r.datas[:0]
		t, _, err := scanUint(timeSpan, 0)
		if err != nil {
			return rowErrf("time: %v", err)
		}
		r.times = append(r.times, t)
		r.datas = append(r.datas, dataSpan) // nil when absent
		return nil
	}
	if seen&keyData == 0 {
		return rowErrf("packed row without data")
	}
	if r.seq > 1<<62 {
		return rowErrf("seq out of range for a packed row")
	}
	if err := decodePackedTimes(timeSpan, r); err != nil {
		return err
	}
	return decodePackedData(dataSpan, r)
}

// packedSink returns the sink that collects the elements of the value at
// line[i] of key, when key is "time" or "data" of a row whose n is known
// (seen) and the value is an array; nil otherwise. It resets the sink.
func (r *row) packedSink(key []byte, seen int, line []byte, i int) *elemSink {
	if seen&keyN == 0 || i >= len(line) || line[i] != '[' {
		return nil
	}
	var s *elemSink
	switch string(key) {
	case "time":
		s = &r.timeSink
	case "data":
		s = &r.dataSink
	default:
		return nil
	}
	*s = elemSink{elems: s.elems[:0], max: r.n}
	return s
}

func decodeType(tok []byte) ([]byte, error) {
	raw := tok[1 : len(tok)-1]
	if bytes.IndexByte(raw, '\\') >= 0 {
		var s string
		if err := json.Unmarshal(tok, &s); err != nil {
			return nil, rowErrf("type: %v", err)
		}
		raw = []byte(s)
	}
	if len(raw) == 0 || len(raw) > maxTypeLen {
		return nil, rowErrf("type must be 1 to %d characters, got %d", maxTypeLen, len(raw))
	}
	for _, c := range raw {
		if !typeChar[c] {
			return nil, rowErrf("type %q has a character outside A-Z a-z 0-9 . _ : / -", raw)
		}
	}
	return raw, nil
}

// arrayElems calls f with each element of the JSON array arr.
func arrayElems(arr []byte, f func(elem []byte) error) error {
	if len(arr) == 0 || arr[0] != '[' {
		return errors.New("not an array")
	}
	i := skipWS(arr, 1)
	if i < len(arr) && arr[i] == ']' {
		return nil
	}
	for {
		end, _, err := scanValue(arr, i)
		if err != nil {
			return err
		}
		if err := f(arr[i:end]); err != nil {
			return err
		}
		i = skipWS(arr, end)
		if i < len(arr) && arr[i] == ']' {
			return nil
		}
		i = skipWS(arr, i+1) // scanValue already proved this is ','
	}
}

// packedElems calls f with each element of span, a packed row's time or
// data array: from sink when it collected them as the row was scanned
// (count >= 0), else by scanning span again.
func packedElems(span []byte, sink *elemSink, f func(elem []byte) error) error {
	if sink.count < 0 || span == nil {
		return arrayElems(span, f)
	}
	for _, e := range sink.elems {
		if err := f(e); err != nil {
			return err
		}
	}
	if sink.count > len(sink.elems) {
		return errors.New("more elements than n")
	}
	return nil
}

func decodePackedTimes(span []byte, r *row) error {
	err := packedElems(span, &r.timeSink, func(e []byte) error {
		if len(r.times) >= r.n {
			return errors.New("more elements than n")
		}
		t, _, err := scanUint(e, 0)
		if err != nil {
			return err
		}
		r.times = append(r.times, t)
		return nil
	})
	if err != nil {
		return rowErrf("packed time: %v", err)
	}
	if len(r.times) != r.n {
		return rowErrf("packed time has %d elements, n is %d", len(r.times), r.n)
	}
	return nil
}

func decodePackedData(span []byte, r *row) error {
	r.datas = r.datas[:0]
	err := packedElems(span, &r.dataSink, func(e []byte) error {
		if len(r.datas) >= r.n {
			return errors.New("more elements than n")
		}
		r.datas = append(r.datas, e)
		return nil
	})
	if err != nil {
		return rowErrf("packed data: %v", err)
	}
	if len(r.datas) != r.n {
		return rowErrf("packed data has %d elements, n is %d", len(r.datas), r.n)
	}
	return nil
}

// DecodeRow decodes one row (its bytes without the '\n') into the events it
// stands for: one, or n for a packed row. It checks the row alone (keys,
// types, integers, JSON data, packing, size), not the seq rule, which needs
// the rows before it. The events' Data are copies, independent of line.
func DecodeRow(line []byte) ([]Event, error) {
	var r row
	if err := decodeRow(line, &r); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	evs := make([]Event, r.n)
	typ := string(r.typ)
	for k := range evs {
		d := r.datas[k]
		if string(d) == "null" {
			d = nil // as the Reader does: nil means null
		}
		evs[k] = Event{Seq: r.seq + int64(k), Type: typ, Time: r.times[k], Data: cloneData(d)}
	}
	return evs, nil
}

func cloneData(d []byte) json.RawMessage {
	if d == nil {
		return nil
	}
	return append(json.RawMessage(make([]byte, 0, len(d))), d...)
}
