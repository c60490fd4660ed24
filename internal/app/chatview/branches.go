package chatview

import (
	"cmp"
	"slices"
)

// Rollback is a rollback event: at Seq, every projection returned to its
// state right after To.
type Rollback struct {
	Seq int64
	To  int64
}

// Branches says which events a rollback abandoned. The live branch is
// found walking back from the last event: every event met is live, and a
// live rollback sends the walk on from its target; the events it skipped
// (To < seq < Seq) are its abandoned branch. The zero Branches has
// everything live.
type Branches struct {
	abandoned []Rollback // live rollbacks, by Seq ascending; their ranges are disjoint
}

// NewBranches computes the branches of a log whose last event is last,
// from its rollbacks (any order). Rollbacks before the events of interest
// may be left out: they only decide what is abandoned before them.
func NewBranches(last int64, rollbacks []Rollback) Branches {
	rs := slices.Clone(rollbacks)
	slices.SortFunc(rs, func(a, b Rollback) int { return cmp.Compare(a.Seq, b.Seq) })
	var live []Rollback
	cur := last
	for i := len(rs) - 1; i >= 0; i-- {
		r := rs[i]
		if r.Seq > cur || r.To >= r.Seq || r.To < 0 {
			continue // abandoned itself, or malformed (a writer refuses it)
		}
		live = append(live, r)
		cur = r.To
	}
	slices.Reverse(live)
	return Branches{abandoned: live}
}

// AbandonedBy returns the rollback that abandoned the event at seq, and
// false when the event is live.
func (b Branches) AbandonedBy(seq int64) (Rollback, bool) {
	i, _ := slices.BinarySearchFunc(b.abandoned, seq, func(r Rollback, s int64) int { return cmp.Compare(r.Seq, s) })
	// b.abandoned[i] is the first rollback with Seq >= seq.
	if i < len(b.abandoned) && b.abandoned[i].To < seq && seq < b.abandoned[i].Seq {
		return b.abandoned[i], true
	}
	return Rollback{}, false
}
