package projection

import (
	"encoding/json"
	"fmt"

	"github.com/sessionlog/sessionlog/eventlog"
)

// The decisions of a tool/approval, as PendingCall.Approval holds them;
// "" means not decided yet.
const (
	ApprovalApproved = "approved"
	ApprovalDenied   = "denied"
)

// Agent is the "agent" projection (ID "agent/v1"): where an agent loop
// stands. It answers what resuming a session needs (is a turn open, is a
// step open, which tool calls have no result yet and what effect they
// have, how the last turn stopped) and keeps the loop's bookkeeping:
// token usage, memory, provider state, slot, plan, last compaction.
//
// It reads turn/start, step/start, step/end, turn/end, usage, memory/set,
// memory/delete, provider/state, slot/switch, context/compacted, plan/set,
// tool/call, tool/approval and tool/result; every other type, messages and
// chunks included, is carried past without looking at its data.
type Agent struct {
	s AgentState
}

// AgentState is the state of the agent projection; MarshalState writes it
// as JSON (maps with sorted keys, so deterministically).
type AgentState struct {
	// Turns counts turn/start events; TurnOpen is true after a turn/start
	// until a turn/end; CurrentTurnStart is the seq of the open turn's
	// turn/start, -1 when no turn is open.
	Turns            int   `json:"turns"`
	TurnOpen         bool  `json:"turnOpen"`
	CurrentTurnStart int64 `json:"currentTurnStart"`
	// Steps counts step/start events; StepOpen is true after a step/start
	// until a step/end.
	Steps    int  `json:"steps"`
	StepOpen bool `json:"stepOpen"`
	// Usage sums every usage event; UsageByModel sums those that name a
	// (non-empty) model, per model.
	Usage        Usage            `json:"usage"`
	UsageByModel map[string]Usage `json:"usageByModel,omitempty"`
	// Memory holds the keys set by memory/set and not deleted since.
	Memory map[string]MemoryEntry `json:"memory,omitempty"`
	// Providers holds the latest provider/state of each provider.
	Providers map[string]json.RawMessage `json:"providers,omitempty"`
	// Slot is the slot of the latest slot/switch.
	Slot string `json:"slot,omitempty"`
	// LastCompaction is the latest context/compacted, nil before one.
	LastCompaction *Compaction `json:"lastCompaction,omitempty"`
	// Plan is the plan of the latest plan/set, nil before one.
	Plan json.RawMessage `json:"plan,omitempty"`
	// PendingCalls holds the tool calls without a result, by call id.
	PendingCalls map[string]PendingCall `json:"pendingCalls,omitempty"`
	// LastStop is the latest turn/end, nil before one.
	LastStop *Stop `json:"lastStop,omitempty"`
	// Degraded lists the events this projection could not fully
	// understand, in seq order.
	Degraded []Degraded `json:"degraded,omitempty"`
}

// Usage is a sum of usage events.
type Usage struct {
	InputTokens  int64 `json:"inputTokens"`
	OutputTokens int64 `json:"outputTokens"`
	CachedTokens int64 `json:"cachedTokens"`
	CostMicros   int64 `json:"costMicros"`
}

// MemoryEntry is one memory key: its value and metadata as last set, and
// the time (event time, Unix ms) and seq of its first and latest set.
type MemoryEntry struct {
	Value      json.RawMessage `json:"value"`
	Metadata   json.RawMessage `json:"metadata,omitempty"`
	CreatedAt  int64           `json:"createdAt"`
	UpdatedAt  int64           `json:"updatedAt"`
	CreatedSeq int64           `json:"createdSeq"`
	UpdatedSeq int64           `json:"updatedSeq"`
}

// Compaction is a context/compacted event: its seq, time and the length
// of its summary in bytes.
type Compaction struct {
	Seq        int64 `json:"seq"`
	Time       int64 `json:"time"`
	SummaryLen int   `json:"summaryLen"`
}

// PendingCall is a tool/call without a tool/result: the seq of the call,
// the tool's name, its declared effect ("read", "write", or anything else
// including "" for unknown) and its approval ("", ApprovalApproved or
// ApprovalDenied).
type PendingCall struct {
	Seq      int64  `json:"seq"`
	Name     string `json:"name"`
	Effect   string `json:"effect,omitempty"`
	Approval string `json:"approval,omitempty"`
}

// Stop is a turn/end event: its seq, time, kind and reason. A kind that
// was missing or not a string is "".
type Stop struct {
	Seq    int64  `json:"seq"`
	Time   int64  `json:"time"`
	Kind   string `json:"kind"`
	Reason string `json:"reason,omitempty"`
}

var _ Projection = (*Agent)(nil)

// NewAgent returns an agent projection in its empty state.
func NewAgent() *Agent {
	a := &Agent{}
	a.Reset()
	return a
}

// Name is "agent".
func (a *Agent) Name() string { return "agent" }

// Version is 1.
func (a *Agent) Version() int { return 1 }

// BorrowsData makes Agent a Borrower: Apply copies what it keeps.
func (a *Agent) BorrowsData() {}

var _ Borrower = (*Agent)(nil)

// State returns the current state. It is read-only: its maps and slices
// belong to the projection and change with the next Apply.
func (a *Agent) State() AgentState { return a.s }

// Reset returns to the empty state.
func (a *Agent) Reset() { a.s = AgentState{CurrentTurnStart: -1} }

// MarshalState returns the state as JSON.
func (a *Agent) MarshalState() ([]byte, error) {
	b, err := json.Marshal(&a.s)
	if err != nil {
		return nil, fmt.Errorf("projection agent: marshal state: %w", err)
	}
	return b, nil
}

// UnmarshalState replaces the state with one MarshalState returned; on
// error the state is unchanged.
func (a *Agent) UnmarshalState(data []byte) error {
	var s AgentState
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("projection agent: unmarshal state: %w", err)
	}
	a.s = s
	return nil
}

// Apply folds one event into the state.
//
// The lifecycle types (turn/start, step/start, step/end, turn/end) take
// effect whatever their data, since the type alone says what happened: a
// turn/end whose kind is missing or not a string still closes the turn,
// with kind "" (which no resume rule allows to continue). Every other type
// takes effect only when its data has the right shape; otherwise it is
// recorded in Degraded and changes nothing else.
func (a *Agent) Apply(e eventlog.Event) {
	switch e.Type {
	case typeTurnStart:
		readOK[noData](&a.s.Degraded, e)
		a.s.Turns++
		a.s.TurnOpen = true
		a.s.CurrentTurnStart = e.Seq
	case typeStepStart:
		readOK[noData](&a.s.Degraded, e)
		a.s.Steps++
		a.s.StepOpen = true
	case typeStepEnd:
		readOK[noData](&a.s.Degraded, e)
		a.s.StepOpen = false
	case typeTurnEnd:
		d, _ := readOK[turnEndData](&a.s.Degraded, e)
		stop := &Stop{Seq: e.Seq, Time: e.Time, Reason: d.Reason}
		if d.Kind != nil {
			stop.Kind = *d.Kind
		}
		a.s.TurnOpen = false
		a.s.CurrentTurnStart = -1
		a.s.LastStop = stop
	case typeUsage:
		a.usage(e)
	case typeToolCall:
		a.toolCall(e)
	case typeToolApproval:
		a.toolApproval(e)
	case typeToolResult:
		if d, ok := readOK[toolResultHead](&a.s.Degraded, e); ok {
			delete(a.s.PendingCalls, *d.ID)
		}
	case typeMemorySet:
		a.memorySet(e)
	case typeMemoryDelete:
		if d, ok := readOK[memoryDeleteData](&a.s.Degraded, e); ok {
			delete(a.s.Memory, *d.Key)
		}
	case typeProviderState:
		if d, ok := readOK[providerStateData](&a.s.Degraded, e); ok {
			if a.s.Providers == nil {
				a.s.Providers = make(map[string]json.RawMessage)
			}
			a.s.Providers[*d.Provider] = keepRaw(d.State)
		}
	case typeSlotSwitch:
		if d, ok := readOK[slotSwitchData](&a.s.Degraded, e); ok {
			a.s.Slot = *d.Slot
		}
	case typeCompacted:
		if d, ok := readOK[compactedData](&a.s.Degraded, e); ok {
			a.s.LastCompaction = &Compaction{Seq: e.Seq, Time: e.Time, SummaryLen: len(*d.Summary)}
		}
	case typePlanSet:
		if d, ok := readOK[planSetData](&a.s.Degraded, e); ok {
			a.s.Plan = keepRaw(d.Plan)
		}
	}
}

func (a *Agent) usage(e eventlog.Event) {
	d, ok := readOK[usageData](&a.s.Degraded, e)
	if !ok {
		return
	}
	u := Usage{InputTokens: *d.InputTokens, OutputTokens: *d.OutputTokens, CachedTokens: d.CachedTokens, CostMicros: d.CostMicros}
	a.s.Usage = a.s.Usage.add(u)
	if d.Model != "" {
		if a.s.UsageByModel == nil {
			a.s.UsageByModel = make(map[string]Usage)
		}
		a.s.UsageByModel[d.Model] = a.s.UsageByModel[d.Model].add(u)
	}
}

func (u Usage) add(v Usage) Usage {
	return Usage{
		InputTokens:  u.InputTokens + v.InputTokens,
		OutputTokens: u.OutputTokens + v.OutputTokens,
		CachedTokens: u.CachedTokens + v.CachedTokens,
		CostMicros:   u.CostMicros + v.CostMicros,
	}
}

func (a *Agent) toolCall(e eventlog.Event) {
	d, ok := readOK[toolCallData](&a.s.Degraded, e)
	if !ok {
		return
	}
	if _, dup := a.s.PendingCalls[*d.ID]; dup {
		degrade(&a.s.Degraded, e, "duplicate call id "+quote(*d.ID))
		return
	}
	if a.s.PendingCalls == nil {
		a.s.PendingCalls = make(map[string]PendingCall)
	}
	a.s.PendingCalls[*d.ID] = PendingCall{Seq: e.Seq, Name: *d.Name, Effect: d.Effect}
}

func (a *Agent) toolApproval(e eventlog.Event) {
	d, ok := readOK[toolApprovalData](&a.s.Degraded, e)
	if !ok {
		return
	}
	c, pending := a.s.PendingCalls[*d.ID]
	if !pending {
		degrade(&a.s.Degraded, e, "approval for a call that is not pending: "+quote(*d.ID))
		return
	}
	c.Approval = *d.Decision
	a.s.PendingCalls[*d.ID] = c
}

func (a *Agent) memorySet(e eventlog.Event) {
	d, ok := readOK[memorySetData](&a.s.Degraded, e)
	if !ok {
		return
	}
	if a.s.Memory == nil {
		a.s.Memory = make(map[string]MemoryEntry)
	}
	m, exists := a.s.Memory[*d.Key]
	if !exists {
		m.CreatedAt, m.CreatedSeq = e.Time, e.Seq
	}
	m.Value, m.Metadata = keepRaw(d.Value), keepRaw(orNil(d.Metadata))
	m.UpdatedAt, m.UpdatedSeq = e.Time, e.Seq
	a.s.Memory[*d.Key] = m
}

// DegradedEvents returns the events the projection could not fully
// understand (replay.Degrader).
func (a *Agent) DegradedEvents() []Degraded { return a.s.Degraded }
