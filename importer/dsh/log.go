package dsh

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/oklog/ulid/v2"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/importer"
)

// ErrFormat is wrapped by every error about the source's content.
var ErrFormat = errors.New("dsh: not a dsh session log")

// maxRow bounds a source row, as sessionlog's own rows are bounded.
const maxRow = eventlog.MaxRowSize

// Log is a dsh log converted to sessionlog events.
type Log struct {
	// ID is a session ID (a ULID) derived from the source's header, the
	// same for the same header.
	ID string
	// CreatedAt is the header's createdAt (Unix ms).
	CreatedAt int64
	// Labels are the header's other keys: "source" is "dsh", "dsh.id" the
	// source's id, "dsh.<key>" any other key (strings as they are, other
	// values as JSON).
	Labels map[string]string
	// Events are the logical log, seqs from 0.
	Events []eventlog.Event
	// Lines are the source line (from 1) of each event: the row it came
	// from (a packed row gives several events).
	Lines  []int
	Report Report
}

// Report says what the conversion did.
type Report struct {
	Rows       int // rows after the header
	PackedRows int // packed rows, each expanded into its events
	// SeqsAssigned and TimesAssigned count events whose seq or time the
	// source did not give.
	SeqsAssigned, TimesAssigned int
	// DroppedKeys counts, by key, the rows that carried a key sessionlog
	// rows have no place for.
	DroppedKeys map[string]int
	// Reshaped counts the events whose data Vocabulary rewrote.
	Reshaped int
}

// LogOption configures Parse.
type LogOption func(*config)

type config struct{ vocabulary bool }

// Vocabulary makes Parse rewrite the data of the dsh events that share a
// type with docs/format.md §8 into its shapes:
//
//   - user/message {"content":[{"type":"text","text"}…],"source"} → {"text"}:
//     the text parts joined, when the person typed it (source kind
//     "user", or no source); a message a producer injected (any other
//     kind: a plugin's runtime context or skill catalog, a goal round…)
//     becomes context/message {"text","kind","plugin"?,"form"?,"role":"user"},
//     and a compaction checkpoint (plugin "compact") context/compacted
//     {"summary"};
//   - assistant/message {"message":{"content":[…]}} → {"text"}: its text
//     parts joined (reasoning and tool-call parts are left out: dsh records
//     each call as its own tool/call event as well);
//   - tool/call {"callId","name","arguments"} → {"id","name","args"}, args
//     the arguments string parsed when it holds JSON;
//   - tool/result {"message":{"content":[{"type":"tool-result","toolCallId","content","isError"}]},"error"?}
//     → {"id","output"} or {"id","error"}: the result's text parts joined;
//   - turn/end {"reason":{"kind"}} → {"kind"};
//   - assistant/chunk of a text delta → {"text"}.
//
// Data of another shape is left as it is.
func Vocabulary() LogOption { return func(c *config) { c.vocabulary = true } }

// ParseLogFile converts the dsh log at path.
func ParseLogFile(path string, opts ...LogOption) (Log, error) {
	f, err := os.Open(path)
	if err != nil {
		return Log{}, err
	}
	defer f.Close()
	s, err := ParseLog(f, opts...)
	if err != nil {
		return s, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// Parse converts a dsh log.
func ParseLog(r io.Reader, opts ...LogOption) (Log, error) {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, maxRow+1)
	if !sc.Scan() {
		if err := scanErr(sc, 1); err != nil {
			return Log{}, err
		}
		return Log{}, fmt.Errorf("%w: empty", ErrFormat)
	}
	s, err := parseHeader(sc.Bytes())
	if err != nil {
		return s, err
	}
	p := &parser{s: &s, cfg: cfg, lastTime: s.CreatedAt}
	p.emit = func(orig, voc eventlog.Event) error {
		e := orig
		if cfg.vocabulary {
			e = voc
		}
		s.Events = append(s.Events, e)
		s.Lines = append(s.Lines, p.line)
		return nil
	}
	line := 2
	for ; sc.Scan(); line++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		p.line = line
		if err := p.row(sc.Bytes()); err != nil {
			return s, &importer.RecordError{Line: line, Err: rowError{err}}
		}
	}
	return s, scanErr(sc, line)
}

// rowError is what is wrong with a row: errors.Is(err, ErrFormat) holds.
type rowError struct{ error }

func (e rowError) Unwrap() error        { return e.error }
func (e rowError) Is(target error) bool { return target == ErrFormat }

// scanErr is the error that stopped sc at line: a line longer than a row
// may be is an error about the content.
func scanErr(sc *bufio.Scanner, line int) error {
	err := sc.Err()
	if errors.Is(err, bufio.ErrTooLong) {
		return fmt.Errorf("%w: line %d: more than the %d bytes a row may have", ErrFormat, line, maxRow)
	}
	return err
}

// header is the first row of a dsh log.
type header struct {
	Type      string `json:"type"`
	Version   *int64 `json:"version"`
	ID        string `json:"id"`
	CreatedAt *int64 `json:"createdAt"`
}

func parseHeader(line []byte) (Log, error) {
	var h header
	if err := json.Unmarshal(line, &h); err != nil || h.Type != "session" || h.Version == nil || h.CreatedAt == nil || *h.CreatedAt < 0 {
		return Log{}, fmt.Errorf(`%w: the first row is no header {"type":"session","version","id","createdAt"}`, ErrFormat)
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(line, &all); err != nil {
		return Log{}, fmt.Errorf("%w: header: %v", ErrFormat, err)
	}
	labels := map[string]string{"source": "dsh", "dsh.id": h.ID}
	for k, v := range all {
		switch k {
		case "type", "id", "createdAt":
			continue
		}
		var str string
		if json.Unmarshal(v, &str) != nil {
			// As JSON, valid UTF-8 as a header's labels are.
			str = strings.ToValidUTF8(string(v), "\uFFFD")
		}
		labels["dsh."+k] = str
	}
	// The same header gives the same ID: a ULID of createdAt with entropy
	// from the header's bytes.
	sum := sha256.Sum256(line)
	id, err := ulid.New(uint64(*h.CreatedAt), bytes.NewReader(sum[:]))
	if err != nil {
		return Log{}, fmt.Errorf("%w: createdAt %d: %v", ErrFormat, *h.CreatedAt, err)
	}
	return Log{ID: id.String(), CreatedAt: *h.CreatedAt, Labels: labels, Report: Report{DroppedKeys: map[string]int{}}}, nil
}

// parser converts rows, keeping what the next row needs. It hands each
// event to emit twice over: as the source has it (orig) and its data
// reshaped into the vocabulary (voc, the same event when there is
// nothing to reshape).
type parser struct {
	s        *Log
	cfg      config
	lastTime int64
	line     int   // of the row being read
	next     int64 // seq of the next event
	// shift is the source's seq of an event less its seq here: 0 until a
	// skipped row (SkipBad) leaves a gap in the source's numbering, which
	// the next event's seq, when the source gives one, sets (resync).
	shift  int64
	resync bool
	emit   func(orig, voc eventlog.Event) error
	both   bool // both readings must be storable (the import's)
}

// eventKeys are the keys of a dsh row that a sessionlog event keeps.
var eventKeys = []string{"type", "seq", "time", "data"}

func (p *parser) row(line []byte) error {
	var row map[string]json.RawMessage
	if err := json.Unmarshal(line, &row); err != nil {
		return err
	}
	p.s.Report.Rows++
	var typ string
	if err := json.Unmarshal(row["type"], &typ); err != nil || typ == "" {
		return fmt.Errorf("a row without a type")
	}
	if _, ok := row["seq0"]; ok {
		p.s.Report.PackedRows++
		return p.packed(typ, row)
	}
	if err := eventlog.ValidateType(typ); err != nil {
		return err
	}
	if typ == eventlog.TypeCheckpoint || typ == eventlog.TypeRollback {
		return fmt.Errorf("type %q is sessionlog's own: a dsh log holds none", typ)
	}
	for k := range row {
		if !slices.Contains(eventKeys, k) {
			p.s.Report.DroppedKeys[k]++
		}
	}
	seq, err := optInt(row, "seq")
	if err != nil {
		return err
	}
	t, err := optInt(row, "time")
	if err != nil {
		return err
	}
	e := eventlog.Event{Type: typ, Data: row["data"]}
	if err := p.place(&e, seq, t); err != nil {
		return err
	}
	return p.add(e)
}

// place gives e its seq and time: the next seq, which must be the
// source's, when it gives one, less the gap rows skipped before left
// (shift); and the source's time, or the next one.
func (p *parser) place(e *eventlog.Event, seq, t *int64) error {
	e.Seq = p.next
	want := e.Seq + p.shift
	switch {
	case seq == nil:
		p.s.Report.SeqsAssigned++
	case p.resync && *seq >= want:
		p.shift = *seq - e.Seq // the skipped rows held the source's seqs before it
	case *seq != want:
		return fmt.Errorf("seq %d, want %d: sessionlog seqs are contiguous from 0", *seq, want)
	}
	p.resync = p.resync && seq == nil // until an event the source numbers
	if t == nil {
		p.s.Report.TimesAssigned++
		e.Time = p.lastTime + 1
	} else {
		e.Time = *t
	}
	if e.Time < 0 {
		return fmt.Errorf("seq %d: negative time %d", e.Seq, e.Time)
	}
	p.lastTime = e.Time
	return nil
}

// add hands e to emit, with its data reshaped into the vocabulary,
// unless the log would refuse either: data that is not valid (nested too
// deeply), or a row beyond maxRow.
func (p *parser) add(e eventlog.Event) error {
	// The source's data is checked as it is: reshaping goes through
	// encoding/json, which would replace bytes that are not UTF-8 with
	// U+FFFD instead of refusing them, so both modes refuse the same rows.
	if _, err := eventlog.Storable(e); err != nil {
		return fmt.Errorf("seq %d: %v", e.Seq, err)
	}
	voc := e
	if typ, data, ok := reshape(e.Type, e.Data); ok {
		voc.Type, voc.Data = typ, data
		if p.cfg.vocabulary {
			p.s.Report.Reshaped++
		}
		if _, err := eventlog.Storable(voc); err != nil {
			if !p.cfg.vocabulary && !p.both {
				voc = e // the faithful reading needs no reshaped data
			} else {
				return fmt.Errorf("seq %d: %v", e.Seq, err)
			}
		}
	}
	p.next++
	return p.emit(e, voc)
}

// packedData is the data of a packed row.
type packedData struct {
	Turn  json.RawMessage `json:"turn"`
	Step  json.RawMessage `json:"step"`
	Index json.RawMessage `json:"index"`
	DT    []int64         `json:"dt"`
	Texts []string        `json:"texts"`
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Args  []string        `json:"args"`
}

// The data of one streamed delta, as an unpacked dsh assistant/chunk row
// holds it (keys in dsh's order).
type (
	chunkData struct {
		Turn  json.RawMessage `json:"turn"`
		Step  json.RawMessage `json:"step"`
		Chunk any             `json:"chunk"`
	}
	textDelta struct {
		Type  string          `json:"type"`
		Index json.RawMessage `json:"index"`
		Text  string          `json:"text"`
	}
	toolCallDelta struct {
		Type           string          `json:"type"`
		Index          json.RawMessage `json:"index"`
		ID             string          `json:"id"`
		Name           string          `json:"name"`
		ArgumentsDelta string          `json:"argumentsDelta"`
	}
)

func (p *parser) packed(typ string, row map[string]json.RawMessage) error {
	seq0, err := optInt(row, "seq0")
	if err != nil {
		return err
	}
	t0, err := optInt(row, "time0")
	if err != nil {
		return err
	}
	var d packedData
	if err := json.Unmarshal(row["data"], &d); err != nil {
		return fmt.Errorf("%s: %v", typ, err)
	}
	var deltas []any
	switch typ {
	case "text-chunks", "reasoning-chunks":
		kind := "text-delta"
		if typ == "reasoning-chunks" {
			kind = "reasoning-delta"
		}
		for _, t := range d.Texts {
			deltas = append(deltas, textDelta{Type: kind, Index: d.Index, Text: t})
		}
	case "tool-call-chunks":
		for _, a := range d.Args {
			deltas = append(deltas, toolCallDelta{Type: "tool-call-delta", Index: d.Index, ID: d.ID, Name: d.Name, ArgumentsDelta: a})
		}
	default:
		return fmt.Errorf("packed row of unknown type %q", typ)
	}
	if len(deltas) == 0 || len(d.DT) != len(deltas)-1 {
		return fmt.Errorf("%s: %d deltas and %d time steps, want one step fewer than deltas", typ, len(deltas), len(d.DT))
	}
	for i, delta := range deltas {
		var seq, t *int64
		if seq0 != nil {
			s := *seq0 + int64(i)
			seq = &s
		}
		if t0 != nil {
			tt := *t0
			if i > 0 {
				tt = p.lastTime + d.DT[i-1]
			}
			t = &tt
		}
		data, err := marshal(chunkData{Turn: d.Turn, Step: d.Step, Chunk: delta})
		if err != nil {
			return err
		}
		e := eventlog.Event{Type: "assistant/chunk", Data: data}
		if err := p.place(&e, seq, t); err != nil {
			return err
		}
		if err := p.add(e); err != nil {
			return err
		}
	}
	return nil
}

// optInt reads an optional integer key of a row.
func optInt(row map[string]json.RawMessage, key string) (*int64, error) {
	raw, ok := row[key]
	if !ok || string(raw) == "null" {
		return nil, nil
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		return nil, fmt.Errorf("%s: %s is not an integer", key, raw)
	}
	return &n, nil
}

// marshal is json.Marshal without HTML escapes, as dsh writes JSON.
func marshal(v any) (json.RawMessage, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
