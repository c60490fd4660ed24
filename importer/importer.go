package importer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/spf13/afero"

	"github.com/sessionlog/sessionlog/eventlog"
)

// ErrFormat is wrapped by every error about a file's content: the file is
// not a trace of the format it was read as.
var ErrFormat = errors.New("importer: not a trace of this format")

// Session is what a conversion found out about one foreign trace: all but
// its events, which it hands to Emit as it makes them (Parse collects
// them into Events).
type Session struct {
	// Source is the file the session came from.
	Source string
	// CreatedAt is the session's creation time (Unix ms): the trace's
	// first timestamp, or 0 when it has none.
	CreatedAt int64
	// Untimed says the source records no times at all (a SWE-agent
	// trajectory): its events are at 0, 1, 2… ms and CreatedAt is 0, the
	// same for the same source, and whoever stores the session places it
	// in time (ingest: at the source file's modification time). Since is
	// then the earliest time (Unix ms) a source of the format can have
	// been written: the format's first release.
	Untimed bool
	Since   int64
	// Labels are the header labels: "source" (the format), "sourceFile"
	// (the file's base name) and whatever the format tells (sourceId,
	// cwd, model, title, and keys prefixed with the format's name).
	Labels map[string]string
	// ID is the trace's own identity, as stable as the format allows (its
	// session id, with Key for a sub-session), "" when it has none: what
	// makes a later import of the same trace, from any path, the same
	// session.
	ID string
	// Key is how a parent's Spawns name this session ("" for none):
	// Claude Code's agentId of a subagent transcript.
	Key string
	// Spawns are the sub-sessions this session started, by their Key: the
	// seq of the delegating tool/call and its id.
	Spawns map[string]Spawn
	// Rewrites is, for a source saved by rewriting it whole as it grows
	// (a SWE-agent trajectory: one JSON document), the event type of the
	// record each save replaces (the document's own fields); "" for a
	// source that grows by appending (JSONL). A grown save of such a
	// source holds the earlier save's other records in their order, with
	// new ones among them (a trajectory's history grows before its
	// steps), which is how ingest tells it grew.
	Rewrites string
	// ForkOf is the Key of the session this one was forked from (Codex's
	// forked_from_id), "" for none: the caller links the two when it
	// imports both.
	ForkOf string
	// Parent is the index, among the sessions of one unit, of the session
	// that spawned this one, and where; nil for none (set by the caller).
	Parent *Link
	// Unmapped counts, by kind, the parts of source records that no event
	// of the vocabulary stands for (a blank text block, say). Each is
	// still in the session: in the record it came in (see Records).
	Unmapped map[string]int
	// Records is how many source records were read; every one is kept
	// (RecordOf finds it again).
	Records int
	// Count is how many events the conversion made.
	Count int64
	// Events are the events, seqs from 0, when Parse made the session;
	// nil from a Convert, which hands them to Emit instead.
	Events []eventlog.Event
	// Bytes and Digest ("sha256:<hex>") are those of the source bytes the
	// session was made of: the file, without a torn last line; for a
	// Partial session, the lines before the bad one.
	Bytes  int64
	Digest string
	// Partial is the bad record the session stops before (nil when it
	// holds the whole file); Skipped are the bad records SkipBad went past;
	// Torn is a torn last line left out.
	Partial *RecordError
	Skipped []*RecordError
	Torn    *Torn
}

// Spawn is where a session started a sub-session: the seq of the
// delegating tool/call event and the call's id.
type Spawn struct {
	Seq  int64
	Call string
}

// Link names the parent of a session converted in the same unit.
type Link struct {
	Index int // of the parent in the unit's sessions; always lower than the child's
	Spawn
}

// Importer is one foreign trace format. Implementations hold no state
// between calls and are safe for concurrent use.
type Importer interface {
	// Name is the format's name: the --from value and the "source" label
	// ("claude").
	Name() string
	// Match reports whether a file met in a folder walk may be of the
	// format, by its path (Claude Code: *.jsonl; Codex: *.jsonl).
	Match(path string) bool
	// Sniff reports whether a file whose first bytes are head is of the
	// format, by its content alone. head is at most SniffBytes long and
	// may end inside a record.
	Sniff(head []byte) bool
	// Convert converts one file, handing each event to emit as soon as
	// the source record it comes from is read: it holds one record at a
	// time, whatever the file's length. name is the file's path, for
	// messages and labels. A file not of the format is an ErrFormat error;
	// damage inside one is cut as Lines says (Session.Partial, Skipped,
	// Torn). The same bytes give the same events and Session.
	Convert(ctx context.Context, src io.ReadSeeker, name string, cfg Config, emit Emit) (Session, error)
	// Children lists the files beside path that hold the sub-sessions of
	// path's session (Claude Code's subagents), sorted; nil when there
	// are none.
	Children(fsys afero.Fs, path string) ([]string, error)
	// Records calls fn with a file's source records, in the order the
	// session made by Convert keeps them (RecordOf): what an import of the
	// file must give back, record by record.
	Records(src io.ReadSeeker, fn func(json.RawMessage) error) error
}

// SniffBytes is how much of a file's head Sniff is given: enough for the
// first record of every format, but for records of unusual size.
const SniffBytes = 64 << 10

// Config is what a caller may ask of a conversion; the zero Config is the
// default. Build one with options (see NewConfig).
type Config struct {
	// SkipBad: go on past bad records (see SkipBad).
	SkipBad bool
	// MaxLine is the longest record read, 0 for eventlog.MaxRowSize
	// (see Limit).
	MaxLine int
}

// Option configures a conversion.
type Option func(*Config)

// NewConfig returns the Config of opts.
func NewConfig(opts ...Option) Config {
	var c Config
	for _, o := range opts {
		o(&c)
	}
	return c
}

// Parse converts src with imp and collects its events into the session's
// Events: for tests and small traces (Convert streams).
func Parse(ctx context.Context, imp Importer, src io.ReadSeeker, name string, cfg Config) (Session, error) {
	var events []eventlog.Event
	s, err := imp.Convert(ctx, src, name, cfg, func(e eventlog.Event) error {
		events = append(events, e)
		return nil
	})
	if err != nil {
		return Session{}, err
	}
	s.Events = events
	return s, nil
}

// Registry finds importers by format name. It is built once and read
// only after: safe for concurrent use.
type Registry struct {
	byName map[string]Importer
	names  []string
}

// ErrUnknownFormat is returned by Lookup for a name no importer has.
var ErrUnknownFormat = errors.New("importer: unknown format")

// NewRegistry returns a registry of imps; two importers of one name are
// an error.
func NewRegistry(imps ...Importer) (*Registry, error) {
	r := &Registry{byName: map[string]Importer{}}
	for _, imp := range imps {
		name := imp.Name()
		if _, dup := r.byName[name]; dup {
			return nil, fmt.Errorf("importer: two importers named %q", name)
		}
		r.byName[name] = imp
		r.names = append(r.names, name)
	}
	slices.Sort(r.names)
	return r, nil
}

// Lookup returns the importer of the format name, or an error wrapping
// ErrUnknownFormat that lists the names known.
func (r *Registry) Lookup(name string) (Importer, error) {
	if imp, ok := r.byName[name]; ok {
		return imp, nil
	}
	return nil, fmt.Errorf("%w %q: want one of %s", ErrUnknownFormat, name, strings.Join(r.names, ", "))
}

// Names returns the format names, sorted.
func (r *Registry) Names() []string { return slices.Clone(r.names) }

// Sniff returns the importers whose Sniff takes head, in name order.
func (r *Registry) Sniff(head []byte) []Importer {
	var out []Importer
	for _, name := range r.names {
		if imp := r.byName[name]; imp.Sniff(head) {
			out = append(out, imp)
		}
	}
	return out
}

// Format is an Importer made of its parts. A Format holds no state: safe
// for concurrent use.
type Format struct {
	// Label is the format's Name.
	Label string
	// Prefix and Suffix are how the base names of its files start and end
	// (".jsonl"); "" matches any.
	Prefix, Suffix string
	// SniffFunc is Sniff.
	SniffFunc func(head []byte) bool
	// ConvertFunc is Convert.
	ConvertFunc func(ctx context.Context, src io.ReadSeeker, name string, cfg Config, emit Emit) (Session, error)
	// ChildrenFunc is Children; nil means no format file has children.
	ChildrenFunc func(fsys afero.Fs, path string) ([]string, error)
	// RecordsFunc is Records; nil means JSONL (LineRecords).
	RecordsFunc func(src io.ReadSeeker, fn func(json.RawMessage) error) error
}

var _ Importer = Format{}

// Name returns f.Label.
func (f Format) Name() string { return f.Label }

// Match reports whether path's base name has f's prefix and suffix.
func (f Format) Match(path string) bool {
	base := filepath.Base(path)
	return strings.HasPrefix(base, f.Prefix) && strings.HasSuffix(base, f.Suffix)
}

// Sniff calls f.SniffFunc.
func (f Format) Sniff(head []byte) bool { return f.SniffFunc != nil && f.SniffFunc(head) }

// Convert calls f.ConvertFunc.
func (f Format) Convert(ctx context.Context, src io.ReadSeeker, name string, cfg Config, emit Emit) (Session, error) {
	return f.ConvertFunc(ctx, src, name, cfg, emit)
}

// Records calls f.RecordsFunc, or LineRecords without one.
func (f Format) Records(src io.ReadSeeker, fn func(json.RawMessage) error) error {
	if f.RecordsFunc == nil {
		return LineRecords(src, eventlog.MaxRowSize, fn)
	}
	return f.RecordsFunc(src, fn)
}

// Children calls f.ChildrenFunc, or returns nil without one.
func (f Format) Children(fsys afero.Fs, path string) ([]string, error) {
	if f.ChildrenFunc == nil {
		return nil, nil
	}
	return f.ChildrenFunc(fsys, path)
}

// LineBased is implemented by importers of JSONL formats, whose records
// are lines (Format: those without a RecordsFunc): their damage is cut at
// a line; a file of another format is read whole or refused.
type LineBased interface{ LineBased() bool }

// LineBased reports whether f's records are lines.
func (f Format) LineBased() bool { return f.RecordsFunc == nil }

// Formatf returns an error about a file's content: errors.Is(err,
// ErrFormat) holds.
func Formatf(format string, args ...any) error {
	return formatError{fmt.Errorf(format, args...)}
}

// FormatError marks err as an error about a file's content: errors.Is(err,
// ErrFormat) holds, and the message is err's.
func FormatError(err error) error {
	if err == nil {
		return nil
	}
	return formatError{err}
}

type formatError struct{ err error }

func (e formatError) Error() string        { return e.err.Error() }
func (e formatError) Unwrap() error        { return e.err }
func (e formatError) Is(target error) bool { return target == ErrFormat }

// NewSession returns a session of the format name read from path, its
// labels "source" and "sourceFile" set.
func NewSession(name, path string) Session {
	return Session{
		Source:   path,
		Labels:   map[string]string{"source": name, "sourceFile": filepath.Base(path)},
		Spawns:   map[string]Spawn{},
		Unmapped: map[string]int{},
	}
}

// SetLabel sets a label unless value is empty or the label is set already.
func (s *Session) SetLabel(key, value string) {
	if value == "" {
		return
	}
	if _, ok := s.Labels[key]; !ok {
		s.Labels[key] = value
	}
}

// Obj is a JSON object whose keys keep the order given: key, value, key,
// value… A nil value (a nil interface, pointer, map, slice or
// json.RawMessage) leaves its key out; Opt and OptInt make optional keys.
type Obj []any

// Opt is s, or nil (the key left out) when s is empty.
func Opt(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// OptInt is n, or nil (the key left out) when n is 0.
func OptInt(n int64) any {
	if n == 0 {
		return nil
	}
	return n
}

// OptTrue is true, or nil (the key left out) when b is false.
func OptTrue(b bool) any {
	if !b {
		return nil
	}
	return true
}

// MarshalJSON writes the object.
func (o Obj) MarshalJSON() ([]byte, error) { return o.appendJSON(nil) }

// appendJSON appends the object to dst: its members written one by one
// (appendJSON), those whose value is nil left out.
func (o Obj) appendJSON(dst []byte) ([]byte, error) {
	if len(o)%2 != 0 {
		return nil, fmt.Errorf("importer: Obj with %d elements, want key-value pairs", len(o))
	}
	dst = append(dst, '{')
	first := true
	for i := 0; i < len(o); i += 2 {
		key, ok := o[i].(string)
		if !ok {
			return nil, fmt.Errorf("importer: Obj key %v is not a string", o[i])
		}
		if isNil(o[i+1]) {
			continue
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		var err error
		if dst, err = appendJSON(dst, key); err != nil {
			return nil, err
		}
		dst = append(dst, ':')
		if dst, err = appendJSON(dst, o[i+1]); err != nil {
			return nil, err
		}
	}
	return append(dst, '}'), nil
}

func isNil(v any) bool {
	if v == nil {
		return true
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Interface:
		return rv.IsNil()
	}
	return false
}

// Marshal is json.Marshal without HTML escapes and compacted; a
// json.RawMessage is compacted as it is (null when empty).
func Marshal(v any) (json.RawMessage, error) { return appendJSON(nil, v) }

// appendJSON appends Marshal(v) to dst. An Obj is written member by
// member and a json.RawMessage compacted, once: encoding/json would
// compact what an Obj's MarshalJSON returns again at every level around
// it, and a converter nests the source's whole record a level or two
// down (Src).
func appendJSON(dst []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case Obj:
		return x.appendJSON(dst)
	case json.RawMessage:
		if len(bytes.TrimSpace(x)) == 0 {
			return append(dst, "null"...), nil
		}
		b := bytes.NewBuffer(dst)
		if err := json.Compact(b, x); err != nil {
			return nil, err
		}
		return b.Bytes(), nil
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	c := bytes.NewBuffer(dst)
	if err := json.Compact(c, bytes.TrimSuffix(b.Bytes(), []byte("\n"))); err != nil {
		return nil, err
	}
	return c.Bytes(), nil
}

// ParseTime reads an RFC 3339 timestamp as Unix ms; ok is false for an
// empty or unreadable one, or one before 1970.
func ParseTime(s string) (ms int64, ok bool) {
	if s == "" {
		return 0, false
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil || t.UnixMilli() < 0 {
		return 0, false
	}
	return t.UnixMilli(), true
}

// Text joins the text parts of a message with blank lines between them.
func Text(parts []string) string { return strings.Join(parts, "\n\n") }
