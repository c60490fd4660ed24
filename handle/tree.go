package handle

import (
	"github.com/sessionlog/sessionlog/eventlog"
)

// Node is a session in the session tree: its header, and the sessions
// forked or spawned from it.
type Node struct {
	Header eventlog.Header
	Path   string
	// ParentGone is true when the header names a parent that is not in
	// the store (a child that outlived its parent, or broken lineage).
	ParentGone bool
	Children   []*Node
}
