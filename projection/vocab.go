package projection

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"unicode/utf8"

	"github.com/sessionlog/sessionlog/eventlog"
)

// The agent vocabulary (docs/format.md §8): the event types the built-in projections
// understand. Every other type is carried past untouched.
const (
	typeTurnStart        = "turn/start"
	typeUserMessage      = "user/message"
	typeStepStart        = "step/start"
	typeAssistantChunk   = "assistant/chunk"
	typeReasoning        = "assistant/reasoning"
	typeAssistantMessage = "assistant/message"
	typeToolCall         = "tool/call"
	typeToolApproval     = "tool/approval"
	typeToolResult       = "tool/result"
	typeUsage            = "usage"
	typeStepEnd          = "step/end"
	typeTurnEnd          = "turn/end"
	typeMemorySet        = "memory/set"
	typeMemoryDelete     = "memory/delete"
	typeProviderState    = "provider/state"
	typeSlotSwitch       = "slot/switch"
	typeCompacted        = "context/compacted"
	typePlanSet          = "plan/set"
)

// Degraded records an event of a known type that a projection could not
// fully understand: its data had the wrong shape, or it referred to
// something the projection never saw.
type Degraded struct {
	Seq    int64  `json:"seq"`
	Type   string `json:"type"`
	Reason string `json:"reason"`
}

// The data of each understood type. A required key is a pointer (or, for
// a key of any JSON type, a RawMessage) so that its absence is visible;
// an optional key is a plain value, which reads absent and null alike.
type (
	noData      struct{}
	messageData struct {
		Text *string `json:"text"`
		Slot string  `json:"slot"`
	}
	chunkData struct {
		Text *string `json:"text"`
	}
	reasoningData struct {
		Text      *string `json:"text"`
		Signature string  `json:"signature"`
	}
	toolCallData struct {
		ID     *string         `json:"id"`
		Name   *string         `json:"name"`
		Args   json.RawMessage `json:"args"`
		Effect string          `json:"effect"`
	}
	toolApprovalData struct {
		ID       *string `json:"id"`
		Decision *string `json:"decision"`
		By       string  `json:"by"`
	}
	// toolResultHead is a tool/result without its output, which can be
	// large: the agent does not keep it, so its decoder skips it.
	toolResultHead struct {
		ID        *string `json:"id"`
		Error     string  `json:"error"`
		Synthetic bool    `json:"synthetic"`
	}
	// toolResultData is a whole tool/result: the transcript keeps the
	// output as it is, copied, not decoded.
	toolResultData struct {
		ID        *string         `json:"id"`
		Error     string          `json:"error"`
		Synthetic bool            `json:"synthetic"`
		Output    json.RawMessage `json:"output"`
	}
	usageData struct {
		InputTokens  *int64 `json:"inputTokens"`
		OutputTokens *int64 `json:"outputTokens"`
		CachedTokens int64  `json:"cachedTokens"`
		CostMicros   int64  `json:"costMicros"`
		Model        string `json:"model"`
	}
	turnEndData struct {
		Kind   *string `json:"kind"`
		Reason string  `json:"reason"`
	}
	memorySetData struct {
		Key      *string         `json:"key"`
		Value    json.RawMessage `json:"value"`
		Metadata json.RawMessage `json:"metadata"`
	}
	memoryDeleteData struct {
		Key *string `json:"key"`
	}
	providerStateData struct {
		Provider *string         `json:"provider"`
		State    json.RawMessage `json:"state"`
	}
	slotSwitchData struct {
		Slot *string `json:"slot"`
	}
	compactedData struct {
		Summary *string `json:"summary"`
	}
	planSetData struct {
		Plan json.RawMessage `json:"plan"`
	}
)

// check returns why decoded data lacks what its type requires, or "". A
// required key of a fixed type (a string, an integer) that is null counts
// as missing; a required key of any type (args, value, state, plan) may be
// null.
func (noData) check() string { return "" }

func (d *messageData) check() string { return missing(d.Text == nil, "text") }

// A chunk without a text is not an error: streams carry other deltas too
// (reasoning, tool-call arguments); such a chunk adds no text.
func (d *chunkData) check() string { return "" }

func (d *reasoningData) check() string { return missing(d.Text == nil, "text") }

func (d *toolCallData) check() string {
	switch {
	case d.ID == nil:
		return "missing id"
	case d.Name == nil:
		return "missing name"
	case d.Args == nil:
		return "missing args"
	}
	return ""
}

func (d *toolApprovalData) check() string {
	switch {
	case d.ID == nil:
		return "missing id"
	case d.Decision == nil:
		return "missing decision"
	case *d.Decision != ApprovalApproved && *d.Decision != ApprovalDenied:
		return "decision: got " + quote(*d.Decision) + `, want "approved" or "denied"`
	}
	return ""
}

func (d *toolResultHead) check() string { return missing(d.ID == nil, "id") }

func (d *toolResultData) check() string { return missing(d.ID == nil, "id") }

func (d *usageData) check() string {
	switch {
	case d.InputTokens == nil:
		return "missing inputTokens"
	case d.OutputTokens == nil:
		return "missing outputTokens"
	}
	return ""
}

func (d *turnEndData) check() string { return missing(d.Kind == nil, "kind") }

func (d *memorySetData) check() string {
	switch {
	case d.Key == nil:
		return "missing key"
	case d.Value == nil:
		return "missing value"
	}
	return ""
}

func (d *memoryDeleteData) check() string { return missing(d.Key == nil, "key") }

func (d *providerStateData) check() string {
	switch {
	case d.Provider == nil:
		return "missing provider"
	case d.State == nil:
		return "missing state"
	}
	return ""
}

func (d *slotSwitchData) check() string { return missing(d.Slot == nil, "slot") }

func (d *compactedData) check() string { return missing(d.Summary == nil, "summary") }

func (d *planSetData) check() string { return missing(d.Plan == nil, "plan") }

func missing(absent bool, key string) string {
	if absent {
		return "missing " + key
	}
	return ""
}

// checker is the pointer to a data struct.
type checker[T any] interface {
	*T
	check() string
}

// read decodes an event's data into a fresh T and returns it with why its
// shape is wrong, or "" when it is right. Absent or null data reads as an
// empty object. Whatever the bytes, read never panics; on a wrong shape
// the value holds what could be decoded, which only the lifecycle types use.
//
// The data's members are decoded by decodeFields when they have the plain
// shapes writers produce; otherwise by encoding/json, which gives an
// unusual value or a wrong shape its exact meaning. A RawMessage field
// may point into data: what is kept must be copied (owned).
func read[T any, P checker[T]](data json.RawMessage) (T, string) {
	var v T
	if isNull(data) || decodeFields(data, &v) {
		return v, P(&v).check()
	}
	v = *new(T)
	if why := decode(data, P(&v)); why != "" {
		return v, why
	}
	return v, P(&v).check()
}

// readOK reads e's data like read; a wrong shape is appended to deg and ok
// is false.
func readOK[T any, P checker[T]](deg *[]Degraded, e eventlog.Event) (T, bool) {
	d, why := read[T, P](e.Data)
	degrade(deg, e, why)
	return d, why == ""
}

// degrade records e as degraded for the reason why, unless why is "".
func degrade(deg *[]Degraded, e eventlog.Event, why string) {
	if why != "" {
		*deg = append(*deg, Degraded{Seq: e.Seq, Type: e.Type, Reason: why})
	}
}

// decode is json.Unmarshal that explains a failure in terms of the data:
// "text: got number, want string", "data is an array, want an object".
func decode(data json.RawMessage, v any) string {
	if isNull(data) {
		return ""
	}
	// Keys are exact (docs/format.md §8: a key not listed is ignored;
	// encoding/json alone would read "EFFECT" as "effect"). Only the listed
	// members are decoded, so the others (a tool result's output, for the
	// agent) are never scanned again: the log's reader validated them.
	keys := jsonKeys(v)
	picked, ok := eventlog.Pick(data, keys...)
	if !ok {
		picked = eventlog.ExactKeys(data, keys...)
	}
	err := json.Unmarshal(picked, v)
	if err == nil {
		return ""
	}
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) {
		return "data is not valid JSON"
	}
	got := clip(te.Value)
	if te.Field == "" {
		return "data is " + article(got) + ", want an object"
	}
	return te.Field + ": got " + got + ", want " + kindName(te.Type)
}

// kindName names a Go type the way the vocabulary does.
func kindName(t reflect.Type) string {
	if t == nil {
		return "a value"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "integer"
	case reflect.Struct, reflect.Map:
		return "object"
	case reflect.Slice, reflect.Array:
		return "array"
	}
	return t.Kind().String()
}

// article prefixes a JSON kind for a sentence: "an array", "a number 1.5".
func article(kind string) string {
	if kind != "" && (kind[0] == 'a' || kind[0] == 'o') {
		return "an " + kind
	}
	return "a " + kind
}

// clip keeps reasons short: a degraded reason quotes at most this much of
// the data it complains about.
const clipLen = 40

func clip(s string) string {
	if len(s) <= clipLen {
		return s
	}
	n := clipLen
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func quote(s string) string { return strconv.Quote(clip(s)) }

// isNull reports whether raw JSON is absent or null: an optional key given
// as null reads as absent.
func isNull(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || string(raw) == "null"
}

// orNil drops an optional key that was null.
func orNil(raw json.RawMessage) json.RawMessage {
	if isNull(raw) {
		return nil
	}
	return raw
}

// jsonKeys returns the JSON keys of the struct v points to.
func jsonKeys(v any) []string { return fieldsOf(reflect.TypeOf(v).Elem()).keys }
