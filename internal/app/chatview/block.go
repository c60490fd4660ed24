package chatview

import (
	"encoding/json"
	"fmt"
)

// Kind says what a Block shows.
type Kind int

// The kinds of Block.
const (
	// KindTurn starts a turn (turn/start): Turn is its number, 0 when
	// unknown; Text its input, if any.
	KindTurn Kind = iota + 1
	// KindUser is a user message: Text.
	KindUser
	// KindAssistant is an assistant message: Text; Streamed when it is a
	// step's chunks joined (the step had no assistant/message: Count
	// chunks, the last at Last), Partial when that step never ended.
	KindAssistant
	// KindReasoning is the model's reasoning, folded: Text (a run of
	// reasoning events joined, the last at Last).
	KindReasoning
	// KindToolCall is a tool call: Name, CallID, Args, Effect.
	KindToolCall
	// KindApproval is a decision on a tool call: CallID, Decision, By.
	KindApproval
	// KindToolResult is a tool's result: CallID, Name (its call's), Text
	// (the output as text) or Error, Synthetic when resume wrote it,
	// Adjacent when it comes right after its call (or the call's
	// approval).
	KindToolResult
	// KindUsage is a model call's token usage: Usage.
	KindUsage
	// KindStop is a turn's end (turn/end): Stop and Text (its reason);
	// Resumed when the turn was closed by a resume (it holds synthetic
	// results).
	KindStop
	// KindCheckpoint is a checkpoint: Label.
	KindCheckpoint
	// KindRollback is a rollback: To, Label, Text (its reason), and
	// Abandoned (how many events its branch holds).
	KindRollback
	// KindBranch starts an abandoned branch: Rollback is the rollback
	// that abandoned it and To where it returned to.
	KindBranch
	// KindForkPoint marks where a fork's own events start: Session is
	// the parent, To the fork point.
	KindForkPoint
	// KindRelated is a session that branches off at this event: Session,
	// Mode ("fork" or "child"), CallID and Label.
	KindRelated
	// KindCompacted is a compaction: Text, the summary.
	KindCompacted
	// KindOther is any other event (a foreign record, or a known type
	// of the wrong shape): Type and Data, as stored but for its
	// redaction record (Redacted says it). A run of events of
	// one type in a row is one block: Count events, Data the first
	// one's, Last the last one's seq.
	KindOther
)

// Block is one thing a person sees in a conversation. Only the fields its
// Kind names are set, besides Seq, Time and Abandoned.
type Block struct {
	Kind Kind
	Seq  int64 // the event it comes from (a streamed message: its first chunk)
	Last int64 // the last event it stands for (Seq, but for a run or a streamed message)
	Time int64 // Unix milliseconds
	// Abandoned is set for an event on a branch that a later rollback
	// abandoned; AbandonedBy is that rollback.
	Abandoned   bool
	AbandonedBy Rollback
	// Redacted is what redaction at write replaced in the data of the
	// events the block shows (their redaction records); nil for none.
	// The record itself is no part of what the block shows: Args and
	// Data are without it.
	Redacted Redactions

	Turn      int
	Text      string
	Streamed  bool
	Partial   bool
	Name      string
	CallID    string
	Args      json.RawMessage
	Effect    string
	Decision  string
	By        string
	Error     string
	Synthetic bool
	Adjacent  bool
	Usage     Usage
	Stop      string
	Resumed   bool
	Label     string
	To        int64
	Rollback  int64
	Count     int64
	Session   string
	Mode      string
	Type      string
	Data      json.RawMessage
}

// Usage is the token usage of one model call (a usage event).
type Usage struct {
	InputTokens  int64  `json:"inputTokens"`
	OutputTokens int64  `json:"outputTokens"`
	CachedTokens int64  `json:"cachedTokens"`
	CostMicros   int64  `json:"costMicros"`
	Model        string `json:"model"`
}

// Words says the usage as a person reads it: "26,450 in (11,442 cached)
// · 9 out · $0.0042 · model".
func (u Usage) Words() string {
	s := Thousands(u.InputTokens) + " in"
	if u.CachedTokens > 0 {
		s += " (" + Thousands(u.CachedTokens) + " cached)"
	}
	s += " · " + Thousands(u.OutputTokens) + " out"
	if u.CostMicros > 0 {
		s += fmt.Sprintf(" · $%.4f", float64(u.CostMicros)/1e6)
	}
	if u.Model != "" {
		s += " · " + u.Model
	}
	return s
}

// Related is a session that starts at an event of the one shown: a fork
// (its logical log goes on after Seq) or a child (spawned by the event at
// Seq, a tool call whose id is Call).
type Related struct {
	ID    string
	Mode  string
	Seq   int64
	Call  string
	Label string // its labels in words, for the reader
}
