package handle

import (
	"cmp"
	"fmt"
	"strings"
)

// DependentsError refuses to delete (or rewrite) a session that forks
// depend on, without Detach or Cascade, and lists them. Match it with
// errors.AsType[*DependentsError] (it is the only shape of this refusal,
// so it has no sentinel).
type DependentsError struct {
	ID         string
	Dependents []string
	// Op is what was refused ("" for delete); Fix what would let it run
	// ("" for delete's: detach them or cascade).
	Op, Fix string
}

// Error implements error.
func (e *DependentsError) Error() string {
	op, fix := cmp.Or(e.Op, "delete"), cmp.Or(e.Fix, "detach them or cascade")
	return fmt.Sprintf("handle: cannot %s %s: %d fork(s) depend on it (%s); %s",
		op, e.ID, len(e.Dependents), strings.Join(e.Dependents, ", "), fix)
}
