package projection

import (
	"slices"

	"github.com/sessionlog/sessionlog/eventlog"
)

// Types returns the event types the library understands, sorted: the
// reserved types of docs/format.md §7 and the agent vocabulary of §8. A
// tool that filters by type uses it to tell a typo from a type of an
// application's own.
func Types() []string {
	t := []string{
		eventlog.TypeCheckpoint, eventlog.TypeRollback,
		typeTurnStart, typeUserMessage, typeStepStart, typeAssistantChunk, typeReasoning,
		typeAssistantMessage, typeToolCall, typeToolApproval, typeToolResult, typeUsage,
		typeStepEnd, typeTurnEnd, typeMemorySet, typeMemoryDelete, typeProviderState,
		typeSlotSwitch, typeCompacted, typePlanSet,
	}
	slices.Sort(t)
	return t
}
