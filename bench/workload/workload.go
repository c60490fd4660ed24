package workload

import (
	"bufio"
	"encoding/json"
	"io"
	"strconv"
)

// Config chooses the workload. The zero value of a field means its default.
type Config struct {
	// Seed seeds the PRNG; two seeds give unrelated sessions.
	Seed uint64
	// Turns is the number of turns (default 200).
	Turns int
	// Start is the time of the first event, Unix milliseconds (default
	// 1767225600000, 2026-01-01T00:00:00Z).
	Start int64
	// MaxSteps bounds the steps of a turn, drawn uniformly from 1..MaxSteps
	// (default 5). Every step but a turn's last calls tools.
	MaxSteps int
	// MinToolOutput and MaxToolOutput bound the output of a tool/result in
	// bytes, drawn log-uniformly (default 512 and 20480).
	MinToolOutput, MaxToolOutput int
}

// Defaults of Config.
const (
	DefaultTurns         = 200
	DefaultStart         = int64(1767225600000)
	DefaultMaxSteps      = 5
	DefaultMinToolOutput = 512
	DefaultMaxToolOutput = 20 << 10
)

func (c Config) withDefaults() Config {
	if c.Turns <= 0 {
		c.Turns = DefaultTurns
	}
	if c.Start <= 0 {
		c.Start = DefaultStart
	}
	if c.MaxSteps <= 0 {
		c.MaxSteps = DefaultMaxSteps
	}
	if c.MinToolOutput <= 0 {
		c.MinToolOutput = DefaultMinToolOutput
	}
	if c.MaxToolOutput < c.MinToolOutput {
		c.MaxToolOutput = max(DefaultMaxToolOutput, c.MinToolOutput)
	}
	return c
}

// Event is one generated event. Data is a compact JSON object.
type Event struct {
	Seq  int64
	Type string
	Time int64
	Data json.RawMessage
	// Turn numbers the turn the event belongs to, from 1. It is not part of
	// the event's JSON.
	Turn int
}

// AppendJSON appends the event's JSONL line, {"seq","type","time","data"}
// in that order, without the '\n'.
func (e *Event) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"seq":`...)
	dst = strconv.AppendInt(dst, e.Seq, 10)
	dst = append(dst, `,"type":`...)
	dst = appendString(dst, e.Type)
	dst = append(dst, `,"time":`...)
	dst = strconv.AppendInt(dst, e.Time, 10)
	dst = append(dst, `,"data":`...)
	if len(e.Data) == 0 {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, e.Data...)
	}
	return append(dst, '}')
}

// WriteJSONL writes events as JSONL, one line each.
func WriteJSONL(w io.Writer, events []Event) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	var line []byte
	for i := range events {
		line = append(events[i].AppendJSON(line[:0]), '\n')
		if _, err := bw.Write(line); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// Types lists every event type the generator emits, in the order they first
// occur in a turn.
var Types = []string{
	"turn/start", "user/message", "step/start", "assistant/reasoning",
	"assistant/chunk", "assistant/message", "tool/call", "tool/result",
	"usage", "step/end", "turn/end", "marker",
}

// Generate returns the whole workload of cfg.
func Generate(cfg Config) []Event {
	g := New(cfg)
	var out []Event
	for !g.Done() {
		out = append(out, g.NextTurn()...)
	}
	return out
}

// Generator produces a workload turn by turn. It is not safe for
// concurrent use.
type Generator struct {
	cfg   Config
	r     rng
	turn  int   // turns generated so far
	seq   int64 // next seq
	now   int64 // time of the last event
	ids   int   // tool call ids handed out
	input int   // input tokens of the conversation so far
	buf   []byte
}

// New returns a Generator for cfg.
func New(cfg Config) *Generator {
	cfg = cfg.withDefaults()
	return &Generator{cfg: cfg, r: newRNG(cfg.Seed), now: cfg.Start}
}

// Done reports whether every turn has been generated.
func (g *Generator) Done() bool { return g.turn >= g.cfg.Turns }

// NextTurn returns the next turn's events, or nil when Done.
func (g *Generator) NextTurn() []Event {
	if g.Done() {
		return nil
	}
	g.turn++
	var out []Event
	g.wait(2000, 30000) // the user reads and types
	out = g.emit(out, "turn/start", obj().num("turn", g.turn))
	user := g.text(g.r.between(200, 2048), proseText)
	out = g.emit(out, "user/message", obj().str("text", user))
	g.input += len(user) / 4

	steps := g.r.between(1, g.cfg.MaxSteps)
	for step := 1; step <= steps; step++ {
		out = g.step(out, step, step == steps)
	}
	out = g.emit(out, "turn/end", obj().str("kind", "completed").num("steps", steps))
	if g.r.chance(0.10) {
		out = g.emit(out, "marker", obj().str("label", "auto").num("turn", g.turn))
	}
	return out
}

// step appends one model call: its stream, its message, its tool calls
// (unless it is the turn's last) and its usage.
func (g *Generator) step(out []Event, step int, last bool) []Event {
	model := models[g.r.intn(len(models))]
	out = g.emit(out, "step/start", obj().str("model", model).num("step", step))
	g.wait(300, 1500) // time to first token
	output := 0
	if g.r.chance(0.30) {
		reasoning := g.text(g.r.between(512, 3072), proseText)
		out = g.emit(out, "assistant/reasoning", obj().str("text", reasoning))
		output += len(reasoning) / 4
	}
	out, message := g.stream(out)
	out = g.emit(out, "assistant/message", obj().str("text", message))
	output += len(message) / 4

	finish := "end_turn"
	if !last {
		finish = "tool_use"
		for range g.r.between(1, 3) {
			out = g.tool(out)
		}
	}
	cached := g.input
	g.input += output
	out = g.emit(out, "usage", obj().
		num("inputTokens", g.input).
		num("outputTokens", output).
		num("cachedTokens", cached).
		num("costMicros", (g.input-cached)*3+cached*3/10+output*15).
		str("model", model))
	return g.emit(out, "step/end", obj().num("step", step).str("finish", finish))
}

// stream appends 10–60 chunks of 5–40 bytes and returns their text joined.
func (g *Generator) stream(out []Event) ([]Event, string) {
	sizes := make([]int, g.r.between(10, 60))
	total := 0
	for i := range sizes {
		sizes[i] = g.r.between(5, 40)
		total += sizes[i]
	}
	message := g.text(total, proseText)
	at := 0
	for _, n := range sizes {
		g.wait(10, 60)
		out = g.emit(out, "assistant/chunk", obj().str("text", message[at:at+n]))
		at += n
	}
	return out, message
}

// tool appends a tool call and its result.
func (g *Generator) tool(out []Event) []Event {
	t := tools[g.r.intn(len(tools))]
	g.ids++
	id := "call_" + strconv.Itoa(g.ids)
	argsSize := g.r.between(100, 500)
	args := obj().str(t.arg, g.text(g.r.between(8, 60), t.argText))
	if rest := argsSize - len(args.b) - len(`,"purpose":""}`); rest > 0 {
		args = args.str("purpose", g.text(rest, proseText))
	}
	out = g.emit(out, "tool/call", obj().str("id", id).str("name", t.name).raw("args", args.done()).str("effect", t.effect))
	g.wait(5, 2000) // the tool runs

	output := g.text(g.r.logUniform(g.cfg.MinToolOutput, g.cfg.MaxToolOutput), t.output)
	result := obj().str("id", id).str("output", output)
	if g.r.chance(0.05) {
		result = result.str("error", "exit status 1")
	}
	g.input += len(output) / 4
	return g.emit(out, "tool/result", result)
}

// emit appends an event with the next seq and the current time.
func (g *Generator) emit(out []Event, typ string, data *object) []Event {
	g.wait(0, 3)
	e := Event{Seq: g.seq, Type: typ, Time: g.now, Data: json.RawMessage(data.done()), Turn: g.turn}
	g.seq++
	return append(out, e)
}

// wait moves the clock on by lo..hi milliseconds.
func (g *Generator) wait(lo, hi int) { g.now += int64(g.r.between(lo, hi)) }

// text returns n bytes of text of the given kind.
func (g *Generator) text(n int, kind textKind) string {
	g.buf = kind(&g.r, g.buf[:0], n)
	return string(g.buf[:n])
}

var models = []string{"model-large-2", "model-large-2", "model-small-1"}

// A tool is what a tool/call names and what its result holds.
type tool struct {
	name, effect string
	arg          string   // the main argument's key
	argText      textKind // what the main argument holds
	output       textKind // what the result's output holds
}

var tools = []tool{
	{"read_file", "read", "path", pathText, codeText},
	{"read_file", "read", "path", pathText, codeText},
	{"grep", "read", "pattern", wordText, grepText},
	{"list_dir", "read", "path", pathText, pathListText},
	{"web_fetch", "read", "url", urlText, proseText},
	{"bash", "write", "command", commandText, logText},
	{"bash", "write", "command", commandText, logText},
	{"edit_file", "write", "path", pathText, proseText},
	{"write_file", "write", "path", pathText, proseText},
}

// Repeat returns evs repeated, whole passes, until their plain-JSONL size
// reaches at least target bytes; each pass's times and turns follow the
// previous pass's (seqs are left as they are: a log assigns its own).
func Repeat(evs []Event, target int64) []Event {
	var size int64
	var line []byte
	for i := range evs {
		line = evs[i].AppendJSON(line[:0])
		size += int64(len(line)) + 1
	}
	if size == 0 {
		return nil
	}
	var out []Event
	var shift int64
	turn := 0
	for total := int64(0); total < target; total += size {
		for _, e := range evs {
			e.Time += shift
			e.Turn += turn
			out = append(out, e)
		}
		shift = out[len(out)-1].Time + 1 - evs[0].Time
		turn = out[len(out)-1].Turn
	}
	return out
}
