package projection

import (
	"fmt"
	"io"

	"github.com/sessionlog/sessionlog/eventlog"
)

// Conversation ("conversation/v1") is the whole conversation of the live
// branch, for people to read a long session end to end: every message the
// transcript would hold had no compaction happened, each compaction's
// summary a message of role "summary" at the place it stands, the
// messages before it kept. It folds the events exactly as Transcript does
// (the same messages, reasoning, calls and results, the same Degraded),
// but for context/compacted, which adds its summary instead of replacing
// what came before; rollbacks are applied by replay, as for every
// projection, so an abandoned branch is not in it. Its state is a
// TranscriptState. It is a Snapshotter, as Transcript is.
//
// A Conversation is not safe for concurrent use.
type Conversation struct{ t *Transcript }

var (
	_ Projection  = (*Conversation)(nil)
	_ Snapshotter = (*Conversation)(nil)
	_ StateWriter = (*Conversation)(nil)
)

// NewConversation returns a conversation projection in its empty state.
func NewConversation() *Conversation {
	t := NewTranscript()
	t.keep = true
	return &Conversation{t: t}
}

// Name returns "conversation".
func (c *Conversation) Name() string { return "conversation" }

// Version returns 1.
func (c *Conversation) Version() int { return 1 }

// BorrowsData makes Conversation a Borrower: Apply copies what it keeps.
func (c *Conversation) BorrowsData() {}

var (
	_ Borrower = (*Conversation)(nil)
	_ Locator  = (*Conversation)(nil)
)

// Apply folds one event into the state.
func (c *Conversation) Apply(e eventlog.Event) { c.t.Apply(e) }

// ApplyAt is the transcript's: a large tool output is left in log
// (Locator).
func (c *Conversation) ApplyAt(e eventlog.Event, log io.ReaderAt, at int64) { c.t.ApplyAt(e, log, at) }

// Reset returns to the empty state.
func (c *Conversation) Reset() { c.t.Reset() }

// State returns the state, read-only.
func (c *Conversation) State() TranscriptState { return c.t.State() }

// MarshalState returns the state as JSON.
func (c *Conversation) MarshalState() ([]byte, error) { return c.t.MarshalState() }

// WriteState writes to w what MarshalState returns (StateWriter).
func (c *Conversation) WriteState(w io.Writer) error { return c.t.WriteState(w) }

// UnmarshalState replaces the state with one MarshalState returned.
func (c *Conversation) UnmarshalState(data []byte) error { return c.t.UnmarshalState(data) }

// DegradedEvents returns the events the projection could not fully
// understand.
func (c *Conversation) DegradedEvents() []Degraded { return c.t.DegradedEvents() }

// Snapshot returns a copy of the state (see Transcript.Snapshot).
func (c *Conversation) Snapshot() (any, int) {
	snap, size := c.t.Snapshot()
	return conversationSnapshot{snap}, size
}

// conversationSnapshot tells a conversation's snapshot from a transcript's.
type conversationSnapshot struct{ t any }

// Restore sets the state to a copy of snap, a Snapshot of a conversation.
func (c *Conversation) Restore(snap any) error {
	s, ok := snap.(conversationSnapshot)
	if !ok {
		return fmt.Errorf("projection conversation: restore: a %T is not a conversation snapshot", snap)
	}
	return c.t.Restore(s.t)
}
