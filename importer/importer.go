package importer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
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

// Session is one foreign trace converted to sessionlog events.
type Session struct {
	// Source is the file the session came from.
	Source string
	// CreatedAt is the session's creation time (Unix ms): the trace's
	// first timestamp, or 0 when it has none.
	CreatedAt int64
	// Labels are the header labels: "source" (the format), "sourceFile"
	// (the file's base name) and whatever the format tells (sourceId,
	// cwd, model, title, and keys prefixed with the format's name).
	Labels map[string]string
	// Events are the logical log, seqs from 0.
	Events []eventlog.Event
	// Key is how a parent's Spawns name this session ("" for none):
	// Claude Code's agentId of a subagent transcript.
	Key string
	// Spawns are the sub-sessions this session started, by their Key: the
	// seq of the delegating tool/call and its id.
	Spawns map[string]Spawn
	// ForkOf is the Key of the session this one was forked from (Codex's
	// forked_from_id), "" for none: the caller links the two when it
	// imports both.
	ForkOf string
	// Parent is the index, in the slice Convert returns, of the session
	// that spawned this one, and where; nil for none (set by Convert).
	Parent *Link
	// Unmapped counts, by kind, the parts of source records that no event
	// of the vocabulary stands for (a blank text block, say). Each is
	// still in the session: in the record it came in (see Records).
	Unmapped map[string]int
	// Records is how many source records were read; every one is kept
	// (RecordOf finds it again).
	Records int
	// Bytes and Digest ("sha256:<hex>") are those of the source bytes the
	// session was made of (set by Convert): the file, without a torn last
	// line; for a Partial session, the lines before the bad one.
	Bytes  int64
	Digest string
	// Partial is the bad record the session stops before (nil when it
	// holds the whole file); Skipped are the bad records SkipBad went past;
	// Torn is a torn last line left out. Set by Convert.
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
	// Match reports whether a file met in a folder walk is of the format,
	// by its path (Claude Code: *.jsonl; Codex: rollout-*.jsonl).
	Match(path string) bool
	// Parse converts one file. name is its path, for messages and labels.
	Parse(ctx context.Context, r io.Reader, name string, cfg Config) (Session, error)
	// Children lists the files beside path that hold the sub-sessions of
	// path's session (Claude Code's subagents), sorted; nil when there
	// are none.
	Children(fsys afero.Fs, path string) ([]string, error)
	// Records splits a file's bytes into its source records, in the order
	// the session made by Parse keeps them (RecordOf): what an import of
	// the file must give back, record by record.
	Records(data []byte) ([]json.RawMessage, error)
}

// Config is what a caller may ask of a Parse; the zero Config is the
// default. Build one with options (see Convert).
type Config struct {
	// SkipBad: go on past bad records (see SkipBad).
	SkipBad bool
}

// Option configures Convert (and through it each Parse).
type Option func(*Config)

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

// Format is an Importer made of its parts, for formats whose files are
// told by their names. A Format holds no state: safe for concurrent use.
type Format struct {
	// Label is the format's Name.
	Label string
	// Prefix and Suffix are how the base names of its files start and end
	// (Codex: "rollout-" and ".jsonl"); "" matches any.
	Prefix, Suffix string
	// ParseFunc is Parse.
	ParseFunc func(ctx context.Context, r io.Reader, name string, cfg Config) (Session, error)
	// ChildrenFunc is Children; nil means no format file has children.
	ChildrenFunc func(fsys afero.Fs, path string) ([]string, error)
	// RecordsFunc is Records; nil means JSONL (LineRecords).
	RecordsFunc func(data []byte) ([]json.RawMessage, error)
}

var _ Importer = Format{}

// Name returns f.Label.
func (f Format) Name() string { return f.Label }

// Match reports whether path's base name has f's prefix and suffix.
func (f Format) Match(path string) bool {
	base := filepath.Base(path)
	return strings.HasPrefix(base, f.Prefix) && strings.HasSuffix(base, f.Suffix)
}

// Parse calls f.ParseFunc.
func (f Format) Parse(ctx context.Context, r io.Reader, name string, cfg Config) (Session, error) {
	return f.ParseFunc(ctx, r, name, cfg)
}

// Records calls f.RecordsFunc, or LineRecords without one.
func (f Format) Records(data []byte) ([]json.RawMessage, error) {
	if f.RecordsFunc == nil {
		return LineRecords(data), nil
	}
	return f.RecordsFunc(data)
}

// Children calls f.ChildrenFunc, or returns nil without one.
func (f Format) Children(fsys afero.Fs, path string) ([]string, error) {
	if f.ChildrenFunc == nil {
		return nil, nil
	}
	return f.ChildrenFunc(fsys, path)
}

// Unit is a file and the files of its sub-sessions, imported together:
// the file's session first, so a child can name its parent.
type Unit []string

// ErrNoFiles is returned by Units for a folder that holds no file of the
// format.
var ErrNoFiles = errors.New("importer: no file of the format")

// Units turns a FILE or DIR argument into the units to import: a file is
// one unit (with its children); a folder is walked recursively, in
// lexical order, and every file whose name ends in f.Ext is imported,
// each child with its parent (a child whose parent is not in the folder
// is a unit of its own).
func Units(fsys afero.Fs, f Importer, path string) ([]Unit, error) {
	fi, err := fsys.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		u := Unit{path}
		kids, err := f.Children(fsys, path)
		if err != nil {
			return nil, err
		}
		return []Unit{append(u, kids...)}, nil
	}
	var files []string
	err = afero.Walk(fsys, path, func(p string, info fs.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if info.Mode().IsRegular() && f.Match(p) {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%w in %q (%s)", ErrNoFiles, path, f.Name())
	}
	kids := map[string][]string{}
	taken := map[string]bool{}
	for _, p := range files {
		ks, err := f.Children(fsys, p)
		if err != nil {
			return nil, err
		}
		for _, k := range ks {
			if slices.Contains(files, k) && !taken[k] {
				kids[p] = append(kids[p], k)
				taken[k] = true
			}
		}
	}
	var units []Unit
	for _, p := range files {
		if !taken[p] {
			units = append(units, append(Unit{p}, kids[p]...))
		}
	}
	return units, nil
}

// Convert parses the files of a unit and links each child to the session
// that spawned it: the first session before it whose Spawns hold its Key.
// A child without such a parent stands alone. A file that cannot be read
// or is not of the format is refused: it makes no session, and its error
// (naming the file) is among refused; damage inside a file is cut as the
// importer package says (Session.Partial, Skipped, Torn).
func Convert(ctx context.Context, fsys afero.Fs, f Importer, u Unit, opts ...Option) (sessions []Session, refused []error) {
	var cfg Config
	for _, o := range opts {
		o(&cfg)
	}
	for _, path := range u {
		if err := ctx.Err(); err != nil {
			return sessions, append(refused, err)
		}
		s, err := parseFile(ctx, fsys, f, path, cfg)
		if err != nil {
			refused = append(refused, err)
			continue
		}
		if s.Key != "" {
			for i := range sessions {
				if sp, ok := sessions[i].Spawns[s.Key]; ok {
					s.Parent = &Link{Index: i, Spawn: sp}
					break
				}
			}
		}
		sessions = append(sessions, s)
	}
	return sessions, refused
}

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

// Builder collects events, seqs from 0, each with data marshalled as
// compact JSON without HTML escapes. It checks each event as the log does
// on append (eventlog.Event.Validate, and a row within
// eventlog.MaxRowSize): the first event that cannot be marshalled or
// stored is Events' error, a format error (a trace can hold a value too
// large, or too deeply nested, to be stored once converted).
type Builder struct {
	events []eventlog.Event
	last   int64 // time of the last event
	err    error

	// the current source record (see Record), and the builder as it was
	// before it (see Drop)
	line    int
	raw     json.RawMessage
	taken   bool
	records int
	mark    struct {
		events int
		last   int64
		err    error
	}
}

// Add appends an event of type typ at time t (Unix ms; a negative t means
// "the time of the previous event") and returns its seq. data is
// marshalled (a json.RawMessage is kept as it is).
func (b *Builder) Add(typ string, t int64, data any) int64 {
	if t < 0 {
		t = b.last
	}
	seq := int64(len(b.events))
	raw, err := Marshal(data)
	if err != nil && b.err == nil {
		b.err = Formatf("seq %d: %s: %w", seq, typ, err)
	}
	e := eventlog.Event{Seq: seq, Type: typ, Time: t, Data: raw}
	if err == nil && b.err == nil {
		b.err = storable(e)
	}
	b.events = append(b.events, e)
	b.last = t
	return seq
}

// storable returns a format error unless the log takes e: a valid event
// whose row, at the widest seq a row can hold, is within
// eventlog.MaxRowSize (what handle.Append checks).
func storable(e eventlog.Event) error {
	if _, err := eventlog.Storable(e); err != nil {
		return Formatf("seq %d: %v", e.Seq, err)
	}
	return nil
}

// Err returns the first error Events would return.
func (b *Builder) Err() error { return b.err }

// Tokens is the sum of token counts; ok is false when a count is negative
// or the sum is beyond int64.
func Tokens(counts ...int64) (sum int64, ok bool) {
	for _, n := range counts {
		if n < 0 || sum > math.MaxInt64-n {
			return 0, false
		}
		sum += n
	}
	return sum, true
}

// Last returns the time of the last event (0 before one).
func (b *Builder) Last() int64 { return b.last }

// Next returns the seq the next event gets.
func (b *Builder) Next() int64 { return int64(len(b.events)) }

// Events returns the events, and the error of the first event that cannot
// be marshalled or stored.
func (b *Builder) Events() ([]eventlog.Event, error) { return b.events, b.err }

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

// MarshalJSON writes the object.
func (o Obj) MarshalJSON() ([]byte, error) {
	if len(o)%2 != 0 {
		return nil, fmt.Errorf("importer: Obj with %d elements, want key-value pairs", len(o))
	}
	var b bytes.Buffer
	b.WriteByte('{')
	first := true
	for i := 0; i < len(o); i += 2 {
		key, ok := o[i].(string)
		if !ok {
			return nil, fmt.Errorf("importer: Obj key %v is not a string", o[i])
		}
		if isNil(o[i+1]) {
			continue
		}
		val, err := Marshal(o[i+1])
		if err != nil {
			return nil, err
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		k, _ := Marshal(key)
		b.Write(k)
		b.WriteByte(':')
		b.Write(val)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
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
func Marshal(v any) (json.RawMessage, error) {
	var b bytes.Buffer
	if raw, ok := v.(json.RawMessage); ok {
		if len(bytes.TrimSpace(raw)) == 0 {
			return json.RawMessage("null"), nil
		}
		if err := json.Compact(&b, raw); err != nil {
			return nil, err
		}
		return b.Bytes(), nil
	}
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	out := bytes.TrimSuffix(b.Bytes(), []byte("\n"))
	var c bytes.Buffer
	if err := json.Compact(&c, out); err != nil {
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

// Lines reads r's lines and calls fn with each non-blank one (without its
// end of line) and its number, from 1, each a record (Record is called
// before fn; fn ends it with Keep). A line fn fails on, or whose events
// the log would refuse, is a bad record: its events are dropped and Lines
// stops with a *RecordError naming it. A last line without a newline
// that is not valid JSON is a torn tail (a writer was cut off while
// writing it): it is not passed to fn, and Lines returns it. Lines may be
// up to maxLine bytes.
func (b *Builder) Lines(r io.Reader, maxLine int, fn func(n int, line []byte) error) (*Torn, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	data, torn := tornTail(data)
	n := 0
	for len(data) > 0 {
		n++
		line, rest, _ := bytes.Cut(data, []byte("\n"))
		data = rest
		line = bytes.TrimSuffix(line, []byte("\r"))
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if len(line) > maxLine {
			return torn, &RecordError{Line: n, Err: Formatf("%d bytes, more than the %d a line may have", len(line), maxLine)}
		}
		b.Record(n, line)
		err := fn(n, line)
		if err == nil {
			err = b.Err()
		}
		if err != nil {
			b.Drop()
			return torn, &RecordError{Line: n, Err: err}
		}
	}
	return torn, nil
}

// Text joins the text parts of a message with blank lines between them.
func Text(parts []string) string { return strings.Join(parts, "\n\n") }
