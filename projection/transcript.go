package projection

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"maps"
	"reflect"
	"slices"
	"unsafe"

	"github.com/sessionlog/sessionlog/eventlog"
)

// The roles of a transcript message.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
	RoleSummary   = "summary"
)

// Transcript is the "transcript" projection (ID "transcript/v1"): the
// messages a model would be sent, in order.
//
// It reads user/message, assistant/chunk, assistant/reasoning,
// assistant/message, tool/call, tool/result, context/compacted,
// slot/switch, step/start and step/end; every other type is carried past
// without looking at its data.
//
//   - user/message and assistant/message append a message. Reasoning is
//     buffered until the next assistant message, which carries it.
//   - Streamed text (docs/format.md §8): the assistant/chunk events of an
//     open step that has had no assistant/message and no tool/call yet
//     make one assistant message, at the seq of the first chunk, whose
//     text is the chunks joined, marked Partial while the step goes on.
//     The step's first tool/call, or its step/end, makes it final (the
//     call joins it as any call joins its step's message); an
//     assistant/message before either replaces it (the caller recorded
//     the whole text). A step that never ended leaves it Partial. Chunks
//     outside a step, or after the step's message or first call, are
//     carried past.
//   - tool/call adds its call to the assistant message of the current step
//     (the last assistant message, created after the latest step/start,
//     with only tool results after it); without one it appends an
//     assistant message with no text that holds the call.
//   - tool/result puts a tool message right after the assistant message
//     holding its call, after that message's earlier results, so a call
//     and its result stay together. A later result for the same id
//     replaces the earlier one in place. A result whose call is unknown is
//     appended and recorded as degraded; a call whose id the transcript
//     already holds is recorded as degraded and dropped.
//   - context/compacted replaces every message so far with one summary
//     message.
//   - slot/switch sets the current slot, which every later message without
//     a slot of its own takes.
//
// A known type whose data has the wrong shape is recorded in Degraded and
// changes nothing else, except step/start and step/end, which start and
// end a step whatever their data.
type Transcript struct {
	s TranscriptState

	// Indexes over s.Messages, derived from it by reindex and kept up to
	// date by Apply.
	callAt   map[string]callRef // call id → where the call is
	resultAt map[string]int     // call id → index of its tool message
	results  []int              // per message: how many results of its calls follow it directly
	last     int                // index of the last assistant message if only tool messages follow it, else -1

	// The streamed message: streaming is the index of the Partial message
	// the open step's chunks are joined into, or -1 (derived by reindex);
	// its text is streamText, set into the message only when the state is
	// read or another event comes (sync), so that n chunks cost O(n). The
	// message's text points into streamText (bytes a later chunk appends
	// after, never over), so each streamed message has a buffer of its own.
	streaming  int
	streamText []byte
	streamDue  bool // streamText is ahead of the message
	streamLen  int  // the length of the last streamed text
	// streamShown is true once sync has set streamText into its message:
	// a string (of a snapshot, or a caller's State) may then point into
	// it. A buffer never shown, dropped with its message by an
	// assistant/message (the usual end of a step's stream), is kept as
	// spare for the next streamed message instead of becoming garbage.
	streamShown bool
	spare       []byte

	// chain[i] is h_i (see PrefixHashes) for i < len(chain); messages from
	// len(chain) on are not hashed yet. Hashing waits until a hash is
	// read, so a message rewritten many times is hashed once.
	chain  [][sha256.Size]byte
	hasher hash.Hash

	// win holds the piece of the log the state's spans are read back
	// from while it is written.
	win window

	// keep makes context/compacted add its summary after the messages
	// instead of replacing them (the conversation projection).
	keep bool
}

// callRef locates a tool call: s.Messages[msg].ToolCalls[call].
type callRef struct{ msg, call int }

// TranscriptState is the state of the transcript projection, as
// MarshalState writes it.
type TranscriptState struct {
	// Messages are the messages a model would be sent, in order.
	Messages []Message `json:"messages"`
	// PrefixHash is the chained hash of all of Messages (the last of
	// PrefixHashes), "" when there are none.
	PrefixHash string `json:"prefixHash,omitempty"`
	// CurrentSlot is the slot of the latest slot/switch.
	CurrentSlot string `json:"currentSlot,omitempty"`
	// PendingReasoning is the reasoning seen since the last assistant
	// message, waiting for the next one.
	PendingReasoning []Reasoning `json:"pendingReasoning,omitempty"`
	// StepStart is the seq of the latest step/start, -1 before one;
	// StepOpen is true from a step/start until its step/end.
	StepStart int64 `json:"stepStart"`
	StepOpen  bool  `json:"stepOpen,omitempty"`
	// Degraded lists the events this projection could not fully
	// understand, in seq order.
	Degraded []Degraded `json:"degraded,omitempty"`
}

// Message is one message of a transcript. Seq is the event that created
// it (for a tool message, the latest result). User, assistant and summary
// messages have Text; an assistant message may carry Reasoning and
// ToolCalls; a tool message has ToolCallID, Name (the call's, "" when the
// call is unknown), Output, Error and Synthetic.
type Message struct {
	Seq        int64           `json:"seq"`
	Role       string          `json:"role"`
	Text       string          `json:"text,omitempty"`
	Reasoning  []Reasoning     `json:"reasoning,omitempty"`
	Slot       string          `json:"slot,omitempty"`
	ToolCalls  []ToolCall      `json:"toolCalls,omitempty"`
	ToolCallID string          `json:"toolCallId,omitempty"`
	Name       string          `json:"name,omitempty"`
	Output     json.RawMessage `json:"output,omitempty"`
	Error      string          `json:"error,omitempty"`
	Synthetic  bool            `json:"synthetic,omitempty"`
	// Partial marks an assistant message made of a step's streamed chunks
	// while that step has not ended (a crash mid-stream leaves it so).
	Partial bool `json:"partial,omitempty"`

	// out is where Output lies in the log, and text the JSON string of
	// Text, when they were not copied (ApplyAt); Output or Text is then
	// empty until State copies it in.
	out, text *span
}

// span is a raw value of an event's data left in the log: n bytes of log
// from offset off.
type span struct {
	log io.ReaderAt
	off int64
	n   int
	// plain is true for a JSON string whose bytes between the quotes are
	// the string (eventlog.PlainString).
	plain bool
}

// window is a piece of a log read for the spans that lie in it: a
// transcript's texts and outputs lie in the log in about the order it
// writes them, most close together, so one read serves several. scratch
// holds a text being unquoted.
type window struct {
	log     io.ReaderAt
	off     int64
	b       []byte
	scratch []byte
}

// windowSize is how much of the log a window reads at least.
const windowSize = 256 << 10

// get returns the bytes of s, valid until the next call: from the window
// when it holds them, else read again, from s on.
func (w *window) get(s *span) ([]byte, error) {
	if w.log != nil && sameLog(w.log, s.log) && s.off >= w.off && s.off+int64(s.n) <= w.off+int64(len(w.b)) {
		return w.b[s.off-w.off:][:s.n], nil
	}
	size := max(s.n, windowSize)
	w.log, w.b = nil, slices.Grow(w.b[:0], size)[:size]
	// Past what was read, the log may end or still be written: only
	// what the spans cover is used.
	n, err := s.log.ReadAt(w.b, s.off)
	if n < s.n {
		return nil, s.readError(err)
	}
	w.log, w.off, w.b = s.log, s.off, w.b[:n]
	return w.b[:s.n], nil
}

// sameLog reports whether a and b are the same log, without comparing
// values of a type that cannot be compared (which panics).
func sameLog(a, b io.ReaderAt) bool {
	t := reflect.TypeOf(a)
	return t == reflect.TypeOf(b) && t.Comparable() && a == b
}

// readString reads the span, a JSON string, and returns the string it
// holds.
func (s *span) readString() (string, error) {
	raw := make([]byte, s.n)
	if err := s.read(raw); err != nil {
		return "", err
	}
	if s.plain {
		return string(raw[1 : s.n-1]), nil
	}
	b, _ := appendUnquoted(make([]byte, 0, s.n), raw)
	return unsafe.String(unsafe.SliceData(b), len(b)), nil
}

// minSpan is the size from which ApplyAt leaves a value in the log:
// a smaller one costs more to read back (a system call) than to copy.
const minSpan = 1024

// read reads the span into dst, which must be n bytes long.
func (s *span) read(dst []byte) error {
	n, err := s.log.ReadAt(dst, s.off)
	if n == len(dst) {
		return nil
	}
	return s.readError(err)
}

// readError is the error of a read of s that came short, with err.
func (s *span) readError(err error) error {
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("projection transcript: reading %d bytes of the log at offset %d: %w", s.n, s.off, err)
}

// Reasoning is one assistant/reasoning event.
type Reasoning struct {
	Text      string `json:"text"`
	Signature string `json:"signature,omitempty"`
}

// ToolCall is one tool/call event.
type ToolCall struct {
	ID     string          `json:"id"`
	Name   string          `json:"name"`
	Args   json.RawMessage `json:"args"`
	Effect string          `json:"effect,omitempty"`
}

var (
	_ Projection  = (*Transcript)(nil)
	_ StateWriter = (*Transcript)(nil)
	_ Locator     = (*Transcript)(nil)
)

// NewTranscript returns a transcript projection in its empty state.
func NewTranscript() *Transcript {
	t := &Transcript{}
	t.Reset()
	return t
}

// Name is "transcript".
func (t *Transcript) Name() string { return "transcript" }

// Version is 1.
func (t *Transcript) Version() int { return 1 }

// BorrowsData makes Transcript a Borrower: Apply copies what it keeps.
func (t *Transcript) BorrowsData() {}

var _ Borrower = (*Transcript)(nil)

// State returns the current state. It is read-only: its slices belong to
// the projection and may change with the next Apply.
func (t *Transcript) State() TranscriptState {
	t.sync()
	t.copyIn()
	t.hash()
	return t.s
}

// Reset returns to the empty state.
func (t *Transcript) Reset() {
	t.s = TranscriptState{Messages: []Message{}, StepStart: -1}
	t.reindex()
	t.chain = t.chain[:0]
}

// MarshalState returns the state as JSON: json.Marshal of State(), written
// by hand (transcriptjson.go).
func (t *Transcript) MarshalState() ([]byte, error) {
	t.sync()
	o := stateOut{b: make([]byte, 0, 4096)}
	if err := t.encodeState(&o); err != nil {
		return nil, err
	}
	return o.b, nil
}

// WriteState writes to w what MarshalState returns, a piece at a time, so
// that a large state is never held whole as JSON (StateWriter).
func (t *Transcript) WriteState(w io.Writer) error {
	t.sync()
	return t.encodeState(&stateOut{b: make([]byte, 0, stateChunk+stateChunk/4), w: w})
}

// UnmarshalState replaces the state with one MarshalState returned; on
// error the state is unchanged. The prefix hash is recomputed and must
// match the one stored.
func (t *Transcript) UnmarshalState(data []byte) error {
	u := NewTranscript()
	if err := json.Unmarshal(data, &u.s); err != nil {
		return fmt.Errorf("projection transcript: unmarshal state: %w", err)
	}
	if u.s.Messages == nil {
		u.s.Messages = []Message{}
	}
	stored := u.s.PrefixHash
	u.reindex()
	u.hash()
	if u.s.PrefixHash != stored {
		return fmt.Errorf("projection transcript: unmarshal state: prefix hash %q does not match the messages (%q)", stored, u.s.PrefixHash)
	}
	u.keep = t.keep
	*t = *u
	return nil
}

// PrefixHashes returns, for each message i, "sha256:" + hex(h_i) where
// h_0 = sha256(json(m_0)) and h_i = sha256(h_(i-1) || json(m_i)), h as
// its 32 bytes and json(m) the message as MarshalState writes it. Two
// transcripts share a provider's prompt-cache prefix up to their longest
// equal prefix hash; appending a message leaves the earlier hashes as
// they were.
func (t *Transcript) PrefixHashes() []string {
	t.sync()
	t.copyIn()
	t.hash()
	out := make([]string, len(t.chain))
	for i := range t.chain {
		out[i] = hashString(t.chain[i])
	}
	return out
}

func hashString(h [sha256.Size]byte) string { return "sha256:" + hex.EncodeToString(h[:]) }

// ApplyAt is Apply, but for a tool result whose output is large, or a
// user or assistant message whose text is (its data being the bytes of
// log from at on), which it leaves in the log: the message keeps where it
// lies (Locator).
func (t *Transcript) ApplyAt(e eventlog.Event, log io.ReaderAt, at int64) {
	if log == nil || at < 0 || len(e.Data) < minSpan {
		t.Apply(e)
		return
	}
	switch e.Type {
	case typeToolResult:
		t.sync()
		t.toolResult(e, log, at)
	case typeUserMessage:
		t.sync()
		t.message(e, RoleUser, log, at)
	case typeAssistantMessage:
		t.message(e, RoleAssistant, log, at) // not synced first: see Apply
	default:
		t.Apply(e)
	}
}

// copyIn reads into each message the output left in the log. One the log
// cannot give back is recorded in Degraded and dropped.
func (t *Transcript) copyIn() {
	failed := false
	for i := range t.s.Messages {
		m := &t.s.Messages[i]
		if m.out != nil {
			out := make(json.RawMessage, m.out.n)
			if err := m.out.read(out); err != nil {
				out, failed = nil, true
				degrade(&t.s.Degraded, eventlog.Event{Seq: m.Seq, Type: typeToolResult}, "output not read back from the log: "+err.Error())
				t.stale(i)
			}
			m.Output, m.out = out, nil
		}
		if m.text != nil {
			text, err := m.text.readString()
			if err != nil {
				failed = true
				typ := typeUserMessage
				if m.Role == RoleAssistant {
					typ = typeAssistantMessage
				}
				degrade(&t.s.Degraded, eventlog.Event{Seq: m.Seq, Type: typ}, "text not read back from the log: "+err.Error())
				t.stale(i)
			}
			m.Text, m.text = text, nil
		}
	}
	if failed {
		slices.SortStableFunc(t.s.Degraded, func(a, b Degraded) int { return cmp.Compare(a.Seq, b.Seq) })
	}
}

// Apply folds one event into the state.
func (t *Transcript) Apply(e eventlog.Event) {
	switch e.Type {
	case typeAssistantChunk:
		t.chunk(e)
		return
	case typeAssistantMessage:
		// Not synced first: the message replaces the streamed text, which
		// would be copied only to be dropped; a degraded one leaves it
		// due, for the next event or read.
		t.message(e, RoleAssistant, nil, -1)
		return
	}
	t.sync()
	switch e.Type {
	case typeUserMessage:
		t.message(e, RoleUser, nil, -1)
	case typeReasoning:
		if d, ok := readOK[reasoningData](&t.s.Degraded, e); ok {
			t.s.PendingReasoning = append(t.s.PendingReasoning, Reasoning{Text: *d.Text, Signature: d.Signature})
		}
	case typeToolCall:
		t.finishStream()
		t.toolCall(e)
	case typeToolResult:
		t.toolResult(e, nil, -1)
	case typeCompacted:
		t.compacted(e)
	case typeSlotSwitch:
		if d, ok := readOK[slotSwitchData](&t.s.Degraded, e); ok {
			t.s.CurrentSlot = *d.Slot
		}
	case typeStepStart:
		readOK[noData](&t.s.Degraded, e)
		t.streaming = -1 // a step that never ended leaves its text Partial
		t.s.StepStart, t.s.StepOpen = e.Seq, true
	case typeStepEnd:
		readOK[noData](&t.s.Degraded, e) // it ends the step whatever its data
		t.finishStream()
		t.s.StepOpen = false
	}
}

// chunk joins an assistant/chunk into the open step's streamed message,
// starting one when the step has neither a message nor a call yet. The
// text is unquoted straight into streamText: no string per chunk.
func (t *Transcript) chunk(e eventlog.Event) {
	if !t.s.StepOpen || (t.streaming < 0 && t.holder() >= 0) {
		return
	}
	// Without a streamed message, the next one gets a buffer of its own:
	// the last one's text may point into streamText.
	buf := t.streamText
	if t.streaming < 0 {
		// The spare, else one as long as the last streamed text, which
		// this one is likely to be like: no copy as it grows.
		buf = t.spare
		if buf == nil {
			buf = make([]byte, 0, max(256, t.streamLen))
		}
	}
	text, found, ok := appendChunkText(buf, e.Data)
	if !ok {
		d, ok := readOK[chunkData](&t.s.Degraded, e)
		if !ok || d.Text == nil {
			return
		}
		text, found = append(buf, *d.Text...), true
	}
	if !found {
		return // a chunk without a text adds none
	}
	if t.streaming < 0 {
		m := Message{Seq: e.Seq, Role: RoleAssistant, Slot: t.s.CurrentSlot, Partial: true}
		m.Reasoning, t.s.PendingReasoning = t.s.PendingReasoning, nil
		t.push(m)
		t.streaming = len(t.s.Messages) - 1
		t.spare, t.streamShown = nil, false
	}
	t.streamText, t.streamLen = text, len(text)
	t.streamDue = true
	t.stale(t.streaming)
}

// appendChunkText appends the text of assistant/chunk data to dst, as
// read[chunkData] would decode it, and whether it has one; ok is false
// for data read must decide (an escaped key, a text that is not a
// string, data that is not an object), and then dst's length is as it
// was.
func appendChunkText(dst, data []byte) (_ []byte, found, ok bool) {
	// The shape writers write, {"text":"…"} with a plain text, needs no
	// member scan: 81 % of a session's events are chunks.
	const open, end = `{"text":"`, `"}`
	if n := len(data); n >= len(open)+len(end) && string(data[:len(open)]) == open && string(data[n-len(end):]) == end {
		if body := data[len(open) : n-len(end)]; eventlog.PlainString(body) {
			return append(dst, body...), true, true
		}
	}
	var text []byte
	plain := true // every key without escapes, every text a string
	wellFormed := eventlog.EachMember(data, func(key []byte, escaped bool, value []byte) {
		switch {
		case escaped:
			plain = false
		case string(key) == "text":
			// Every text counts, not only the last: encoding/json reports
			// an earlier one of the wrong type though a later one wins.
			text, found = value, true
			plain = plain && value[0] == '"'
		}
	})
	switch {
	case !wellFormed || !plain:
		return dst, false, false
	case !found:
		return dst, false, true
	}
	dst, ok = appendUnquoted(dst, text)
	return dst, true, ok
}

// sync sets the streamed text into its message, without a copy: the
// bytes it points to are never written again (see streaming).
func (t *Transcript) sync() {
	if t.streamDue {
		t.s.Messages[t.streaming].Text = unsafe.String(unsafe.SliceData(t.streamText), len(t.streamText))
		t.streamDue, t.streamShown = false, true
	}
}

// finishStream makes the streamed message final: its step called a tool
// or ended.
func (t *Transcript) finishStream() {
	if t.streaming >= 0 {
		t.s.Messages[t.streaming].Partial = false
		t.stale(t.streaming)
		t.streaming, t.streamText = -1, nil // the message holds the text
	}
}

// unstream drops the streamed message: an assistant/message came, which
// holds the step's text itself. Its reasoning goes back to waiting for it.
// The caller pushes that message next, which sets last.
func (t *Transcript) unstream() {
	i := t.streaming
	if i < 0 {
		return
	}
	if !t.streamShown {
		t.spare = t.streamText[:0] // no string points into it
	}
	t.streaming, t.streamDue, t.streamText = -1, false, nil
	m := t.s.Messages[i]
	t.s.PendingReasoning = append(m.Reasoning, t.s.PendingReasoning...)
	t.stale(i)
	if i == len(t.s.Messages)-1 {
		// The usual case: nothing came after it, and it holds no call.
		t.s.Messages = t.s.Messages[:i]
		t.results = t.results[:i]
		return
	}
	t.s.Messages = slices.Delete(slices.Clone(t.s.Messages), i, i+1)
	t.reindex()
}

// holder is the index of the assistant message that takes the current
// step's further tool calls, or -1.
func (t *Transcript) holder() int {
	if t.last >= 0 && t.s.Messages[t.last].Seq > t.s.StepStart {
		return t.last
	}
	return -1
}

// message folds a user/message or assistant/message. With log, e's data
// are the bytes of log from dataAt on (ApplyAt), and a large text is left
// there.
func (t *Transcript) message(e eventlog.Event, role string, log io.ReaderAt, dataAt int64) {
	m := Message{Seq: e.Seq, Role: role}
	if raw, slot, ok := textMember(e.Data, "slot"); ok && log != nil && len(raw) >= minSpan {
		i, _ := within(e.Data, raw)
		m.text = &span{log: log, off: dataAt + int64(i), n: len(raw), plain: eventlog.PlainString(raw[1 : len(raw)-1])}
		m.Slot = t.slot(slot)
	} else {
		d, ok := readOK[messageData](&t.s.Degraded, e)
		if !ok {
			return
		}
		m.Text, m.Slot = *d.Text, t.slot(d.Slot)
	}
	if role == RoleAssistant {
		t.unstream() // the step's own message replaces its streamed text
	}
	if role == RoleAssistant {
		m.Reasoning, t.s.PendingReasoning = t.s.PendingReasoning, nil
	}
	t.push(m)
}

// slot is the slot of a message: its own, else the current one.
func (t *Transcript) slot(own string) string {
	if own != "" {
		return own
	}
	return t.s.CurrentSlot
}

// push appends a message.
func (t *Transcript) push(m Message) {
	if n := len(t.s.Messages); n == cap(t.s.Messages) && n >= 1024 {
		// Doubled, not the runtime's 1.25× for a large slice: a long
		// session's messages are copied about once in all, not four times.
		t.s.Messages = slices.Grow(t.s.Messages, n)
	}
	if n := len(t.results); n == cap(t.results) && n >= 1024 {
		t.results = slices.Grow(t.results, n)
	}
	t.s.Messages = append(t.s.Messages, m)
	t.results = append(t.results, 0)
	switch m.Role {
	case RoleAssistant:
		t.last = len(t.s.Messages) - 1
	case RoleTool:
	default:
		t.last = -1
	}
}

// stale marks message i and every later one as not hashed.
func (t *Transcript) stale(i int) {
	if i < len(t.chain) {
		t.chain = t.chain[:i]
	}
}

func (t *Transcript) toolCall(e eventlog.Event) {
	d, ok := readOK[toolCallData](&t.s.Degraded, e)
	if !ok {
		return
	}
	id := *d.ID
	if _, dup := t.callAt[id]; dup {
		degrade(&t.s.Degraded, e, "duplicate call id "+quote(id))
		return
	}
	call := ToolCall{ID: id, Name: *d.Name, Args: keepRaw(d.Args), Effect: d.Effect}
	if h := t.holder(); h >= 0 {
		m := &t.s.Messages[h]
		m.ToolCalls = append(m.ToolCalls, call)
		t.callAt[id] = callRef{h, len(m.ToolCalls) - 1}
		t.stale(h)
	} else {
		m := Message{Seq: e.Seq, Role: RoleAssistant, Slot: t.s.CurrentSlot, ToolCalls: []ToolCall{call}}
		m.Reasoning, t.s.PendingReasoning = t.s.PendingReasoning, nil
		t.push(m)
		t.callAt[id] = callRef{len(t.s.Messages) - 1, 0}
	}
	if _, ok := t.resultAt[id]; ok {
		// A result came before its call: the call now owns it, which may
		// join it to the call's results.
		t.reindex()
	}
}

// toolResult folds a tool/result. With log, e's data are the bytes of log
// from dataAt on (ApplyAt).
func (t *Transcript) toolResult(e eventlog.Event, log io.ReaderAt, dataAt int64) {
	// The output is kept as it is, not decoded again (the log's reader
	// validated it): a copy, as Borrower says, or where it lies in log.
	d, ok := readOK[toolResultData](&t.s.Degraded, e)
	if !ok {
		return
	}
	id := *d.ID
	m := Message{
		Seq: e.Seq, Role: RoleTool, Slot: t.s.CurrentSlot,
		ToolCallID: id, Error: d.Error, Synthetic: d.Synthetic,
	}
	if i, ok := within(e.Data, d.Output); ok && log != nil && len(d.Output) >= minSpan {
		m.out = &span{log: log, off: dataAt + int64(i), n: len(d.Output)}
	} else {
		m.Output = keepRaw(orNil(d.Output))
	}
	ref, known := t.callAt[id]
	if known {
		m.Name = t.s.Messages[ref.msg].ToolCalls[ref.call].Name
	}
	if i, ok := t.resultAt[id]; ok {
		t.s.Messages[i] = m
		t.stale(i)
		return
	}
	if !known {
		degrade(&t.s.Degraded, e, "result for unknown call "+quote(id))
		t.push(m)
		t.resultAt[id] = len(t.s.Messages) - 1
		return
	}
	at := ref.msg + 1 + t.results[ref.msg]
	if at == len(t.s.Messages) {
		t.push(m)
		t.results[ref.msg]++
		t.resultAt[id] = at
		return
	}
	// Results of other messages came in between: insert, which moves
	// every later message, so rebuild the indexes.
	t.s.Messages = append(t.s.Messages, Message{})
	copy(t.s.Messages[at+1:], t.s.Messages[at:])
	t.s.Messages[at] = m
	t.stale(at)
	t.reindex()
}

// textMember returns the raw JSON string of data's one "text" member, a
// slice of data, and the value of its other member named other, when
// both are strings and no key holds an escape: then read[messageData]
// (or reasoningData) would give the same values, which a caller may keep
// without a copy (ApplyAt). Otherwise ok is false, and the caller reads
// the data as Apply does.
func textMember(data []byte, other string) (text []byte, otherVal string, ok bool) {
	texts, plain := 0, true
	wellFormed := eventlog.EachMember(data, func(key []byte, escaped bool, value []byte) {
		switch {
		case escaped:
			plain = false
		case string(key) == "text":
			texts++
			text = value
		case string(key) == other:
			var isString bool
			otherVal, isString = unquote(value)
			plain = plain && isString
		}
	})
	return text, otherVal, wellFormed && plain && texts == 1 && len(text) >= 2 && text[0] == '"'
}

// within returns where v starts in data, when v is a slice of data's bytes
// (a raw value decoded in place, not by encoding/json).
func within(data, v []byte) (int, bool) {
	if len(v) == 0 {
		return 0, false
	}
	i := cap(data) - cap(v)
	return i, i >= 0 && i+len(v) <= len(data) && &data[i] == &v[0]
}

func (t *Transcript) compacted(e eventlog.Event) {
	d, ok := readOK[compactedData](&t.s.Degraded, e)
	if !ok {
		return
	}
	m := Message{Seq: e.Seq, Role: RoleSummary, Text: *d.Summary, Slot: t.s.CurrentSlot}
	if t.keep {
		t.push(m)
		return
	}
	// A new slice, not a truncation: a caller may still read the old one.
	t.s.Messages = []Message{m}
	t.stale(0)
	t.reindex()
}

// reindex rebuilds the indexes from the messages. It gives the same
// indexes that Apply keeps up to date one event at a time.
func (t *Transcript) reindex() {
	msgs := t.s.Messages
	t.callAt = make(map[string]callRef)
	t.resultAt = make(map[string]int)
	t.results = make([]int, len(msgs), max(len(msgs), 16))
	t.last = -1
	for i := range msgs {
		for j, c := range msgs[i].ToolCalls {
			if _, dup := t.callAt[c.ID]; !dup {
				t.callAt[c.ID] = callRef{i, j}
			}
		}
	}
	owner := -1 // the assistant message whose run of results is still going on
	t.streaming, t.streamDue, t.streamText, t.streamShown = -1, false, nil, false
	for i := range msgs {
		switch m := &msgs[i]; m.Role {
		case RoleAssistant:
			owner = i
			t.last = i
		case RoleTool:
			if _, dup := t.resultAt[m.ToolCallID]; !dup {
				t.resultAt[m.ToolCallID] = i
			}
			if ref, ok := t.callAt[m.ToolCallID]; ok && ref.msg == owner && owner >= 0 {
				t.results[owner]++
			} else {
				owner = -1
			}
		default:
			owner = -1
			t.last = -1
		}
	}
	// The open step's streamed message, if it is still being streamed: the
	// last assistant message (only tool messages after it), Partial, made
	// in this step, with no call.
	if n := t.last; t.s.StepOpen && n >= 0 && msgs[n].Partial &&
		msgs[n].Seq > t.s.StepStart && len(msgs[n].ToolCalls) == 0 {
		t.streaming = n
		t.streamText = append([]byte(nil), msgs[n].Text...) // its own: see streaming
	}
}

// hash extends the prefix hash chain over the messages not hashed yet and
// sets PrefixHash.
func (t *Transcript) hash() {
	if msgs := t.s.Messages; len(t.chain) < len(msgs) {
		t.chain = slices.Grow(t.chain, len(msgs)-len(t.chain))
		var b []byte
		for i := len(t.chain); i < len(msgs); i++ {
			// Encoding a Message fails only for a raw field that is empty
			// but not nil, which no event makes. Were it to, the hash would
			// cover what was written, which is still deterministic.
			b, _ = appendMessage(b[:0], &msgs[i], &t.win)
			t.extendChain(b)
		}
	}
	t.setPrefixHash()
}

// extendChain appends to the hash chain the hash of the next message,
// whose JSON (as MarshalState writes it) is m.
func (t *Transcript) extendChain(m []byte) {
	if t.hasher == nil {
		t.hasher = sha256.New()
	}
	t.hasher.Reset()
	if n := len(t.chain); n > 0 {
		t.hasher.Write(t.chain[n-1][:])
	}
	t.hasher.Write(m)
	// Summed into its place: a local array would escape to the heap
	// through the interface call, one allocation per message.
	t.chain = append(t.chain, [sha256.Size]byte{})
	h := &t.chain[len(t.chain)-1]
	t.hasher.Sum(h[:0])
}

// setPrefixHash sets PrefixHash from the chain, which covers every
// message.
func (t *Transcript) setPrefixHash() {
	if len(t.chain) == 0 {
		t.s.PrefixHash = ""
	} else {
		t.s.PrefixHash = hashString(t.chain[len(t.chain)-1])
	}
}

// DegradedEvents returns the events the projection could not fully
// understand (replay.Degrader).
func (t *Transcript) DegradedEvents() []Degraded { return t.s.Degraded }

var _ Snapshotter = (*Transcript)(nil)

// messageSize is about the bytes a Message takes in a slice.
const messageSize = int(unsafe.Sizeof(Message{}))

// Snapshot returns a copy of the state (a *Transcript) and the bytes it
// keeps alive. It copies the message list, the hash chain and the indexes,
// not the texts and outputs, which are never changed in place; the slices
// inside messages are clipped, so an append to them reallocates instead of
// writing into the other copy's array. The size counts the texts and
// outputs it shares too: once the live state drops them (a compaction, a
// replaced result) the snapshot alone keeps them, which the engine's
// memory limit must see.
func (t *Transcript) Snapshot() (any, int) {
	t.sync()
	u := t.clone()
	shared := 0
	for i := range u.s.Messages {
		m := &u.s.Messages[i]
		shared += len(m.Text) + len(m.Output) + len(m.Error)
		// Left in the log, but counted as if held: the engine then spaces
		// and bounds kept states as it does for copies (a clone's cost
		// grows with the session, not with what it holds).
		if m.out != nil {
			shared += m.out.n
		}
		if m.text != nil {
			shared += m.text.n
		}
		for _, r := range m.Reasoning {
			shared += len(r.Text) + len(r.Signature)
		}
		for _, c := range m.ToolCalls {
			shared += len(c.Args)
		}
	}
	return u, len(u.s.Messages)*messageSize + len(u.chain)*sha256.Size + len(u.results)*8 +
		(len(u.callAt)+len(u.resultAt))*64 + shared
}

// Restore sets the state to a copy of snap, a Snapshot of a transcript.
func (t *Transcript) Restore(snap any) error {
	u, ok := snap.(*Transcript)
	if !ok {
		return fmt.Errorf("projection transcript: restore: a %T is not a transcript snapshot", snap)
	}
	hasher := t.hasher
	*t = *u.clone()
	t.hasher = hasher
	return nil
}

// clone returns a copy of t that shares no array another Apply could write.
func (t *Transcript) clone() *Transcript {
	u := &Transcript{s: t.s, last: t.last, keep: t.keep, streaming: t.streaming,
		streamText: slices.Clone(t.streamText), streamDue: t.streamDue}
	u.s.Messages = slices.Clone(t.s.Messages)
	if u.s.Messages == nil {
		u.s.Messages = []Message{}
	}
	for i := range u.s.Messages {
		m := &u.s.Messages[i]
		m.Reasoning, m.ToolCalls = slices.Clip(m.Reasoning), slices.Clip(m.ToolCalls)
	}
	u.s.PendingReasoning = slices.Clip(t.s.PendingReasoning)
	u.s.Degraded = slices.Clip(t.s.Degraded)
	u.chain = slices.Clone(t.chain)
	u.callAt = maps.Clone(t.callAt)
	u.resultAt = maps.Clone(t.resultAt)
	u.results = slices.Clone(t.results)
	return u
}
