package follow

import (
	"crypto/sha256"

	"github.com/sessionlog/sessionlog/eventlog"
)

// ringSize is how many yielded events a Follower remembers, to find where
// a rewritten log parts from what it yielded.
const ringSize = 1024

// ring holds the digests of the last events yielded, by seq.
type ring struct {
	sums  [ringSize][sha256.Size]byte
	seqs  [ringSize]int64
	n     int64 // events added
	first int64 // the first seq yielded
}

func (r *ring) add(e eventlog.Event) {
	if r.n == 0 {
		r.first = e.Seq
	}
	i := e.Seq % ringSize
	r.sums[i], r.seqs[i] = sha256.Sum256(eventlog.Canon(e)), e.Seq
	r.n++
}

// holds reports whether e is the event yielded at its seq.
func (r *ring) holds(e eventlog.Event) bool {
	i := e.Seq % ringSize
	return r.n > 0 && r.seqs[i] == e.Seq && r.sums[i] == sha256.Sum256(eventlog.Canon(e))
}

// oldest is the first seq the ring remembers, the events up to next-1
// having been yielded.
func (r *ring) oldest(next int64) int64 {
	return max(next-ringSize, r.first, 0)
}
