package eventlog

import (
	"strconv"
)

// DefaultPackTypes are the event types an Encoder packs by default.
var defaultPackTypes = []string{"assistant/chunk"}

// DefaultPackTypes returns the event types packed by default:
// assistant/chunk.
func DefaultPackTypes() []string { return append([]string(nil), defaultPackTypes...) }

// Encoder encodes batches of events into rows. Runs of two or more
// consecutive events of a packed type become one packed row, split so that
// no row exceeds MaxRowSize; an event whose data would nest too deep in a
// packed row (MaxDepth) is written alone. Every row it writes is one the
// Reader accepts. It uses no reflection: a row is built with appends. An Encoder is safe for concurrent use; it holds no state besides
// its configuration.
type Encoder struct {
	pack    map[string]bool
	maxSize int
}

// NewEncoder returns an Encoder that packs runs of the given types; with
// none given it packs DefaultPackTypes. Pass an empty, non-nil slice to
// pack nothing.
func NewEncoder(packTypes []string) *Encoder {
	if packTypes == nil {
		packTypes = defaultPackTypes
	}
	e := &Encoder{pack: make(map[string]bool, len(packTypes)), maxSize: MaxRowSize}
	for _, t := range packTypes {
		e.pack[t] = true
	}
	return e
}

// Packs reports whether e goes into a packed row when it stands in a run
// of its type: its type is packed, and its data nest shallow enough for a
// packed row (MaxDepth). AppendRows packs a run of such events, and writes
// every other event as a row of its own (AppendCanon and '\n').
func (enc *Encoder) Packs(e Event) bool { return enc.pack[e.Type] && packable(e) }

// AppendRows appends the rows holding evs to dst, each ending in '\n'.
// The events must be valid (Event.Validate), compacted (Storable), each
// within RowSize <= MaxRowSize, and carry contiguous seqs; the caller
// checks that before.
func (enc *Encoder) AppendRows(dst []byte, evs []Event) []byte {
	for i := 0; i < len(evs); {
		j := i + 1
		if enc.pack[evs[i].Type] && packable(evs[i]) {
			for j < len(evs) && evs[j].Type == evs[i].Type && packable(evs[j]) {
				j++
			}
		}
		dst = enc.appendRun(dst, evs[i:j])
		i = j
	}
	return dst
}

// appendRun appends one run of same-type events as packed rows of at most
// maxSize bytes; a group of one becomes a plain row.
func (enc *Encoder) appendRun(dst []byte, run []Event) []byte {
	for len(run) > 0 {
		n, size := 1, packedOverhead(run[0])+elemSize(run[0])
		for n < len(run) {
			s := size + 2 + elemSize(run[n]) // two commas
			if s+intLen(int64(n+1)) > enc.maxSize {
				break
			}
			size = s
			n++
		}
		if n == 1 {
			dst = AppendCanon(dst, run[0])
		} else {
			dst = appendPacked(dst, run[:n])
		}
		dst = append(dst, '\n')
		run = run[n:]
	}
	return dst
}

func elemSize(e Event) int {
	d := len(e.Data)
	if e.Data == nil {
		d = 4
	}
	return d + intLen(e.Time)
}

// packedOverhead is the size of a packed row without its elements, commas
// and the digits of n.
func packedOverhead(e Event) int {
	return len(`{"seq":,"type":"","n":,"time":[],"data":[]}`) + intLen(e.Seq) + len(e.Type)
}

func appendPacked(dst []byte, run []Event) []byte {
	dst = append(dst, `{"seq":`...)
	dst = strconv.AppendInt(dst, run[0].Seq, 10)
	dst = append(dst, `,"type":"`...)
	dst = append(dst, run[0].Type...)
	dst = append(dst, `","n":`...)
	dst = strconv.AppendInt(dst, int64(len(run)), 10)
	dst = append(dst, `,"time":[`...)
	for k, e := range run {
		if k > 0 {
			dst = append(dst, ',')
		}
		dst = strconv.AppendInt(dst, e.Time, 10)
	}
	dst = append(dst, `],"data":[`...)
	for k, e := range run {
		if k > 0 {
			dst = append(dst, ',')
		}
		if e.Data == nil {
			dst = append(dst, "null"...)
		} else {
			dst = append(dst, e.Data...)
		}
	}
	return append(dst, "]}"...)
}
