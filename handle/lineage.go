package handle

import (
	"errors"
	"fmt"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle/internal/lineage"
)

// ErrLineage: a fork whose parent is missing, or ends before the fork
// point; wrapped by *LineageError.
var ErrLineage = errors.New("handle: lineage broken")

// maxForkDepth bounds a chain of forks; a longer one is taken for a cycle.
const maxForkDepth = lineage.MaxDepth

// LineageError names the missing piece of a fork's logical log.
type LineageError struct {
	Path   string // the fork's file
	Parent string // the parent's ID
	Seq    int64  // the fork point
	Reason string
}

// Error implements error.
func (e *LineageError) Error() string {
	return fmt.Sprintf("handle: lineage of %q (forked from %s at seq %d): %s", e.Path, e.Parent, e.Seq, e.Reason)
}

// Unwrap returns ErrLineage.
func (e *LineageError) Unwrap() error { return ErrLineage }

// tooDeep is the error of a chain of more than maxForkDepth forks, met
// at the fork at path, whose parent is p.
func tooDeep(path string, p eventlog.Parent) error {
	return &LineageError{Path: path, Parent: p.ID, Seq: p.Seq, Reason: fmt.Sprintf("more than %d forks in a chain (a cycle?)", maxForkDepth)}
}

// brokenLineage is the error lineage.Read reports for the fork at path
// whose parent p cannot give what it must.
func brokenLineage(path string, p eventlog.Parent, reason string) error {
	return &LineageError{Path: path, Parent: p.ID, Seq: p.Seq, Reason: reason}
}
