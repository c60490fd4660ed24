package claude

import "strings"

// Kinds of the text of a user line (Kind) and of Claude Code's own
// assistant lines: a prompt is a user/message; every other kind is a
// context/message of that kind (or, for a compaction summary and an
// interruption, the event that stands for it).
const (
	KindPrompt           = "prompt"            // typed by the user: text, a slash command, a ! shell command
	KindCompactSummary   = "compact-summary"   // isCompactSummary: the summary a compaction left
	KindInterrupt        = "interrupt"         // "[Request interrupted by user…]": ends the turn
	KindMeta             = "meta"              // isMeta: skill bodies, caveats, reminders Claude Code adds
	KindTranscriptOnly   = "transcript-only"   // isVisibleInTranscriptOnly: shown, never sent to the model
	KindLocalCommand     = "local-command"     // a slash command's output, or the caveat before it
	KindBashOutput       = "bash-output"       // the output of a ! shell command
	KindTaskNotification = "task-notification" // a background task ended: the model answers it
	KindSystemReminder   = "system-reminder"   // <system-reminder> text not marked isMeta
	KindHook             = "hook"              // a UserPromptSubmit hook's output
	KindAPIError         = "api-error"         // isApiErrorMessage: Claude Code's error message
	KindSynthetic        = "synthetic"         // a <synthetic> assistant line ("No response requested.")
	KindCompaction       = "compaction"        // the instruction of a compaction sub-run (agent-acompact-*)
)

// compactionAgent starts the agentId Claude Code gives the sub-run that
// writes a compaction's summary: its prompt is Claude Code's instruction.
const compactionAgent = "acompact-"

// markers are the wrappers Claude Code puts around the text it writes as
// a user line, and the kind each means.
var markers = []struct{ prefix, kind string }{
	{"<command-name>", KindPrompt},
	{"<command-message>", KindPrompt},
	{"<bash-input>", KindPrompt},
	{"<local-command-stdout>", KindLocalCommand},
	{"<local-command-stderr>", KindLocalCommand},
	{"<local-command-caveat>", KindLocalCommand},
	{"<bash-stdout>", KindBashOutput},
	{"<bash-stderr>", KindBashOutput},
	{"<task-notification>", KindTaskNotification},
	{"<system-reminder>", KindSystemReminder},
	{"<user-prompt-submit-hook>", KindHook},
	{interruptMarker, KindInterrupt},
}

// interruptMarker starts the line Claude Code writes when the person
// interrupts the model.
const interruptMarker = "[Request interrupted by user"

// OriginHuman is the origin.kind Claude Code gives what a person typed.
// Newer versions say where a user line or a queued command came from
// (origin {"kind"}): "human", "task-notification", "peer" (a message from
// another session)…; older ones say nothing, and the text's wrapper tells.
const OriginHuman = "human"

// Kind classifies the text of a user line from its flags, its origin
// ("" when the line has none) and the way it starts: only what the user
// typed is KindPrompt. A line of another origin is of that origin's kind.
func Kind(isMeta, isCompactSummary, transcriptOnly bool, origin, text string) string {
	switch {
	case isCompactSummary:
		return KindCompactSummary
	case isMeta:
		return KindMeta
	case transcriptOnly:
		return KindTranscriptOnly
	}
	t := strings.TrimLeft(text, " \t\r\n")
	switch {
	case origin == OriginHuman && strings.HasPrefix(t, interruptMarker):
		return KindInterrupt // the person's Esc, in Claude Code's words
	case origin == OriginHuman:
		return KindPrompt
	case origin != "":
		return origin // task-notification, peer…: Claude Code delivered it
	}
	for _, m := range markers {
		if strings.HasPrefix(t, m.prefix) {
			return m.kind
		}
	}
	return KindPrompt
}
