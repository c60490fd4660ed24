package follow

import (
	"fmt"
	"strings"
)

// NoteKind says what a Follower noticed.
type NoteKind int

// What a Follower notices, each said once when it happens.
const (
	// Gone: the session cannot be found (deleted, or being replaced); the
	// Follower waits for it to come back.
	Gone NoteKind = iota + 1
	// Back: a session that was gone is there again.
	Back
	// Moved: the session lives at another path now (a convert to the
	// other encoding).
	Moved
	// Replaced: the session's log was replaced under the same name (a
	// compaction, a repair, a writer's rewrite).
	Replaced
	// Cut: the session's log is shorter than it was (a repair, a
	// writer's recovery).
	Cut
	// Rewritten: the log no longer holds the last event yielded, the
	// same, though it did not shrink.
	Rewritten
	// Changed: a read failed as the log changed under it.
	Changed
	// Unreadable: the session cannot be opened for now; the Follower
	// looks again.
	Unreadable
	// Parted: the log differs from what was yielded from seq Seq on; the
	// Follower goes on from there.
	Parted
)

// Note is what a Follower says when it notices something.
type Note struct {
	Kind NoteKind
	Path string // where the session lives (for Moved: where it lives now)
	// Size and WasSize are the log's size now and before (Cut).
	Size, WasSize int64
	Seq           int64 // Parted: where the logs part
	Err           error // Unreadable: why
	// Reopened: the Follower opened the session anew for it and goes on.
	Reopened bool
}

// String says the note in words, for people.
func (n Note) String() string {
	var s string
	switch n.Kind {
	case Gone:
		return fmt.Sprintf("%s is gone (deleted, or being replaced): waiting for it to come back", n.Path)
	case Back:
		return fmt.Sprintf("%s is back", n.Path)
	case Moved:
		s = fmt.Sprintf("the session moved to %s (logtool convert)", n.Path)
	case Replaced:
		s = fmt.Sprintf("%s was replaced (a convert, a repair or a writer's rewrite)", n.Path)
	case Cut:
		s = fmt.Sprintf("%s was cut from %d to %s (a repair, or a writer's recovery)", n.Path, n.WasSize, bytesWords(n.Size))
	case Rewritten:
		s = fmt.Sprintf("%s was rewritten in place", n.Path)
	case Changed:
		s = fmt.Sprintf("%s changed while it was read", n.Path)
	case Unreadable:
		return fmt.Sprintf("%s cannot be read for now, looking again: %v", n.Path, oneLine(fmt.Sprint(n.Err)))
	case Parted:
		return fmt.Sprintf("the log differs from what was shown from seq %d on (it was cut, and perhaps written again): going on from seq %d", n.Seq, n.Seq)
	default:
		return fmt.Sprintf("note %d about %s", n.Kind, n.Path)
	}
	if n.Reopened {
		s += ": following the new file"
	}
	return s
}

func bytesWords(n int64) string {
	if n == 1 {
		return "1 byte"
	}
	return fmt.Sprintf("%d bytes", n)
}

func oneLine(s string) string {
	return strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(s)
}
